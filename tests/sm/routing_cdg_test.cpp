// LayeredCdg, the acyclic channel dependency graphs behind dfsssp's and
// nue's layers: every dependency that would close a cycle is refused,
// whatever the starting order and the order of insertion, also through a
// channel whose cable has no way back (a peer that does not link back, as a
// fabric read mid-change can have), and a bulk load agrees with insertion.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>
#include <vector>

#include "fabric_builders.hpp"
#include "sm/routing/cdg.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {
namespace {

using fabric::Fabric;

// Switches A, B, C in a ring, A to C one-way: C's port 2 is unlinked, so the
// channel A -> C has no reverse and C has no channel to A.
Fabric ring_with_one_way_link() {
  Fabric f;
  const auto a = testing::add_switch(f, 4, 0x10), b = testing::add_switch(f, 4, 0x20), c = testing::add_switch(f, 4, 0x30);
  f.link(a, 1, b, 1);
  f.link(b, 2, c, 1);
  f.link(a, 2, c, 2);
  f.nodes[c].ports[2].peer = fabric::kNoNode;
  return f;
}

ChannelId channel(const SwitchGraph& g, fabric::NodeId from, std::uint8_t port) {
  return g.channel_at(g.sw_of[from], port);
}

TEST(LayeredCdg, RefusesEveryCycleClosingDependencyInAnyOrder) {
  const Fabric f = ring_with_one_way_link();
  const SwitchGraph g = SwitchGraph::build(f);
  const ChannelId ab = channel(g, 0, 1), ba = channel(g, 1, 1), bc = channel(g, 1, 2), cb = channel(g, 2, 1),
                  ac = channel(g, 0, 2);
  ASSERT_EQ(g.channels(), 5u);
  ASSERT_NE(ac, kNoChannel);
  ASSERT_EQ(g.link[ac].reverse, kNoChannel);
  // The one cycle: A->C at C to C->B, at B to B->A, at A back to A->C.
  const std::array<std::pair<ChannelId, ChannelId>, 3> cycle{{{ac, cb}, {cb, ba}, {ba, ac}}};
  std::vector<std::uint32_t> position(g.channels());
  std::iota(position.begin(), position.end(), 0u);
  std::size_t orders = 0;
  do {
    std::array<int, 3> ins{0, 1, 2};
    do {
      LayeredCdg cdg(g, 1);
      cdg.set_initial_order(position);
      EXPECT_TRUE(cdg.add(0, ab, bc));  // outside the cycle
      for (int k = 0; k < 2; ++k) EXPECT_TRUE(cdg.add(0, cycle[ins[k]].first, cycle[ins[k]].second));
      EXPECT_FALSE(cdg.add(0, cycle[ins[2]].first, cycle[ins[2]].second))
          << "order " << orders << ": a dependency that closes A->C->B->A was accepted";
      ++orders;
    } while (std::next_permutation(ins.begin(), ins.end()));
  } while (std::next_permutation(position.begin(), position.end()));
  EXPECT_EQ(orders, 120u * 6u);
}

TEST(LayeredCdg, BulkLoadHoldsWhatInsertionHolds) {
  const Fabric f = testing::fat_tree2(4, 2, 1);
  const SwitchGraph g = SwitchGraph::build(f);
  std::size_t degree = 1;
  for (SwIdx s = 0; s < g.size(); ++s) degree = std::max<std::size_t>(degree, g.link_begin[s + 1] - g.link_begin[s]);
  // Up then down at every spine: leaf -> spine -> another leaf.
  std::vector<std::uint8_t> dep(g.channels() * degree, 0);
  std::vector<std::pair<ChannelId, ChannelId>> deps;
  for (ChannelId c1 = 0; c1 < g.channels(); ++c1) {
    if (g.has_ca[g.channel_from[c1]] == false) continue;  // leaves have the CAs
    const SwIdx spine = g.link[c1].peer;
    for (ChannelId c2 = g.link_begin[spine]; c2 < g.link_begin[spine + 1]; ++c2)
      if (g.link[c2].peer != g.channel_from[c1]) {
        dep[std::size_t{c1} * degree + (c2 - g.link_begin[spine])] = 1;
        deps.emplace_back(c1, c2);
      }
  }
  ASSERT_FALSE(deps.empty());
  // Up channels before down channels: a topological order of those dependencies.
  std::vector<std::uint32_t> position(g.channels());
  std::uint32_t next = 0;
  for (const bool up : {true, false})
    for (ChannelId c = 0; c < g.channels(); ++c)
      if (g.has_ca[g.channel_from[c]] == up) position[c] = next++;
  LayeredCdg bulk(g, 1), one_by_one(g, 1);
  bulk.set_initial_order(position);
  bulk.add_acyclic(0, dep, degree);
  for (const auto& [c1, c2] : deps) {
    EXPECT_TRUE(bulk.has(0, c1, c2));
    EXPECT_TRUE(one_by_one.add(0, c1, c2));
  }
  EXPECT_EQ(bulk.dependencies(0), deps.size());
  // Turning at every leaf as well (spine -> leaf -> another spine) closes
  // cycles with them: both graphs refuse some of those turns.
  for (LayeredCdg* cdg : {&bulk, &one_by_one}) {
    bool refused = false;
    for (const auto& [c1, c2] : deps) {
      (void)c1;
      const SwIdx l = g.link[c2].peer;
      for (ChannelId u = g.link_begin[l]; u < g.link_begin[l + 1]; ++u)
        if (g.link[u].peer != g.channel_from[c2] && !cdg->add(0, c2, u)) refused = true;
    }
    EXPECT_TRUE(refused) << "spine-to-spine turns at every leaf on top of up*/down* must close a cycle";
  }
}

}  // namespace
}  // namespace madengine::sm
