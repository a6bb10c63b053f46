// The path-record database agrees with walking the LFTs hop by hop, takes the
// minimum MTU and rate along each path, and does not depend on sharding.
#include "sa/paths/path_db.hpp"

#include <gtest/gtest.h>

#include "fabric_builders.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sa {
namespace {

struct Routed {
  fabric::Fabric f;
  sm::RoutingResult r;
};

Routed routed_ft3() {
  Routed x{testing::fat_tree3(4, 2, 2, 2, 3), {}};
  for (auto& n : x.f.nodes)
    for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;  // 4x QDR, 4096
  sm::Guid2Lid map;
  sm::assign_lids(x.f, map, 0);
  x.r = sm::compute_routes(x.f, {});
  return x;
}

std::vector<std::uint16_t> lids(const fabric::Fabric& f) {
  std::vector<std::uint16_t> out;
  for (auto e : f.end_ports()) out.push_back(f.lid_of(e));
  return out;
}

TEST(PathDb, HopsMatchTheRoutedWalk) {
  auto x = routed_ft3();
  auto db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 1);
  for (auto s : lids(x.f))
    for (auto d : lids(x.f)) {
      const auto p = db.path(s, d);
      const int hops = sm::trace_route(x.f, x.r, s, d);
      ASSERT_TRUE(p.routed()) << s << " -> " << d;
      ASSERT_EQ(p.hops, hops) << s << " -> " << d;
      if (s == d) continue;  // a switch's port 0 to itself crosses no link
      ASSERT_EQ(p.mtu, 5);
      ASSERT_EQ(p.rate, 7);
    }
}

TEST(PathDb, MinimumMtuAndRateAlongThePath) {
  auto x = routed_ft3();
  // Slow down one host's link: every path to or from it gets its MTU and rate.
  const auto host = x.f.end_ports().back();
  auto& port = x.f.nodes[host.node].ports[host.port];
  port.mtu = 2;
  port.link_width = 1;
  port.link_speed = 1;
  auto& sw_port = x.f.nodes[port.peer].ports[port.peer_port];
  sw_port.mtu = 2;
  sw_port.link_width = 1;
  sw_port.link_speed = 1;
  auto db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 3, 2);
  const auto slow = x.f.lid_of(host);
  for (auto other : lids(x.f)) {
    if (other == slow) continue;
    for (auto p : {db.path(other, slow), db.path(slow, other)}) {
      EXPECT_EQ(p.mtu, 2);
      EXPECT_EQ(p.rate, 2);
    }
  }
}

TEST(PathDb, ShardingDoesNotChangeAnswers) {
  auto x = routed_ft3();
  auto one = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 1, 1);
  auto many = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 5, 2);
  EXPECT_EQ(many.shards(), 5u);
  for (auto s : lids(x.f))
    for (auto d : lids(x.f)) {
      const auto a = one.path(s, d), b = many.path(s, d);
      ASSERT_EQ(a.hops, b.hops);
      ASSERT_EQ(a.mtu, b.mtu);
      ASSERT_EQ(a.rate, b.rate);
    }
}

TEST(PathDb, UnknownLidsAndBrokenRoutesAreUnrouted) {
  auto x = routed_ft3();
  auto db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 1);
  EXPECT_FALSE(db.path(0, 1).routed());
  EXPECT_FALSE(db.path(1, static_cast<std::uint16_t>(x.r.top_lid + 1)).routed());
  // Break every route towards one LID at one switch by pointing it into a loop.
  const auto d = lids(x.f).back();
  auto lfts = x.r.lfts;
  for (auto& l : lfts) l.ports[d] = fabric::kLftNoRoute;
  auto broken = PathDb::build(x.f, lfts, x.r.top_lid, 2, 1);
  EXPECT_FALSE(broken.path(lids(x.f).front(), d).routed());
}

}  // namespace
}  // namespace madengine::sa
