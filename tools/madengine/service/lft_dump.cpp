// OpenSM's LFT dump layout written from a snapshot (see lft_dump.hpp).
#include "service/lft_dump.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace madengine::service {

namespace {

// The names OpenSM prints for NodeInfo.NodeType.
const char* node_type_name(fabric::NodeKind k) noexcept {
  switch (k) {
    case fabric::NodeKind::kCa: return "Channel Adapter";
    case fabric::NodeKind::kSwitch: return "Switch";
    case fabric::NodeKind::kRouter: return "Router";
  }
  return "UNKNOWN";
}

}  // namespace

std::string dump_lfts(const node::Publication& snap, const perfmgr::NodeNameMap& names) {
  const fabric::Fabric& f = snap.fabric;
  std::vector<const fabric::Lft*> lfts;
  for (const fabric::Lft& l : snap.lfts)
    if (l.node < f.nodes.size()) lfts.push_back(&l);
  std::sort(lfts.begin(), lfts.end(),
            [&f](const fabric::Lft* a, const fabric::Lft* b) { return f.nodes[a->node].node_guid < f.nodes[b->node].node_guid; });
  std::string out;
  auto o = std::back_inserter(out);
  for (const fabric::Lft* l : lfts) {
    const fabric::Node& sw = f.nodes[l->node];
    // The table reaches the highest LID in use; OpenSM prints up to its own.
    const unsigned max_lid = std::min<unsigned>(snap.top_lid, l->ports.empty() ? 0 : static_cast<unsigned>(l->ports.size() - 1));
    fmt::format_to(o, "Unicast lids [0-{}] of switch Lid {} guid 0x{:016x} ('{}'):\n", max_lid, sw.base_lid, sw.node_guid,
                   names.name(sw.node_guid, sw.description));
    for (unsigned lid = 0; lid <= max_lid; ++lid) {
      const std::uint8_t port = l->ports[lid];
      if (port >= sw.ports.size()) continue;  // no route (0xff), or not a port of this switch
      fmt::format_to(o, "0x{:04x} {:03} # ", lid, port);
      const fabric::EndPort* e = snap.end_port_by_lid(static_cast<std::uint16_t>(lid));
      if (e != nullptr) {
        const fabric::Node& n = f.nodes[e->node];
        const std::uint64_t guid = e->port < n.ports.size() && n.ports[e->port].guid != 0 ? n.ports[e->port].guid : n.node_guid;
        fmt::format_to(o, "{} portguid 0x{:016x}: '{}'", node_type_name(n.kind), guid, names.name(n.node_guid, n.description));
      } else {
        out += "unknown node and type";
      }
      out += '\n';
    }
    fmt::format_to(o, "{} lids dumped\n", max_lid);
  }
  return out;
}

}  // namespace madengine::service
