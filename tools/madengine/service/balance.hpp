// How evenly the LFTs of one epoch spread routes, as OpenSM's console
// reports it: `switchbalance` (per switch, the end-port LIDs routed out of
// each port that leads to another switch; unbalanced when the busiest and
// the idlest differ by more than one) and `lidbalance` (per switch and end
// port, whether that port's LIDs are spread over the next switches and the
// output ports evenly). Nodes are named through the node name map.
#pragma once

#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "perfmgr/node_name_map.hpp"
#include "node/publication.hpp"

namespace madengine::service {

// The LFT entry of switch `node` for `lid` (the epoch's, as FabricView reads it).
using LftPortFn = std::function<std::uint8_t(fabric::NodeId node, std::uint16_t lid)>;

// guid 0: every switch. verbose: balanced switches too.
nlohmann::json switch_balance(const node::Publication& snap, const LftPortFn& lft, const perfmgr::NodeNameMap& names,
                              bool verbose, std::uint64_t guid);
nlohmann::json lid_balance(const node::Publication& snap, const LftPortFn& lft, const perfmgr::NodeNameMap& names,
                           std::uint64_t guid);

}  // namespace madengine::service
