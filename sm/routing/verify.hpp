// Checks any set of LFTs and path layers against the fabric, independently
// of the engine that made them: every (source end port, destination LID)
// pair is delivered (no drop, no loop), optionally along a shortest path;
// the channel dependency graph of each VL has no cycle (deadlock freedom,
// Dally and Seitz); and how evenly host-to-host routes spread over the
// switch-to-switch links. Used by the tests, the benchmarks and the
// comparison with OpenSM's routes read back from ibsim.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sm {

struct CheckOptions {
  bool minimal = false;          // also require shortest switch-to-switch paths
  bool cycles = true;            // build the channel dependency graph per VL
  bool balance = true;           // routes per link
  bool switch_endpoints = true;  // switches' port-0 LIDs count as sources and destinations
};

struct RouteCheck {
  std::uint64_t pairs = 0;        // (source end port, destination LID) pairs checked
  std::uint64_t unrouted = 0;     // of those, dropped or looping
  std::uint64_t non_minimal = 0;  // routed, but longer than the switch distance (minimal only)
  std::string first_problem;      // the first bad pair or the cycle found, readable
  // Deadlock freedom: per VL (the path's layer), the number of dependencies
  // (channel -> next channel) and whether the graph has a cycle.
  std::uint8_t vls_used = 0;
  std::vector<std::uint64_t> dependencies;  // by VL
  bool acyclic = true;
  std::uint8_t cycle_vl = 0;
  std::size_t cycle_length = 0;
  // Balance: routes between CA ports (source port, destination LID) crossing
  // each switch-to-switch link, one direction at a time.
  std::uint32_t links = 0;        // directed switch-to-switch links
  std::uint32_t links_used = 0;
  std::uint64_t max_routes = 0;   // on the busiest link
  double mean_routes = 0;         // over all links
  bool ok() const noexcept { return unrouted == 0 && non_minimal == 0 && acyclic; }
};

// `routes.layers` may be empty (every path on VL 0), as for LFTs read back
// from switches.
RouteCheck check_routes(const fabric::Fabric& fabric, const RoutingResult& routes, const CheckOptions& opts = {});

}  // namespace madengine::sm
