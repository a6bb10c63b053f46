// Path layering (see layering.hpp) on LayeredCdg.
#include "sm/routing/layering.hpp"

#include <algorithm>

#include "sm/routing/cdg.hpp"

namespace madengine::sm {

namespace {

constexpr ChannelId kDeliver = kNoChannel - 1;
// Cycle breaking keeps two bytes per (switch, LID): above this, first fit only.
constexpr std::size_t kCycleBreakingPathsMax = std::size_t{32} << 20;

// One LID's routes: each switch's next channel and depth (memoised walks;
// loops and drops get depth -1).
struct LidRoutes {
  std::vector<ChannelId> next;
  std::vector<std::int32_t> depth;
  std::vector<SwIdx> walk;

  void load(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint32_t lid, SwIdx home) {
    const std::size_t n = g.size();
    next.resize(n);
    depth.assign(n, -2);
    for (SwIdx s = 0; s < n; ++s) {
      const std::uint8_t p = lid < lfts[s].ports.size() ? lfts[s].ports[lid] : fabric::kLftNoRoute;
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

// An order of the channels close to topological for all the routes'
// dependencies together: reverse DFS postorder of their graph (exactly
// topological where it has no cycle), as each channel's position.
std::vector<std::uint32_t> dependency_order(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts,
                                            std::uint16_t top_lid, const std::vector<SwIdx>& home, LidRoutes& routes) {
  const std::size_t n = g.size(), channels = g.channels();
  std::size_t degree = 1;
  for (SwIdx s = 0; s < n; ++s) degree = std::max<std::size_t>(degree, g.link_begin[s + 1] - g.link_begin[s]);
  std::vector<std::uint8_t> dep(channels * degree, 0);  // [c1 * degree + index of c2 at its switch]
  for (std::uint32_t lid = 1; lid <= top_lid; ++lid) {
    if (home[lid] == kNoSwitch) continue;
    routes.load(g, lfts, lid, home[lid]);
    for (SwIdx s = 0; s < n; ++s) {
      if (routes.depth[s] < 2) continue;
      const ChannelId c1 = routes.next[s];
      const SwIdx q = g.link[c1].peer;
      dep[std::size_t{c1} * degree + (routes.next[q] - g.link_begin[q])] = 1;
    }
  }
  std::vector<std::uint8_t> seen(channels, 0);
  std::vector<ChannelId> post;
  post.reserve(channels);
  std::vector<std::pair<ChannelId, std::size_t>> stack;
  for (ChannelId start = 0; start < channels; ++start) {
    if (seen[start]) continue;
    seen[start] = 1;
    stack.assign(1, {start, 0});
    while (!stack.empty()) {
      auto& [c, j] = stack.back();
      const SwIdx b = g.link[c].peer;
      const std::size_t out = g.link_begin[b + 1] - g.link_begin[b];
      if (j < out) {
        const std::size_t k = j++;
        const ChannelId c2 = g.link_begin[b] + static_cast<ChannelId>(k);
        if (dep[std::size_t{c} * degree + k] && !seen[c2]) {
          seen[c2] = 1;
          stack.push_back({c2, 0});
        }
        continue;
      }
      post.push_back(c);
      stack.pop_back();
    }
  }
  std::vector<std::uint32_t> position(channels);
  for (std::size_t i = 0; i < post.size(); ++i) position[post[i]] = static_cast<std::uint32_t>(post.size() - 1 - i);
  return position;
}

}  // namespace

bool assign_layers(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
                   fabric::PathLayers& out, std::string& error) {
  if (assign_layers_first_fit(g, lfts, top_lid, vls, out, error)) return true;
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
  LayeredCdg cdg(g, vls);
  std::vector<SwIdx> home(top_lid + 1u, kNoSwitch);
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) home[t.base_lid + i] = t.sw;
  LidRoutes routes;
  cdg.set_initial_order(dependency_order(g, lfts, top_lid, home, routes));
  std::vector<SwIdx> order;
  // layer before by_depth: GCC 12 at -O3 otherwise assumes n + 2 may wrap
  // and warns that layer(n) could exceed the largest object.
  std::vector<std::uint8_t> layer(n);
  std::vector<std::uint32_t> by_depth(n + 2);
  std::vector<std::pair<ChannelId, ChannelId>> added;
  // CA LIDs first, switches' own LIDs last (as dfsssp routes them): the
  // switches' routes are the ones that turn down then up (a spine's route to
  // another spine), so they get whatever layer is left.
  std::vector<std::uint16_t> lids;
  for (const bool switches : {false, true})
    for (const LidTarget& t : g.targets)
      if (t.is_switch == switches)
        for (std::uint8_t i = 0; i < t.lid_count; ++i) lids.push_back(static_cast<std::uint16_t>(t.base_lid + i));
  for (const std::uint32_t lid : lids) {
    const SwIdx d = home[lid];
    if (d == kNoSwitch) continue;
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
        if (l == lq) continue;
        added.clear();
        bool fits = true;
        for (SwIdx at = s; depth[at] >= 2; at = g.link[next[at]].peer) {
          const ChannelId a = next[at], b = next[g.link[a].peer];
          if (cdg.has(l, a, b)) continue;
          if (cdg.refused(l, a, b) || !cdg.add(l, a, b)) {
            // Refused with nothing of this attempt added: by what stays.
            if (added.empty()) cdg.refuse(l, a, b);
            fits = false;
            break;
          }
          added.push_back({a, b});
        }
        if (fits) {
          layer[s] = static_cast<std::uint8_t>(l);
          placed = true;
        } else {
          for (const auto& [a, b] : added) cdg.remove(l, a, b);
        }
      }
      if (!placed) {
        error = "the channel dependency graph needs more than " + std::to_string(vls) + " VL layer" +
                (vls == 1 ? "" : "s") + " (LID " + std::to_string(lid) + ")";
        return false;
      }
    }
    out.set_row(static_cast<std::uint16_t>(lid), layer);
  }
  return true;
}

}  // namespace madengine::sm
