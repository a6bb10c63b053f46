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
// each switch's candidate channels (towards a switch one hop closer), laid
// out by position so that a LID's pass reads them in sequence. While the DAG
// is in use its candidates' link weights live here (a channel is a candidate
// of one switch at most) and go back to the fabric-wide array after.
struct Dag {
  std::vector<SwIdx> order;             // reachable switches by increasing distance, destination first
  std::vector<std::uint32_t> begin;     // CSR into the candidates, by position in order
  std::vector<ChannelId> cand;
  std::vector<std::uint32_t> peer_pos;  // by candidate: position of the switch it leads to
  std::vector<std::uint8_t> port;       // by candidate: its port
  std::vector<std::uint64_t> weight;    // by candidate: routes across its channel so far
  std::vector<std::uint32_t> ca_lids;   // by position: CA LIDs behind the switch
  std::vector<std::uint8_t> hop;        // by switch: distance to the destination
  std::vector<std::uint32_t> pos;       // by switch: position in order

  void load_weights(const std::vector<std::uint64_t>& w) {
    weight.resize(cand.size());
    for (std::size_t j = 0; j < cand.size(); ++j) weight[j] = w[cand[j]];
  }
  void store_weights(std::vector<std::uint64_t>& w) const {
    for (std::size_t j = 0; j < cand.size(); ++j) w[cand[j]] = weight[j];
  }
};

void build_dag(const SwitchGraph& g, const HopTables& hops, SwIdx d, Dag& dag, std::vector<std::uint32_t>& count) {
  const std::size_t n = g.size();
  dag.hop.resize(n);
  dag.pos.resize(n);
  for (SwIdx s = 0; s < n; ++s) dag.hop[s] = hops.at(d, s);
  std::fill(count.begin(), count.end(), 0u);
  for (SwIdx s = 0; s < n; ++s)
    if (const std::uint8_t h = dag.hop[s]; h != kHopUnreachable) ++count[h + 1u];
  for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
  dag.order.resize(count.back());
  for (SwIdx s = 0; s < n; ++s)
    if (const std::uint8_t h = dag.hop[s]; h != kHopUnreachable) dag.order[count[h]++] = s;
  for (std::size_t i = 0; i < dag.order.size(); ++i) dag.pos[dag.order[i]] = static_cast<std::uint32_t>(i);
  dag.begin.assign(dag.order.size() + 1, 0);
  dag.ca_lids.resize(dag.order.size());
  dag.cand.clear();
  dag.peer_pos.clear();
  dag.port.clear();
  for (std::size_t i = 0; i < dag.order.size(); ++i) {
    const SwIdx s = dag.order[i];
    const std::uint8_t h = dag.hop[s];
    dag.ca_lids[i] = g.ca_lids[s];
    if (h != 0)
      for (ChannelId c = g.link_begin[s]; c < g.link_begin[s + 1]; ++c) {
        const SwIdx peer = g.link[c].peer;
        if (dag.hop[peer] + 1u != h) continue;
        dag.cand.push_back(c);
        dag.peer_pos.push_back(dag.pos[peer]);
        dag.port.push_back(g.link[c].port);
      }
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
  // A destination switch's LIDs (consecutive in dests) share its DAG; their
  // ports are staged by position and written switch by switch after.
  std::vector<std::uint32_t> pick(n);
  std::vector<std::uint16_t> group_lids;
  std::vector<std::uint8_t> staged;  // [position * group LIDs + i]
  for (std::size_t first = 0; first < dests.size();) {
    const SwIdx d = g.targets[dests[first]].sw;
    std::size_t last = first;
    group_lids.clear();
    for (; last < dests.size() && g.targets[dests[last]].sw == d; ++last) {
      const LidTarget& t = g.targets[dests[last]];
      if (reuse != nullptr && reuse->keeps(t.base_lid)) continue;
      for (std::uint8_t i = 0; i < t.lid_count; ++i) group_lids.push_back(static_cast<std::uint16_t>(t.base_lid + i));
    }
    first = last;
    if (group_lids.empty()) continue;
    build_dag(g, hops, d, dag, count);
    dag.load_weights(weight);
    const std::size_t m = dag.order.size(), lids = group_lids.size();
    staged.resize(m * lids);
    for (std::size_t li = 0; li < lids; ++li) {
      const std::uint16_t lid = group_lids[li];
      // Weighted shortest path over the DAG, nearest switches first.
      cost[0] = 0;
      for (std::size_t k = 1; k < m; ++k) {
        std::uint64_t best = ~std::uint64_t{0};
        std::uint32_t pj = dag.begin[k];
        const std::uint32_t* peer_pos = dag.peer_pos.data();
        const std::uint64_t* w = dag.weight.data();
        if (reuse == nullptr) {
          for (std::uint32_t j = dag.begin[k]; j < dag.begin[k + 1]; ++j) {
            const std::uint64_t v = cost[peer_pos[j]] + w[j];
            if (v < best) best = v, pj = j;
          }
        } else {
          // Rerouted by an incremental pass: a still-shortest old port stays.
          const std::uint8_t old = reuse->prev(dag.order[k], lid);
          for (std::uint32_t j = dag.begin[k]; j < dag.begin[k + 1]; ++j) {
            const std::uint64_t v = cost[peer_pos[j]] + w[j];
            if (dag.port[j] == old) {
              best = v, pj = j;
              break;
            }
            if (v < best) best = v, pj = j;
          }
        }
        cost[k] = best;
        pick[k] = pj;
        staged[k * lids + li] = dag.port[pj];
      }
      // Each switch's CA ports travel its route: farthest switches first.
      for (std::size_t k = 0; k < m; ++k) carried[k] = dag.ca_lids[k];
      for (std::size_t k = m; k-- > 1;) {
        dag.weight[pick[k]] += carried[k];
        carried[dag.peer_pos[pick[k]]] += carried[k];
      }
    }
    dag.store_weights(weight);
    for (std::size_t k = 1; k < m; ++k) {
      std::uint8_t* ports = res.lfts[dag.order[k]].ports.mutable_data();
      for (std::size_t li = 0; li < lids; ++li) ports[group_lids[li]] = staged[k * lids + li];
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
  const bool ok = assign_layers(g, res.lfts, res.top_lid, in.vls, res.layers, error, in.threads);
  res.layers_s = seconds_since(t0);
  if (!ok) {
    res.error = error + ", the fabric offers " + std::to_string(in.vls) + " VLs";
    return false;
  }
  return true;
}

}  // namespace madengine::sm
