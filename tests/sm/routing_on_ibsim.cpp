// The deadlock-free engines on ibsim (label ibsim): madengine's SM brings up
// a torus with the "dor,dfsssp" chain and a fat tree with 10 % of its cables
// cut with dfsssp; the LFTs read back from ibsim's switches with ibroute
// equal the SM's, and with each path's SL as the SA serves it they deliver
// every pair and have no dependency cycle on any VL; the SL2VL tables read
// back with smpquery, with those SLs, make a channel dependency graph
// without a cycle (deadlock freedom on the switches, not only in the SA's
// SL field); saquery's PathRecords from another host carry those SLs.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "conformance.hpp"
#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "routing_ibsim.hpp"
#include "saquery_records.hpp"
#include "sim/generators.hpp"
#include "sim/topology.hpp"
#include "sm/routing/verify.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;

struct Case {
  const char* name;
  sim::Topology topo;
  const char* chain;
  const char* sm_host;
  const char* diag_host;
  std::uint8_t vls_at_least;
};

void bring_up_and_check(const Case& c) {
  const auto started = testing::start_ibsim(c.topo, "routing-ibsim");
  ibsim::IbsimFabric& fabric = *started;
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self(c.sm_host);
  ibsim::MadengineRig rig;
  node::NodeConfig cfg = ibsim::MadengineRig::opensm_keyed();
  cfg.sm.routing = c.chain;
  cfg.sm.transaction_timeout_ms = 1000;  // a loaded shared machine can delay ibsim well past 200 ms
  ASSERT_TRUE(rig.start(cfg)) << rig.error;
  ASSERT_TRUE(rig.sm().wait_subnet_up(120s)) << rig.sm().status().last_heavy.error;
  const auto st = rig.sm().status().last_heavy;
  EXPECT_EQ(st.bringup.errors, 0u);
  const auto snap = rig.store().current();
  ASSERT_NE(snap, nullptr);

  // What ibsim's switches hold.
  testing::ReadBack rb = testing::read_back_routes(fabric, c.diag_host);
  ASSERT_TRUE(rb.error.empty()) << rb.error;
  ASSERT_EQ(rb.routes.lfts.size(), snap->lfts.size());
  std::map<std::uint64_t, const fabric::Lft*> ours;
  for (const auto& l : snap->lfts) ours[snap->fabric.nodes[l.node].node_guid] = &l;
  rb.routes.layers = fabric::PathLayers(rb.routes.lfts.size(), rb.routes.top_lid);
  std::vector<std::uint8_t> row(rb.routes.lfts.size());
  for (std::uint16_t lid = 1; lid <= rb.routes.top_lid; ++lid) {
    for (std::size_t i = 0; i < rb.routes.lfts.size(); ++i) {
      const auto& lft = rb.routes.lfts[i];
      const fabric::Lft* mine = ours.at(rb.fabric.nodes[lft.node].node_guid);
      ASSERT_EQ(lft.ports[lid], lid < mine->ports.size() ? mine->ports[lid] : fabric::kLftNoRoute) << "LID " << lid;
      row[i] = snap->paths.lookup(mine->node, lid).sl;
    }
    rb.routes.layers.set_row(lid, row);
  }
  const sm::RouteCheck check = sm::check_routes(rb.fabric, rb.routes);
  EXPECT_EQ(check.unrouted, 0u) << check.first_problem;
  EXPECT_TRUE(check.acyclic) << check.first_problem;
  EXPECT_GE(check.vls_used, c.vls_at_least);
  EXPECT_EQ(st.routing_vls, check.vls_used);
  ::testing::Test::RecordProperty(c.name, st.routing_engine + " on " + std::to_string(check.vls_used) +
                                              " VLs, routes per link max " + std::to_string(check.max_routes) +
                                              " mean " + std::to_string(check.mean_routes));

  // Deadlock freedom on the switches: the SL2VL tables read back from them
  // (the SM writes them for a layered routing, QoS or not) with each
  // path's SL give a channel dependency graph without a cycle.
  const testing::Sl2VlReadBack vls = testing::read_back_sl2vl(fabric, c.diag_host, rb);
  ASSERT_TRUE(vls.error.empty()) << vls.error;
  if (st.routing_vls > 1) {
    EXPECT_GT(st.qos.sl2vl_sets, 0u) << "the layered routing's SL2VL tables were written";
  }
  std::map<fabric::NodeId, std::size_t> index_of;
  for (std::size_t i = 0; i < rb.routes.lfts.size(); ++i) index_of[rb.routes.lfts[i].node] = i;
  std::size_t channels = 0;
  const std::string cdg = testing::check_cdg(
      rb, vls, [&](fabric::NodeId sw, std::uint16_t dlid) { return rb.routes.layers.at(index_of.at(sw), dlid); },
      &channels);
  EXPECT_EQ(cdg, "");
  EXPECT_GT(channels, 0u);

  // PathRecords as a client sees them: the SL of the path.
  std::vector<std::uint16_t> lids;
  for (const auto e : snap->fabric.end_ports())
    if (!snap->fabric.nodes[e.node].is_switch()) lids.push_back(snap->fabric.lid_of(e));
  std::mt19937 rng(7);
  for (int i = 0; i < 12; ++i) {
    const std::uint16_t s = lids[rng() % lids.size()], d = lids[rng() % lids.size()];
    const auto r = ibsim::conformance::saquery_once(
        fabric, "PR --slid " + std::to_string(s) + " --dlid " + std::to_string(d), c.diag_host);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto m = ibsim::parse_dotted(r.out);
    ASSERT_TRUE(m.count("sl")) << r.out;
    EXPECT_EQ(std::stoul(m.at("sl"), nullptr, 0), snap->paths.path(s, d).sl) << s << " -> " << d;
  }
}

TEST(RoutingIbsim, TorusWithDatelineLayers) {
  const auto g = sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 2});
  bring_up_and_check({"torus 5x5", g.topo, "dor,dfsssp", "host-0-0-0-0", "host-2-2-0-1", 4});
}

TEST(RoutingIbsim, DamagedFatTreeOnDfsssp) {
  auto ft = sim::make_fat_tree_3level({.k = 8, .pods = 4});
  ASSERT_GT(sim::fail_links(ft, {.fraction = 0.1, .seed = 7}), 0u);
  bring_up_and_check({"fat tree k8, 10% cut", std::move(ft), "dfsssp", "host-0-0-0", "host-1-0-0", 1});
}

}  // namespace
}  // namespace madengine
