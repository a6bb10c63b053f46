// Path layering (see layering.hpp) on LayeredCdg.
#include "sm/routing/layering.hpp"

#include <algorithm>
#include <span>

#include "engine/parallel_for.hpp"
#include "sm/routing/cdg.hpp"

namespace madengine::sm {

namespace {

constexpr ChannelId kDeliver = kNoChannel - 1;
// Cycle breaking keeps two bytes per (switch, LID): above this, first fit only.
constexpr std::size_t kCycleBreakingPathsMax = std::size_t{32} << 20;

// LFT columns read a block of LIDs at a time: one cache line per switch for
// 64 LIDs, instead of a line per (switch, LID) when a LID's routes are read
// across every switch's table.
struct LftColumns {
  static constexpr std::size_t kLids = 64;
  std::uint32_t first = 0;
  std::vector<std::uint8_t> ports;  // [s * kLids + lid - first]; empty: none read yet

  const std::uint8_t* column(const std::vector<fabric::Lft>& lfts, std::uint32_t lid) {
    if (ports.empty() || lid < first || lid - first >= kLids) {
      first = lid - lid % kLids;
      ports.assign(lfts.size() * kLids, fabric::kLftNoRoute);
      for (std::size_t s = 0; s < lfts.size(); ++s) {
        const fabric::CowVector<std::uint8_t>& p = lfts[s].ports;
        if (first < p.size())
          std::copy(p.begin() + first, p.begin() + std::min<std::size_t>(p.size(), first + kLids), ports.begin() + s * kLids);
      }
    }
    return ports.data() + (lid - first);
  }
};

// One LID's routes: each switch's next channel and depth (memoised walks;
// loops and drops get depth -1).
struct LidRoutes {
  std::vector<ChannelId> next;
  std::vector<std::int32_t> depth;
  std::vector<SwIdx> walk;
  LftColumns columns;

  void load(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint32_t lid, SwIdx home) {
    const std::size_t n = g.size();
    next.resize(n);
    depth.assign(n, -2);
    const std::uint8_t* col = columns.column(lfts, lid);
    for (SwIdx s = 0; s < n; ++s) {
      const std::uint8_t p = col[s * LftColumns::kLids];
      next[s] = s == home ? kDeliver : (p == fabric::kLftNoRoute || p == 0 ? kNoChannel : g.channel_at(s, p));
    }
    for (SwIdx start = 0; start < n; ++start) {
      walk.clear();
      SwIdx s = start;
      while (depth[s] == -2) {
        if (next[s] == kDeliver) {
          depth[s] = 0;
          break;
        }
        if (next[s] == kNoChannel) break;
        depth[s] = -3;  // on this walk
        walk.push_back(s);
        s = g.link[next[s]].peer;
      }
      std::int32_t tail = depth[s] >= 0 ? depth[s] : -1;
      if (depth[s] < -1) depth[s] = -1;
      while (!walk.empty()) {
        tail = tail < 0 ? -1 : tail + 1;
        depth[walk.back()] = tail;
        walk.pop_back();
      }
    }
  }
};

std::size_t max_degree(const SwitchGraph& g) {
  std::size_t degree = 1;
  for (SwIdx s = 0; s < g.size(); ++s) degree = std::max<std::size_t>(degree, g.link_begin[s + 1] - g.link_begin[s]);
  return degree;
}

// The dependencies the routes to `lids` induce, as bytes
// [c1 * degree + index of c2 among the links of c1's far switch].
void collect_dependencies(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::span<const std::uint16_t> lids,
                          const std::vector<SwIdx>& home, LidRoutes& routes, std::size_t degree,
                          std::vector<std::uint8_t>& dep) {
  for (const std::uint16_t lid : lids) {
    if (home[lid] == kNoSwitch) continue;
    routes.load(g, lfts, lid, home[lid]);
    for (SwIdx s = 0; s < g.size(); ++s) {
      if (routes.depth[s] < 2) continue;
      const ChannelId c1 = routes.next[s];
      const SwIdx q = g.link[c1].peer;
      dep[std::size_t{c1} * degree + (routes.next[q] - g.link_begin[q])] = 1;
    }
  }
}

// The same on `threads` threads, each on a run of LIDs (runs keep the LFT
// columns' 64-LID reads whole) into a set of its own, merged after: a set
// does not depend on the order it was filled in, so neither do the layers.
void collect_dependencies(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts,
                          const std::vector<std::uint16_t>& lids, const std::vector<SwIdx>& home, LidRoutes& routes,
                          std::size_t degree, std::vector<std::uint8_t>& dep, unsigned threads) {
  constexpr std::size_t kLidsPerThreadMin = 1024;  // below: the threads' start and merge cost more than they save
  const std::size_t runs = std::clamp<std::size_t>(lids.size() / kLidsPerThreadMin, 1, threads);
  if (runs == 1) {
    collect_dependencies(g, lfts, lids, home, routes, degree, dep);
    return;
  }
  std::vector<std::vector<std::uint8_t>> own(runs - 1);
  const std::size_t per = (lids.size() + runs - 1) / runs;
  parallel_for(runs, static_cast<unsigned>(runs), [&](std::size_t r) {
    const std::size_t first = std::min(lids.size(), r * per), last = std::min(lids.size(), first + per);
    const std::span<const std::uint16_t> run(lids.data() + first, last - first);
    if (r == 0) {
      collect_dependencies(g, lfts, run, home, routes, degree, dep);
      return;
    }
    LidRoutes mine;
    own[r - 1].assign(dep.size(), 0);
    collect_dependencies(g, lfts, run, home, mine, degree, own[r - 1]);
  });
  for (const std::vector<std::uint8_t>& o : own)
    for (std::size_t i = 0; i < dep.size(); ++i) dep[i] |= o[i];
}

// An order of the channels close to topological for a dependency graph:
// reverse DFS postorder (exactly topological where it has no cycle), as
// each channel's position. True when the graph has no cycle.
bool dependency_order(const SwitchGraph& g, const std::vector<std::uint8_t>& dep, std::size_t degree,
                      std::vector<std::uint32_t>& position) {
  const std::size_t channels = g.channels();
  std::vector<std::uint8_t> colour(channels, 0);  // 1: on the DFS stack, 2: done
  std::vector<ChannelId> post;
  post.reserve(channels);
  std::vector<std::pair<ChannelId, std::size_t>> stack;
  bool acyclic = true;
  for (ChannelId start = 0; start < channels; ++start) {
    if (colour[start] != 0) continue;
    colour[start] = 1;
    stack.assign(1, {start, 0});
    while (!stack.empty()) {
      auto& [c, j] = stack.back();
      const SwIdx b = g.link[c].peer;
      const std::size_t out = g.link_begin[b + 1] - g.link_begin[b];
      if (j < out) {
        const std::size_t k = j++;
        if (!dep[std::size_t{c} * degree + k]) continue;
        const ChannelId c2 = g.link_begin[b] + static_cast<ChannelId>(k);
        if (colour[c2] == 1) acyclic = false;
        if (colour[c2] == 0) {
          colour[c2] = 1;
          stack.push_back({c2, 0});
        }
        continue;
      }
      colour[c] = 2;
      post.push_back(c);
      stack.pop_back();
    }
  }
  position.resize(channels);
  for (std::size_t i = 0; i < post.size(); ++i) position[post[i]] = static_cast<std::uint32_t>(post.size() - 1 - i);
  return acyclic;
}

// A topological order of the acyclic dependency graph `dep` that places
// each channel right after the channels it depends on: postorder of a DFS
// over predecessors, channels taken by id (a switch's links together). On
// a fat tree the up channels into a core come just before its down
// channels, core by core, so a dependency that turns down then up (a switch
// LID's route) is already in order for about half of the pairs of cores.
std::vector<std::uint32_t> predecessors_first_order(const SwitchGraph& g, const std::vector<std::uint8_t>& dep,
                                                    std::size_t degree) {
  const std::size_t channels = g.channels();
  std::vector<std::uint32_t> position(channels);
  std::vector<std::uint8_t> seen(channels, 0);
  std::vector<std::pair<ChannelId, ChannelId>> stack;  // channel, next link of its near switch to look at
  std::uint32_t next = 0;
  for (ChannelId start = 0; start < channels; ++start) {
    if (seen[start]) continue;
    seen[start] = 1;
    stack.assign(1, {start, g.link_begin[g.channel_from[start]]});
    while (!stack.empty()) {
      auto& [c, out] = stack.back();
      const SwIdx a = g.channel_from[c];
      const std::size_t j = c - g.link_begin[a];
      if (out < g.link_begin[a + 1]) {
        const ChannelId p = g.link[out++].reverse;  // into a
        if (p != kNoChannel && !seen[p] && dep[std::size_t{p} * degree + j]) {
          seen[p] = 1;
          stack.push_back({p, g.link_begin[g.channel_from[p]]});
        }
        continue;
      }
      position[c] = next++;
      stack.pop_back();
    }
  }
  return position;
}

// First fit's state: the layers' graphs and the LID being placed.
struct FirstFit {
  const SwitchGraph& g;
  const std::vector<fabric::Lft>& lfts;
  unsigned vls;
  LayeredCdg cdg;
  std::vector<SwIdx> home;  // by LID: its switch
  LidRoutes routes;
  std::vector<SwIdx> order;
  // layer before by_depth: GCC 12 at -O3 otherwise assumes n + 2 may wrap
  // and warns that layer(n) could exceed the largest object.
  std::vector<std::uint8_t> layer;
  std::vector<std::uint32_t> by_depth;
  std::vector<std::pair<ChannelId, ChannelId>> added;

  FirstFit(const SwitchGraph& graph, const std::vector<fabric::Lft>& l, std::uint16_t top_lid, unsigned layers)
      : g(graph), lfts(l), vls(layers), cdg(graph, layers), home(top_lid + 1u, kNoSwitch), layer(graph.size()),
        by_depth(graph.size() + 2) {
    for (const LidTarget& t : g.targets)
      for (std::uint8_t i = 0; i < t.lid_count; ++i) home[t.base_lid + i] = t.sw;
  }

  // Every dependency of s's path into layer l, or none (false).
  bool add_path(unsigned l, SwIdx s) {
    const std::vector<ChannelId>& next = routes.next;
    added.clear();
    for (SwIdx at = s; routes.depth[at] >= 2; at = g.link[next[at]].peer) {
      const ChannelId a = next[at], b = next[g.link[a].peer];
      if (cdg.has(l, a, b)) continue;
      if (cdg.refused(l, a, b) || !cdg.add(l, a, b)) {
        // Refused with nothing of this attempt added: by what stays.
        if (added.empty()) cdg.refuse(l, a, b);
        for (const auto& [x, y] : added) cdg.remove(l, x, y);
        return false;
      }
      added.push_back({a, b});
    }
    return true;
  }

  // The layers of every path to `lid`, nearest sources first. A path joins
  // the layer of the path it continues when its one new dependency keeps
  // that layer acyclic, else the first layer that takes all its dependencies.
  bool place(std::uint16_t lid, fabric::PathLayers& out, std::string& error) {
    const std::size_t n = g.size();
    const SwIdx d = home[lid];
    if (d == kNoSwitch) return true;
    routes.load(g, lfts, lid, d);
    const std::vector<ChannelId>& next = routes.next;
    const std::vector<std::int32_t>& depth = routes.depth;
    // Sources by depth (counting sort; ties by GUID, not discovery order): a
    // path's continuation comes first.
    std::fill(by_depth.begin(), by_depth.end(), 0u);
    for (SwIdx s = 0; s < n; ++s)
      if (depth[s] >= 0) ++by_depth[std::min<std::size_t>(static_cast<std::size_t>(depth[s]), n) + 1];
    for (std::size_t i = 1; i < by_depth.size(); ++i) by_depth[i] += by_depth[i - 1];
    order.resize(by_depth.back());
    for (const SwIdx s : g.by_guid)
      if (depth[s] >= 0) order[by_depth[std::min<std::size_t>(static_cast<std::size_t>(depth[s]), n)]++] = s;
    std::fill(layer.begin(), layer.end(), 0);
    for (const SwIdx s : order) {
      if (depth[s] < 2) continue;  // one channel or none: no dependency
      const ChannelId c1 = next[s];
      const SwIdx q = g.link[c1].peer;
      const std::uint8_t lq = layer[q];
      if (!cdg.refused(lq, c1, next[q])) {
        if (cdg.add(lq, c1, next[q])) {
          layer[s] = lq;
          continue;
        }
        cdg.refuse(lq, c1, next[q]);
      }
      bool placed = false;
      for (unsigned l = 0; l < vls && !placed; ++l) {
        if (l == lq || !add_path(l, s)) continue;
        layer[s] = static_cast<std::uint8_t>(l);
        placed = true;
      }
      if (!placed) {
        error = "the channel dependency graph needs more than " + std::to_string(vls) + " VL layer" +
                (vls == 1 ? "" : "s") + " (LID " + std::to_string(lid) + ")";
        return false;
      }
    }
    out.set_row(lid, layer);
    return true;
  }
};

bool first_fit(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
               fabric::PathLayers& out, std::string& error, unsigned threads);

}  // namespace

bool assign_layers(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
                   fabric::PathLayers& out, std::string& error, unsigned threads) {
  if (first_fit(g, lfts, top_lid, vls, out, error, threads)) return true;
  if (g.size() * (top_lid + std::size_t{1}) > kCycleBreakingPathsMax) return false;
  std::string why;
  if (assign_layers_by_cycles(g, lfts, top_lid, vls, out, why)) return true;
  error += "; cycle breaking: " + why;
  return false;
}

bool assign_layers_by_cycles(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                             unsigned vls, fabric::PathLayers& out, std::string& error) {
  const std::size_t n = g.size(), lids = top_lid + std::size_t{1};
  vls = std::max(1u, vls);
  std::size_t degree = 1;
  for (SwIdx s = 0; s < n; ++s) degree = std::max<std::size_t>(degree, g.link_begin[s + 1] - g.link_begin[s]);
  // Dependencies c1 -> c2 as (c1, index of c2 among the links of c1's far switch).
  const auto dep = [&](ChannelId c1, ChannelId c2) { return std::size_t{c1} * degree + (c2 - g.link_begin[g.link[c1].peer]); };
  const auto next = [&](SwIdx s, std::uint32_t lid) { return g.channel_at(s, lfts[s].ports[lid]); };
  std::vector<std::vector<std::uint32_t>> paths(1, std::vector<std::uint32_t>(g.channels() * degree, 0));  // [layer][dep]
  std::vector<std::uint8_t> layer(n * lids, 0);  // [lid * n + src switch]
  std::vector<std::uint8_t> depth(n * lids, 0xff);  // [lid * n + switch]: hops to the LID's switch, 0xff unrouted
  std::vector<std::uint32_t> order_begin(lids + 1, 0);  // [lid]: routed switches by depth, into order
  std::vector<SwIdx> order;
  std::vector<SwIdx> home(lids, kNoSwitch);
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) home[t.base_lid + i] = t.sw;
  LidRoutes r;
  std::vector<std::uint32_t> carried(n), count;
  // Layer 0: every path. A dependency at switch s towards a LID is induced by
  // the path of every switch whose route passes s.
  for (std::uint32_t lid = 1; lid < lids; ++lid) {
    order_begin[lid] = static_cast<std::uint32_t>(order.size());
    if (home[lid] == kNoSwitch) continue;
    r.load(g, lfts, lid, home[lid]);
    count.assign(std::min<std::size_t>(n, 0xfe) + 2, 0);
    for (SwIdx s = 0; s < n; ++s)
      if (r.depth[s] >= 0 && r.depth[s] < 0xff) ++count[r.depth[s] + 1u], depth[lid * n + s] = static_cast<std::uint8_t>(r.depth[s]);
    for (std::size_t i = 1; i < count.size(); ++i) count[i] += count[i - 1];
    const std::size_t base = order.size();
    order.resize(base + count.back());
    for (SwIdx s = 0; s < n; ++s)
      if (r.depth[s] >= 0 && r.depth[s] < 0xff) order[base + count[r.depth[s]]++] = s;
    for (std::size_t k = base; k < order.size(); ++k) carried[order[k]] = 1;
    for (std::size_t k = order.size(); k-- > base;) {
      const SwIdx s = order[k];
      if (r.depth[s] < 1) continue;
      const SwIdx q = g.link[r.next[s]].peer;
      carried[q] += carried[s];
      if (r.depth[s] >= 2) paths[0][dep(r.next[s], r.next[q])] += carried[s];
    }
  }
  order_begin[lids] = static_cast<std::uint32_t>(order.size());
  // Cycle search over a layer's dependencies (iterative DFS): the cycle's
  // dependencies, or none.
  std::vector<std::uint8_t> colour;
  std::vector<std::pair<ChannelId, std::size_t>> stack;
  auto find_cycle = [&](const std::vector<std::uint32_t>& layer_paths, std::vector<std::size_t>& cycle) {
    cycle.clear();
    colour.assign(g.channels(), 0);
    for (ChannelId start = 0; start < g.channels(); ++start) {
      if (colour[start] != 0) continue;
      stack.assign(1, {start, 0});
      colour[start] = 1;
      while (!stack.empty()) {
        auto& [c, j] = stack.back();
        const SwIdx b = g.link[c].peer;
        const std::size_t out_links = g.link_begin[b + 1] - g.link_begin[b];
        if (j < out_links) {
          const std::size_t k = j++;
          if (layer_paths[std::size_t{c} * degree + k] == 0) continue;
          const ChannelId c2 = g.link_begin[b] + static_cast<ChannelId>(k);
          if (colour[c2] == 1) {
            for (std::size_t i = stack.size(); i-- > 0;) {
              const ChannelId from = stack[i].first;
              const ChannelId to = i + 1 < stack.size() ? stack[i + 1].first : c2;
              cycle.push_back(dep(from, to));
              if (from == c2) break;
            }
            return true;
          }
          if (colour[c2] == 0) {
            colour[c2] = 1;
            stack.push_back({c2, 0});
          }
          continue;
        }
        colour[c] = 2;
        stack.pop_back();
      }
    }
    return false;
  };
  std::vector<std::size_t> cycle;
  std::vector<std::uint8_t> passes(n);  // this LID: does s's route pass the weak dependency's switch
  for (unsigned l = 0; l < vls && l < paths.size(); ++l) {
    while (find_cycle(paths[l], cycle)) {
      if (l + 1 >= vls) {
        error = "the channel dependency graph needs more than " + std::to_string(vls) + " VL layer" + (vls == 1 ? "" : "s");
        return false;
      }
      if (paths.size() <= l + 1) paths.emplace_back(g.channels() * degree, 0);
      std::size_t weak = cycle.front();
      for (const std::size_t d : cycle)
        if (paths[l][d] < paths[l][weak]) weak = d;
      const auto c1 = static_cast<ChannelId>(weak / degree);
      const SwIdx a = g.channel_from[c1], b = g.link[c1].peer;
      const ChannelId c2 = g.link_begin[b] + static_cast<ChannelId>(weak % degree);
      // Every path on layer l through c1 then c2 moves up: the sources whose
      // route passes a, nearest first (a route's next switch is one hop nearer).
      for (std::uint32_t lid = 1; lid < lids; ++lid) {
        if (home[lid] == kNoSwitch || a == home[lid] || b == home[lid]) continue;
        if (next(a, lid) != c1 || next(b, lid) != c2) continue;
        const std::uint8_t* dl = depth.data() + std::size_t{lid} * n;
        for (std::uint32_t k = order_begin[lid]; k < order_begin[lid + 1]; ++k) {
          const SwIdx x = order[k];
          passes[x] = x == a ? 1 : (dl[x] <= dl[a] ? 0 : passes[g.link[next(x, lid)].peer]);
          if (passes[x] == 0 || layer[std::size_t{lid} * n + x] != l) continue;
          layer[std::size_t{lid} * n + x] = static_cast<std::uint8_t>(l + 1);
          for (SwIdx s = x; dl[s] >= 2; s = g.link[next(s, lid)].peer) {
            const std::size_t d = dep(next(s, lid), next(g.link[next(s, lid)].peer, lid));
            --paths[l][d];
            ++paths[l + 1][d];
          }
        }
      }
      if (paths[l][weak] != 0) {  // every path inducing it moved: a count gone wrong would loop forever
        error = "cycle breaking lost count of a dependency's paths";
        return false;
      }
    }
  }
  out = fabric::PathLayers(n, top_lid);
  out.set_count_at_least(1);
  std::vector<std::uint8_t> row(n);
  for (std::uint32_t lid = 1; lid < lids; ++lid) {
    std::copy(layer.begin() + static_cast<std::ptrdiff_t>(std::size_t{lid} * n),
              layer.begin() + static_cast<std::ptrdiff_t>(std::size_t{lid + 1} * n), row.begin());
    out.set_row(static_cast<std::uint16_t>(lid), row);
  }
  return true;
}

bool assign_layers_first_fit(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                             unsigned vls, fabric::PathLayers& out, std::string& error) {
  return first_fit(g, lfts, top_lid, vls, out, error, 1);
}

namespace {

bool first_fit(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
               fabric::PathLayers& out, std::string& error, unsigned threads) {
  const std::size_t n = g.size();
  // Every switch has a LID, so this never fires; the bound lets the optimiser
  // see that the sizes below cannot wrap (g++ 12 -O3 warns otherwise).
  if (n > fabric::kLidUnicastMax) {
    error = "more switches than unicast LIDs";
    return false;
  }
  out = fabric::PathLayers(n, top_lid);
  out.set_count_at_least(1);
  vls = std::max(1u, vls);
  FirstFit ff(g, lfts, top_lid, vls);
  // CA LIDs first, switches' own LIDs last (as dfsssp routes them): the
  // switches' routes are the ones that turn down then up (a spine's route to
  // another spine), so they get whatever layer is left.
  std::vector<std::uint16_t> ca, rest;
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) (t.is_switch ? rest : ca).push_back(static_cast<std::uint16_t>(t.base_lid + i));
  // The CA LIDs' routes together, checked at once: when their dependencies
  // have no cycle (up*/down* routes of a fat tree), first fit would place
  // each of their paths on layer 0, so layer 0 takes them all in one step
  // (none of the switches' either when all the dependencies together have
  // no cycle: one layer). The orders start close to topological for all the
  // dependencies (layer 0's exactly so for the CA routes'), so that most
  // additions are in order.
  const std::size_t degree = max_degree(g);
  std::vector<std::uint8_t> dep(g.channels() * degree, 0);
  std::vector<std::uint32_t> position;
  collect_dependencies(g, lfts, ca, ff.home, ff.routes, degree, dep, threads);
  if (!dependency_order(g, dep, degree, position)) {
    collect_dependencies(g, lfts, rest, ff.home, ff.routes, degree, dep, threads);
    dependency_order(g, dep, degree, position);
    std::vector<std::uint8_t>().swap(dep);
    ff.cdg.set_initial_order(position);
    for (const std::vector<std::uint16_t>* lids : {&ca, &rest})
      for (const std::uint16_t lid : *lids)
        if (!ff.place(lid, out, error)) return false;
    return true;
  }
  std::vector<std::uint8_t> all = dep;
  collect_dependencies(g, lfts, rest, ff.home, ff.routes, degree, all, threads);
  if (dependency_order(g, all, degree, position)) return true;
  std::vector<std::uint8_t>().swap(all);
  ff.cdg.set_initial_order(position);
  ff.cdg.set_order(0, predecessors_first_order(g, dep, degree));
  ff.cdg.add_acyclic(0, dep, degree);
  std::vector<std::uint8_t>().swap(dep);
  for (const std::uint16_t lid : rest)
    if (!ff.place(lid, out, error)) return false;
  return true;
}

}  // namespace

}  // namespace madengine::sm
