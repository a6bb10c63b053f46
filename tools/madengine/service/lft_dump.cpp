// OpenSM's LFT dump layout written from a snapshot (see lft_dump.hpp).
#include "service/lft_dump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace madengine::service {

namespace {

// The names OpenSM prints for NodeInfo.NodeType.
const char* node_type_name(node::NodeKind k) noexcept {
  switch (k) {
    case node::NodeKind::kCa: return "Channel Adapter";
    case node::NodeKind::kSwitch: return "Switch";
    case node::NodeKind::kRouter: return "Router";
  }
  return "UNKNOWN";
}

}  // namespace

std::string dump_lfts(const node::FabricView& v, const perfmgr::NodeNameMap& names) {
  std::vector<node::FabricNode> switches;
  std::vector<node::NodeId> ids;
  for (node::NodeId n = 0; n < v.node_count(); ++n)
    if (v.has_lft(n)) ids.push_back(n);
  for (const node::NodeId n : ids) switches.push_back(v.node(n));
  std::vector<std::size_t> order(ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return switches[a].node_guid < switches[b].node_guid; });
  // What each LID's lines end with, the same on every switch.
  std::vector<std::string> owner(v.top_lid() + 1u, "unknown node and type");
  for (unsigned lid = 1; lid < owner.size(); ++lid)
    if (const auto e = v.end_port_by_lid(static_cast<std::uint16_t>(lid))) {
      const node::FabricNode n = v.node(e->node);
      const std::uint64_t guid = v.port(e->node, e->port).guid;
      owner[lid] = fmt::format("{} portguid 0x{:016x}: '{}'", node_type_name(n.kind), guid != 0 ? guid : n.node_guid,
                               names.name(n.node_guid, n.description));
    }
  std::string out;
  auto o = std::back_inserter(out);
  for (const std::size_t i : order) {
    const node::FabricNode& sw = switches[i];
    // The table reaches the highest LID in use; OpenSM prints up to its own.
    const unsigned max_lid = v.top_lid();
    fmt::format_to(o, "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):\n", max_lid, sw.lid, sw.node_guid,
                   names.name(sw.node_guid, sw.description));
    for (unsigned lid = 0; lid <= max_lid; ++lid) {
      const std::uint8_t port = v.lft_port(ids[i], static_cast<std::uint16_t>(lid));
      if (port > sw.num_ports) continue;  // no route (0xff), or not a port of this switch
      fmt::format_to(o, "0x{:04x} {:03} # {}\n", lid, port, owner[lid]);
    }
    fmt::format_to(o, "{} lids dumped\n", max_lid);
  }
  return out;
}

}  // namespace madengine::service
