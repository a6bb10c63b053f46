// Small in-memory fabrics for SM unit tests (the sim/ generators build the
// simulator's own model; these build the SM's fabric::Fabric directly).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "fabric/fabric.hpp"

namespace madengine::testing {

using fabric::Fabric;
using fabric::NodeId;

inline NodeId add_switch(Fabric& f, std::uint8_t ports, std::uint64_t guid) {
  fabric::Node n;
  n.kind = fabric::NodeKind::kSwitch;
  n.node_guid = n.system_guid = guid;
  n.description = "switch " + std::to_string(guid);
  n.ports.resize(ports + 1u);
  n.ports[0].guid = guid;
  return f.add_node(std::move(n));
}

inline NodeId add_ca(Fabric& f, std::uint64_t guid) {
  fabric::Node n;
  n.kind = fabric::NodeKind::kCa;
  n.node_guid = n.system_guid = guid;
  n.description = "host " + std::to_string(guid);
  n.ports.resize(2);
  n.ports[1].guid = guid + 1;
  return f.add_node(std::move(n));
}

// Two-level fat tree: `leaves` leaf switches with `hosts` CAs each, every leaf
// linked once to each of `spines` spine switches.
inline Fabric fat_tree2(unsigned leaves, unsigned spines, unsigned hosts) {
  Fabric f;
  std::uint64_t guid = 0x1000;
  std::vector<NodeId> sp, lf;
  for (unsigned s = 0; s < spines; ++s) sp.push_back(add_switch(f, static_cast<std::uint8_t>(leaves), guid += 0x10));
  for (unsigned l = 0; l < leaves; ++l) {
    const NodeId leaf = add_switch(f, static_cast<std::uint8_t>(hosts + spines), guid += 0x10);
    lf.push_back(leaf);
    for (unsigned h = 0; h < hosts; ++h) f.link(leaf, static_cast<std::uint8_t>(h + 1), add_ca(f, guid += 0x10), 1);
    for (unsigned s = 0; s < spines; ++s)
      f.link(leaf, static_cast<std::uint8_t>(hosts + 1 + s), sp[s], static_cast<std::uint8_t>(l + 1));
  }
  return f;
}

// Three-level fat tree of `pods` pods; each pod has `edge` edge switches (with
// `hosts` CAs each) and `agg` aggregation switches fully linked; aggregation
// switch a of every pod links to `core_per_agg` core switches of group a.
inline Fabric fat_tree3(unsigned pods, unsigned edge, unsigned agg, unsigned core_per_agg, unsigned hosts) {
  Fabric f;
  std::uint64_t guid = 0x100000;
  std::vector<NodeId> cores;
  for (unsigned c = 0; c < agg * core_per_agg; ++c) cores.push_back(add_switch(f, static_cast<std::uint8_t>(pods), guid += 0x10));
  for (unsigned p = 0; p < pods; ++p) {
    std::vector<NodeId> aggs;
    for (unsigned a = 0; a < agg; ++a) {
      const NodeId an = add_switch(f, static_cast<std::uint8_t>(edge + core_per_agg), guid += 0x10);
      aggs.push_back(an);
      for (unsigned c = 0; c < core_per_agg; ++c)
        f.link(an, static_cast<std::uint8_t>(edge + 1 + c), cores[a * core_per_agg + c], static_cast<std::uint8_t>(p + 1));
    }
    for (unsigned e = 0; e < edge; ++e) {
      const NodeId en = add_switch(f, static_cast<std::uint8_t>(hosts + agg), guid += 0x10);
      for (unsigned h = 0; h < hosts; ++h) f.link(en, static_cast<std::uint8_t>(h + 1), add_ca(f, guid += 0x10), 1);
      for (unsigned a = 0; a < agg; ++a)
        f.link(en, static_cast<std::uint8_t>(hosts + 1 + a), aggs[a], static_cast<std::uint8_t>(e + 1));
    }
  }
  return f;
}

// A connected random irregular fabric: a random spanning tree plus extra
// links, `hosts` CAs per switch. Deterministic from the seed.
inline Fabric random_fabric(unsigned switches, unsigned extra_links, unsigned hosts, std::uint32_t seed) {
  Fabric f;
  std::mt19937 rng(seed);
  const std::uint8_t radix = 32;
  std::vector<NodeId> sw;
  std::vector<std::uint8_t> next_port;
  std::uint64_t guid = 0x5000;
  for (unsigned s = 0; s < switches; ++s) {
    sw.push_back(add_switch(f, radix, guid += 0x10));
    next_port.push_back(1);
  }
  auto connect = [&](unsigned a, unsigned b) {
    if (next_port[a] > radix || next_port[b] > radix) return;
    f.link(sw[a], next_port[a]++, sw[b], next_port[b]++);
  };
  for (unsigned s = 1; s < switches; ++s) connect(s, static_cast<unsigned>(rng() % s));
  for (unsigned e = 0; e < extra_links; ++e) {
    const unsigned a = rng() % switches, b = rng() % switches;
    if (a != b) connect(a, b);
  }
  for (unsigned s = 0; s < switches; ++s)
    for (unsigned h = 0; h < hosts && next_port[s] <= radix; ++h) f.link(sw[s], next_port[s]++, add_ca(f, guid += 0x10), 1);
  return f;
}

}  // namespace madengine::testing
