// Topology generators: 2- and 3-level fat trees of radix k, random irregular
// fabrics from a seed, and two separate subnets with the link that joins them.
// GUIDs follow ibsim's default allocation, so a generated topology written
// with write_topology() loads into ibsim with the same GUIDs.
#pragma once

#include <cstdint>

#include "sim/topology.hpp"

namespace madengine::sim {

// 2-level fat tree: `leaves` leaf switches with `hosts_per_leaf` one-port CAs
// each, and k/2 spines; every leaf has one link to every spine. Defaults
// (leaves = k, hosts_per_leaf = k/2) give k*k/2 hosts: 648 for k = 36.
// Node ids: "spine-S", "leaf-L", "host-L-H". Throws std::invalid_argument on
// a k that is odd, < 2 or > 254, or parameters that do not fit the radix.
struct FatTree2Spec {
  unsigned k = 36;
  unsigned leaves = 0;          // 0 = k
  unsigned hosts_per_leaf = 0;  // 0 = k/2
};
Topology make_fat_tree_2level(const FatTree2Spec& spec);

// 3-level fat tree (k-ary): `pods` pods of k/2 edge and k/2 aggregation
// switches, (k/2)^2 core switches each with one link per pod, k/2 hosts per
// edge switch. pods = k gives k^3/4 hosts (11,664 for k = 36); fewer pods give
// pods * k^2/4 (k = 36: 4 pods 1,296, 8 pods 2,592, 16 pods 5,184).
// Node ids: "core-C", "agg-P-A", "edge-P-E", "host-P-E-H".
struct FatTree3Spec {
  unsigned k = 36;
  unsigned pods = 0;  // 0 = k
};
Topology make_fat_tree_3level(const FatTree3Spec& spec);

// Random irregular fabric: `switches` switches of `radix` ports wired as a
// random spanning tree plus random extra links until each switch has about
// `degree` switch links (never more than the free ports allow), then
// `hosts_per_switch` CAs on each. The same seed gives the same topology.
struct RandomSpec {
  unsigned switches = 16;
  unsigned degree = 4;
  unsigned hosts_per_switch = 4;
  unsigned radix = 36;
  std::uint64_t seed = 1;
};
Topology make_random(const RandomSpec& spec);

// Two subnets in one topology, each a small 2-level fat tree with ids
// prefixed "a-" and "b-", each with a CA meant to host an SM, and a pair of
// free spine ports that join them when linked at run time (ibsim's console
// "Link" command, or Fabric::link()).
struct TwoSubnets {
  Topology topo;
  std::uint32_t sm_a = kNoNode, sm_b = kNoNode;  // the SM hosts
  std::uint32_t join_a = kNoNode, join_b = kNoNode;
  std::uint8_t join_a_port = 0, join_b_port = 0;
};
TwoSubnets make_two_subnets(unsigned k = 8);

}  // namespace madengine::sim
