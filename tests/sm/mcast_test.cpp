// Multicast spanning trees: every member is reached, the tree is loop-free
// (each switch-to-switch edge appears at both ends), non-members get nothing.
#include "sm/mcast/mcast.hpp"

#include <gtest/gtest.h>

#include "fabric_builders.hpp"

namespace madengine::sm {
namespace {

std::uint16_t mask_of(const std::map<fabric::NodeId, SwitchMft>& mfts, fabric::NodeId sw, std::uint16_t mlid,
                      std::uint8_t position = 0) {
  const auto it = mfts.find(sw);
  if (it == mfts.end()) return 0;
  const auto b = it->second.find(MftKey{wire::mft_block_of(mlid), position});
  return b == it->second.end() ? 0 : b->second.mask(wire::mft_index_of(mlid));
}

TEST(Mcast, TreeReachesEveryMemberAndOnlyThem) {
  // 4 leaves x 2 hosts, 2 spines: leaves are nodes 2.., hosts follow each leaf.
  fabric::Fabric f = testing::fat_tree2(4, 2, 2);
  std::vector<std::uint64_t> members;
  std::vector<fabric::NodeId> member_nodes;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) {
    if (f.nodes[i].is_switch() || members.size() == 3) continue;
    // One host on each of the first three leaves.
    const fabric::NodeId leaf = f.nodes[i].ports[1].peer;
    bool leaf_taken = false;
    for (const auto m : member_nodes) leaf_taken |= f.nodes[m].ports[1].peer == leaf;
    if (leaf_taken) continue;
    members.push_back(f.nodes[i].ports[1].guid);
    member_nodes.push_back(i);
  }
  ASSERT_EQ(members.size(), 3u);
  const std::uint16_t mlid = 0xc001;
  const auto mfts = compute_mfts(f, {sa::McGroup{mlid, members}});
  for (const auto m : member_nodes) {
    const fabric::Port& p = f.nodes[m].ports[1];
    EXPECT_NE(mask_of(mfts, p.peer, mlid) & (1u << p.peer_port), 0) << "member " << m;
  }
  // Each tree edge is set at both ends; no port of a non-member host is set.
  unsigned edges_ends = 0;
  for (fabric::NodeId s = 0; s < f.nodes.size(); ++s) {
    if (!f.nodes[s].is_switch()) continue;
    const std::uint16_t m = mask_of(mfts, s, mlid);
    for (std::uint8_t p = 1; p <= f.nodes[s].num_ports(); ++p) {
      if (!(m & (1u << p))) continue;
      const fabric::Port& port = f.nodes[s].ports[p];
      ASSERT_TRUE(port.linked());
      if (f.nodes[port.peer].is_switch()) {
        ++edges_ends;
        EXPECT_NE(mask_of(mfts, port.peer, mlid) & (1u << port.peer_port), 0);
      } else {
        bool member = false;
        for (const auto mn : member_nodes) member |= mn == port.peer;
        EXPECT_TRUE(member);
      }
    }
  }
  // 3 leaves joined through one spine: 3 edges, 6 ends (a tree, no cycle).
  EXPECT_EQ(edges_ends, 6u);
}

// Groups that share an MLID (consolidated solicited-node groups) get one
// tree reaching all their members, not two trees ORed into a loop.
TEST(Mcast, GroupsSharingAnMlidGetOneTree) {
  fabric::Fabric f = testing::fat_tree2(4, 2, 2);
  std::vector<std::uint64_t> hosts;
  for (const auto& n : f.nodes)
    if (!n.is_switch()) hosts.push_back(n.ports[1].guid);
  ASSERT_GE(hosts.size(), 8u);
  const std::uint16_t mlid = 0xc002;
  // Members on leaves 0 and 3, and on leaves 1 and 2: one tree over all four.
  const auto mfts = compute_mfts(f, {sa::McGroup{mlid, {hosts[0], hosts[7]}}, sa::McGroup{mlid, {hosts[3], hosts[5]}}});
  unsigned ends = 0;
  for (fabric::NodeId s = 0; s < f.nodes.size(); ++s) {
    if (!f.nodes[s].is_switch()) continue;
    const std::uint16_t m = mask_of(mfts, s, mlid);
    for (std::uint8_t p = 1; p <= f.nodes[s].num_ports(); ++p)
      if ((m & (1u << p)) && f.nodes[f.nodes[s].ports[p].peer].is_switch()) ++ends;
  }
  EXPECT_EQ(ends, 8u) << "four leaves through one spine: 4 edges, both ends each (a tree)";
  for (const std::size_t h : {0u, 3u, 5u, 7u}) {
    const fabric::NodeId node = [&] {
      for (fabric::NodeId i = 0; i < f.nodes.size(); ++i)
        if (!f.nodes[i].is_switch() && f.nodes[i].ports[1].guid == hosts[h]) return i;
      return fabric::kNoNode;
    }();
    const fabric::Port& p = f.nodes[node].ports[1];
    EXPECT_NE(mask_of(mfts, p.peer, mlid) & (1u << p.peer_port), 0) << "host " << h;
  }
}

TEST(Mcast, BadMlidsAndUnknownMembersAreIgnored) {
  fabric::Fabric f = testing::fat_tree2(2, 1, 1);
  EXPECT_TRUE(compute_mfts(f, {sa::McGroup{0x0010, {0x1}}}).empty());
  EXPECT_TRUE(compute_mfts(f, {sa::McGroup{0xc000, {0xdeadbeef}}}).empty());
}

}  // namespace
}  // namespace madengine::sm
