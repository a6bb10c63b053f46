// Routing through the whole SM on the in-process sim: a torus brought up by
// the "dor,dfsssp" chain (dor with its dateline layers), the same torus
// with a cable cut (dor cannot route it, the SM falls back to dfsssp), and
// incremental re-routing of heavy sweeps (a cut cable rewrites a few LFT
// blocks, an unchanged re-sweep none). Each time the switches forward as
// the SM's LFTs say and the routes, with the SL of every path as the SA's
// path database holds it, pass the route checker: every pair delivered, no
// dependency cycle on any VL.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>

#include "engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sm/routing/verify.hpp"
#include "sm/sm.hpp"
#include "sm_sim_rig.hpp"

namespace madengine {
namespace {

using Rig = testing::SimRig;

// The snapshot's routes with each path's SL as the SA will answer it.
sm::RoutingResult published_routes(const sa::Snapshot& s) {
  sm::RoutingResult r;
  r.lfts = s.lfts;
  r.top_lid = s.top_lid;
  r.layers = fabric::PathLayers(s.lfts.size(), s.top_lid);
  std::vector<std::uint8_t> row(s.lfts.size());
  for (std::uint16_t lid = 1; lid <= s.top_lid; ++lid) {
    for (std::size_t i = 0; i < s.lfts.size(); ++i) row[i] = s.paths.lookup(s.lfts[i].node, lid).sl;
    r.layers.set_row(lid, row);
  }
  return r;
}

// The sim's switches forward exactly as the published LFTs say, and those
// routes are complete and deadlock-free on their VLs.
void expect_routed_and_deadlock_free(const Rig& rig, std::uint8_t vls_at_least, bool cycles = true) {
  const auto snap = rig.store.current();
  ASSERT_NE(snap, nullptr);
  std::map<std::uint64_t, std::uint32_t> by_guid;
  for (std::uint32_t n = 0; n < rig.fabric.node_count(); ++n) by_guid[rig.fabric.node_guid(n)] = n;
  for (const auto& lft : snap->lfts) {
    const std::uint32_t n = by_guid.at(snap->fabric.nodes[lft.node].node_guid);
    for (std::uint16_t lid = 1; lid <= snap->top_lid; ++lid) ASSERT_EQ(rig.fabric.lft_port(n, lid), lft.ports[lid]);
  }
  const sm::RouteCheck c = sm::check_routes(snap->fabric, published_routes(*snap), {.cycles = cycles});
  EXPECT_EQ(c.unrouted, 0u) << c.first_problem;
  EXPECT_TRUE(c.acyclic) << c.first_problem;
  EXPECT_GE(c.vls_used, vls_at_least);
  EXPECT_EQ(snap->paths.layered(), vls_at_least > 1);
}

sm::SmConfig chain(const char* engines) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  EXPECT_TRUE(sm::parse_routing_chain(engines, cfg.routing_chain));
  return cfg;
}

TEST(RoutingSmSim, TorusComesUpOnDorWithDatelineLayers) {
  const auto g = sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 2});
  Rig rig(g.topo, "host-0-0-0-0", chain("dor,dfsssp"));
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const auto st = rig.sm->status().last_heavy;
  EXPECT_EQ(st.routing_engine, "dor");
  EXPECT_EQ(st.routing_vls, 4);
  EXPECT_EQ(st.bringup.errors, 0u);
  expect_routed_and_deadlock_free(rig, 4);
}

TEST(RoutingSmSim, DamagedTorusFallsBackToDfsssp) {
  auto g = sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 2});
  ASSERT_EQ(sim::fail_links(g.topo, {.fraction = 0.06, .seed = 5}), 3u);
  Rig rig(g.topo, "host-0-0-0-0", chain("dor,dfsssp,nue"));
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const auto st = rig.sm->status().last_heavy;
  EXPECT_EQ(st.routing_engine, "dfsssp");
  EXPECT_GE(st.routing_vls, 2);
  expect_routed_and_deadlock_free(rig, 2);
}

TEST(RoutingSmSim, HeavySweepsRerouteIncrementally) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  Rig rig(sim::make_fat_tree_3level({.k = 8, .pods = 4}), "host-0-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const auto first = rig.sm->status().last_heavy;
  const std::uint32_t lids = first.nodes;  // one LID per node at LMC 0
  EXPECT_EQ(first.lids_rerouted, lids);
  const std::uint32_t blocks_first = first.bringup.lft_blocks_written;
  // A cable between an edge and an aggregation switch goes down.
  const std::uint32_t edge = rig.fabric.find_node("edge-1-0");
  const sim::PortIdx up = rig.fabric.port(edge, 5);
  ASSERT_NE(rig.fabric.peer(up), sim::kNoPortIdx);
  rig.fabric.link_down(up);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.heavy_sweeps >= 2 && s.last_heavy.links == first.links - 1; },
                            10'000));
  const auto cut = rig.sm->status().last_heavy;
  EXPECT_GT(cut.lids_rerouted, 0u);
  EXPECT_LT(cut.lids_rerouted, lids);
  EXPECT_GT(cut.bringup.lft_blocks_written, 0u);
  EXPECT_LT(cut.bringup.lft_blocks_written, blocks_first);
  expect_routed_and_deadlock_free(rig, 1, false);  // min-hop: complete, not deadlock-free by design
  // The same fabric again: nothing rerouted, nothing written.
  rig.sm->request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.heavy_sweeps >= 3; }, 10'000));
  const auto again = rig.sm->status().last_heavy;
  EXPECT_EQ(again.lids_rerouted, 0u);
  EXPECT_EQ(again.bringup.lft_blocks_written, 0u);
}

}  // namespace
}  // namespace madengine
