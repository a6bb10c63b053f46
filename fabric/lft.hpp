// Linear forwarding tables as routing computes them and the SM programs
// them: one output port per destination LID for each switch.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/cow_vector.hpp"
#include "fabric/fabric.hpp"

namespace madengine::fabric {

inline constexpr std::uint8_t kLftNoRoute = 0xff;

// Copies share the table until one is written: an epoch and the next hold
// one table for each switch a re-sweep left as it was.
struct Lft {
  NodeId node = kNoNode;           // the switch
  CowVector<std::uint8_t> ports;  // indexed by LID, kLftNoRoute where unrouted
};

}  // namespace madengine::fabric
