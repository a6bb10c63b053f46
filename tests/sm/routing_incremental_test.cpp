// Incremental re-routing: an unchanged fabric gives the previous LFTs back
// unchanged (so bring-up writes no block); after a link fails, comes back or
// a host moves, only the destinations the change touches are routed again,
// the others keep every port, and the result is as good as a full
// recomputation (every pair delivered, shortest, deadlock-free) while
// rewriting no more LFT blocks than it.
#include <gtest/gtest.h>

#include "fabric_builders.hpp"
#include "routing_fabrics.hpp"
#include "sm/routing/routing.hpp"
#include "sm/routing/verify.hpp"

namespace madengine::sm {
namespace {

using fabric::Fabric;
using fabric::NodeId;

constexpr std::size_t kBlock = 64;  // LIDs per LFT block (IBA 14.2.5.10)

RoutingResult full(const Fabric& f, RoutingAlgo algo) {
  RoutingOptions o;
  o.algo = algo;
  return compute_routes(f, o);
}

RoutingResult again(const Fabric& f, RoutingAlgo algo, const RoutingResult& prev, const Fabric& prev_fabric) {
  RoutingOptions o;
  o.algo = algo;
  return compute_routes(f, o, &prev, &prev_fabric);
}

// LFT blocks a switch would be sent: those that differ from what it holds.
std::size_t blocks_changed(const RoutingResult& before, const RoutingResult& after) {
  std::size_t n = 0;
  for (std::size_t s = 0; s < after.lfts.size(); ++s) {
    const auto& a = before.lfts[s].ports;
    const auto& b = after.lfts[s].ports;
    for (std::size_t blk = 0; blk * kBlock < std::max(a.size(), b.size()); ++blk) {
      bool same = true;
      for (std::size_t i = blk * kBlock; i < (blk + 1) * kBlock && same; ++i)
        same = (i < a.size() ? a[i] : kLftNoRoute) == (i < b.size() ? b[i] : kLftNoRoute);
      n += same ? 0 : 1;
    }
  }
  return n;
}

// Takes down the cable at node n port p (both ends).
void unlink(Fabric& f, NodeId n, std::uint8_t p) {
  fabric::Port& a = f.nodes[n].ports[p];
  fabric::Port& b = f.nodes[a.peer].ports[a.peer_port];
  b.peer = fabric::kNoNode;
  a.peer = fabric::kNoNode;
}

// The first switch-to-switch cable of the first switch that has one after `skip` switches.
std::pair<NodeId, std::uint8_t> some_switch_cable(const Fabric& f, unsigned skip) {
  for (NodeId n = 0; n < f.nodes.size(); ++n) {
    if (!f.nodes[n].is_switch()) continue;
    for (std::uint8_t p = 1; p <= f.nodes[n].num_ports(); ++p) {
      const auto& port = f.nodes[n].ports[p];
      if (port.linked() && f.nodes[port.peer].is_switch() && skip-- == 0) return {n, p};
    }
  }
  return {fabric::kNoNode, 0};
}

std::uint32_t lids_total(const Fabric& f) {
  std::uint32_t n = 0;
  for (const auto e : f.end_ports()) n += f.nodes[e.node].is_switch() ? 1u : 1u << f.nodes[e.node].lmc;
  return n;
}

void expect_kept_columns_equal(const RoutingResult& before, const RoutingResult& after) {
  ASSERT_EQ(after.kept.size(), after.top_lid + 1u);
  std::uint32_t kept = 0;
  for (std::size_t lid = 1; lid < after.kept.size(); ++lid) {
    if (!after.kept[lid]) continue;
    ++kept;
    for (std::size_t s = 0; s < after.lfts.size(); ++s)
      ASSERT_EQ(before.lfts[s].ports[lid], after.lfts[s].ports[lid]) << "LID " << lid << " switch " << s;
  }
  EXPECT_GT(kept, 0u);
}

struct Case {
  const char* name;
  Fabric fabric;
  RoutingAlgo algo;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  const Fabric ft = testing::with_lids(sim::make_fat_tree_3level({.k = 8, .pods = 4}));
  c.push_back({"fat tree minhop", ft, RoutingAlgo::kMinHop});
  c.push_back({"fat tree updn", ft, RoutingAlgo::kUpDown});
  c.push_back({"fat tree ftree", ft, RoutingAlgo::kFatTree});
  c.push_back({"fat tree dfsssp", ft, RoutingAlgo::kDfsssp});
  const Fabric torus = testing::with_lids(
      sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 2}).topo);
  c.push_back({"torus dfsssp", torus, RoutingAlgo::kDfsssp});
  c.push_back({"torus minhop", torus, RoutingAlgo::kMinHop});
  return c;
}

TEST(RoutingIncremental, UnchangedFabricGivesTheSameLftsAndRewritesNoBlock) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const RoutingResult first = full(c.fabric, c.algo);
    ASSERT_TRUE(first.ok()) << first.error;
    const RoutingResult second = again(c.fabric, c.algo, first, c.fabric);
    ASSERT_TRUE(second.ok()) << second.error;
    EXPECT_TRUE(second.incremental) << second.full_reason;
    EXPECT_EQ(second.lids_rerouted, 0u);
    EXPECT_EQ(blocks_changed(first, second), 0u);
    EXPECT_TRUE(first.layers == second.layers);
  }
  // nue and dor route everything again, and being deterministic change nothing either.
  const Fabric torus = testing::with_lids(
      sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 1}).topo);
  for (auto algo : {RoutingAlgo::kNue, RoutingAlgo::kDor}) {
    const RoutingResult first = full(torus, algo);
    const RoutingResult second = again(torus, algo, first, torus);
    EXPECT_FALSE(second.incremental);
    EXPECT_FALSE(second.full_reason.empty());
    EXPECT_EQ(blocks_changed(first, second), 0u);
  }
}

// The min-hop family's unchanged pass holds the previous tables themselves
// (one copy for two epochs); a write to either side leaves the other as it
// was, and a pass after a change owns the tables it changed.
TEST(RoutingIncremental, UnchangedMinHopPassSharesThePreviousTables) {
  const Fabric ft = testing::with_lids(sim::make_fat_tree_3level({.k = 8, .pods = 4}));
  for (auto algo : {RoutingAlgo::kMinHop, RoutingAlgo::kUpDown, RoutingAlgo::kFatTree}) {
    SCOPED_TRACE(to_string(algo));
    const RoutingResult first = full(ft, algo);
    ASSERT_TRUE(first.ok()) << first.error;
    RoutingResult second = again(ft, algo, first, ft);
    ASSERT_TRUE(second.ok()) << second.error;
    ASSERT_EQ(second.lfts.size(), first.lfts.size());
    for (std::size_t s = 0; s < first.lfts.size(); ++s) EXPECT_TRUE(second.lfts[s].ports.shares(first.lfts[s].ports)) << s;
    const std::uint8_t was = first.lfts[0].ports[1];
    second.lfts[0].ports[1] = static_cast<std::uint8_t>(was ^ 1u);
    EXPECT_EQ(first.lfts[0].ports[1], was);
    EXPECT_FALSE(second.lfts[0].ports.shares(first.lfts[0].ports));
    EXPECT_TRUE(second.lfts[1].ports.shares(first.lfts[1].ports));

    Fabric cut = ft;
    const auto [n, p] = some_switch_cable(cut, 0);
    unlink(cut, n, p);
    const RoutingResult after = again(cut, algo, first, ft);
    ASSERT_TRUE(after.ok()) << after.error;
    EXPECT_GT(after.lids_rerouted, 0u);
    for (std::size_t s = 0; s < after.lfts.size(); ++s) EXPECT_FALSE(after.lfts[s].ports.shares(first.lfts[s].ports)) << s;
    EXPECT_EQ(first.lfts[0].ports[1], was);
  }
}

TEST(RoutingIncremental, LinkFailureReroutesOnlyWhatItTouches) {
  for (const Case& c : cases()) {
    for (unsigned skip : {0u, 5u, 17u}) {
      SCOPED_TRACE(std::string(c.name) + " cable " + std::to_string(skip));
      const RoutingResult before = full(c.fabric, c.algo);
      ASSERT_TRUE(before.ok());
      Fabric after_f = c.fabric;
      const auto [n, p] = some_switch_cable(after_f, skip);
      ASSERT_NE(n, fabric::kNoNode);
      unlink(after_f, n, p);
      const RoutingResult inc = again(after_f, c.algo, before, c.fabric);
      const RoutingResult ref = full(after_f, c.algo);
      ASSERT_TRUE(inc.ok() && ref.ok()) << inc.error << ref.error;
      EXPECT_TRUE(inc.incremental) << inc.full_reason;
      EXPECT_GT(inc.lids_rerouted, 0u);
      EXPECT_LT(inc.lids_rerouted, lids_total(after_f));
      // As good as the full recomputation.
      const bool updn = c.algo == RoutingAlgo::kUpDown || c.algo == RoutingAlgo::kFatTree;
      const bool deadlock_free = c.algo != RoutingAlgo::kMinHop;
      const CheckOptions opts{.minimal = !updn, .cycles = deadlock_free, .switch_endpoints = !updn};
      const RouteCheck ci = check_routes(after_f, inc, opts), cr = check_routes(after_f, ref, opts);
      EXPECT_EQ(ci.unrouted, cr.unrouted) << ci.first_problem;
      EXPECT_EQ(ci.unrouted, 0u) << ci.first_problem;
      EXPECT_EQ(ci.non_minimal, 0u) << ci.first_problem;
      EXPECT_EQ(ci.acyclic, cr.acyclic) << ci.first_problem;
      EXPECT_TRUE(ci.acyclic || !deadlock_free) << ci.first_problem;
      // Kept destinations keep every port; the rest is what the engine
      // chose, and fewer blocks change than with a full recomputation.
      expect_kept_columns_equal(before, inc);
      std::uint32_t changed_lids = 0;
      for (std::size_t lid = 1; lid <= inc.top_lid; ++lid)
        for (std::size_t s = 0; s < inc.lfts.size(); ++s)
          if (before.lfts[s].ports[lid] != inc.lfts[s].ports[lid]) {
            ++changed_lids;
            break;
          }
      EXPECT_LE(changed_lids, inc.lids_rerouted);
      EXPECT_LE(blocks_changed(before, inc), blocks_changed(before, ref));
      EXPECT_GT(blocks_changed(before, inc), 0u);
    }
  }
}

TEST(RoutingIncremental, KeptDestinationsAreThoseTheChangeLeavesAlone) {
  // A 2-level fat tree: losing leaf 0's cable to spine 0 changes the routes
  // to leaf 0's hosts only where they used that cable; every other
  // destination keeps its routes at every switch.
  Fabric f = testing::with_lids(sim::make_fat_tree_2level({.k = 8}));
  const RoutingResult before = full(f, RoutingAlgo::kMinHop);
  NodeId leaf0 = fabric::kNoNode;
  for (NodeId n = 0; n < f.nodes.size() && leaf0 == fabric::kNoNode; ++n)
    if (f.nodes[n].description == "leaf-0") leaf0 = n;
  ASSERT_NE(leaf0, fabric::kNoNode);
  Fabric after_f = f;
  unlink(after_f, leaf0, 5);  // k/2 + 1: its first uplink
  const RoutingResult inc = again(after_f, RoutingAlgo::kMinHop, before, f);
  ASSERT_TRUE(inc.ok());
  // Rerouted: the destinations whose routes crossed that cable or whose
  // distances changed (spine 0 to leaf 0, leaf 0 to spine 0's LID...).
  EXPECT_LT(inc.lids_rerouted, lids_total(f) / 2);
  expect_kept_columns_equal(before, inc);
  // Leaf 0's hosts lost a route through spine 0: they are rerouted.
  const std::uint16_t host_lid = f.nodes[f.nodes[leaf0].ports[1].peer].port_lids[1];
  EXPECT_EQ(inc.kept[host_lid], 0);
  EXPECT_TRUE(check_routes(after_f, inc, {.minimal = true, .cycles = false}).ok());
}

TEST(RoutingIncremental, RestoredLinkAndMovedHost) {
  const Fabric f = testing::with_lids(sim::make_fat_tree_3level({.k = 8, .pods = 4}));
  Fabric broken = f;
  const auto [n, p] = some_switch_cable(broken, 3);
  unlink(broken, n, p);
  const RoutingResult r_broken = full(broken, RoutingAlgo::kMinHop);
  // The cable returns: distances shrink back, those destinations are rerouted.
  const RoutingResult r_back = again(f, RoutingAlgo::kMinHop, r_broken, broken);
  ASSERT_TRUE(r_back.ok());
  EXPECT_TRUE(r_back.incremental);
  EXPECT_GT(r_back.lids_rerouted, 0u);
  EXPECT_TRUE(check_routes(f, r_back, {.minimal = true, .cycles = false}).ok());
  // A host's LID moves: that LID is routed again.
  Fabric moved = f;
  NodeId host = fabric::kNoNode;
  for (NodeId i = 0; i < moved.nodes.size() && host == fabric::kNoNode; ++i)
    if (!moved.nodes[i].is_switch()) host = i;
  const RoutingResult r0 = full(f, RoutingAlgo::kMinHop);
  moved.nodes[host].port_lids[1] = static_cast<std::uint16_t>(r0.top_lid + 5);
  const RoutingResult r_moved = again(moved, RoutingAlgo::kMinHop, r0, f);
  ASSERT_TRUE(r_moved.ok());
  EXPECT_GE(r_moved.lids_rerouted, 1u);
  EXPECT_TRUE(check_routes(moved, r_moved, {.minimal = true, .cycles = false}).ok());
}

}  // namespace
}  // namespace madengine::sm
