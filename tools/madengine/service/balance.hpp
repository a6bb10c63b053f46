// How evenly the LFTs of one epoch spread routes, as OpenSM's console
// reports it: `switchbalance` (per switch, the end-port LIDs routed out of
// each port that leads to another switch; unbalanced when the busiest and
// the idlest differ by more than one) and `lidbalance` (per switch and end
// port, whether that port's LIDs are spread over the next switches and the
// output ports evenly). Nodes are named through the node name map.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "madengine/node/fabric_view.hpp"
#include "perfmgr/node_name_map.hpp"

namespace madengine::service {

// guid 0: every switch. verbose: balanced switches too.
nlohmann::json switch_balance(const node::FabricView& epoch, const perfmgr::NodeNameMap& names, bool verbose,
                              std::uint64_t guid);
nlohmann::json lid_balance(const node::FabricView& epoch, const perfmgr::NodeNameMap& names, std::uint64_t guid);

}  // namespace madengine::service
