// Topology generators: 2- and 3-level fat trees of radix k, random irregular
// fabrics from a seed, two separate subnets with the link that joins them,
// 2D/3D tori and meshes, dragonflies, and random link failures on any of them.
// GUIDs follow ibsim's default allocation, so a generated topology written
// with write_topology() loads into ibsim with the same GUIDs.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

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

// A 1D, 2D or 3D torus (wrap = true in a dimension) or mesh (wrap = false):
// dims[d] switches along dimension d (1: the dimension is unused), each
// linked to its neighbour in + and - direction by `links_per_neighbor`
// cables, `hosts_per_switch` CAs on each switch. Switch ports: hosts first,
// then per dimension the + cables, then the - cables. A ring of 2 gets both
// cables between the same two switches. Node ids "sw-X-Y-Z", "host-X-Y-Z-H".
struct TorusSpec {
  std::array<unsigned, 3> dims{4, 4, 1};
  std::array<bool, 3> wrap{true, true, true};
  unsigned hosts_per_switch = 2;
  unsigned links_per_neighbor = 1;
};
struct GridTopology {
  Topology topo;
  std::array<unsigned, 3> dims{};
  std::array<bool, 3> wrap{};
  std::vector<std::array<std::uint16_t, 3>> coords;  // by node index (CAs: their switch's)
};
GridTopology make_torus(const TorusSpec& spec);

// A dragonfly (Kim et al.): `groups` groups of `routers` switches linked all
// to all inside the group, `hosts` CAs per switch, and `globals` global
// links per switch joining the groups, spread evenly over every pair of
// groups (each pair gets (routers * globals) / (groups - 1) links; with
// groups = routers * globals + 1, exactly one). Switch ports: hosts, then
// local links, then global links. Node ids "g-G-r-R", "host-G-R-H".
struct DragonflySpec {
  unsigned groups = 9;
  unsigned routers = 4;
  unsigned hosts = 2;
  unsigned globals = 2;
};
Topology make_dragonfly(const DragonflySpec& spec);

// Removes `fraction` of the switch-to-switch links, chosen from the seed;
// with keep_connected, never one whose removal would split the switches.
// Returns how many were removed (fewer when keeping the fabric connected
// leaves no candidates).
struct LinkFailures {
  double fraction = 0.05;
  std::uint64_t seed = 1;
  bool keep_connected = true;
};
std::size_t fail_links(Topology& topo, const LinkFailures& spec);

}  // namespace madengine::sim
