// Physical ports of one epoch by PortState, as the metrics, the admin
// socket's status and systemd's STATUS= line report them.
#pragma once

#include <array>
#include <cstdint>

#include "madengine/node/fabric_view.hpp"

namespace madengine::service {

struct PortStates {
  std::array<std::uint64_t, 5> by_state{};  // PortState 0..4 (NoChange, Down, Init, Armed, Active)
  std::uint64_t linked = 0;
  std::uint64_t nodes = 0, switches = 0;
};

// Lower-case names of PortState 1..4 ("down", "init", "armed", "active"); [0] "unknown".
inline constexpr const char* kPortStateNames[] = {"unknown", "down", "init", "armed", "active"};

inline PortStates count_ports(const node::FabricView& epoch) {
  PortStates c;
  for (node::NodeId n = 0; n < epoch.node_count(); ++n) {
    const node::FabricNode node = epoch.node(n);
    ++c.nodes;
    c.switches += node.is_switch();
    for (std::uint8_t p = 1; p <= node.num_ports; ++p) {
      const node::FabricPort port = epoch.port(n, p);
      c.linked += port.linked();
      if (port.state < c.by_state.size()) ++c.by_state[port.state];
    }
  }
  return c;
}

}  // namespace madengine::service
