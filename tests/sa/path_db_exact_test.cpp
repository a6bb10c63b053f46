// The compact path database answers exactly what a full per-(switch, LID)
// table would: compared, for every source switch and every LID and for every
// pair of end-port LIDs, with a brute-force walk of the LFTs hop by hop, on
// fat trees (LMC 0 and 2), random irregular fabrics (min-hop and up/down),
// fabrics with mixed link MTUs and rates (exceptions), corrupted LFTs
// (loops, dead ends, misrouted last hops) and one with more distinct
// switch-to-switch values than the palette holds.
#include <gtest/gtest.h>

#include <random>

#include "fabric_builders.hpp"
#include "madengine/wire/link_rate.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sa {
namespace {

constexpr std::uint8_t kNone = 0xfe;  // no link crossed yet

struct Routed {
  fabric::Fabric f;
  sm::RoutingResult r;
};

Routed route(fabric::Fabric f, std::uint8_t lmc, sm::RoutingAlgo algo = sm::RoutingAlgo::kMinHop) {
  Routed x{std::move(f), {}};
  sm::Guid2Lid map;
  sm::assign_lids(x.f, map, lmc);
  sm::RoutingOptions o;
  o.algo = algo;
  x.r = sm::compute_routes(x.f, o);
  return x;
}

void uniform_links(fabric::Fabric& f) {
  for (auto& n : f.nodes)
    for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;  // 4x QDR, 4096
}

// Every port its own MTU and every link its own width and speed (both ends
// of a link run at one), so paths through different links differ.
void mixed_links(fabric::Fabric& f, std::uint32_t seed, unsigned slow_one_in) {
  std::mt19937 rng(seed);
  uniform_links(f);
  static constexpr std::uint8_t kWidths[] = {1, 16, 2, 8}, kSpeeds[] = {1, 2, 4};
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i)
    for (std::size_t pn = 0; pn < f.nodes[i].ports.size(); ++pn) {
      fabric::Port& p = f.nodes[i].ports[pn];
      if (rng() % slow_one_in != 0) continue;
      p.mtu = static_cast<std::uint8_t>(1 + rng() % 5);
      if (!p.linked() || p.peer < i || (p.peer == i && p.peer_port < pn)) continue;  // the link's other end set it
      p.link_width = kWidths[rng() % 4];
      p.link_speed = kSpeeds[rng() % 3];
      fabric::Port& q = f.nodes[p.peer].ports[p.peer_port];
      q.link_width = p.link_width;
      q.link_speed = p.link_speed;
    }
}

std::uint8_t slower(std::uint8_t a, std::uint8_t b) {
  if (a == kNone) return b;
  if (b == kNone) return a;
  return wire::rate_mbps(a) <= wire::rate_mbps(b) ? a : b;
}
std::uint8_t port_rate(const fabric::Port& p) { return wire::rate_code_for(wire::link_mbps(p.link_width, {p.link_speed, 0, 0})); }
// A link's rate is the lesser of its two ends' (both ports are crossed).
std::uint8_t rate_of(const fabric::Fabric& f, const fabric::Port& p) {
  return slower(port_rate(p), port_rate(f.nodes[p.peer].ports[p.peer_port]));
}

// What a full table holds for (switch node, LID): follow the LFTs from the
// switch, one hop at a time, until the LID's port (or a dead end or a loop).
PathAttrs walk(const Routed& x, const std::vector<std::size_t>& index, std::size_t sw, std::uint16_t dlid) {
  const auto& lfts = x.r.lfts;
  PathAttrs a{0, kNone, kNone, 0};
  for (std::size_t steps = 0; steps <= lfts.size(); ++steps) {
    const fabric::Lft& lft = lfts[sw];
    const fabric::Node& node = x.f.nodes[lft.node];
    const std::uint8_t port = dlid < lft.ports.size() ? lft.ports[dlid] : fabric::kLftNoRoute;
    if (port == fabric::kLftNoRoute || (port != 0 && (port > node.num_ports() || !node.ports[port].linked())))
      return {};
    if (port == 0) return a;
    const fabric::Port& out = node.ports[port];
    a.mtu = std::min(a.mtu, out.mtu);
    a.rate = slower(a.rate, rate_of(x.f, out));
    if (!x.f.nodes[out.peer].is_switch()) return a;
    ++a.hops;
    sw = index[out.peer];
  }
  return {};  // a forwarding loop
}

struct Reference {
  std::vector<std::vector<PathAttrs>> table;  // [switch index][lid]
  std::vector<std::uint16_t> lids;            // every end-port LID (LMC blocks expanded)
};

Reference reference(const Routed& x) {
  Reference ref;
  std::vector<bool> has_port(x.r.top_lid + 1u, false);
  for (const auto e : x.f.end_ports()) {
    const auto& n = x.f.nodes[e.node];
    const unsigned count = n.is_switch() ? 1u : 1u << n.lmc;
    for (unsigned i = 0; i < count; ++i) {
      const unsigned lid = x.f.lid_of(e) + i;
      if (lid == i || lid > x.r.top_lid) continue;
      has_port[lid] = true;
      ref.lids.push_back(static_cast<std::uint16_t>(lid));
    }
  }
  std::vector<std::size_t> index(x.f.nodes.size(), ~std::size_t{0});
  for (std::size_t i = 0; i < x.r.lfts.size(); ++i) index[x.r.lfts[i].node] = i;
  ref.table.resize(x.r.lfts.size());
  for (std::size_t s = 0; s < x.r.lfts.size(); ++s) {
    ref.table[s].resize(x.r.top_lid + 1u);
    for (std::uint32_t d = 1; d <= x.r.top_lid; ++d)
      if (has_port[d]) ref.table[s][d] = walk(x, index, s, static_cast<std::uint16_t>(d));
  }
  return ref;
}

// Where each end-port LID enters the fabric: its switch index and own link.
struct Source {
  std::size_t sw = ~std::size_t{0};
  std::uint8_t mtu = kNone, rate = kNone;
};

std::vector<Source> sources(const Routed& x) {
  std::vector<Source> out(x.r.top_lid + 1u);
  for (const auto& e : x.f.end_ports()) {
    const auto& n = x.f.nodes[e.node];
    Source src;
    const fabric::NodeId at = n.is_switch() ? e.node : n.ports[e.port].peer;
    if (!n.is_switch()) src.mtu = n.ports[e.port].mtu, src.rate = rate_of(x.f, n.ports[e.port]);
    for (std::size_t i = 0; i < x.r.lfts.size(); ++i)
      if (x.r.lfts[i].node == at) src.sw = i;
    const unsigned count = n.is_switch() ? 1u : 1u << n.lmc;
    for (unsigned i = 0; i < count; ++i)
      if (x.f.lid_of(e) != 0 && x.f.lid_of(e) + i <= x.r.top_lid) out[x.f.lid_of(e) + i] = src;
  }
  return out;
}

// The whole end-to-end path a per-LID table gives: the source's own link
// joined to its switch's entry.
PathAttrs reference_path(const Reference& ref, const Source& src, std::uint16_t dlid) {
  if (src.sw == ~std::size_t{0}) return {};
  PathAttrs p = ref.table[src.sw][dlid];
  if (!p.routed()) return p;
  p.mtu = std::min(p.mtu, src.mtu);
  p.rate = slower(p.rate, src.rate);
  if (p.mtu == kNone) p.mtu = 5;
  if (p.rate == kNone) p.rate = 16;
  return p;
}

// Compares every (switch, LID) and every (LID, LID) pair; returns the pairs compared.
std::size_t expect_exact(const Routed& x, unsigned shards, unsigned threads, const char* what) {
  SCOPED_TRACE(what);
  const Reference ref = reference(x);
  const PathDb db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, shards, threads);
  std::size_t compared = 0;
  for (std::size_t s = 0; s < x.r.lfts.size(); ++s)
    for (std::uint32_t d = 0; d <= x.r.top_lid + 1u; ++d) {
      const PathAttrs want = d <= x.r.top_lid ? ref.table[s][d] : PathAttrs{};
      const PathAttrs got = db.lookup(x.r.lfts[s].node, static_cast<std::uint16_t>(d));
      EXPECT_EQ(got, want) << "switch " << s << " -> LID " << d << ": hops " << int{got.hops} << "/" << int{want.hops}
                           << " mtu " << int{got.mtu} << "/" << int{want.mtu} << " rate " << int{got.rate} << "/"
                           << int{want.rate};
      if (!(got == want)) return compared;
      ++compared;
    }
  const std::vector<Source> src = sources(x);
  for (const std::uint16_t s : ref.lids)
    for (const std::uint16_t d : ref.lids) {
      const PathAttrs want = reference_path(ref, src[s], d), got = db.path(s, d);
      EXPECT_EQ(got, want) << "LID " << s << " -> LID " << d;
      if (!(got == want)) return compared;
      ++compared;
    }
  // all_routed() (PathRecord's Reversible skips the way back on it): every
  // (switch, end-port LID) pair routed and every end port on a switch.
  bool all = !x.r.lfts.empty();
  for (const std::uint16_t d : ref.lids) {
    all = all && src[d].sw != ~std::size_t{0};
    for (std::size_t s = 0; s < x.r.lfts.size(); ++s) all = all && ref.table[s][d].routed();
  }
  EXPECT_EQ(db.all_routed(), all);
  return compared;
}

TEST(PathDbExact, FatTreeUniformLinksHasNoExceptions) {
  auto f = testing::fat_tree3(4, 2, 2, 2, 3);
  uniform_links(f);
  const auto x = route(std::move(f), 0);
  EXPECT_GT(expect_exact(x, 2, 1, "ft3 lmc 0"), 0u);
  const PathDb db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 1);
  EXPECT_EQ(db.exceptions(), 0u);
  EXPECT_LT(db.palette_size(), 8u);
  EXPECT_TRUE(db.all_routed());
}

TEST(PathDbExact, FatTreeWithLmc) {
  for (const auto algo : {sm::RoutingAlgo::kMinHop, sm::RoutingAlgo::kFatTree}) {
    auto f = testing::fat_tree3(4, 2, 2, 2, 3);
    uniform_links(f);
    const auto x = route(std::move(f), 2, algo);
    EXPECT_GT(expect_exact(x, 3, 2, sm::to_string(algo)), 0u);
  }
}

TEST(PathDbExact, FatTreeWithMixedLinksKeepsExceptions) {
  for (const std::uint32_t seed : {1u, 2u, 3u}) {
    auto f = testing::fat_tree3(4, 3, 3, 2, 4);
    mixed_links(f, seed, 4);
    for (const std::uint8_t lmc : {0, 1}) {
      const auto x = route(f, lmc, sm::RoutingAlgo::kFatTree);
      EXPECT_GT(expect_exact(x, 2, 2, "ft3 mixed"), 0u);
      const PathDb db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 2);
      EXPECT_GT(db.exceptions(), 0u) << "seed " << seed << ": the mixed fabric should need exceptions";
    }
  }
}

TEST(PathDbExact, RandomIrregularFabrics) {
  for (const std::uint32_t seed : {11u, 12u, 13u, 14u}) {
    for (const auto algo : {sm::RoutingAlgo::kMinHop, sm::RoutingAlgo::kUpDown}) {
      auto f = testing::random_fabric(20, 25, 3, seed);
      mixed_links(f, seed, seed % 2 == 0 ? 3 : 1000);
      const auto x = route(std::move(f), seed % 3 == 0 ? 1 : 0, algo);
      EXPECT_GT(expect_exact(x, 1 + seed % 3, 1 + seed % 2, sm::to_string(algo)), 0u);
    }
  }
}

// Broken LFTs: entries pointing nowhere, into loops, or away from the LID's
// own switch at the last hop (whole LIDs then live in exception rows).
TEST(PathDbExact, CorruptedForwardingTables) {
  for (const std::uint32_t seed : {21u, 22u, 23u}) {
    auto f = testing::random_fabric(16, 20, 3, seed);
    mixed_links(f, seed, 3);
    auto x = route(std::move(f), 0);
    std::mt19937 rng(seed);
    for (auto& lft : x.r.lfts) {
      const std::uint8_t ports = x.f.nodes[lft.node].num_ports();
      for (std::size_t d = 1; d < lft.ports.size(); ++d) {
        const unsigned r = rng() % 20;
        if (r == 0) lft.ports[d] = fabric::kLftNoRoute;
        else if (r == 1) lft.ports[d] = static_cast<std::uint8_t>(rng() % (ports + 2u));  // maybe unlinked or out of range
        else if (r == 2) lft.ports[d] = 0;
      }
    }
    EXPECT_GT(expect_exact(x, 2, 2, "corrupted"), 0u);
    EXPECT_FALSE(PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 2).all_routed());
  }
}

TEST(PathDbExact, MoreValuesThanThePaletteHolds) {
  // A long, thin fabric with every link different: hundreds of distinct
  // {hops, MTU, rate} switch-to-switch values.
  auto f = testing::random_fabric(400, 2, 1, 5);
  mixed_links(f, 5, 1);
  const auto x = route(std::move(f), 0);
  const PathDb db = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 2);
  EXPECT_EQ(db.palette_size(), 255u) << "the fabric should overflow the palette";
  EXPECT_GT(expect_exact(x, 2, 2, "palette overflow"), 0u);
}

TEST(PathDbExact, ThreadCountDoesNotChangeTheLayout) {
  auto f = testing::fat_tree3(4, 3, 3, 2, 4);
  mixed_links(f, 9, 4);
  const auto x = route(std::move(f), 1, sm::RoutingAlgo::kFatTree);
  const PathDb one = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 1);
  const PathDb three = PathDb::build(x.f, x.r.lfts, x.r.top_lid, 2, 3);
  EXPECT_EQ(one.bytes(), three.bytes());
  EXPECT_EQ(one.exceptions(), three.exceptions());
  EXPECT_EQ(one.palette_size(), three.palette_size());
}

TEST(PathDbExact, AnEmptyDatabaseAnswersUnrouted) {
  const PathDb db;  // a snapshot published before any routing pass
  for (const std::uint16_t lid : {0, 1, 0xbfff}) {
    EXPECT_FALSE(db.path(lid, 1).routed());
    EXPECT_FALSE(db.lookup(0, lid).routed());
    db.prefetch_ends(lid, lid);
    db.prefetch(lid, lid);
  }
  EXPECT_EQ(db.exceptions(), 0u);
  EXPECT_FALSE(db.all_routed());
}

}  // namespace
}  // namespace madengine::sa
