// Torus and mesh coordinates (see grid.hpp).
#include "sm/routing/grid.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>

namespace madengine::sm {

namespace {

constexpr SwIdx kNone = kNoSwitch;

std::string coord_text(const std::array<std::uint16_t, 3>& c) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", c[0], c[1], c[2]);
  return buf;
}

// Distinct neighbour switches of every switch, sorted.
std::vector<std::vector<SwIdx>> neighbours(const SwitchGraph& g) {
  std::vector<std::vector<SwIdx>> nb(g.size());
  for (SwIdx s = 0; s < g.size(); ++s) {
    for (const SwitchLink& l : g.links(s))
      if (l.peer != s) nb[s].push_back(l.peer);
    std::sort(nb[s].begin(), nb[s].end());
    nb[s].erase(std::unique(nb[s].begin(), nb[s].end()), nb[s].end());
  }
  return nb;
}

class Inference {
 public:
  Inference(const SwitchGraph& g) : g_(g), nb_(neighbours(g)) {}

  bool run(Grid& out, std::string& error) {
    const std::size_t n = g_.size();
    out.coord.assign(n, {0, 0, 0});
    if (n == 1) return true;
    for (const auto& v : nb_)
      if (v.size() > 6) return fail(error, "a switch has more than 6 neighbour switches");
    // Origin: a switch with the fewest neighbours (a mesh's corner), lowest GUID.
    SwIdx o = 0;
    for (SwIdx s = 1; s < n; ++s)
      if (nb_[s].size() < nb_[o].size() || (nb_[s].size() == nb_[o].size() && g_.guid[s] < g_.guid[o])) o = s;
    // Axes at the origin: a neighbour and its straight opposite, or a neighbour alone (a line's end).
    std::vector<std::array<SwIdx, 2>> axes;  // {+, -}
    std::vector<SwIdx> left = nb_[o];
    while (!left.empty()) {
      const SwIdx a = left.front();
      left.erase(left.begin());
      SwIdx opposite = kNone;
      for (const SwIdx c : left)
        if (straight(a, o, c)) {
          if (opposite != kNone) return fail(error, "ambiguous straight lines at the origin");
          opposite = c;
        }
      if (opposite != kNone) left.erase(std::find(left.begin(), left.end(), opposite));
      std::array<SwIdx, 2> axis{a, opposite};
      if (opposite != kNone && g_.guid[opposite] < g_.guid[a]) std::swap(axis[0], axis[1]);
      axes.push_back(axis);
    }
    if (axes.size() > 3)
      return fail(error, "more than 3 dimensions, or rings of 3 or 4 switches (whose lines cannot be told apart): give the coordinates");
    // Each axis' length and whether it wraps: walk + from the origin.
    for (std::size_t k = 0; k < axes.size(); ++k) {
      SwIdx prev = o, at = axes[k][0];
      unsigned len = 2;
      bool ring = false;
      for (;;) {
        const SwIdx nx = straight_next(prev, at);
        if (nx == kNone) break;
        if (nx == o) {
          ring = true;
          break;
        }
        if (++len > 255) return fail(error, "a line longer than 255 switches");
        prev = at;
        at = nx;
      }
      if (ring != (axes[k][1] != kNone)) return fail(error, "a line that neither ends nor closes at the origin");
      if (ring && len < 5) return fail(error, "rings of fewer than 5 switches: give the coordinates");
      out.dims[k] = static_cast<std::uint16_t>(len);
      out.wrap[k] = ring;
    }
    // Fill the grid: every switch knows its neighbour in each direction.
    using Dirs = std::array<SwIdx, 6>;  // [2k] = +k, [2k+1] = -k
    std::vector<Dirs> dir(n);
    std::vector<std::uint8_t> seen(n, 0);
    Dirs d0;
    d0.fill(kNone);
    for (std::size_t k = 0; k < axes.size(); ++k) d0[2 * k] = axes[k][0], d0[2 * k + 1] = axes[k][1];
    dir[o] = d0;
    seen[o] = 1;
    std::deque<SwIdx> queue{o};
    while (!queue.empty()) {
      const SwIdx v = queue.front();
      queue.pop_front();
      for (std::size_t k = 0; k < axes.size(); ++k)
        for (unsigned sign = 0; sign < 2; ++sign) {
          const SwIdx u = dir[v][2 * k + sign];
          if (u == kNone) continue;
          std::array<std::uint16_t, 3> c = out.coord[v];
          c[k] = static_cast<std::uint16_t>(sign == 0 ? (c[k] + 1) % out.dims[k] : (c[k] + out.dims[k] - 1) % out.dims[k]);
          if (seen[u]) {
            if (out.coord[u] != c) return fail(error, "inconsistent coordinates at " + coord_text(c));
            continue;
          }
          Dirs du;
          du.fill(kNone);
          du[2 * k + sign] = straight_next(v, u);
          du[2 * k + (1 - sign)] = v;
          for (std::size_t j = 0; j < axes.size(); ++j) {
            if (j == k) continue;
            for (unsigned s2 = 0; s2 < 2; ++s2) {
              const SwIdx w = dir[v][2 * j + s2];
              if (w == kNone) continue;
              const SwIdx x = square_corner(u, w, v);
              if (x == kNone) return fail(error, "no square at " + coord_text(c));
              du[2 * j + s2] = x;
            }
          }
          dir[u] = du;
          out.coord[u] = c;
          seen[u] = 1;
          queue.push_back(u);
        }
    }
    if (std::count(seen.begin(), seen.end(), 1) != static_cast<std::ptrdiff_t>(n))
      return fail(error, "switches off the grid");
    return true;
  }

 private:
  static bool fail(std::string& error, std::string why) {
    error = std::move(why);
    return false;
  }
  bool adjacent(SwIdx a, SwIdx b) const { return std::binary_search(nb_[a].begin(), nb_[a].end(), b); }
  // a, b, c in a straight line: a and c not adjacent, b their only common neighbour.
  bool straight(SwIdx a, SwIdx b, SwIdx c) const {
    if (a == c || adjacent(a, c)) return false;
    for (const SwIdx x : nb_[a])
      if (x != b && adjacent(x, c)) return false;
    return true;
  }
  SwIdx straight_next(SwIdx prev, SwIdx at) const {
    SwIdx found = kNone;
    for (const SwIdx c : nb_[at])
      if (c != prev && straight(prev, at, c)) {
        if (found != kNone) return kNone;
        found = c;
      }
    return found;
  }
  // The fourth corner of the square u - v - w: the common neighbour of u and w other than v.
  SwIdx square_corner(SwIdx u, SwIdx w, SwIdx v) const {
    SwIdx found = kNone;
    for (const SwIdx x : nb_[u])
      if (x != v && adjacent(x, w)) {
        if (found != kNone) return kNone;
        found = x;
      }
    return found;
  }

  const SwitchGraph& g_;
  std::vector<std::vector<SwIdx>> nb_;
};

}  // namespace

bool make_grid(const SwitchGraph& g, const GridSpec& spec, Grid& out, std::string& error) {
  out = Grid{};
  const std::size_t n = g.size();
  if (spec.empty()) {
    Inference inf(g);
    if (!inf.run(out, error)) {
      error = "not a torus or mesh the coordinates can be inferred for: " + error;
      return false;
    }
  } else {
    out.dims = spec.dims;
    out.wrap = spec.wrap;
    out.coord.resize(n);
    for (SwIdx s = 0; s < n; ++s) {
      const auto it = spec.coords.find(g.guid[s]);
      if (it == spec.coords.end()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "switch 0x%llx has no coordinates", static_cast<unsigned long long>(g.guid[s]));
        error = buf;
        return false;
      }
      out.coord[s] = it->second;
      for (unsigned d = 0; d < 3; ++d)
        if (out.dims[d] == 0 || it->second[d] >= out.dims[d]) {
          error = "coordinates " + coord_text(it->second) + " outside the grid";
          return false;
        }
    }
  }
  // Every switch on its own point, every link between grid neighbours, every
  // pair of grid neighbours linked.
  std::vector<SwIdx> at_point(std::size_t{out.dims[0]} * out.dims[1] * out.dims[2], kNone);
  auto point = [&](const std::array<std::uint16_t, 3>& c) {
    return (std::size_t{c[2]} * out.dims[1] + c[1]) * out.dims[0] + c[0];
  };
  for (SwIdx s = 0; s < n; ++s) {
    SwIdx& slot = at_point[point(out.coord[s])];
    if (slot != kNone) {
      error = "two switches at " + coord_text(out.coord[s]);
      return false;
    }
    slot = s;
  }
  for (SwIdx s = 0; s < n; ++s) {
    for (const SwitchLink& l : g.links(s)) {
      const auto& a = out.coord[s];
      const auto& b = out.coord[l.peer];
      unsigned differing = 0;
      bool neighbour = true;
      for (unsigned d = 0; d < 3; ++d) {
        if (a[d] == b[d]) continue;
        ++differing;
        const unsigned up = (a[d] + 1u) % out.dims[d], down = (a[d] + out.dims[d] - 1u) % out.dims[d];
        const bool ok = out.wrap[d] ? (b[d] == up || b[d] == down) : (b[d] + 1u == a[d] || a[d] + 1u == b[d]);
        neighbour = neighbour && ok;
      }
      if (differing != 1 || !neighbour) {
        error = "a link from " + coord_text(a) + " to " + coord_text(b) + " is not a grid link";
        return false;
      }
    }
  }
  if (at_point.size() != n) {
    error = "the grid has " + std::to_string(at_point.size()) + " points but " + std::to_string(n) + " switches";
    return false;
  }
  return true;
}

}  // namespace madengine::sm
