// Snapshot indexes (see snapshot.hpp).
#include "sa/snapshot.hpp"

#include "madengine/wire/link_rate.hpp"

namespace madengine::sa {

void Snapshot::index() {
  by_lid.assign(top_lid + 1u, fabric::EndPort{});
  lid_info.assign(top_lid + 1u, LidEntry{});
  by_port_guid.clear();
  by_node_guid.clear();
  std::vector<std::span<const std::uint16_t>> lid_pkeys(top_lid + 1u);  // empty: the default partition
  std::vector<GuidIndex::Entry> guid_lids;
  const auto rows = port_tables->load();
  for (fabric::NodeId n = 0; n < fabric.nodes.size(); ++n) by_node_guid.emplace(fabric.nodes[n].node_guid, n);
  for (const fabric::EndPort e : fabric.end_ports()) {
    const fabric::Node& node = fabric.nodes[e.node];
    const std::uint64_t guid = node.ports[e.port].guid != 0 ? node.ports[e.port].guid : node.node_guid;
    by_port_guid.emplace(guid, e);
    const std::uint16_t base = fabric.lid_of(e);
    const unsigned count = node.is_switch() ? 1u : 1u << node.lmc;
    // The hint: the port's switch in the path database, whose entry a
    // GID-addressed PathRecord fetches before its GUID is confirmed.
    const std::uint32_t sw = paths.attach(base).switch_index;
    const std::uint16_t hint = sw < GuidIndex::kNoHint ? static_cast<std::uint16_t>(sw) : GuidIndex::kNoHint;
    guid_lids.push_back({guid, {base, static_cast<std::uint8_t>(count)}, hint});
    LidEntry info;
    info.port_guid = guid;
    info.present = true;
    info.port = e.port;
    info.is_switch = node.is_switch();
    if (info.is_switch && !node.ports.empty()) {
      const wire::PortInfo& pi = node.ports[0].info;
      info.port0_mtu = pi.mtu_cap();
      info.port0_rate = wire::port_rate_code(pi, pi);
    }
    const PortTables* t = PortTableView::find(*rows, e.node, e.port);
    for (unsigned i = 0; i < count && base != 0 && base + i < by_lid.size(); ++i) {
      by_lid[base + i] = e;
      lid_info[base + i] = info;
      lid_info[base + i].path = paths.attach(static_cast<std::uint16_t>(base + i));
      if (t != nullptr) lid_pkeys[base + i] = t->pkeys;
    }
  }
  lid_paths_generation = paths.generation();
  partition_index.build(lid_pkeys, partitions);
  for (std::size_t lid = 0; lid < lid_info.size(); ++lid)
    lid_info[lid].pkey_set = partition_index.set_of(static_cast<std::uint16_t>(lid));
  lid_by_guid.build(guid_lids);
}

}  // namespace madengine::sa
