// What the SM wrote to a node that has reset since is gone with the reset:
// its P_Key tables, multicast forwarding blocks and SL2VL/VLArb tables are
// forgotten, so the next programming reads or writes them again instead of
// trusting the copies it keeps to write only what changed. A switch has
// reset when its LinearFDBTop is not the one we wrote; a CA when a port of
// it is back in INIT (a CA link that only flapped costs a table read).
#include "sm/sm.hpp"

namespace madengine::sm {

namespace {

bool has_reset(const fabric::Node& n, const ProgrammedState& programmed) {
  if (n.is_switch()) {
    const auto it = programmed.lft.find(n.node_guid);
    return it != programmed.lft.end() && it->second.top != 0 && n.switch_info.linear_fdb_top.get() != it->second.top;
  }
  for (std::uint8_t port = 1; port <= n.num_ports(); ++port)
    if (n.ports[port].linked() && n.ports[port].state == static_cast<std::uint8_t>(wire::PortState::kInit)) return true;
  return false;
}

// Erases the entries of a map keyed first by node GUID.
template <typename Map, typename GuidOf>
void erase_node(Map& m, std::uint64_t guid, GuidOf guid_of) {
  std::erase_if(m, [&](const auto& kv) { return guid_of(kv.first) == guid; });
}

}  // namespace

void SubnetManager::forget_reset_nodes(const fabric::Fabric& f) {
  for (const fabric::Node& n : f.nodes) {
    if (!has_reset(n, programmed_)) continue;
    const std::uint64_t guid = n.node_guid;
    erase_node(programmed_.pkeys, guid, [](const auto& k) { return k.first; });
    erase_node(mft_programmed_, guid, [](const auto& k) { return k.first; });
    erase_node(qos_programmed_.written, guid, [](const auto& k) { return std::get<0>(k); });
  }
}

}  // namespace madengine::sm
