// Topology generators (fat trees, random irregular, two joinable subnets,
// tori and meshes, dragonflies, random link failures).
// Start-up code: bad parameters throw std::invalid_argument.
#include "sim/generators.hpp"

#include <algorithm>
#include <numeric>
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

GridTopology make_torus(const TorusSpec& s) {
  GridTopology r;
  r.dims = s.dims;
  r.wrap = s.wrap;
  std::size_t count = 1;
  unsigned neighbour_ports = 0;
  for (unsigned d = 0; d < 3; ++d) {
    if (s.dims[d] == 0 || s.dims[d] > 255) throw std::invalid_argument("torus: each dimension needs 1..255 switches");
    count *= s.dims[d];
    if (s.dims[d] > 1) neighbour_ports += 2 * s.links_per_neighbor;
  }
  if (s.links_per_neighbor == 0 && count > 1) throw std::invalid_argument("torus: links_per_neighbor must be >= 1");
  const unsigned radix = s.hosts_per_switch + neighbour_ports;
  if (radix == 0 || radix > 254) throw std::invalid_argument("torus: hosts + neighbour links must fit 1..254 ports");
  Topology& t = r.topo;
  t.nodes.reserve(count * (1 + s.hosts_per_switch));
  std::vector<std::uint32_t> sw(count);
  auto index = [&](unsigned x, unsigned y, unsigned z) { return (std::size_t{z} * s.dims[1] + y) * s.dims[0] + x; };
  for (unsigned z = 0; z < s.dims[2]; ++z)
    for (unsigned y = 0; y < s.dims[1]; ++y)
      for (unsigned x = 0; x < s.dims[0]; ++x) {
        const auto id = t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(radix), name("sw", x, y, z));
        sw[index(x, y, z)] = id;
        r.coords.resize(t.nodes.size());
        r.coords[id] = {static_cast<std::uint16_t>(x), static_cast<std::uint16_t>(y), static_cast<std::uint16_t>(z)};
        for (unsigned h = 0; h < s.hosts_per_switch; ++h) {
          const auto host = t.add_node(NodeType::kCa, 1, name("host", x, y, z) + "-" + std::to_string(h));
          t.connect(id, static_cast<std::uint8_t>(h + 1), host, 1);
          r.coords.resize(t.nodes.size());
          r.coords[host] = r.coords[id];
        }
      }
  // Port of the c-th cable in direction (d, +/-).
  std::array<unsigned, 3> plus_base{}, minus_base{};
  for (unsigned d = 0, next = s.hosts_per_switch + 1; d < 3; ++d) {
    if (s.dims[d] == 1) continue;
    plus_base[d] = next;
    minus_base[d] = next + s.links_per_neighbor;
    next += 2 * s.links_per_neighbor;
  }
  for (unsigned z = 0; z < s.dims[2]; ++z)
    for (unsigned y = 0; y < s.dims[1]; ++y)
      for (unsigned x = 0; x < s.dims[0]; ++x) {
        const std::array<unsigned, 3> at{x, y, z};
        for (unsigned d = 0; d < 3; ++d) {
          if (s.dims[d] == 1) continue;
          if (at[d] + 1 == s.dims[d] && !s.wrap[d]) continue;  // the end of a line
          std::array<unsigned, 3> to = at;
          to[d] = (at[d] + 1) % s.dims[d];
          for (unsigned c = 0; c < s.links_per_neighbor; ++c)
            t.connect(sw[index(at[0], at[1], at[2])], static_cast<std::uint8_t>(plus_base[d] + c),
                      sw[index(to[0], to[1], to[2])], static_cast<std::uint8_t>(minus_base[d] + c));
        }
      }
  return r;
}

Topology make_dragonfly(const DragonflySpec& s) {
  if (s.groups < 2 || s.routers < 1 || s.globals < 1) throw std::invalid_argument("dragonfly: needs >= 2 groups, >= 1 router and global link");
  if (s.groups - 1 > s.routers * s.globals)
    throw std::invalid_argument("dragonfly: routers * globals must reach every other group (groups <= routers * globals + 1)");
  const unsigned radix = s.hosts + (s.routers - 1) + s.globals;
  if (radix > 254) throw std::invalid_argument("dragonfly: hosts + routers - 1 + globals must fit 254 ports");
  Topology t;
  std::vector<std::vector<std::uint32_t>> router(s.groups);
  for (unsigned g = 0; g < s.groups; ++g)
    for (unsigned r = 0; r < s.routers; ++r) {
      const auto id = t.add_node(NodeType::kSwitch, static_cast<std::uint8_t>(radix), name("g", g) + name("-r", r));
      router[g].push_back(id);
      for (unsigned h = 0; h < s.hosts; ++h)
        t.connect(id, static_cast<std::uint8_t>(h + 1), t.add_node(NodeType::kCa, 1, name("host", g, r, h)), 1);
    }
  // Local: all to all; router r's local port towards router q.
  auto local_port = [&](unsigned r, unsigned q) { return static_cast<std::uint8_t>(s.hosts + 1 + (q < r ? q : q - 1)); };
  for (unsigned g = 0; g < s.groups; ++g)
    for (unsigned r = 0; r < s.routers; ++r)
      for (unsigned q = r + 1; q < s.routers; ++q) t.connect(router[g][r], local_port(r, q), router[g][q], local_port(q, r));
  // Global: slot j of a group (router j / globals, its port j % globals)
  // goes to the group at offset (j mod (groups-1)) + 1, in round j / (groups-1);
  // the slot back at that group has the opposite offset, same round.
  const unsigned slots = s.routers * s.globals, others = s.groups - 1, rounds = slots / others;
  auto slot_port = [&](unsigned g, unsigned j) {
    return std::pair{router[g][j / s.globals], static_cast<std::uint8_t>(s.hosts + s.routers + j % s.globals)};
  };
  for (unsigned g = 0; g < s.groups; ++g)
    for (unsigned round = 0; round < rounds; ++round)
      for (unsigned off = 1; off <= others; ++off) {
        const unsigned h = (g + off) % s.groups;
        if (h < g) continue;  // linked from the other side
        const unsigned j = round * others + off - 1, back = round * others + (s.groups - off) - 1;
        const auto [a, ap] = slot_port(g, j);
        const auto [b, bp] = slot_port(h, back);
        t.connect(a, ap, b, bp);
      }
  return t;
}

std::size_t fail_links(Topology& t, const LinkFailures& spec) {
  if (spec.fraction < 0 || spec.fraction > 1) throw std::invalid_argument("link failures: fraction must be in 0..1");
  struct Cable {
    std::uint32_t a;
    std::uint8_t port;
  };
  std::vector<Cable> cables;
  for (std::uint32_t n = 0; n < t.nodes.size(); ++n) {
    const TopoNode& node = t.nodes[n];
    if (!node.is_switch()) continue;
    for (std::uint8_t p = 1; p <= node.num_ports; ++p) {
      const TopoPort& port = node.ports[p];
      if (port.connected() && t.nodes[port.peer_node].is_switch() && (port.peer_node > n || (port.peer_node == n && port.peer_port > p)))
        cables.push_back({n, p});
    }
  }
  std::mt19937_64 rng(spec.seed);
  std::shuffle(cables.begin(), cables.end(), rng);
  const auto want = static_cast<std::size_t>(spec.fraction * static_cast<double>(cables.size()) + 0.5);
  // Connectivity of the switches without one cable: a BFS over switch links.
  auto switches_connected = [&]() {
    std::vector<std::uint8_t> seen(t.nodes.size(), 0);
    std::vector<std::uint32_t> queue;
    std::size_t switches = 0;
    for (std::uint32_t n = 0; n < t.nodes.size(); ++n)
      if (t.nodes[n].is_switch()) {
        ++switches;
        if (queue.empty()) queue.push_back(n), seen[n] = 1;
      }
    for (std::size_t i = 0; i < queue.size(); ++i)
      for (const TopoPort& p : t.nodes[queue[i]].ports)
        if (p.connected() && t.nodes[p.peer_node].is_switch() && !seen[p.peer_node]) {
          seen[p.peer_node] = 1;
          queue.push_back(p.peer_node);
        }
    return queue.size() == switches;
  };
  std::size_t removed = 0;
  for (const Cable& c : cables) {
    if (removed == want) break;
    const TopoPort saved = t.nodes[c.a].ports[c.port];
    const std::uint32_t b = saved.peer_node;
    const std::uint8_t bp = saved.peer_port;
    t.disconnect(c.a, c.port);
    if (spec.keep_connected && !switches_connected()) {
      t.connect(c.a, c.port, b, bp);
      continue;
    }
    ++removed;
  }
  return removed;
}

}  // namespace madengine::sim
