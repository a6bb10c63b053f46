// Multicast forwarding: the SM takes multicast groups from the SA
// (sa/mcast_groups.hpp), builds a spanning tree over the
// switches for each group that reaches every member, and turns the trees
// into per-switch MFT blocks (IBA 14.2.5.12).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "fabric/fabric.hpp"
#include "madengine/wire/smp/mft.hpp"
#include "sa/mcast_groups.hpp"

namespace madengine::sm {

// Key of one MFT block on a switch: (block, position) as in the attribute modifier.
struct MftKey {
  std::uint16_t block = 0;
  std::uint8_t position = 0;
  auto operator<=>(const MftKey&) const noexcept = default;
};
using SwitchMft = std::map<MftKey, wire::MftBlock>;

// Per switch (by NodeId) the MFT blocks that carry any group's ports: for
// each group, a BFS tree over switch-to-switch links rooted at the first
// member's switch, pruned to the switches that lead to members.
std::map<fabric::NodeId, SwitchMft> compute_mfts(const fabric::Fabric& f, const std::vector<sa::McGroup>& groups);

}  // namespace madengine::sm
