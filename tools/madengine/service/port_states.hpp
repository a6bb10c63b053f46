// Physical ports of one epoch by PortState, as the metrics, the admin
// socket's status and systemd's STATUS= line report them.
#pragma once

#include <array>
#include <cstdint>

#include "node/publication.hpp"

namespace madengine::service {

struct PortStates {
  std::array<std::uint64_t, 5> by_state{};  // PortState 0..4 (NoChange, Down, Init, Armed, Active)
  std::uint64_t linked = 0;
  std::uint64_t nodes = 0, switches = 0;
};

// Lower-case names of PortState 1..4 ("down", "init", "armed", "active"); [0] "unknown".
inline constexpr const char* kPortStateNames[] = {"unknown", "down", "init", "armed", "active"};

inline PortStates count_ports(const node::Publication& snap) noexcept {
  PortStates c;
  for (const fabric::Node& n : snap.fabric.nodes) {
    ++c.nodes;
    c.switches += n.is_switch();
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      c.linked += n.ports[p].linked();
      if (n.ports[p].state < c.by_state.size()) ++c.by_state[n.ports[p].state];
    }
  }
  return c;
}

}  // namespace madengine::service
