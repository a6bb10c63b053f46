// Topology generators (fat trees, random irregular, two joinable subnets).
// Start-up code: bad parameters throw std::invalid_argument.
#include "sim/generators.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace madengine::sim {

namespace {

void check_radix(unsigned k) {
  if (k < 2 || k > 254 || k % 2) throw std::invalid_argument("fat tree radix k must be even and in 2..254");
}

std::string name(const char* base, unsigned a) { return std::string(base) + "-" + std::to_string(a); }
std::string name(const char* base, unsigned a, unsigned b) { return name(base, a) + "-" + std::to_string(b); }
std::string name(const char* base, unsigned a, unsigned b, unsigned c) {
  return name(base, a, b) + "-" + std::to_string(c);
}

// Builds a 2-level tree into `t` with ids prefixed by `prefix`; returns the
// spine indices and the first host.
struct Tree2 {
  std::vector<std::uint32_t> spines;
  std::uint32_t first_host = kNoNode;
};
Tree2 add_fat_tree_2level(Topology& t, const FatTree2Spec& s, const std::string& prefix, unsigned spine_ports) {
  check_radix(s.k);
  const unsigned half = s.k / 2;
  const unsigned leaves = s.leaves ? s.leaves : s.k;
  const unsigned hosts = s.hosts_per_leaf ? s.hosts_per_leaf : half;
  if (leaves > spine_ports) throw std::invalid_argument("more leaves than spine ports");
  if (hosts + half > s.k) throw std::invalid_argument("hosts per leaf + k/2 uplinks exceed the radix");
  Tree2 r;
  for (unsigned i = 0; i < half; ++i)
    r.spines.push_back(
        t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(spine_ports), prefix + name("spine", i)));
  std::vector<std::uint32_t> leaf_ids;
  for (unsigned l = 0; l < leaves; ++l) {
    const auto leaf = t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(s.k), prefix + name("leaf", l));
    leaf_ids.push_back(leaf);
    for (unsigned h = 0; h < hosts; ++h) {
      const auto host = t.add_node(NodeType::kCa, 1, prefix + name("host", l, h));
      if (r.first_host == kNoNode) r.first_host = host;
      t.connect(leaf, static_cast<std::uint8_t>(h + 1), host, 1);
    }
  }
  // Uplinks on the leaf's upper ports, spine port = leaf number + 1.
  for (unsigned l = 0; l < leaves; ++l)
    for (unsigned sp = 0; sp < half; ++sp)
      t.connect(leaf_ids[l], static_cast<std::uint8_t>(half + sp + 1), r.spines[sp], static_cast<std::uint8_t>(l + 1));
  return r;
}

}  // namespace

Topology make_fat_tree_2level(const FatTree2Spec& spec) {
  Topology t;
  check_radix(spec.k);
  add_fat_tree_2level(t, spec, "", spec.k);
  return t;
}

Topology make_fat_tree_3level(const FatTree3Spec& spec) {
  check_radix(spec.k);
  const unsigned k = spec.k, half = k / 2;
  const unsigned pods = spec.pods ? spec.pods : k;
  if (pods > k) throw std::invalid_argument("a 3-level fat tree of radix k has at most k pods");
  Topology t;
  t.nodes.reserve(std::size_t{half} * half + std::size_t{pods} * (k + std::size_t{half} * half));
  std::vector<std::uint32_t> core;
  for (unsigned c = 0; c < half * half; ++c)
    core.push_back(t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(k), name("core", c)));
  for (unsigned p = 0; p < pods; ++p) {
    std::vector<std::uint32_t> agg, edge;
    for (unsigned a = 0; a < half; ++a)
      agg.push_back(t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(k), name("agg", p, a)));
    for (unsigned e = 0; e < half; ++e) {
      const auto sw = t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(k), name("edge", p, e));
      edge.push_back(sw);
      for (unsigned h = 0; h < half; ++h) {
        const auto host = t.add_node(NodeType::kCa, 1, name("host", p, e, h));
        t.connect(sw, static_cast<std::uint8_t>(h + 1), host, 1);
      }
    }
    // edge e upper port half+a+1 <-> agg a lower port e+1
    for (unsigned e = 0; e < half; ++e)
      for (unsigned a = 0; a < half; ++a)
        t.connect(edge[e], static_cast<std::uint8_t>(half + a + 1), agg[a], static_cast<std::uint8_t>(e + 1));
    // agg a upper port half+j+1 <-> core a*half+j port p+1
    for (unsigned a = 0; a < half; ++a)
      for (unsigned j = 0; j < half; ++j)
        t.connect(agg[a], static_cast<std::uint8_t>(half + j + 1), core[a * half + j],
                  static_cast<std::uint8_t>(p + 1));
  }
  return t;
}

Topology make_random(const RandomSpec& s) {
  if (s.switches == 0) throw std::invalid_argument("random fabric needs at least one switch");
  if (s.radix < 2 || s.radix > 254) throw std::invalid_argument("radix must be 2..254");
  if (s.hosts_per_switch + 1 > s.radix && s.switches > 1)
    throw std::invalid_argument("hosts per switch leave no port for switch links");
  if (s.hosts_per_switch > s.radix) throw std::invalid_argument("hosts per switch exceed the radix");
  std::mt19937_64 rng(s.seed);
  Topology t;
  const unsigned sw_ports_max = s.radix - s.hosts_per_switch;
  std::vector<std::uint32_t> sw;
  std::vector<unsigned> used(s.switches, 0);  // switch ports used by switch links
  for (unsigned i = 0; i < s.switches; ++i)
    sw.push_back(t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(s.radix), name("sw", i)));
  auto link = [&](unsigned a, unsigned b) {
    // Switch links use ports hosts_per_switch+1 upwards.
    t.connect(sw[a], static_cast<std::uint8_t>(s.hosts_per_switch + ++used[a]), sw[b],
              static_cast<std::uint8_t>(s.hosts_per_switch + ++used[b]));
  };
  // Random spanning tree: each new switch attaches to a random earlier one with a free port.
  std::vector<unsigned> order(s.switches);
  for (unsigned i = 0; i < s.switches; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (unsigned i = 1; i < s.switches; ++i) {
    unsigned tries = 0;
    for (;;) {
      const unsigned j = order[std::uniform_int_distribution<unsigned>(0, i - 1)(rng)];
      if (used[j] < sw_ports_max) {
        link(order[i], j);
        break;
      }
      if (++tries > 64 * s.switches) throw std::invalid_argument("random fabric: radix too small for a spanning tree");
    }
  }
  // Extra links (parallel links allowed, as in real fabrics; no self links).
  const unsigned degree = std::min(s.degree, sw_ports_max);
  std::vector<unsigned> want;
  for (unsigned i = 0; i < s.switches; ++i)
    if (used[i] < degree) want.push_back(i);
  const std::size_t attempts_max = std::size_t{s.switches} * degree * 8;
  for (std::size_t attempt = 0; attempt < attempts_max && want.size() > 1; ++attempt) {
    const auto x = std::uniform_int_distribution<std::size_t>(0, want.size() - 1)(rng);
    const auto y = std::uniform_int_distribution<std::size_t>(0, want.size() - 1)(rng);
    if (x == y) continue;
    link(want[x], want[y]);
    const unsigned a = want[x], b = want[y];
    want.erase(
        std::remove_if(want.begin(), want.end(), [&](unsigned v) { return (v == a || v == b) && used[v] >= degree; }),
        want.end());
  }
  for (unsigned i = 0; i < s.switches; ++i)
    for (unsigned h = 0; h < s.hosts_per_switch; ++h) {
      const auto host = t.add_node(NodeType::kCa, 1, name("host", i, h));
      t.connect(sw[i], static_cast<std::uint8_t>(h + 1), host, 1);
    }
  return t;
}

TwoSubnets make_two_subnets(unsigned k) {
  check_radix(k);
  if (k > 252) throw std::invalid_argument("two subnets: k must leave a spare spine port (k <= 252)");
  TwoSubnets r;
  // Spines get one spare port (k + 1) for the join link.
  FatTree2Spec spec{k, 0, 0};
  const Tree2 a = add_fat_tree_2level(r.topo, spec, "a-", k + 1);
  const Tree2 b = add_fat_tree_2level(r.topo, spec, "b-", k + 1);
  r.sm_a = a.first_host;
  r.sm_b = b.first_host;
  r.topo.nodes[r.sm_a].hosts_sm = true;
  r.topo.nodes[r.sm_b].hosts_sm = true;
  r.join_a = a.spines.front();
  r.join_b = b.spines.front();
  r.join_a_port = r.join_b_port = static_cast<std::uint8_t>(k + 1);
  return r;
}

}  // namespace madengine::sim
