// dor: dimension-order routing for tori and meshes (grid.hpp finds the
// coordinates). A route corrects x, then y, then z, each the short way round
// (a tie, half a ring, goes + or - by LID parity, which spreads it; from the
// next switch on, the same way is strictly shorter, so routes stay
// destination-based). Parallel cables between two switches share the LIDs.
// Deadlock freedom, as torus-2QoS gets it, but with a fixed VL per path (the
// SL2VL mapping is the identity): dimensions are taken in order, so
// dependencies only go from x channels to y and z channels; inside one ring
// direction, a path's layer carries one bit per ring of 4 or more switches:
// whether it crosses that ring's dateline (between coordinates n-1 and 0).
// Paths that do not cross never use the dateline channel, and shortest
// paths that do are too short to close the ring, so each layer's ring
// dependencies are acyclic. A 2D torus needs 4 layers, a 3D torus 8; a mesh
// 1. A missing cable (a damaged torus) is an error: the chain falls back.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "sm/routing/engine.hpp"
#include "sm/routing/grid.hpp"

namespace madengine::sm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string coord_text(const std::array<std::uint16_t, 3>& c) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", c[0], c[1], c[2]);
  return buf;
}

}  // namespace

bool route_dor(const EngineInput& in, RoutingResult& res) {
  const SwitchGraph& g = in.g;
  const std::size_t n = g.size();
  auto t0 = std::chrono::steady_clock::now();
  Grid grid;
  std::string error;
  if (!make_grid(g, in.opts.grid, grid, error)) {
    res.error = error;
    return false;
  }
  // Channels from each switch in each direction: [s][2d] = +d, [s][2d+1] = -d.
  std::vector<std::array<std::vector<ChannelId>, 6>> toward(n);
  for (SwIdx s = 0; s < n; ++s)
    for (ChannelId c = g.link_begin[s]; c < g.link_begin[s + 1]; ++c) {
      const auto& a = grid.coord[s];
      const auto& b = grid.coord[g.link[c].peer];
      for (unsigned d = 0; d < 3; ++d) {
        if (a[d] == b[d]) continue;
        if (grid.wrap[d] && grid.dims[d] == 2) {  // a ring of 2: every cable goes both ways round
          toward[s][2 * d].push_back(c);
          toward[s][2 * d + 1].push_back(c);
          continue;
        }
        const bool plus = grid.wrap[d] ? b[d] == (a[d] + 1u) % grid.dims[d] : b[d] == a[d] + 1u;
        toward[s][2 * d + (plus ? 0 : 1)].push_back(c);
      }
    }
  // Which rings need a dateline bit, and the layer count.
  std::array<int, 3> bit{-1, -1, -1};
  unsigned bits = 0;
  for (unsigned d = 0; d < 3; ++d)
    if (grid.wrap[d] && grid.dims[d] >= 4) bit[d] = static_cast<int>(bits++);
  const unsigned layers = 1u << bits;
  if (layers > in.vls) {
    res.error = "a " + std::to_string(bits) + "-ring torus needs " + std::to_string(layers) + " VLs for its datelines, " +
                std::to_string(in.vls) + " available";
    return false;
  }
  res.hop_tables_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  init_lfts(g, res);
  res.layers = fabric::PathLayers(n, res.top_lid);
  res.layers.set_count_at_least(static_cast<std::uint8_t>(layers));
  std::vector<std::uint8_t> row(n, 0);
  for (const LidTarget& t : g.targets) {
    const auto& dst = grid.coord[t.sw];
    for (std::uint8_t i = 0; i < t.lid_count; ++i) {
      const auto lid = static_cast<std::uint16_t>(t.base_lid + i);
      std::fill(row.begin(), row.end(), 0);
      for (SwIdx s = 0; s < n; ++s) {
        if (s == t.sw) continue;
        const auto& src = grid.coord[s];
        unsigned layer = 0, hops = 0;
        int first_dir = -1;
        for (unsigned d = 0; d < 3; ++d) {
          if (src[d] == dst[d]) continue;
          const unsigned size = grid.dims[d];
          bool plus;
          unsigned dist;
          if (grid.wrap[d]) {
            const unsigned fwd = (dst[d] + size - src[d]) % size, back = size - fwd;
            plus = fwd < back || (fwd == back && lid % 2 == 0);
            dist = plus ? fwd : back;
            const bool crosses = plus ? dst[d] < src[d] : dst[d] > src[d];
            if (crosses && bit[d] >= 0) layer |= 1u << bit[d];
          } else {
            plus = dst[d] > src[d];
            dist = plus ? dst[d] - src[d] : src[d] - dst[d];
          }
          if (grid.wrap[d] && size == 2) plus = lid % 2 == 0;  // either cable: split by LID
          hops += dist;
          if (first_dir < 0) first_dir = static_cast<int>(2 * d + (plus ? 0 : 1));
        }
        const auto& out = toward[s][static_cast<std::size_t>(first_dir)];
        if (out.empty()) {
          res.error = "switch " + coord_text(src) + " has no link in direction " + "xyz"[first_dir / 2] +
                      (first_dir % 2 == 0 ? "+" : "-") + " (a damaged grid)";
          return false;
        }
        res.lfts[s].ports[lid] = g.link[out[lid / 2 % out.size()]].port;
        row[s] = static_cast<std::uint8_t>(layer);
        res.max_hops = std::max<std::uint8_t>(res.max_hops, static_cast<std::uint8_t>(std::min(hops, 255u)));
      }
      res.layers.set_row(lid, row);
    }
  }
  res.lfts_s = seconds_since(t0);
  return true;
}

}  // namespace madengine::sm
