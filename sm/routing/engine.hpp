// What every routing engine gets from compute_routes, and the routes it may
// keep from an earlier pass. Private to sm/routing.
#pragma once

#include <cstdint>
#include <vector>

#include "sm/routing/routing.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

// Incremental re-routing: the LIDs whose routes stay as they were, and each
// switch's previous LFT (matched by GUID). A kept LID keeps its port at every
// switch that existed before; a new switch routes it afresh.
struct HopTables;

struct Reuse {
  std::vector<std::uint8_t> keep_lid;          // by LID: 1 = keep
  std::uint32_t lids_to_route = 0;             // LIDs not kept
  const HopTables* hops = nullptr;             // the new fabric's hop tables, already computed
  std::vector<const std::uint8_t*> prev_ports; // by SwIdx: the previous LFT (nullptr: a new switch)
  std::vector<std::size_t> prev_size;
  std::vector<const Lft*> prev_lft;            // the same tables, to share when nothing is routed again
  bool keeps(std::uint16_t lid) const noexcept { return lid < keep_lid.size() && keep_lid[lid] != 0; }
  // The previous port at `s` for `lid`, kLftNoRoute if unknown.
  std::uint8_t prev(SwIdx s, std::uint16_t lid) const noexcept {
    return prev_ports[s] != nullptr && lid < prev_size[s] ? prev_ports[s][lid] : kLftNoRoute;
  }
};

struct EngineInput {
  const fabric::Fabric& fabric;
  const SwitchGraph& g;
  const RoutingOptions& opts;
  unsigned threads = 1;
  std::uint8_t vls = 8;          // data VLs the layered engines may use
  const Reuse* reuse = nullptr;  // nullptr: route every LID
};

// Each engine fills res.lfts (one per switch, SwIdx order), res.layers,
// max_hops and unreachable; false with res.error set when it cannot route.
bool route_minhop_family(const EngineInput& in, RoutingAlgo algo, RoutingResult& res);
bool route_dfsssp(const EngineInput& in, RoutingResult& res);
bool route_nue(const EngineInput& in, RoutingResult& res);
bool route_dor(const EngineInput& in, RoutingResult& res);

// The chain driver (routing.cpp): tries opts' engines in order; `reuse`
// applies to `reuse_engine` only (the engine the kept routes came from).
RoutingResult route_chain(const fabric::Fabric& fabric, const RoutingOptions& opts, const SwitchGraph& g,
                          const Reuse* reuse, RoutingAlgo reuse_engine);

// LFTs sized to the top LID, every entry "no route" except each switch's own
// LIDs (its port 0 and the CAs it delivers to). With `unchanged` (a pass
// that routes no LID again), a switch whose previous table has that size
// starts as that table, shared rather than copied: the new routes are the
// old ones, and an unchanged re-sweep holds one set of tables, not two.
void init_lfts(const SwitchGraph& g, RoutingResult& res, const Reuse* unchanged = nullptr);

}  // namespace madengine::sm
