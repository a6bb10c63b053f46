// Routing engines: from a discovered Fabric with LIDs assigned, compute every
// switch's linear forwarding table. min-hop balances port use; up/down and
// fat-tree restrict paths to up*down* (IBA-agnostic deadlock freedom: the
// channel dependency graph of up*down* routes has no cycle).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"

namespace madengine::sm {

enum class RoutingAlgo : std::uint8_t { kMinHop, kUpDown, kFatTree };

const char* to_string(RoutingAlgo a) noexcept;
bool parse_routing_algo(const std::string& s, RoutingAlgo& out) noexcept;

using fabric::kLftNoRoute;
using fabric::Lft;

struct RoutingOptions {
  RoutingAlgo algo = RoutingAlgo::kMinHop;
  std::vector<std::uint64_t> root_guids;  // up/down: configured roots (else detected)
  unsigned threads = 1;                   // worker threads for the two phases
};

struct RoutingResult {
  std::vector<Lft> lfts;          // one per switch, in node order
  std::uint16_t top_lid = 0;      // highest unicast LID routed (LinearFDBTop)
  std::uint32_t unreachable = 0;  // (switch, LID) pairs with no legal route
  std::uint8_t max_hops = 0;      // longest switch-to-switch route chosen
  // Up/down, fat-tree: LIDs with no up*/down* route from some switch (spine
  // to spine management LIDs in a fat tree) routed min-hop instead.
  std::uint32_t minhop_fallback_lids = 0;
  std::vector<fabric::NodeId> roots;  // up/down and fat-tree: the roots used
  double hop_tables_s = 0;        // phase timings, seconds
  double lfts_s = 0;
  std::string error;              // non-empty: routing failed, nothing to program
  bool ok() const noexcept { return error.empty(); }
};

RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts);

// Follows the LFTs from `src` to `dst` (LIDs); returns the switch hops taken,
// or -1 if the walk drops or loops. Tests and the SA's path checks use it.
int trace_route(const fabric::Fabric& fabric, const RoutingResult& routes, std::uint16_t src_lid,
                std::uint16_t dst_lid, std::vector<fabric::NodeId>* switches = nullptr);

}  // namespace madengine::sm
