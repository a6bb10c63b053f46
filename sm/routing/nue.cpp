// nue: deadlock-free routing for any topology and any number of VLs, one
// included, after Domke, Hoefler and Matsuoka ("Routing on the dependency
// graph: a new approach to deadlock-free high-performance routing", HPDC
// 2016). Destinations are split into one subset per VL (contiguous in BFS
// order from the most central switch, so each subset is a region). Each
// layer's channel dependency graph starts with the escape paths: every turn
// of a spanning tree rooted at the central switch (tree routes cannot
// cycle). Each destination is then routed by Dijkstra over the switches
// where a switch may join only through a dependency that keeps its layer's
// graph acyclic (cdg.hpp); link weights grow with the routes they carry, as
// in dfsssp. A destination whose search reaches an impasse (some switch left
// unreached) gives back the dependencies it added and is routed along the
// spanning tree, whose dependencies are always there. Routes may be longer
// than the shortest: that is the price of needing no VLs.
#include <algorithm>
#include <chrono>
#include <queue>
#include <unordered_set>

#include "sm/routing/cdg.hpp"
#include "sm/routing/engine.hpp"
#include "sm/routing/hop_tables.hpp"

namespace madengine::sm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The escape spanning tree: BFS from the root over each switch's
// lowest-numbered link to an unvisited switch, with Euler-tour intervals to
// find the child whose subtree holds a destination.
struct Tree {
  std::vector<ChannelId> up;    // s -> parent (kNoChannel at the root)
  std::vector<std::vector<ChannelId>> down;  // s -> each child
  std::vector<std::uint32_t> enter, leave;   // Euler tour
  std::vector<SwIdx> bfs;       // BFS order from the root

  ChannelId toward(const SwitchGraph& g, SwIdx s, SwIdx d) const {
    if (enter[s] <= enter[d] && enter[d] < leave[s]) {
      for (const ChannelId c : down[s]) {
        const SwIdx ch = g.link[c].peer;
        if (enter[ch] <= enter[d] && enter[d] < leave[ch]) return c;
      }
      return kNoChannel;  // s == d
    }
    return up[s];
  }
};

Tree spanning_tree(const SwitchGraph& g, SwIdx root) {
  const std::size_t n = g.size();
  Tree t;
  t.up.assign(n, kNoChannel);
  t.down.assign(n, {});
  t.enter.assign(n, 0);
  t.leave.assign(n, 0);
  std::vector<std::uint8_t> seen(n, 0);
  t.bfs.push_back(root);
  seen[root] = 1;
  for (std::size_t i = 0; i < t.bfs.size(); ++i) {
    const SwIdx s = t.bfs[i];
    for (ChannelId c = g.link_begin[s]; c < g.link_begin[s + 1]; ++c) {
      const SwIdx q = g.link[c].peer;
      if (seen[q]) continue;
      seen[q] = 1;
      t.up[q] = g.link[c].reverse;
      t.down[s].push_back(c);
      t.bfs.push_back(q);
    }
  }
  // Euler tour, iteratively.
  std::uint32_t clock = 0;
  std::vector<std::pair<SwIdx, std::size_t>> stack{{root, 0}};
  t.enter[root] = clock++;
  while (!stack.empty()) {
    auto& [s, i] = stack.back();
    if (i < t.down[s].size()) {
      const SwIdx ch = g.link[t.down[s][i++]].peer;
      t.enter[ch] = clock++;
      stack.push_back({ch, 0});
      continue;
    }
    t.leave[s] = clock;
    stack.pop_back();
  }
  return t;
}

struct Candidate {
  std::uint64_t dist;
  std::uint64_t guid;  // ties go to the lower GUID, then the lower port: not to discovery order
  std::uint8_t port;
  SwIdx sw;
  ChannelId via;   // sw -> the settled switch
  ChannelId then;  // the settled switch's channel (kNoChannel: it is the destination)
  bool operator>(const Candidate& o) const noexcept {
    return dist != o.dist ? dist > o.dist : (guid != o.guid ? guid > o.guid : port > o.port);
  }
};

}  // namespace

bool route_nue(const EngineInput& in, RoutingResult& res) {
  const SwitchGraph& g = in.g;
  const std::size_t n = g.size();
  const unsigned layers = std::max<unsigned>(1, in.vls);
  auto t0 = std::chrono::steady_clock::now();
  const HopTables hops = compute_hop_tables(g, nullptr, in.threads);
  // The most central switch: the smallest eccentricity, then the lowest GUID.
  SwIdx root = 0;
  std::uint32_t best_ecc = ~0u;
  for (SwIdx s = 0; s < n; ++s) {
    std::uint32_t ecc = 0;
    const std::uint8_t* row = hops.row(s);
    for (SwIdx d = 0; d < n; ++d) ecc = std::max<std::uint32_t>(ecc, row[d] == kHopUnreachable ? 0 : row[d]);
    if (ecc < best_ecc || (ecc == best_ecc && g.guid[s] < g.guid[root])) best_ecc = ecc, root = s;
  }
  const Tree tree = spanning_tree(g, root);
  LayeredCdg cdg(g, layers);
  for (unsigned l = 0; l < layers; ++l)
    for (SwIdx b = 0; b < n; ++b) {
      std::vector<ChannelId> out = tree.down[b];
      if (tree.up[b] != kNoChannel) out.push_back(tree.up[b]);
      for (const ChannelId o1 : out)
        for (const ChannelId o2 : out)
          if (o1 != o2) cdg.add(l, g.link[o1].reverse, o2);  // into b from o1's far end, out by o2
    }
  res.hop_tables_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  init_lfts(g, res);
  res.layers = fabric::PathLayers(n, res.top_lid);
  res.layers.set_count_at_least(1);
  // Destination subsets: switches in BFS order, cut into `layers` runs of
  // about equal LID counts.
  std::uint32_t total_lids = 0, total_ca = 0;
  for (const LidTarget& t : g.targets) total_lids += t.lid_count, total_ca += t.is_switch ? 0 : t.lid_count;
  std::vector<std::uint32_t> order;  // target indexes
  for (const SwIdx s : tree.bfs)
    for (const std::uint32_t ti : g.targets_at(s)) order.push_back(ti);
  std::vector<std::uint8_t> layer_of_target(g.targets.size(), 0);
  {
    std::uint32_t seen = 0;
    for (const std::uint32_t ti : order) {
      layer_of_target[ti] = static_cast<std::uint8_t>(std::min<std::uint64_t>(layers - 1, std::uint64_t{seen} * layers / std::max(1u, total_lids)));
      seen += g.targets[ti].lid_count;
    }
  }
  // A hop weighs as much as all CA ports' routes: shorter first, then the less loaded.
  const std::uint64_t hop_weight = std::max<std::uint32_t>(1, total_ca);
  std::vector<std::uint64_t> load(g.channels(), 0);
  std::vector<std::unordered_set<std::uint64_t>> blocked(layers);
  std::vector<std::uint64_t> blocked_now;
  std::vector<std::pair<ChannelId, ChannelId>> added;
  std::vector<ChannelId> next(n);
  std::vector<std::uint8_t> settled(n);
  std::vector<SwIdx> settle_order;
  std::vector<std::uint64_t> carried(n);
  for (unsigned l = 0; l < layers; ++l)
    for (const std::uint32_t ti : order) {
      if (layer_of_target[ti] != l) continue;
      const LidTarget& t = g.targets[ti];
      const SwIdx d = t.sw;
      for (std::uint8_t i = 0; i < t.lid_count; ++i) {
        const auto lid = static_cast<std::uint16_t>(t.base_lid + i);
        std::fill(settled.begin(), settled.end(), 0);
        std::fill(next.begin(), next.end(), kNoChannel);
        settle_order.assign(1, d);
        settled[d] = 1;
        added.clear();
        blocked_now.clear();
        std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
        auto offer = [&](SwIdx u, std::uint64_t du) {
          for (ChannelId c = g.link_begin[u]; c < g.link_begin[u + 1]; ++c) {
            const ChannelId into = g.link[c].reverse;  // x -> u
            if (into == kNoChannel || settled[g.link[c].peer]) continue;
            heap.push({du + hop_weight + load[into], g.guid[g.link[c].peer], g.link[into].port, g.link[c].peer, into, next[u]});
          }
        };
        offer(d, 0);
        while (!heap.empty()) {
          const Candidate cand = heap.top();
          heap.pop();
          if (settled[cand.sw]) continue;
          if (cand.then != kNoChannel && !cdg.has(l, cand.via, cand.then)) {
            const std::uint64_t key = std::uint64_t{cand.via} << 32 | cand.then;
            if (blocked[l].contains(key)) continue;
            if (!cdg.add(l, cand.via, cand.then)) {
              blocked_now.push_back(key);
              continue;
            }
            added.push_back({cand.via, cand.then});
          }
          settled[cand.sw] = 1;
          next[cand.sw] = cand.via;
          settle_order.push_back(cand.sw);
          offer(cand.sw, cand.dist);
        }
        bool impasse = false;
        for (SwIdx s = 0; s < n; ++s) impasse = impasse || (!settled[s] && hops.at(d, s) != kHopUnreachable);
        if (impasse) {
          // Escape: the whole destination along the spanning tree.
          for (const auto& [a, b] : added) cdg.remove(l, a, b);
          settle_order.clear();
          for (const SwIdx s : tree.bfs) {
            next[s] = s == d ? kNoChannel : tree.toward(g, s, d);
            settle_order.push_back(s);
          }
          // Nearest first for the weight update below: by tree distance to d.
          std::vector<std::uint32_t> depth(n, ~0u);
          depth[d] = 0;
          for (bool changed = true; changed;) {
            changed = false;
            for (const SwIdx s : tree.bfs)
              if (depth[s] == ~0u && next[s] != kNoChannel && depth[g.link[next[s]].peer] != ~0u)
                depth[s] = depth[g.link[next[s]].peer] + 1, changed = true;
          }
          std::stable_sort(settle_order.begin(), settle_order.end(), [&](SwIdx a, SwIdx b) { return depth[a] < depth[b]; });
        } else {
          for (const std::uint64_t key : blocked_now) blocked[l].insert(key);
        }
        for (const SwIdx s : settle_order)
          if (s != d && next[s] != kNoChannel) res.lfts[s].ports[lid] = g.link[next[s]].port;
        for (const SwIdx s : settle_order) carried[s] = g.ca_lids[s];
        for (std::size_t k = settle_order.size(); k-- > 1;) {
          const SwIdx s = settle_order[k];
          if (next[s] == kNoChannel) continue;
          load[next[s]] += carried[s];
          carried[g.link[next[s]].peer] += carried[s];
        }
        res.layers.set_lid(lid, static_cast<std::uint8_t>(l));
      }
    }
  res.lfts_s = seconds_since(t0);
  for (SwIdx d = 0; d < n; ++d) {
    std::uint32_t lids = 0;
    for (const std::uint32_t ti : g.targets_at(d)) lids += g.targets[ti].lid_count;
    for (SwIdx s = 0; s < n; ++s)
      if (s != d && hops.at(d, s) == kHopUnreachable) res.unreachable += lids;
  }
  return true;
}

}  // namespace madengine::sm
