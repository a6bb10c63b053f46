// Generated topologies (sim/generators) as the SM's fabric with LIDs, and a
// dor grid from a generator's coordinates, for the routing tests.
#pragma once

#include <cstdint>

#include "fabric/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/topology_fabric.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::testing {

inline fabric::Fabric with_lids(const sim::Topology& t, std::uint8_t lmc = 0) {
  fabric::Fabric f = sim::to_sm_fabric(t);
  sm::Guid2Lid map;
  sm::assign_lids(f, map, lmc);
  return f;
}

// The generator's coordinates by switch GUID (node ids are topology indexes).
inline sm::GridSpec grid_of(const sim::GridTopology& g) {
  sm::GridSpec spec;
  for (unsigned d = 0; d < 3; ++d) {
    spec.dims[d] = static_cast<std::uint16_t>(g.dims[d]);
    spec.wrap[d] = g.wrap[d];
  }
  for (std::uint32_t n = 0; n < g.topo.nodes.size(); ++n)
    if (g.topo.nodes[n].is_switch()) spec.coords.emplace(g.topo.nodes[n].node_guid, g.coords[n]);
  return spec;
}

}  // namespace madengine::testing
