// PathRecord SLs from a layered (deadlock-free) routing: the path database
// holds each path's layer exactly (every source switch, every LID, every end
// port pair), PathRecords carry it, a query asking another SL gets no path
// (as OpenSM with a routing engine that chooses path SLs), and with a
// routing that needs no layers the requested SL is echoed as before.
#include <gtest/gtest.h>

#include "sa_fixture.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sa {
namespace {

using namespace testing;
namespace a = wire::sa_attr;
namespace m = wire::method;
namespace cm = wire::path_record_cm;

// A random irregular fabric, which dfsssp routes on two or more layers.
Built layered_snapshot() {
  Built b = build_snapshot(madengine::testing::random_fabric(14, 12, 2, 3));
  sm::RoutingOptions o;
  o.algo = sm::RoutingAlgo::kDfsssp;
  b.routes = sm::compute_routes(b.snap->fabric, o);
  EXPECT_TRUE(b.routes.ok()) << b.routes.error;
  b.snap->lfts = b.routes.lfts;
  b.snap->top_lid = b.routes.top_lid;
  b.snap->paths = PathDb::build(b.snap->fabric, b.routes.lfts, b.routes.top_lid, 2, 2, &b.routes.layers);
  return b;
}

std::size_t switch_index(const sm::RoutingResult& r, fabric::NodeId node) {
  for (std::size_t i = 0; i < r.lfts.size(); ++i)
    if (r.lfts[i].node == node) return i;
  return ~std::size_t{0};
}

TEST(PathDbSl, EveryPathCarriesItsLayer) {
  const Built b = layered_snapshot();
  const Snapshot& s = *b.snap;
  ASSERT_GT(b.routes.layers.count(), 1) << "the fabric should need layers";
  EXPECT_TRUE(s.paths.layered());
  // Every (source switch, LID).
  for (std::size_t i = 0; i < b.routes.lfts.size(); ++i)
    for (std::uint16_t lid = 1; lid <= b.routes.top_lid; ++lid) {
      const PathAttrs p = s.paths.lookup(b.routes.lfts[i].node, lid);
      if (!p.routed()) continue;
      ASSERT_EQ(p.sl, b.routes.layers.at(i, lid)) << "switch " << i << " LID " << lid;
    }
  // Every end-port pair: the layer of the source's switch.
  std::set<int> seen;
  for (const auto src : s.fabric.end_ports())
    for (const auto dst : s.fabric.end_ports()) {
      const std::uint16_t slid = s.fabric.lid_of(src), dlid = s.fabric.lid_of(dst);
      const fabric::Node& n = s.fabric.nodes[src.node];
      const fabric::NodeId sw = n.is_switch() ? src.node : n.ports[src.port].peer;
      const PathAttrs p = s.paths.path(slid, dlid);
      ASSERT_TRUE(p.routed());
      ASSERT_EQ(p.sl, b.routes.layers.at(switch_index(b.routes, sw), dlid));
      seen.insert(p.sl);
    }
  EXPECT_GT(seen.size(), 1u);
}

TEST(PathDbSl, PathRecordsCarryTheLayerAndRefuseAnotherSl) {
  const Built b = layered_snapshot();
  SaHarness h(b.snap);
  const auto lids = ca_lids(*b.snap);
  std::uint64_t tid = 0x500;
  unsigned refused = 0;
  for (const std::uint16_t s : lids)
    for (const std::uint16_t d : lids) {
      wire::PathRecord q{};
      q.slid = wire::be16::from(s);
      q.dlid = wire::be16::from(d);
      auto r = h.ask(sa_request(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid, q, ++tid, s));
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status(), 0);
      const std::uint8_t sl = b.snap->paths.path(s, d).sl;
      EXPECT_EQ(r->record<wire::PathRecord>().sl(), sl) << s << " -> " << d;
      // Asking for the path's own SL finds it; another SL does not.
      q.set_sl(sl);
      r = h.ask(sa_request(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid | cm::kSl, q, ++tid, s));
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status(), 0);
      q.set_sl(static_cast<std::uint8_t>((sl + 1) % 16));
      r = h.ask(sa_request(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid | cm::kSl, q, ++tid, s));
      ASSERT_TRUE(r);
      EXPECT_NE(r->status(), 0);
      ++refused;
    }
  EXPECT_GT(refused, 0u);
}

TEST(PathDbSl, UnlayeredRoutingEchoesTheRequestedSl) {
  const Built b = build_snapshot(madengine::testing::fat_tree2(4, 2, 3));
  EXPECT_FALSE(b.snap->paths.layered());
  SaHarness h(b.snap);
  const auto lids = ca_lids(*b.snap);
  wire::PathRecord q{};
  q.slid = wire::be16::from(lids.front());
  q.dlid = wire::be16::from(lids.back());
  q.set_sl(5);
  const auto r = h.ask(sa_request(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid | cm::kSl, q, 0x900, lids.front()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().sl(), 5);
}

}  // namespace
}  // namespace madengine::sa
