// Phase 2 of routing: each switch's LFT from the hop tables. Switches are
// independent (each balances its own ports), so the phase runs in parallel
// and its result does not depend on the thread count.
#include "sm/routing/routing.hpp"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "sm/routing/hop_tables.hpp"
#include "engine/parallel_for.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

using fabric::NodeId;

const char* to_string(RoutingAlgo a) noexcept {
  switch (a) {
    case RoutingAlgo::kMinHop: return "minhop";
    case RoutingAlgo::kUpDown: return "updn";
    case RoutingAlgo::kFatTree: return "ftree";
  }
  return "?";
}

bool parse_routing_algo(const std::string& s, RoutingAlgo& out) noexcept {
  for (auto a : {RoutingAlgo::kMinHop, RoutingAlgo::kUpDown, RoutingAlgo::kFatTree})
    if (s == to_string(a)) {
      out = a;
      return true;
    }
  return false;
}

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The links of `s` that lie on an allowed shortest route towards `dest`.
void candidates(const SwitchGraph& g, const HopTables& hops, const Ranking* r, SwIdx s, SwIdx dest,
                std::vector<std::uint8_t>& out) {
  out.clear();
  const std::uint8_t here = hops.at(dest, s);
  if (here == kHopUnreachable) return;
  const std::uint8_t want = static_cast<std::uint8_t>((here & kHopMask) - 1);
  const bool down_mode = r && (here & kHopDownMode);
  for (const SwitchLink& l : g.links[s]) {
    const std::uint8_t there = hops.at(dest, l.peer);
    if (there == kHopUnreachable || (there & kHopMask) != want) continue;
    if (r) {
      // Down mode: only down links to switches that also go only down.
      // Otherwise: only up links (the peer may then go down or further up).
      if (down_mode ? !(r->is_up(l.peer, s) && (there & kHopDownMode)) : !r->is_up(s, l.peer)) continue;
    }
    out.push_back(l.port);
  }
}

}  // namespace

RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts) {
  RoutingResult res;
  const SwitchGraph g = SwitchGraph::build(fabric);
  if (g.size() == 0) {
    res.error = "no switches to route";
    return res;
  }
  Ranking ranking;
  const bool updn = opts.algo != RoutingAlgo::kMinHop;
  if (updn) {
    ranking = rank_switches(fabric, g, opts.root_guids);
    if (!opts.root_guids.empty() && ranking.roots.size() != opts.root_guids.size()) {
      res.error = "configured root GUIDs not all found among the switches";
      return res;
    }
    for (SwIdx s : ranking.roots) res.roots.push_back(g.node_of[s]);
  }

  auto t0 = std::chrono::steady_clock::now();
  const HopTables hops = compute_hop_tables(g, updn ? &ranking : nullptr, opts.threads);
  res.hop_tables_s = seconds_since(t0);

  for (const LidTarget& t : g.targets)
    res.top_lid = std::max<std::uint16_t>(res.top_lid, static_cast<std::uint16_t>(t.base_lid + t.lid_count - 1));
  res.lfts.resize(g.size());
  std::vector<std::uint32_t> unreachable(g.size(), 0);
  std::vector<std::uint8_t> max_hops(g.size(), 0);

  t0 = std::chrono::steady_clock::now();
  parallel_for(g.size(), opts.threads, [&](std::size_t si) {
    const auto s = static_cast<SwIdx>(si);
    Lft& lft = res.lfts[s];
    lft.node = g.node_of[s];
    lft.ports.assign(res.top_lid + 1u, kLftNoRoute);
    std::vector<std::uint32_t> load(fabric.nodes[lft.node].ports.size(), 0);
    std::vector<std::uint8_t> cand;
    SwIdx cand_dest = kNoSwitch;
    std::uint32_t seq = 0;  // destination LID sequence: d-mod-k for fat-tree
    for (const LidTarget& t : g.targets) {
      if (t.sw == s) {
        for (std::uint8_t i = 0; i < t.lid_count; ++i) lft.ports[t.base_lid + i] = t.exit_port;
        seq += t.lid_count;
        continue;
      }
      if (t.sw != cand_dest) {
        const bool legal_only = updn && !hops.minhop_fallback[t.sw];
        candidates(g, hops, legal_only ? &ranking : nullptr, s, t.sw, cand);
        cand_dest = t.sw;
        if (!cand.empty())
          max_hops[s] = std::max<std::uint8_t>(max_hops[s], hops.at(t.sw, s) & kHopMask);
      }
      for (std::uint8_t i = 0; i < t.lid_count; ++i, ++seq) {
        if (cand.empty()) {
          ++unreachable[s];
          continue;
        }
        std::uint8_t port;
        if (opts.algo == RoutingAlgo::kFatTree) {
          port = cand[seq % cand.size()];
        } else {
          port = cand[0];
          for (std::uint8_t c : cand)
            if (load[c] < load[port]) port = c;  // least used; ties keep the lowest port
        }
        ++load[port];
        lft.ports[t.base_lid + i] = port;
      }
    }
  });
  res.lfts_s = seconds_since(t0);
  for (const LidTarget& t : g.targets)
    if (updn && hops.minhop_fallback[t.sw]) res.minhop_fallback_lids += t.lid_count;
  for (SwIdx s = 0; s < g.size(); ++s) {
    res.unreachable += unreachable[s];
    res.max_hops = std::max(res.max_hops, max_hops[s]);
  }
  return res;
}

int trace_route(const fabric::Fabric& fabric, const RoutingResult& routes, std::uint16_t src_lid,
                std::uint16_t dst_lid, std::vector<NodeId>* switches) {
  // Which node owns a LID, and the LFT of each switch node.
  std::unordered_map<NodeId, const Lft*> lft_of;
  for (const Lft& l : routes.lfts) lft_of[l.node] = &l;
  NodeId at = fabric::kNoNode;
  bool dst_is_switch_port0 = false;
  NodeId dst_node = fabric::kNoNode;
  for (NodeId n = 0; n < fabric.nodes.size(); ++n) {
    const fabric::Node& node = fabric.nodes[n];
    auto owns = [&](std::uint16_t base, std::uint8_t lmc, std::uint16_t lid) {
      return base != 0 && lid >= base && lid < base + (1u << lmc);
    };
    if (node.is_switch()) {
      if (owns(node.base_lid, 0, src_lid)) at = n;
      if (owns(node.base_lid, 0, dst_lid)) dst_node = n, dst_is_switch_port0 = true;
    } else {
      for (std::uint8_t p = 1; p < node.port_lids.size() && p <= node.num_ports(); ++p) {
        if (owns(node.port_lids[p], node.lmc, src_lid) && node.ports[p].linked()) at = node.ports[p].peer;
        if (owns(node.port_lids[p], node.lmc, dst_lid)) dst_node = n;
      }
    }
  }
  if (at == fabric::kNoNode || dst_node == fabric::kNoNode) return -1;
  if (switches) switches->clear();
  for (std::size_t steps = 0; steps <= fabric.nodes.size(); ++steps) {
    const fabric::Node& node = fabric.nodes[at];
    if (!node.is_switch()) return at == dst_node ? static_cast<int>(steps) - 1 : -1;
    if (switches) switches->push_back(at);
    auto it = lft_of.find(at);
    if (it == lft_of.end() || dst_lid >= it->second->ports.size()) return -1;
    const std::uint8_t port = it->second->ports[dst_lid];
    if (port == kLftNoRoute) return -1;
    if (port == 0) return (dst_is_switch_port0 && at == dst_node) ? static_cast<int>(steps) : -1;
    if (port > node.num_ports() || !node.ports[port].linked()) return -1;
    at = node.ports[port].peer;
  }
  return -1;  // a loop
}

}  // namespace madengine::sm
