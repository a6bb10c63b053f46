// Path layering (see layering.hpp) on LayeredCdg.
#include "sm/routing/layering.hpp"

#include <algorithm>

#include "sm/routing/cdg.hpp"

namespace madengine::sm {

namespace {
constexpr ChannelId kDeliver = kNoChannel - 1;
}  // namespace

bool assign_layers(const SwitchGraph& g, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid, unsigned vls,
                   fabric::PathLayers& out, std::string& error) {
  const std::size_t n = g.size();
  out = fabric::PathLayers(n, top_lid);
  out.set_count_at_least(1);
  vls = std::max(1u, vls);
  LayeredCdg cdg(g, vls);
  std::vector<SwIdx> home(top_lid + 1u, kNoSwitch);
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) home[t.base_lid + i] = t.sw;
  std::vector<ChannelId> next(n);
  std::vector<std::int32_t> depth(n);
  std::vector<SwIdx> walk, order;
  std::vector<std::uint32_t> by_depth(n + 2);
  std::vector<std::uint8_t> layer(n);
  std::vector<std::pair<ChannelId, ChannelId>> added;
  for (std::uint32_t lid = 1; lid <= top_lid; ++lid) {
    const SwIdx d = home[lid];
    if (d == kNoSwitch) continue;
    for (SwIdx s = 0; s < n; ++s) {
      const std::uint8_t p = lid < lfts[s].ports.size() ? lfts[s].ports[lid] : fabric::kLftNoRoute;
      next[s] = s == d ? kDeliver : (p == fabric::kLftNoRoute || p == 0 ? kNoChannel : g.channel_at(s, p));
    }
    // Depth along the routes (memoised walks; loops and drops stay -1).
    std::fill(depth.begin(), depth.end(), -2);
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
    // Sources by depth (counting sort): a path's continuation comes first.
    std::fill(by_depth.begin(), by_depth.end(), 0u);
    for (SwIdx s = 0; s < n; ++s)
      if (depth[s] >= 0) ++by_depth[std::min<std::size_t>(static_cast<std::size_t>(depth[s]), n) + 1];
    for (std::size_t i = 1; i < by_depth.size(); ++i) by_depth[i] += by_depth[i - 1];
    order.resize(by_depth.back());
    for (SwIdx s = 0; s < n; ++s)
      if (depth[s] >= 0) order[by_depth[std::min<std::size_t>(static_cast<std::size_t>(depth[s]), n)]++] = s;
    std::fill(layer.begin(), layer.end(), 0);
    for (const SwIdx s : order) {
      if (depth[s] < 2) continue;  // one channel or none: no dependency
      const ChannelId c1 = next[s];
      const SwIdx q = g.link[c1].peer;
      const std::uint8_t lq = layer[q];
      if (cdg.add(lq, c1, next[q])) {
        layer[s] = lq;
        continue;
      }
      bool placed = false;
      for (unsigned l = 0; l < vls && !placed; ++l) {
        if (l == lq) continue;
        added.clear();
        bool fits = true;
        for (SwIdx at = s; depth[at] >= 2; at = g.link[next[at]].peer) {
          const ChannelId a = next[at], b = next[g.link[a].peer];
          if (cdg.has(l, a, b)) continue;
          if (!cdg.add(l, a, b)) {
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
