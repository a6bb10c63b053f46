// Routing engines: from a discovered Fabric with LIDs assigned, compute every
// switch's linear forwarding table, and for the deadlock-free engines the
// virtual-lane layer (SL) of every path. min-hop balances port use; up/down
// and fat-tree restrict paths to up*down* (the channel dependency graph of
// up*down* routes has no cycle); dfsssp (balanced shortest paths) and nue
// (routes chosen on the channel dependency graph itself) work on any
// topology and break cycles with VL layers; dor routes tori and meshes
// dimension by dimension with datelines. See docs/routing.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/lft.hpp"
#include "fabric/path_layers.hpp"

namespace madengine::sm {

enum class RoutingAlgo : std::uint8_t { kMinHop, kUpDown, kFatTree, kDfsssp, kNue, kDor };

const char* to_string(RoutingAlgo a) noexcept;
// Engines that may split paths into virtual-lane layers (the path's SL).
constexpr bool may_layer(RoutingAlgo a) noexcept {
  return a == RoutingAlgo::kDfsssp || a == RoutingAlgo::kNue || a == RoutingAlgo::kDor;
}
bool parse_routing_algo(const std::string& s, RoutingAlgo& out) noexcept;
// An engine chain as OpenSM's `-R a,b,c` takes it: names separated by
// commas (spaces allowed), tried in order until one succeeds. False, with a
// message in `error`, on an empty chain, an unknown or a repeated name.
bool parse_routing_chain(std::string_view s, std::vector<RoutingAlgo>& out, std::string* error = nullptr);
// Every engine's name, in the order above, separated by `sep`: what
// messages and help text list (they name no engine of their own).
std::string routing_engine_names(std::string_view sep = ", ");
std::string to_string(const std::vector<RoutingAlgo>& chain);

using fabric::kLftNoRoute;
using fabric::Lft;

// Where dimension-order routing finds the switches of a torus or mesh: their
// coordinates by node GUID. Empty: dor infers them from the wiring.
struct GridSpec {
  std::array<std::uint16_t, 3> dims{1, 1, 1};  // switches along x, y, z (1: unused)
  std::array<bool, 3> wrap{};                  // ring (torus) or line (mesh), per dimension
  std::unordered_map<std::uint64_t, std::array<std::uint16_t, 3>> coords;
  bool empty() const noexcept { return coords.empty(); }
};

struct RoutingOptions {
  RoutingAlgo algo = RoutingAlgo::kMinHop;
  // Non-empty: the engines to try in order (algo is then ignored); the first
  // that succeeds routes, the failures are reported in RoutingResult::failed.
  std::vector<RoutingAlgo> chain;
  std::vector<std::uint64_t> root_guids;  // up/down: configured roots (else detected)
  unsigned threads = 1;                   // worker threads (the only parallelism routing uses)
  // Data VLs the layered engines (dfsssp, nue, dor) may use: at most this
  // many, and never more than every linked port's VLCap offers (8 when no
  // port reports one). 0: no limit beyond VLCap.
  std::uint8_t vls_max = 0;
  GridSpec grid;  // dor: switch coordinates (empty: inferred)
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
  double hop_tables_s = 0;        // phase timings, seconds (wall)
  double lfts_s = 0;
  double layers_s = 0;            // VL layering (dfsssp, nue)
  std::string error;              // non-empty: routing failed, nothing to program
  bool ok() const noexcept { return error.empty(); }

  RoutingAlgo engine = RoutingAlgo::kMinHop;  // the engine these routes come from
  std::vector<std::string> failed;            // "dfsssp: ..." per engine of the chain that failed first
  // The layer (== SL) of the route from each source switch (index into
  // lfts) to each LID; layers.count() SLs and VLs are used. The min-hop
  // family and a routing that needed no split use layer 0 only.
  fabric::PathLayers layers;
  // The SL-to-VL mapping the layers assume on every port: SL i -> VL i for
  // i < layers.count() (identity). The SM's SL2VL programming must keep it.
  std::vector<std::uint8_t> sl_to_vl;
  std::uint8_t vls_available = 0;  // data VLs the layered engines could use

  // Incremental re-routing (compute_routes with previous routes):
  bool incremental = false;        // previous routes were kept where the change allows
  std::uint32_t lids_rerouted = 0; // LIDs whose routes this pass computed (all of them when full)
  std::vector<std::uint8_t> kept;  // incremental: by LID, 1 where the previous routes were kept
  std::string full_reason;         // why a pass given previous routes still routed everything
};

// Pure function of its inputs: no I/O, no engine state; parallel only
// through opts.threads.
RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts);

// The routes of an earlier pass, for incremental re-routing: the fabric they
// were computed on, the result (its layers and engine), and its LFTs, which
// may live elsewhere (an SA snapshot) when result.lfts was moved out.
struct PreviousRoutes {
  const fabric::Fabric* fabric = nullptr;
  const RoutingResult* result = nullptr;
  const std::vector<Lft>* lfts = nullptr;  // nullptr: result->lfts
};

// Incremental re-routing: only destinations that the change between
// `previous.fabric` and `fabric` affects are routed again (a link or switch
// on one of their routes changed, their hop distances changed, their LIDs
// moved); every other destination keeps its routes, port for port. An
// unchanged fabric gives the previous LFTs unchanged. Engines whose routes
// are coupled across destinations (nue, dor) and a change of options route
// everything (full_reason says why).
RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts, const PreviousRoutes& previous);
RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts, const RoutingResult* previous,
                             const fabric::Fabric* previous_fabric);

// Follows the LFTs from `src` to `dst` (LIDs); returns the switch hops taken,
// or -1 if the walk drops or loops. Tests and the SA's path checks use it.
int trace_route(const fabric::Fabric& fabric, const RoutingResult& routes, std::uint16_t src_lid,
                std::uint16_t dst_lid, std::vector<fabric::NodeId>* switches = nullptr);

}  // namespace madengine::sm
