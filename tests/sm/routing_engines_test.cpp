// Every routing engine on every topology it claims (fat trees, damaged fat
// trees, 2D/3D tori and meshes, dragonflies, random fabrics), checked by the
// independent route checker: every (source end port, LID) pair delivered,
// shortest where the engine promises it, no cycle in the channel dependency
// graph of any VL, no more VLs than allowed; routes per link reported. Also
// engine chains with fallback, clear failures when VLs run out, and the
// generators themselves.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>

#include "fabric_builders.hpp"
#include "routing_fabrics.hpp"
#include "sm/routing/layering.hpp"
#include "sm/routing/routing.hpp"
#include "sm/routing/switch_graph.hpp"
#include "sm/routing/verify.hpp"

namespace madengine::sm {
namespace {

using fabric::Fabric;

struct Topo {
  std::string name;
  Fabric fabric;
  GridSpec grid;      // dor: the generator's coordinates (empty: inferred)
  bool is_grid = false;  // a torus or mesh
};

Fabric lids(Fabric f) {
  Guid2Lid map;
  assign_lids(f, map, 0);
  return f;
}

Topo torus(std::array<unsigned, 3> dims, std::array<bool, 3> wrap, unsigned hosts, bool give_coords) {
  const auto g = sim::make_torus({.dims = dims, .wrap = wrap, .hosts_per_switch = hosts});
  std::string name = wrap[0] ? "torus" : "mesh";
  for (unsigned d : dims)
    if (d > 1) name += "-" + std::to_string(d);
  return {name, testing::with_lids(g.topo), give_coords ? testing::grid_of(g) : GridSpec{}, true};
}

std::vector<Topo> topologies() {
  std::vector<Topo> t;
  t.push_back({"fat-tree-3", lids(testing::fat_tree3(4, 2, 2, 2, 3)), {}, false});
  t.push_back({"fat-tree-2 k8", testing::with_lids(sim::make_fat_tree_2level({.k = 8})), {}, false});
  {
    auto ft = sim::make_fat_tree_3level({.k = 8, .pods = 4});
    sim::fail_links(ft, {.fraction = 0.1, .seed = 7});
    t.push_back({"fat-tree k8 10% links failed", testing::with_lids(ft), {}, false});
  }
  t.push_back(torus({5, 5, 1}, {true, true, false}, 2, false));
  t.push_back(torus({4, 4, 4}, {true, true, true}, 1, true));
  t.push_back(torus({3, 4, 2}, {false, false, false}, 2, false));
  t.push_back({"dragonfly 5x4", testing::with_lids(sim::make_dragonfly({.groups = 5, .routers = 4, .hosts = 2, .globals = 1})), {}, false});
  t.push_back({"random", lids(testing::random_fabric(14, 12, 2, 3)), {}, false});
  return t;
}

RoutingResult route(const Topo& t, RoutingAlgo algo, std::uint8_t vls_max = 0) {
  RoutingOptions o;
  o.algo = algo;
  o.vls_max = vls_max;
  o.grid = t.grid;
  return compute_routes(t.fabric, o);
}

void expect_good(const Topo& t, const RoutingResult& r, bool minimal, bool switch_endpoints = true) {
  ASSERT_TRUE(r.ok()) << r.error;
  const RouteCheck c = check_routes(t.fabric, r, {.minimal = minimal, .switch_endpoints = switch_endpoints});
  EXPECT_GT(c.pairs, 0u);
  EXPECT_EQ(c.unrouted, 0u) << c.first_problem;
  EXPECT_EQ(c.non_minimal, 0u) << c.first_problem;
  EXPECT_TRUE(c.acyclic) << c.first_problem;
  EXPECT_LE(c.vls_used, std::max<std::uint8_t>(1, r.layers.count()));
  EXPECT_EQ(r.sl_to_vl.size(), std::max<std::size_t>(1, r.layers.count()));
  EXPECT_GT(c.links_used, 0u);
  ::testing::Test::RecordProperty(t.name + " " + to_string(r.engine),
                                  "VLs " + std::to_string(c.vls_used) + ", routes per link max " +
                                      std::to_string(c.max_routes) + " mean " + std::to_string(c.mean_routes));
}

TEST(RoutingEngines, DfssspIsDeadlockFreeAndMinimalEverywhere) {
  for (const Topo& t : topologies()) {
    SCOPED_TRACE(t.name);
    const RoutingResult r = route(t, RoutingAlgo::kDfsssp);
    expect_good(t, r, true);
    EXPECT_LE(r.layers.count(), 8);
  }
}

TEST(RoutingEngines, NueIsDeadlockFreeWithOneVlOrMore) {
  for (const Topo& t : topologies())
    for (std::uint8_t vls : {1, 2, 4}) {
      SCOPED_TRACE(t.name + " VLs " + std::to_string(vls));
      const RoutingResult r = route(t, RoutingAlgo::kNue, vls);
      expect_good(t, r, false);
      EXPECT_LE(r.layers.count(), vls);
    }
}

TEST(RoutingEngines, DorRoutesToriAndMeshesWithDatelines) {
  for (const Topo& t : topologies()) {
    if (!t.is_grid) continue;
    SCOPED_TRACE(t.name);
    const RoutingResult r = route(t, RoutingAlgo::kDor);
    expect_good(t, r, true);
  }
  // Layers: one bit per ring of 4 or more.
  EXPECT_EQ(route(torus({5, 5, 1}, {true, true, false}, 1, false), RoutingAlgo::kDor).layers.count(), 4);
  EXPECT_EQ(route(torus({4, 4, 4}, {true, true, true}, 1, true), RoutingAlgo::kDor).layers.count(), 8);
  EXPECT_EQ(route(torus({3, 4, 2}, {false, false, false}, 1, false), RoutingAlgo::kDor).layers.count(), 1);
  EXPECT_EQ(route(torus({3, 6, 1}, {true, true, false}, 1, true), RoutingAlgo::kDor).layers.count(), 2);
}

TEST(RoutingEngines, DorInfersCoordinatesOrSaysWhyNot) {
  // Rings of 5 and more, and meshes of any size, need no coordinates.
  for (const auto& [dims, wrap] : std::vector<std::pair<std::array<unsigned, 3>, std::array<bool, 3>>>{
           {{5, 6, 1}, {true, true, false}}, {{5, 5, 5}, {true, true, true}}, {{2, 3, 4}, {false, false, false}},
           {{7, 1, 1}, {true, false, false}}}) {
    const Topo t = torus(dims, wrap, 1, false);
    SCOPED_TRACE(t.name);
    expect_good(t, route(t, RoutingAlgo::kDor), true);
  }
  const Topo four = torus({4, 4, 1}, {true, true, false}, 1, false);
  const RoutingResult r = route(four, RoutingAlgo::kDor);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("give the coordinates"), std::string::npos) << r.error;
  const Topo ft{"ft", lids(testing::fat_tree3(4, 2, 2, 2, 3)), {}, false};
  EXPECT_FALSE(route(ft, RoutingAlgo::kDor).ok());
}

TEST(RoutingEngines, UpDownAndMinHopOnEveryTopology) {
  for (const Topo& t : topologies()) {
    SCOPED_TRACE(t.name);
    // Up/down is deadlock-free between CAs (switch LIDs may fall back to min-hop).
    expect_good(t, route(t, RoutingAlgo::kUpDown), false, false);
    const RoutingResult m = route(t, RoutingAlgo::kMinHop);
    ASSERT_TRUE(m.ok());
    const RouteCheck c = check_routes(t.fabric, m, {.minimal = true, .cycles = false});
    EXPECT_EQ(c.unrouted + c.non_minimal, 0u) << c.first_problem;
  }
}

TEST(RoutingEngines, ToriNeedLayersThatMinHopDoesNotHave) {
  // Plain min-hop on a torus has dependency cycles: what the layered engines fix.
  const Topo t = torus({5, 5, 1}, {true, true, false}, 1, false);
  const RouteCheck c = check_routes(t.fabric, route(t, RoutingAlgo::kMinHop));
  EXPECT_FALSE(c.acyclic);
  const RoutingResult d = route(t, RoutingAlgo::kDfsssp);
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_GT(d.layers.count(), 1);
}

TEST(RoutingEngines, FatTreesNeedFewLayersAndStayBalanced) {
  const Topo t{"k8", testing::with_lids(sim::make_fat_tree_2level({.k = 8})), {}, false};
  for (auto algo : {RoutingAlgo::kDfsssp, RoutingAlgo::kMinHop, RoutingAlgo::kFatTree}) {
    SCOPED_TRACE(to_string(algo));
    const RoutingResult r = route(t, algo);
    ASSERT_TRUE(r.ok());
    // Host to host a fat tree's shortest routes go up then down: one layer.
    // dfsssp also routes the switches' own LIDs (a spine's route to another
    // spine turns down then up), which may take a second.
    EXPECT_LE(r.layers.count(), 2);
    const RouteCheck c = check_routes(t.fabric, r, {.switch_endpoints = false});
    EXPECT_TRUE(c.acyclic);
    EXPECT_EQ(c.vls_used, 1);  // the host-to-host paths alone
    // Every leaf-spine link carries the same number of host routes, within 25 %.
    EXPECT_LE(static_cast<double>(c.max_routes), 1.25 * c.mean_routes) << c.max_routes << " vs " << c.mean_routes;
  }
}

TEST(RoutingEngines, NotEnoughVlsIsAClearError) {
  const Topo t = torus({4, 4, 4}, {true, true, true}, 1, true);
  const RoutingResult dor = route(t, RoutingAlgo::kDor, 4);
  EXPECT_FALSE(dor.ok());
  EXPECT_NE(dor.error.find("needs 8 VLs"), std::string::npos) << dor.error;
  // Rings of 5: shortest paths close every ring, one layer cannot hold them.
  const RoutingResult dfsssp = route(torus({5, 5, 1}, {true, true, false}, 1, false), RoutingAlgo::kDfsssp, 1);
  EXPECT_FALSE(dfsssp.ok());
  EXPECT_NE(dfsssp.error.find("needs more than 1 VL layer"), std::string::npos) << dfsssp.error;
  EXPECT_NE(dfsssp.error.find("offers 1 VLs"), std::string::npos) << dfsssp.error;
}

TEST(RoutingEngines, BothLayeringMethodsBreakEveryCycle) {
  // Min-hop routes have cycles on these; either method's layers have none.
  for (const Topo& t : topologies()) {
    if (t.name.rfind("fat-tree-2", 0) == 0) continue;
    SCOPED_TRACE(t.name);
    RoutingResult r = route(t, RoutingAlgo::kMinHop);
    ASSERT_TRUE(r.ok());
    const SwitchGraph g = SwitchGraph::build(t.fabric);
    for (auto method : {&assign_layers_first_fit, &assign_layers_by_cycles}) {
      std::string error;
      ASSERT_TRUE(method(g, r.lfts, r.top_lid, 15, r.layers, error)) << error;
      const RouteCheck c = check_routes(t.fabric, r);
      EXPECT_TRUE(c.acyclic) << c.first_problem;
      EXPECT_EQ(c.unrouted, 0u);
      EXPECT_LE(r.layers.count(), 15);
    }
    // One VL cannot hold a torus's shortest paths: both say so.
    if (t.name == "torus-5-5") {
      std::string error;
      EXPECT_FALSE(assign_layers_first_fit(g, r.lfts, r.top_lid, 1, r.layers, error));
      EXPECT_FALSE(assign_layers_by_cycles(g, r.lfts, r.top_lid, 1, r.layers, error));
      EXPECT_NE(error.find("needs more than 1 VL layer"), std::string::npos) << error;
    }
  }
}

TEST(RoutingEngines, ChainFallsBackAndSaysWhy) {
  // A damaged torus: dor cannot route it, dfsssp can.
  auto g = sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 1});
  const std::size_t removed = sim::fail_links(g.topo, {.fraction = 0.05, .seed = 3});
  ASSERT_GT(removed, 0u);
  const Fabric f = testing::with_lids(g.topo);
  RoutingOptions o;
  ASSERT_TRUE(parse_routing_chain("dor, dfsssp ,minhop", o.chain));
  RoutingResult r = compute_routes(f, o);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.engine, RoutingAlgo::kDfsssp);
  ASSERT_EQ(r.failed.size(), 1u);
  EXPECT_EQ(r.failed[0].rfind("dor: ", 0), 0u) << r.failed[0];
  EXPECT_TRUE(check_routes(f, r).ok());
  // With one VL dfsssp fails too, and nue, the anchor, routes.
  o.vls_max = 1;
  ASSERT_TRUE(parse_routing_chain("dor,dfsssp,nue", o.chain));
  r = compute_routes(f, o);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.engine, RoutingAlgo::kNue);
  EXPECT_EQ(r.failed.size(), 2u);
  EXPECT_TRUE(check_routes(f, r).ok());
  // Every engine failing: the error lists them all.
  ASSERT_TRUE(parse_routing_chain("dor,dfsssp", o.chain));
  r = compute_routes(f, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("dor: "), std::string::npos);
  EXPECT_NE(r.error.find("dfsssp: "), std::string::npos);
}

TEST(RoutingEngines, ChainParsing) {
  std::vector<RoutingAlgo> c;
  ASSERT_TRUE(parse_routing_chain("dfsssp,updn,minhop", c));
  EXPECT_EQ(c, (std::vector<RoutingAlgo>{RoutingAlgo::kDfsssp, RoutingAlgo::kUpDown, RoutingAlgo::kMinHop}));
  EXPECT_EQ(to_string(c), "dfsssp,updn,minhop");
  ASSERT_TRUE(parse_routing_chain("nue", c));
  EXPECT_EQ(c.size(), 1u);
  std::string err;
  EXPECT_FALSE(parse_routing_chain("dfsssp,lash", c, &err));
  EXPECT_NE(err.find("lash"), std::string::npos);
  EXPECT_FALSE(parse_routing_chain("", c, &err));
  EXPECT_FALSE(parse_routing_chain("minhop,,updn", c, &err));
  EXPECT_FALSE(parse_routing_chain("minhop,minhop", c, &err));
  EXPECT_NE(err.find("twice"), std::string::npos);
  EXPECT_EQ(c.size(), 1u);  // untouched on failure
}

TEST(RoutingEngines, ResultsDoNotDependOnThreads) {
  const Topo t = torus({5, 5, 1}, {true, true, false}, 2, false);
  for (auto algo : {RoutingAlgo::kDfsssp, RoutingAlgo::kNue, RoutingAlgo::kDor}) {
    RoutingOptions o;
    o.algo = algo;
    const RoutingResult a = compute_routes(t.fabric, o);
    o.threads = 3;
    const RoutingResult b = compute_routes(t.fabric, o);
    ASSERT_TRUE(a.ok() && b.ok());
    for (std::size_t i = 0; i < a.lfts.size(); ++i) EXPECT_EQ(a.lfts[i].ports, b.lfts[i].ports);
    EXPECT_TRUE(a.layers == b.layers);
  }
}

TEST(Generators, TorusMeshDragonflyAndFailures) {
  const auto t = sim::make_torus({.dims = {4, 3, 2}, .wrap = {true, true, true}, .hosts_per_switch = 2});
  EXPECT_EQ(t.topo.switch_count(), 24u);
  EXPECT_EQ(t.topo.ca_count(), 48u);
  // Rings of 4 and 3 give 2 links per switch per dimension; a ring of 2 two cables between each pair.
  EXPECT_EQ(t.topo.link_count(), 48u + 24u * 3u);
  const auto m = sim::make_torus({.dims = {4, 3, 1}, .wrap = {false, false, false}, .hosts_per_switch = 1});
  EXPECT_EQ(m.topo.link_count(), 12u + (3u * 3u + 4u * 2u));
  // Dragonfly: 5 groups of 4 routers, 1 global each: every pair of groups joined once.
  const auto df = sim::make_dragonfly({.groups = 5, .routers = 4, .hosts = 2, .globals = 1});
  EXPECT_EQ(df.switch_count(), 20u);
  EXPECT_EQ(df.link_count(), 40u + 5u * 6u + 10u);
  EXPECT_THROW(sim::make_dragonfly({.groups = 6, .routers = 4, .hosts = 2, .globals = 1}), std::invalid_argument);
  // Failures keep the switches connected and remove what was asked.
  auto ft = sim::make_fat_tree_3level({.k = 8, .pods = 4});
  const std::size_t links = ft.link_count();
  const std::size_t removed = sim::fail_links(ft, {.fraction = 0.1, .seed = 9});
  EXPECT_EQ(ft.link_count(), links - removed);
  EXPECT_EQ(removed, 13u);  // 10 % of 128 switch-to-switch cables
  const Fabric f = testing::with_lids(ft);
  RoutingOptions o;
  o.algo = RoutingAlgo::kMinHop;
  EXPECT_EQ(compute_routes(f, o).unreachable, 0u);
  // ibsim topology files of each parse back to the same wiring.
  for (const sim::Topology* topo : std::initializer_list<const sim::Topology*>{&t.topo, &m.topo, &df, &ft}) {
    const sim::Topology back = sim::parse_topology(sim::write_topology(*topo));
    EXPECT_EQ(back.link_count(), topo->link_count());
    EXPECT_EQ(back.switch_count(), topo->switch_count());
  }
}

}  // namespace
}  // namespace madengine::sm
