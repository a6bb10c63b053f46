// dfsssp: deadlock-free balanced shortest paths for any topology, after
// Domke, Hoefler and Nagel ("Deadlock-free oblivious routing for arbitrary
// topologies", IPDPS 2011). Destination LID by destination LID, every
// switch picks, among its shortest (min-hop) routes, the one whose links
// carry the fewest routes so far (a weighted shortest path over the min-hop
// DAG); each link's weight then grows by the CA ports routed across it. The
// channel dependency graph of the result is split into VL layers
// (layering.hpp); the engine fails when the fabric's VLs are not enough.
// Unlike OpenSM's dfsssp, weights only break ties between minimal routes,
// so paths never grow longer than the shortest.
#include <algorithm>
#include <chrono>

#include "sm/routing/engine.hpp"
#include "sm/routing/hop_tables.hpp"
#include "sm/routing/layering.hpp"

namespace madengine::sm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The min-hop DAG towards one destination switch: switches by distance, and
// each switch's candidate channels (towards a switch one hop closer).
struct Dag {
  std::vector<SwIdx> order;             // reachable switches by increasing distance, destination first
  std::vector<std::uint32_t> begin;     // CSR into cand, by position in order
  std::vector<ChannelId> cand;
};

void build_dag(const SwitchGraph& g, const HopTables& hops, SwIdx d, Dag& dag, std::vector<std::uint32_t>& count) {
  const std::size_t n = g.size();
  std::fill(count.begin(), count.end(), 0u);
  for (SwIdx s = 0; s < n; ++s)
    if (const std::uint8_t h = hops.at(d, s); h != kHopUnreachable) ++count[h + 1u];
  for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
  dag.order.resize(count.back());
  for (SwIdx s = 0; s < n; ++s)
    if (const std::uint8_t h = hops.at(d, s); h != kHopUnreachable) dag.order[count[h]++] = s;
  dag.begin.assign(dag.order.size() + 1, 0);
  dag.cand.clear();
  for (std::size_t i = 0; i < dag.order.size(); ++i) {
    const SwIdx s = dag.order[i];
    const std::uint8_t h = hops.at(d, s);
    if (h != 0)
      for (ChannelId c = g.link_begin[s]; c < g.link_begin[s + 1]; ++c)
        if (hops.at(d, g.link[c].peer) + 1u == h) dag.cand.push_back(c);
    dag.begin[i + 1] = static_cast<std::uint32_t>(dag.cand.size());
  }
}

}  // namespace

bool route_dfsssp(const EngineInput& in, RoutingResult& res) {
  const SwitchGraph& g = in.g;
  const std::size_t n = g.size();
  auto t0 = std::chrono::steady_clock::now();
  const HopTables hops = compute_hop_tables(g, nullptr, in.threads);
  res.hop_tables_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  init_lfts(g, res);
  // Destinations: CA ports first, switches' own LIDs last (their routes
  // carry management traffic, so they get what balance is left), each
  // port's LIDs in order; grouped by switch so one DAG serves a group.
  std::vector<std::uint32_t> dests;
  for (const SwIdx d : g.by_lid)
    for (const std::uint32_t ti : g.targets_at(d))
      if (!g.targets[ti].is_switch) dests.push_back(ti);
  for (const SwIdx d : g.by_lid)
    for (const std::uint32_t ti : g.targets_at(d))
      if (g.targets[ti].is_switch) dests.push_back(ti);

  std::vector<std::uint64_t> weight(g.channels(), 0);
  // Kept routes (incremental) weigh on the links they cross.
  const Reuse* reuse = in.reuse;
  Dag dag;
  std::vector<std::uint32_t> count(kHopMask + 3u);
  std::vector<std::uint64_t> cost(n), carried(n);
  std::vector<ChannelId> next(n, kNoChannel);
  std::vector<std::uint32_t> kept_sources(n);
  if (reuse != nullptr) {
    for (const std::uint32_t ti : dests) {
      const LidTarget& t = g.targets[ti];
      if (!reuse->keeps(t.base_lid)) continue;
      for (std::uint8_t i = 0; i < t.lid_count; ++i) {
        const auto lid = static_cast<std::uint16_t>(t.base_lid + i);
        for (SwIdx s = 0; s < n; ++s) res.lfts[s].ports[lid] = s == t.sw ? res.lfts[s].ports[lid] : reuse->prev(s, lid);
        // Each switch's CA ports add to every link of its path.
        for (SwIdx s = 0; s < n; ++s) {
          if (g.ca_lids[s] == 0) continue;
          SwIdx at = s;
          for (std::size_t hop = 0; at != t.sw && hop <= n; ++hop) {
            const ChannelId c = g.channel_at(at, res.lfts[at].ports[lid]);
            if (c == kNoChannel) break;
            weight[c] += g.ca_lids[s];
            at = g.link[c].peer;
          }
        }
      }
    }
  }
  SwIdx dag_of = kNoSwitch;
  for (const std::uint32_t ti : dests) {
    const LidTarget& t = g.targets[ti];
    if (reuse != nullptr && reuse->keeps(t.base_lid)) continue;
    if (t.sw != dag_of) {
      build_dag(g, hops, t.sw, dag, count);
      dag_of = t.sw;
    }
    for (std::uint8_t i = 0; i < t.lid_count; ++i) {
      const auto lid = static_cast<std::uint16_t>(t.base_lid + i);
      // Weighted shortest path over the DAG, nearest switches first.
      cost[t.sw] = 0;
      for (std::size_t k = 1; k < dag.order.size(); ++k) {
        const SwIdx s = dag.order[k];
        std::uint64_t best = ~std::uint64_t{0};
        ChannelId pick = kNoChannel;
        // Rerouted by an incremental pass: a still-shortest old port stays.
        const std::uint8_t old = reuse != nullptr ? reuse->prev(s, lid) : kLftNoRoute;
        for (std::uint32_t j = dag.begin[k]; j < dag.begin[k + 1]; ++j) {
          const ChannelId c = dag.cand[j];
          const std::uint64_t v = cost[g.link[c].peer] + weight[c];
          if (g.link[c].port == old) {
            best = v, pick = c;
            break;
          }
          if (v < best) best = v, pick = c;
        }
        cost[s] = best;
        next[s] = pick;
        res.lfts[s].ports[lid] = g.link[pick].port;
      }
      // Each switch's CA ports travel its route: farthest switches first.
      for (const SwIdx s : dag.order) carried[s] = g.ca_lids[s];
      for (std::size_t k = dag.order.size(); k-- > 1;) {
        const SwIdx s = dag.order[k];
        weight[next[s]] += carried[s];
        carried[g.link[next[s]].peer] += carried[s];
      }
    }
  }
  for (SwIdx d = 0; d < n; ++d) {
    std::uint32_t lids = 0;
    for (const std::uint32_t ti : g.targets_at(d)) lids += g.targets[ti].lid_count;
    if (lids == 0) continue;
    for (SwIdx s = 0; s < n; ++s) {
      const std::uint8_t h = hops.at(d, s);
      if (h == kHopUnreachable) res.unreachable += lids;
      else res.max_hops = std::max(res.max_hops, h);
    }
  }
  res.lfts_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  std::string error;
  const bool ok = assign_layers(g, res.lfts, res.top_lid, in.vls, res.layers, error);
  res.layers_s = seconds_since(t0);
  if (!ok) {
    res.error = error + ", the fabric offers " + std::to_string(in.vls) + " VLs";
    return false;
  }
  return true;
}

}  // namespace madengine::sm
