// Incremental re-routing (see routing.hpp): which destinations a change
// between two fabrics leaves alone. A LID keeps its routes when every switch
// existed before (matched by GUID), its switch delivers the same LIDs by the
// same ports, every switch's allowed distance to that switch is unchanged,
// and every port its routes used still leads to the same neighbour. Then its
// old routes are still shortest (and legal, for up/down) and the engine
// routes only the other LIDs, keeping at each switch the old port where it
// is still a shortest one (so a change rewrites as few LFT blocks as it can).
#include <algorithm>
#include <unordered_map>

#include "sm/routing/engine.hpp"
#include "sm/routing/hop_tables.hpp"

namespace madengine::sm {

namespace {

RoutingResult full(const fabric::Fabric& fabric, const RoutingOptions& opts, const SwitchGraph& g, std::string why) {
  RoutingResult r = route_chain(fabric, opts, g, nullptr, opts.algo);
  r.full_reason = std::move(why);
  return r;
}

bool same_targets(const SwitchGraph& a, SwIdx sa, const SwitchGraph& b, SwIdx sb) {
  const auto ta = a.targets_at(sa), tb = b.targets_at(sb);
  if (ta.size() != tb.size()) return false;
  for (std::size_t i = 0; i < ta.size(); ++i) {
    const LidTarget& x = a.targets[ta[i]];
    const LidTarget& y = b.targets[tb[i]];
    if (x.base_lid != y.base_lid || x.lid_count != y.lid_count || x.exit_port != y.exit_port || x.is_switch != y.is_switch)
      return false;
  }
  return true;
}

}  // namespace

RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts, const PreviousRoutes& prev) {
  const SwitchGraph g = SwitchGraph::build(fabric);
  if (prev.fabric == nullptr || prev.result == nullptr || !prev.result->ok())
    return full(fabric, opts, g, "no previous routes");
  const std::vector<Lft>& plfts = prev.lfts != nullptr ? *prev.lfts : prev.result->lfts;
  const RoutingAlgo engine = prev.result->engine;
  const std::vector<RoutingAlgo> chain = opts.chain.empty() ? std::vector<RoutingAlgo>{opts.algo} : opts.chain;
  if (std::find(chain.begin(), chain.end(), engine) == chain.end())
    return full(fabric, opts, g, "the previous routes came from an engine not in the chain");
  if (engine == RoutingAlgo::kNue || engine == RoutingAlgo::kDor)
    return full(fabric, opts, g, std::string(to_string(engine)) + " routes all destinations together");
  const SwitchGraph pg = SwitchGraph::build(*prev.fabric);
  const std::size_t n = g.size();
  if (n == 0) return full(fabric, opts, g, "no switches");

  // New switch -> old switch, by GUID; the previous LFT of each.
  std::unordered_map<std::uint64_t, SwIdx> old_by_guid;
  for (SwIdx s = 0; s < pg.size(); ++s) old_by_guid.emplace(pg.guid[s], s);
  std::vector<SwIdx> old_of(n, kNoSwitch);
  for (SwIdx s = 0; s < n; ++s)
    if (const auto it = old_by_guid.find(g.guid[s]); it != old_by_guid.end()) old_of[s] = it->second;
  for (SwIdx s = 0; s < n; ++s)
    if (old_of[s] == kNoSwitch) return full(fabric, opts, g, "new switches");
  std::vector<const Lft*> old_lft(pg.size(), nullptr);
  for (const Lft& l : plfts)
    if (l.node < pg.sw_of.size() && pg.sw_of[l.node] != kNoSwitch) old_lft[pg.sw_of[l.node]] = &l;
  for (SwIdx s = 0; s < n; ++s)
    if (old_lft[old_of[s]] == nullptr) return full(fabric, opts, g, "previous LFTs incomplete");

  // Allowed distances now and then.
  const bool ranked = engine == RoutingAlgo::kUpDown || engine == RoutingAlgo::kFatTree;
  Ranking now_rank, then_rank;
  if (ranked) {
    now_rank = rank_switches(fabric, g, opts.root_guids);
    then_rank = rank_switches(*prev.fabric, pg, opts.root_guids);
    for (SwIdx s = 0; s < n; ++s)
      if (now_rank.rank[s] != then_rank.rank[old_of[s]]) return full(fabric, opts, g, "up/down ranks changed");
  }
  const unsigned threads = std::max(1u, opts.threads);
  const HopTables now = compute_hop_tables(g, ranked ? &now_rank : nullptr, threads);
  const HopTables then = compute_hop_tables(pg, ranked ? &then_rank : nullptr, threads);

  // Ports that lead somewhere else than before.
  std::vector<std::vector<std::uint8_t>> port_changed(n);
  std::vector<std::uint8_t> switch_changed(n, 0);
  for (SwIdx s = 0; s < n; ++s) {
    const fabric::Node& a = fabric.nodes[g.node_of[s]];
    const fabric::Node& b = prev.fabric->nodes[pg.node_of[old_of[s]]];
    port_changed[s].assign(std::max(a.ports.size(), b.ports.size()), 0);
    for (std::size_t p = 1; p < port_changed[s].size(); ++p) {
      const bool la = p < a.ports.size() && a.ports[p].linked(), lb = p < b.ports.size() && b.ports[p].linked();
      bool same = la == lb;
      if (same && la)
        same = fabric.nodes[a.ports[p].peer].node_guid == prev.fabric->nodes[b.ports[p].peer].node_guid &&
               a.ports[p].peer_port == b.ports[p].peer_port;
      port_changed[s][p] = same ? 0 : 1;
      switch_changed[s] |= port_changed[s][p];
    }
  }

  Reuse reuse;
  std::uint16_t top = 0;
  for (const LidTarget& t : g.targets) top = std::max<std::uint16_t>(top, static_cast<std::uint16_t>(t.base_lid + t.lid_count - 1));
  reuse.keep_lid.assign(top + 1u, 0);
  reuse.prev_ports.resize(n);
  reuse.prev_size.resize(n);
  reuse.prev_lft.resize(n);
  for (SwIdx s = 0; s < n; ++s) {
    reuse.prev_lft[s] = old_lft[old_of[s]];
    reuse.prev_ports[s] = old_lft[old_of[s]]->ports.data();
    reuse.prev_size[s] = old_lft[old_of[s]]->ports.size();
  }
  // Destinations whose every distance is unchanged, row by row (a switch's
  // row holds its distances to all destinations).
  std::vector<std::uint8_t> same_distances(n, 1);
  for (SwIdx s = 0; s < n; ++s) {
    const std::uint8_t* a = now.row(s);
    const std::uint8_t* b = then.row(old_of[s]);
    for (SwIdx d = 0; d < n; ++d) same_distances[d] &= a[d] == b[old_of[d]] ? 1 : 0;
  }
  for (SwIdx d = 0; d < n; ++d) {
    const SwIdx od = old_of[d];
    if (g.targets_at(d).empty() || !same_distances[d] || !same_targets(g, d, pg, od)) continue;
    // Each LID on its own: kept unless one of its routes used a port that changed.
    for (const std::uint32_t ti : g.targets_at(d)) {
      const LidTarget& t = g.targets[ti];
      for (std::uint8_t i = 0; i < t.lid_count; ++i) {
        const auto lid = static_cast<std::uint16_t>(t.base_lid + i);
        bool keep = true;
        for (SwIdx s = 0; s < n && keep; ++s) {
          if (!switch_changed[s] || s == d) continue;
          const std::uint8_t p = reuse.prev(s, lid);
          keep = p == kLftNoRoute ? now.at(d, s) == kHopUnreachable : p < port_changed[s].size() && port_changed[s][p] == 0;
        }
        reuse.keep_lid[lid] = keep ? 1 : 0;
      }
    }
  }
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) reuse.lids_to_route += reuse.keep_lid[t.base_lid + i] ? 0 : 1;
  // The min-hop family routes on these same tables (dfsssp builds its own DAGs from plain distances).
  if (engine != RoutingAlgo::kDfsssp) reuse.hops = &now;
  RoutingResult r = route_chain(fabric, opts, g, &reuse, engine);
  if (r.engine != engine) r.full_reason = "the previous engine failed on the new fabric";
  return r;
}

RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts, const RoutingResult* previous,
                             const fabric::Fabric* previous_fabric) {
  return compute_routes(fabric, opts, PreviousRoutes{previous_fabric, previous, nullptr});
}

}  // namespace madengine::sm
