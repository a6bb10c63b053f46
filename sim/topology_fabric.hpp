// The SM's model of a generated or loaded topology as a complete discovery
// would leave it (nodes, ports, GUIDs, links, active width and speed, MTU
// and VL capabilities), for routing tests and benchmarks that need no SMPs.
// LIDs are not assigned.
#pragma once

#include <cstdint>

#include "fabric/fabric.hpp"
#include "sim/topology.hpp"

namespace madengine::sim {

struct SmFabricOptions {
  std::uint8_t mtu_cap = 4;  // 2048, as ibsim and the sim report
  std::uint8_t vl_cap = 4;   // VL0-7
};

fabric::Fabric to_sm_fabric(const Topology& topo, const SmFabricOptions& opts = {});

}  // namespace madengine::sim
