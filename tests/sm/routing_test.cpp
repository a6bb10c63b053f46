// Routing engines: every pair reachable, minimal hops where promised,
// up*/down* legality and an acyclic channel dependency graph (deadlock
// freedom), balanced uplinks, and results independent of the thread count.
#include "sm/routing/routing.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <set>

#include "fabric_builders.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {
namespace {

using fabric::Fabric;
using fabric::NodeId;

struct Routed {
  Fabric fabric;
  RoutingResult routes;
};

Routed route(Fabric f, RoutingAlgo algo, unsigned threads = 1, std::uint8_t lmc = 0) {
  Guid2Lid map;
  assign_lids(f, map, lmc);
  RoutingOptions o;
  o.algo = algo;
  o.threads = threads;
  auto r = compute_routes(f, o);
  return {std::move(f), std::move(r)};
}

std::vector<std::uint16_t> all_lids(const Fabric& f) {
  std::vector<std::uint16_t> out;
  for (auto e : f.end_ports()) {
    const unsigned count = f.nodes[e.node].is_switch() ? 1 : 1u << f.nodes[e.node].lmc;
    for (unsigned i = 0; i < count; ++i) out.push_back(static_cast<std::uint16_t>(f.lid_of(e) + i));
  }
  return out;
}

// Switch-to-switch BFS distance between the switches two LIDs enter/leave at.
std::map<std::pair<NodeId, NodeId>, int> switch_distances(const Fabric& f) {
  std::map<std::pair<NodeId, NodeId>, int> d;
  for (NodeId s = 0; s < f.nodes.size(); ++s) {
    if (!f.nodes[s].is_switch()) continue;
    std::map<NodeId, int> dist{{s, 0}};
    std::deque<NodeId> q{s};
    while (!q.empty()) {
      NodeId n = q.front();
      q.pop_front();
      for (auto& p : f.nodes[n].ports)
        if (p.linked() && f.nodes[p.peer].is_switch() && !dist.count(p.peer)) {
          dist[p.peer] = dist[n] + 1;
          q.push_back(p.peer);
        }
    }
    for (auto [t, h] : dist) d[{s, t}] = h;
  }
  return d;
}

NodeId entry_switch(const Fabric& f, std::uint16_t lid) {
  for (NodeId n = 0; n < f.nodes.size(); ++n) {
    const auto& node = f.nodes[n];
    if (node.is_switch() && node.base_lid == lid) return n;
    for (std::size_t p = 1; p < node.port_lids.size(); ++p)
      if (!node.is_switch() && node.port_lids[p] != 0 && lid >= node.port_lids[p] &&
          lid < node.port_lids[p] + (1u << node.lmc))
        return node.ports[p].peer;
  }
  return fabric::kNoNode;
}

void expect_all_pairs_routed(const Routed& r, bool minimal) {
  ASSERT_TRUE(r.routes.ok()) << r.routes.error;
  EXPECT_EQ(r.routes.unreachable, 0u);
  const auto lids = all_lids(r.fabric);
  const auto dist = minimal ? switch_distances(r.fabric) : decltype(switch_distances(r.fabric)){};
  for (auto s : lids)
    for (auto d : lids) {
      const int hops = trace_route(r.fabric, r.routes, s, d);
      ASSERT_GE(hops, 0) << "no route " << s << " -> " << d;
      if (minimal) {
        ASSERT_EQ(hops, dist.at({entry_switch(r.fabric, s), entry_switch(r.fabric, d)})) << s << " -> " << d;
      }
    }
}

std::vector<std::uint16_t> ca_lids(const Fabric& f) {
  std::vector<std::uint16_t> out;
  for (auto lid : all_lids(f))
    if (!f.nodes[entry_switch(f, lid)].is_switch() || f.nodes[entry_switch(f, lid)].base_lid != lid) out.push_back(lid);
  return out;
}

// Up*/down*: along every route between CAs, no up move after a down move; and
// the channel dependency graph (link -> next link) has no cycle. (Switch
// management LIDs may fall back to min-hop: see RoutingResult.)
void expect_deadlock_free(const Routed& r) {
  const auto g = SwitchGraph::build(r.fabric);
  const auto rank = rank_switches(r.fabric, g, {});
  const auto lids = ca_lids(r.fabric);
  std::map<std::pair<NodeId, NodeId>, std::set<std::pair<NodeId, NodeId>>> cdg;
  for (auto s : lids)
    for (auto d : lids) {
      std::vector<NodeId> path;
      ASSERT_GE(trace_route(r.fabric, r.routes, s, d, &path), 0);
      bool went_down = false;
      for (std::size_t i = 1; i < path.size(); ++i) {
        const bool up = rank.is_up(g.sw_of[path[i - 1]], g.sw_of[path[i]]);
        ASSERT_FALSE(up && went_down) << "down then up on " << s << " -> " << d;
        went_down |= !up;
        if (i >= 2) cdg[{path[i - 2], path[i - 1]}].insert({path[i - 1], path[i]});
      }
    }
  // Cycle check by DFS colouring.
  std::map<std::pair<NodeId, NodeId>, int> colour;
  std::function<bool(std::pair<NodeId, NodeId>)> cyclic = [&](std::pair<NodeId, NodeId> c) {
    colour[c] = 1;
    for (auto n : cdg[c]) {
      if (colour[n] == 1) return true;
      if (colour[n] == 0 && cyclic(n)) return true;
    }
    colour[c] = 2;
    return false;
  };
  for (auto& [c, _] : cdg) {
    if (colour[c] == 0) {
      ASSERT_FALSE(cyclic(c)) << "channel dependency cycle";
    }
  }
}

TEST(Routing, MinHopFatTree2IsMinimalAndBalanced) {
  auto r = route(testing::fat_tree2(8, 4, 6), RoutingAlgo::kMinHop);
  expect_all_pairs_routed(r, true);
  // Each leaf spreads the LIDs of other leaves evenly over its 4 uplinks.
  for (const auto& lft : r.routes.lfts) {
    const auto& node = r.fabric.nodes[lft.node];
    if (node.num_ports() != 10) continue;  // leaves: 6 hosts + 4 uplinks
    std::map<int, int> per_port;
    for (auto lid : all_lids(r.fabric))
      if (lft.ports[lid] > 6) ++per_port[lft.ports[lid]];
    int lo = 1 << 30, hi = 0;
    for (auto [p, n] : per_port) lo = std::min(lo, n), hi = std::max(hi, n);
    EXPECT_EQ(per_port.size(), 4u);
    EXPECT_LE(hi - lo, 1) << "uplinks unbalanced";
  }
}

TEST(Routing, FatTree3AllEnginesMinimalAndUpDownLegal) {
  for (auto algo : {RoutingAlgo::kMinHop, RoutingAlgo::kUpDown, RoutingAlgo::kFatTree}) {
    SCOPED_TRACE(to_string(algo));
    auto r = route(testing::fat_tree3(4, 2, 2, 2, 3), algo);
    expect_all_pairs_routed(r, true);
    expect_deadlock_free(r);
    EXPECT_EQ(r.routes.max_hops, 4);
  }
}

TEST(Routing, UpDownOnIrregularFabricsIsDeadlockFree) {
  for (std::uint32_t seed : {1u, 2u, 3u, 42u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto r = route(testing::random_fabric(12, 10, 2, seed), RoutingAlgo::kUpDown);
    expect_all_pairs_routed(r, false);
    expect_deadlock_free(r);
  }
}

TEST(Routing, MinHopIrregularIsMinimal) {
  auto r = route(testing::random_fabric(12, 10, 2, 7), RoutingAlgo::kMinHop);
  expect_all_pairs_routed(r, true);
}

TEST(Routing, LmcPathsAreSpreadOverUplinks) {
  auto r = route(testing::fat_tree2(2, 4, 1), RoutingAlgo::kMinHop, 1, 2);
  expect_all_pairs_routed(r, true);
  // Leaf 0's four LIDs towards the host on leaf 1 leave by four different uplinks.
  const auto& leaf0 = r.routes.lfts[4];
  const auto& leaf1 = r.fabric.nodes[r.routes.lfts[5].node];
  const auto host = leaf1.ports[1].peer;
  const auto base = r.fabric.nodes[host].port_lids[1];
  std::set<int> ports;
  for (int i = 0; i < 4; ++i) ports.insert(leaf0.ports[base + i]);
  EXPECT_EQ(ports.size(), 4u);
}

TEST(Routing, SameResultWithAnyThreadCount) {
  for (auto algo : {RoutingAlgo::kMinHop, RoutingAlgo::kUpDown, RoutingAlgo::kFatTree}) {
    auto a = route(testing::fat_tree3(4, 2, 2, 2, 3), algo, 1);
    auto b = route(testing::fat_tree3(4, 2, 2, 2, 3), algo, 2);
    auto c = route(testing::fat_tree3(4, 2, 2, 2, 3), algo, 3);
    ASSERT_EQ(a.routes.lfts.size(), b.routes.lfts.size());
    for (std::size_t i = 0; i < a.routes.lfts.size(); ++i) {
      EXPECT_EQ(a.routes.lfts[i].ports, b.routes.lfts[i].ports);
      EXPECT_EQ(a.routes.lfts[i].ports, c.routes.lfts[i].ports);
    }
  }
}

TEST(Routing, DisconnectedSwitchIsReportedUnreachable) {
  auto f = testing::fat_tree2(2, 1, 1);
  testing::add_switch(f, 4, 0x9999);  // no links
  auto r = route(std::move(f), RoutingAlgo::kMinHop);
  ASSERT_TRUE(r.routes.ok());
  EXPECT_GT(r.routes.unreachable, 0u);
}

TEST(Routing, BadRootsAreAnError) {
  auto f = testing::fat_tree2(2, 1, 1);
  Guid2Lid map;
  assign_lids(f, map, 0);
  RoutingOptions o;
  o.algo = RoutingAlgo::kUpDown;
  o.root_guids = {0xdead};
  EXPECT_FALSE(compute_routes(f, o).ok());
}

}  // namespace
}  // namespace madengine::sm
