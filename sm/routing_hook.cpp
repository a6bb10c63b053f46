// An embedder's routing hook as a routing engine (see routing_hook.hpp).
#include "sm/routing_hook.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

RoutingResult route_by_hook(const fabric::Fabric& f, const RoutingHook& hook) {
  RoutingResult res;
  const SwitchGraph g = SwitchGraph::build(f);
  if (g.size() == 0) {
    res.error = "no switches to route";
    return res;
  }
  for (const LidTarget& t : g.targets)
    res.top_lid = std::max<std::uint16_t>(res.top_lid, static_cast<std::uint16_t>(t.base_lid + t.lid_count - 1));
  res.lfts.resize(g.size());
  for (std::size_t s = 0; s < g.size(); ++s) {
    res.lfts[s].node = g.node_of[s];
    res.lfts[s].ports.assign(res.top_lid + 1u, kLftNoRoute);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<fabric::Lft> lfts = res.lfts;  // the hook's copy: what it does to the shape is checked below
  std::string error;
  bool ok = false;
  try {
    ok = hook(f, lfts, error);
  } catch (const std::exception& e) {
    error = fmt::format("threw: {}", e.what());
  } catch (...) {
    error = "threw";
  }
  res.lfts_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!ok) {
    res.error = fmt::format("routing hook: {}", error.empty() ? "failed" : error);
    res.lfts.clear();
    return res;
  }
  if (lfts.size() != res.lfts.size()) {
    res.error = fmt::format("routing hook: {} LFTs for {} switches", lfts.size(), res.lfts.size());
    res.lfts.clear();
    return res;
  }
  for (std::size_t s = 0; s < lfts.size(); ++s) {
    const fabric::Lft& l = lfts[s];
    const fabric::Node& n = f.nodes[res.lfts[s].node];
    if (l.node != res.lfts[s].node || l.ports.size() != res.lfts[s].ports.size()) {
      res.error = fmt::format("routing hook: the LFT of switch 0x{:016x} was moved or resized", n.node_guid);
      res.lfts.clear();
      return res;
    }
    for (std::size_t lid = 1; lid < l.ports.size(); ++lid) {
      const std::uint8_t p = l.ports[lid];
      if (p != kLftNoRoute && p > n.num_ports()) {
        res.error = fmt::format("routing hook: switch 0x{:016x} LID {}: port {} (the switch has {})", n.node_guid, lid,
                                int{p}, int{n.num_ports()});
        res.lfts.clear();
        return res;
      }
    }
  }
  res.lfts = std::move(lfts);
  // What the SM's engines report: LIDs some switch cannot reach, every LID
  // routed in this pass, and one layer (SL 0, the identity SL-to-VL
  // mapping): the hook gives LFTs only.
  for (const fabric::Lft& l : res.lfts)
    for (const LidTarget& t : g.targets)
      for (std::uint8_t i = 0; i < t.lid_count; ++i) res.unreachable += l.ports[t.base_lid + i] == kLftNoRoute;
  for (const LidTarget& t : g.targets) res.lids_rerouted += t.lid_count;
  res.layers = fabric::PathLayers(res.lfts.size(), res.top_lid);
  res.layers.set_count_at_least(1);
  res.sl_to_vl.assign(1, 0);
  return res;
}

}  // namespace madengine::sm
