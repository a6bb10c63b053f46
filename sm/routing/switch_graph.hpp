// A dense, array-based view of the switches of a Fabric for the routing
// engines: switch indexes, inter-switch links, the end ports (LIDs) behind
// each switch, and up/down ranks.
#pragma once

#include <cstdint>
#include <vector>

#include "madengine/fabric/fabric.hpp"

namespace madengine::sm {

using SwIdx = std::uint32_t;
inline constexpr SwIdx kNoSwitch = ~SwIdx{0};

struct SwitchLink {
  std::uint8_t port;  // our port
  SwIdx peer;         // switch at the other end
};

// A LID block that leaves the fabric at switch `sw` through `exit_port`
// (0 for the switch's own management port).
struct LidTarget {
  std::uint16_t base_lid;
  std::uint8_t lid_count;  // 2^LMC
  SwIdx sw;
  std::uint8_t exit_port;
};

struct SwitchGraph {
  std::vector<fabric::NodeId> node_of;      // SwIdx -> NodeId
  std::vector<SwIdx> sw_of;                 // NodeId -> SwIdx (kNoSwitch for CAs)
  std::vector<std::vector<SwitchLink>> links;
  std::vector<LidTarget> targets;           // sorted by base LID
  std::vector<bool> has_ca;                 // a CA hangs off this switch (a leaf)

  std::size_t size() const noexcept { return node_of.size(); }
  static SwitchGraph build(const fabric::Fabric& fabric);
};

// Up/down ranks: distance from the roots; roots either given or detected as
// the switches farthest from the leaves (the spines of a fat tree).
struct Ranking {
  std::vector<std::uint32_t> rank;  // per SwIdx; roots are 0
  std::vector<SwIdx> roots;
  // Direction of sw -> peer: up when towards a lower (rank, guid).
  std::vector<std::uint64_t> guid;
  bool is_up(SwIdx from, SwIdx to) const noexcept {
    return rank[to] < rank[from] || (rank[to] == rank[from] && guid[to] < guid[from]);
  }
};

Ranking rank_switches(const fabric::Fabric& fabric, const SwitchGraph& g,
                      const std::vector<std::uint64_t>& root_guids);

}  // namespace madengine::sm
