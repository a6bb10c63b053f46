// The min-hop family's LFTs (min-hop, up/down, fat-tree) from the hop
// tables. Switches are independent (each balances its own ports), so the
// phase runs in parallel by switch and its result does not depend on the
// thread count. A switch's candidate links towards every destination come
// from comparing its hop-table row with each neighbour's row, eight links
// per pass; LIDs then go to the least-used candidate (min-hop, up/down) or
// to candidate (LID position mod count) (fat-tree, d-mod-k).
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstring>

#include "engine/parallel_for.hpp"
#include "sm/routing/engine.hpp"
#include "sm/routing/hop_tables.hpp"

namespace madengine::sm {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Candidate links of switch `s` towards every destination, as one byte per
// (group of 8 links, destination): bit k of cand[group * stride + D] is link
// 8*group + k of s. Rows are padded to the stride with "unreachable", so the
// comparisons run 16 destinations at a time.
using Bytes16 = std::uint8_t __attribute__((vector_size(16)));

Bytes16 load16(const std::uint8_t* p) noexcept {
  Bytes16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Every lane set to b (a scalar operand would be promoted to int first).
Bytes16 splat(std::uint8_t b) noexcept {
  Bytes16 v;
  std::memset(&v, b, sizeof v);
  return v;
}

void candidate_masks(const SwitchGraph& g, const HopTables& hops, const Ranking* r, SwIdx s,
                     std::vector<std::uint8_t>& cand) {
  const std::size_t stride = hops.stride;
  const auto links = g.links(s);
  const std::size_t groups = (links.size() + 7) / 8;
  cand.assign(groups * stride, 0);
  const std::uint8_t* here = hops.row(s);
  const Bytes16 one = splat(1), unreachable = splat(kHopUnreachable), mask = splat(kHopMask),
                down = splat(kHopDownMode), zero = Bytes16{};
  for (std::size_t li = 0; li < links.size(); ++li) {
    const std::uint8_t* there = hops.row(links[li].peer);
    std::uint8_t* out = cand.data() + (li / 8) * stride;
    const Bytes16 bit = splat(static_cast<std::uint8_t>(1u << (li % 8)));
    if (r == nullptr) {
      for (std::size_t d = 0; d < stride; d += 16) {
        const Bytes16 want = load16(here + d) - one;  // 0 (the destination itself) wraps to unreachable
        const Bytes16 ok = reinterpret_cast<Bytes16>((want == load16(there + d)) & (want != unreachable));
        const Bytes16 o = load16(out + d) | (ok & bit);
        std::memcpy(out + d, &o, sizeof o);
      }
      continue;
    }
    // Up/down: a switch in down mode goes only down, to a switch that also
    // goes only down; any other goes only up. Min-hop fallback destinations
    // hold plain distances (no mode bit) and take any shortest link.
    const bool up = r->is_up(s, links[li].peer);
    const std::uint8_t* fallback = hops.minhop_fallback.data();
    for (std::size_t d = 0; d < stride; d += 16) {
      const Bytes16 h = load16(here + d), t = load16(there + d);
      const Bytes16 hm = h & mask, tm = t & mask;
      const auto shortest = (h != unreachable) & (t != unreachable) & (hm != zero) & (tm + one == hm);
      const auto hdown = (h & down) != zero, tdown = (t & down) != zero;
      const auto legal = (load16(fallback + d) != zero) | (up ? ~hdown : (hdown & tdown));
      const Bytes16 o = load16(out + d) | (reinterpret_cast<Bytes16>(shortest & legal) & bit);
      std::memcpy(out + d, &o, sizeof o);
    }
  }
}

// Sequential least-used choice done in passes: within a pass at `level` the
// candidates still at that load take the next LIDs in order (exactly the
// argmin-per-LID sequence, without a scan per LID). Ties go to the first
// candidate at or after the switch's own offset, wrapping: with ties to the
// lowest port every switch would pick alike for a LID, and in a 3-level fat
// tree a LID's edge and aggregation choices would correlate (an
// aggregation switch would send all its edges' traffic up one core link).
class LeastUsed {
 public:
  explicit LeastUsed(std::vector<std::uint32_t>& load) : load_(load) {}
  void reset(const std::vector<std::uint8_t>& cand, std::size_t offset) {
    rot_.resize(cand.size());
    for (std::size_t i = 0; i < cand.size(); ++i) rot_[i] = cand[(i + offset) % cand.size()];
    cursor_ = 0;
    level_ = ~0u;
    for (std::uint8_t p : cand) level_ = std::min(level_, load_[p]);
  }
  std::uint8_t pick() {
    for (;;) {
      while (cursor_ < rot_.size() && load_[rot_[cursor_]] != level_) ++cursor_;
      if (cursor_ < rot_.size()) break;
      ++level_;
      cursor_ = 0;
    }
    const std::uint8_t p = rot_[cursor_++];
    ++load_[p];
    return p;
  }

 private:
  std::vector<std::uint32_t>& load_;
  std::vector<std::uint8_t> rot_;
  std::size_t cursor_ = 0;
  std::uint32_t level_ = 0;
};

// d-mod-k for fat trees: at `level` switches above the leaves, LID position
// d takes candidate (d / k^level) mod k, so each level spreads what the one
// below sent it (the same d mod k at every level would send an aggregation
// switch's traffic from all its edges up one link).
std::size_t dmodk(std::uint32_t d, std::uint32_t level, std::size_t k) noexcept {
  std::uint64_t div = 1;
  for (std::uint32_t l = 0; l < level && div < (std::uint64_t{1} << 32); ++l) div *= k;
  return static_cast<std::size_t>((d / div) % k);
}

}  // namespace

void init_lfts(const SwitchGraph& g, RoutingResult& res, const Reuse* unchanged) {
  res.top_lid = 0;
  for (const LidTarget& t : g.targets)
    res.top_lid = std::max<std::uint16_t>(res.top_lid, static_cast<std::uint16_t>(t.base_lid + t.lid_count - 1));
  res.lfts.resize(g.size());
  for (SwIdx s = 0; s < g.size(); ++s) {
    Lft& lft = res.lfts[s];
    lft.node = g.node_of[s];
    if (unchanged != nullptr && s < unchanged->prev_lft.size() && unchanged->prev_lft[s] != nullptr &&
        unchanged->prev_lft[s]->ports.size() == res.top_lid + 1u) {
      lft.ports = unchanged->prev_lft[s]->ports;
      continue;
    }
    lft.ports.assign(res.top_lid + 1u, kLftNoRoute);
    std::uint8_t* const out = lft.ports.mutable_data();
    for (const std::uint32_t ti : g.targets_at(s)) {
      const LidTarget& t = g.targets[ti];
      for (std::uint8_t i = 0; i < t.lid_count; ++i) out[t.base_lid + i] = t.exit_port;
    }
  }
}

bool route_minhop_family(const EngineInput& in, RoutingAlgo algo, RoutingResult& res) {
  const SwitchGraph& g = in.g;
  Ranking ranking;
  const bool updn = algo != RoutingAlgo::kMinHop;
  if (updn) {
    ranking = rank_switches(in.fabric, g, in.opts.root_guids);
    if (!in.opts.root_guids.empty() && ranking.roots.size() != in.opts.root_guids.size()) {
      res.error = "configured root GUIDs not all found among the switches";
      return false;
    }
    for (SwIdx s : ranking.roots) res.roots.push_back(g.node_of[s]);
  }
  auto t0 = std::chrono::steady_clock::now();
  const Reuse* reuse = in.reuse;
  HopTables computed;
  if (reuse == nullptr || reuse->hops == nullptr) computed = compute_hop_tables(g, updn ? &ranking : nullptr, in.threads);
  const HopTables& hops = reuse != nullptr && reuse->hops != nullptr ? *reuse->hops : computed;
  res.hop_tables_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  init_lfts(g, res, reuse != nullptr && reuse->lids_to_route == 0 ? reuse : nullptr);
  const std::size_t n = g.size();
  std::vector<std::uint32_t> unreachable(n, 0);
  std::vector<std::uint8_t> max_hops(n, 0);
  // Each switch's place in GUID order (its tie offset) and height above the
  // leaves (fat-tree's d-mod-k level); each LID's position among all LIDs.
  std::vector<std::uint32_t> guid_rank(n), level(n, 0);
  for (std::uint32_t i = 0; i < n; ++i) guid_rank[g.by_guid[i]] = i;
  if (algo == RoutingAlgo::kFatTree) {
    std::vector<SwIdx> leaves;
    for (SwIdx s = 0; s < n; ++s)
      if (g.has_ca[s]) leaves.push_back(s);
    level = switch_distances_from(g, leaves);
  }
  std::vector<std::uint32_t> seq_of(g.targets.size());
  for (std::uint32_t i = 0, seq = 0; i < g.targets.size(); ++i) seq_of[i] = seq, seq += g.targets[i].lid_count;
  parallel_for(n, in.threads, [&](std::size_t si) {
    const auto s = static_cast<SwIdx>(si);
    Lft& lft = res.lfts[s];
    const auto links = g.links(s);
    std::vector<std::uint8_t> masks;
    if (reuse != nullptr && reuse->lids_to_route == 0 && reuse->prev_ports[s] != nullptr) {
      // Nothing to route again: the previous table (same LIDs, so its own
      // LIDs' exits are the same too), shared by init_lfts when of one size.
      if (reuse->prev_size[s] == lft.ports.size()) {
        if (!lft.ports.shares(reuse->prev_lft[s]->ports))
          std::memcpy(lft.ports.mutable_data(), reuse->prev_ports[s], lft.ports.size());
      } else {
        for (const LidTarget& t : g.targets)
          if (t.sw != s)
            for (std::uint8_t i = 0; i < t.lid_count; ++i)
              lft.ports[t.base_lid + i] = reuse->prev(s, static_cast<std::uint16_t>(t.base_lid + i));
      }
      for (SwIdx d = 0; d < n; ++d)
        if (d != s && !g.targets_at(d).empty() && hops.at(d, s) != kHopUnreachable)
          max_hops[s] = std::max<std::uint8_t>(max_hops[s], hops.at(d, s) & kHopMask);
      return;
    }
    std::uint8_t* const out = lft.ports.mutable_data();  // this switch's table is this thread's alone
    candidate_masks(g, hops, updn ? &ranking : nullptr, s, masks);
    const std::size_t groups = (links.size() + 7) / 8;
    std::vector<std::uint32_t> load(g.max_ports + 1u, 0);
    const bool reusing = reuse != nullptr && reuse->prev_ports[s] != nullptr;
    // Kept routes count towards the balance of the new ones.
    if (reusing)
      for (const LidTarget& t : g.targets)
        if (t.sw != s && reuse->keeps(t.base_lid))
          for (std::uint8_t i = 0; i < t.lid_count; ++i) {
            const std::uint8_t p = reuse->prev(s, static_cast<std::uint16_t>(t.base_lid + i));
            out[t.base_lid + i] = p;
            if (p != kLftNoRoute && p <= g.max_ports) ++load[p];
          }
    LeastUsed least(load);
    std::vector<std::uint8_t> cand;
    std::array<std::uint8_t, 32> key{}, cand_key{};  // the candidate link set (up to 256 links)
    std::array<std::uint64_t, 4> cand_ports{};       // the same set by port number
    bool least_ready = false;
    // Destination by destination, in LID order: consecutive destinations
    // usually share their candidate set (an edge switch's uplinks), found once.
    for (const SwIdx d : g.by_lid) {
      const auto at_d = g.targets_at(d);
      if (d == s) continue;
      for (std::size_t gi = 0; gi < groups; ++gi) key[gi] = masks[gi * hops.stride + d];
      if (cand.empty() || key != cand_key) {
        cand.clear();
        cand_ports = {};
        for (std::size_t gi = 0; gi < groups; ++gi)
          for (std::uint8_t b = key[gi]; b != 0; b &= static_cast<std::uint8_t>(b - 1)) {
            const std::uint8_t port = links[gi * 8 + static_cast<std::size_t>(std::countr_zero(b))].port;
            cand.push_back(port);
            cand_ports[port / 64] |= std::uint64_t{1} << (port % 64);
          }
        cand_key = key;
        least_ready = false;
      }
      if (cand.empty()) {
        for (const std::uint32_t ti : at_d)
          if (!reusing || !reuse->keeps(g.targets[ti].base_lid)) unreachable[s] += g.targets[ti].lid_count;
        continue;
      }
      max_hops[s] = std::max<std::uint8_t>(max_hops[s], hops.at(d, s) & kHopMask);
      for (const std::uint32_t ti : at_d) {
        const LidTarget& t = g.targets[ti];
        if (reusing && reuse->keeps(t.base_lid)) continue;
        for (std::uint8_t i = 0; i < t.lid_count; ++i) {
          std::uint8_t port;
          const std::uint8_t old = reusing ? reuse->prev(s, static_cast<std::uint16_t>(t.base_lid + i)) : kLftNoRoute;
          if (old != kLftNoRoute && ((cand_ports[old / 64] >> (old % 64)) & 1u)) {
            // Rerouted, but this switch's old port is still a shortest one:
            // keep it (fewer LFT blocks to rewrite), and restart the passes.
            port = old;
            ++load[port];
            least_ready = false;
          } else if (algo == RoutingAlgo::kFatTree) {
            port = cand[dmodk(seq_of[ti] + i, level[s], cand.size())];
          } else {
            // Loads change only through our own picks while the set stays
            // the same, so one pass serves a run of destinations.
            if (!least_ready) least.reset(cand, guid_rank[s]), least_ready = true;
            port = least.pick();
          }
          out[t.base_lid + i] = port;
        }
      }
    }
  });
  res.lfts_s = seconds_since(t0);
  for (const LidTarget& t : g.targets)
    if (updn && hops.minhop_fallback[t.sw]) res.minhop_fallback_lids += t.lid_count;
  for (SwIdx s = 0; s < n; ++s) {
    res.unreachable += unreachable[s];
    res.max_hops = std::max(res.max_hops, max_hops[s]);
  }
  res.layers = fabric::PathLayers(n, res.top_lid);
  res.layers.set_count_at_least(1);
  return true;
}

}  // namespace madengine::sm
