// Linear forwarding tables as routing computes them and the SM programs
// them: one output port per destination LID for each switch.
#pragma once

#include <cstdint>
#include <vector>

#include "madengine/fabric/fabric.hpp"

namespace madengine::fabric {

inline constexpr std::uint8_t kLftNoRoute = 0xff;

struct Lft {
  NodeId node = kNoNode;            // the switch
  std::vector<std::uint8_t> ports;  // indexed by LID, kLftNoRoute where unrouted
};

}  // namespace madengine::fabric
