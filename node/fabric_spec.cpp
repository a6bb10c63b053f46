// Generator specs (see node/fabric_spec.hpp).
#include "node/fabric_spec.hpp"

#include <fmt/format.h>

#include <sstream>
#include <vector>

#include "madengine/node/config.hpp"
#include "sim/generators.hpp"
#include "sim/link_profiles.hpp"

namespace madengine::node {

namespace {

std::vector<unsigned> numbers(const std::string& spec, std::size_t first) {
  std::vector<unsigned> out;
  std::stringstream ss(spec.substr(first));
  std::string part;
  while (std::getline(ss, part, ':')) {
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(part, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != part.size() || v > 1'000'000)
      throw ConfigError(fmt::format("fabric spec '{}': '{}' is not a number", spec, part));
    out.push_back(static_cast<unsigned>(v));
  }
  return out;
}

sim::Topology generate_topology(const std::string& generate) {
  const std::string usage =
      "ft2:RADIX[:LEAVES[:HOSTS_PER_LEAF]] | ft3:RADIX[:PODS] | random:SWITCHES:DEGREE:HOSTS[:SEED], then "
      "@PROFILE for the links (" + std::string(sim::kLinkProfileNames) + ")";
  const auto colon = generate.find(':');
  const std::string kind = generate.substr(0, colon);
  const auto n = colon == std::string::npos ? std::vector<unsigned>{} : numbers(generate, colon + 1);
  auto need = [&](std::size_t lo, std::size_t hi) {
    if (n.size() < lo || n.size() > hi) throw ConfigError(fmt::format("fabric spec '{}': expected {}", generate, usage));
  };
  if (kind == "ft2") {
    need(1, 3);
    sim::FatTree2Spec s{n[0], n.size() > 1 ? n[1] : 0, n.size() > 2 ? n[2] : 0};
    if (s.k < 2 || s.k % 2) throw ConfigError(fmt::format("fabric spec '{}': the radix must be even and >= 2", generate));
    return sim::make_fat_tree_2level(s);
  }
  if (kind == "ft3") {
    need(1, 2);
    sim::FatTree3Spec s{n[0], n.size() > 1 ? n[1] : 0};
    if (s.k < 2 || s.k % 2) throw ConfigError(fmt::format("fabric spec '{}': the radix must be even and >= 2", generate));
    return sim::make_fat_tree_3level(s);
  }
  if (kind == "random") {
    need(3, 4);
    sim::RandomSpec s;
    s.switches = n[0];
    s.degree = n[1];
    s.hosts_per_switch = n[2];
    if (n.size() > 3) s.seed = n[3];
    return sim::make_random(s);
  }
  throw ConfigError(fmt::format("fabric spec '{}': expected {}", generate, usage));
}

}  // namespace

sim::Topology make_topology(const std::string& spec, const std::string& topology_file) {
  if (topology_file.empty()) {
    // "ft2:64@ndr200": the generator, then the link profile (sim/link_profiles.hpp).
    const auto at = spec.find('@');
    sim::Topology topo = generate_topology(spec.substr(0, at));
    if (at != std::string::npos) {
      try {
        sim::apply_link_profile(topo, spec.substr(at + 1));
      } catch (const std::invalid_argument& e) {
        throw ConfigError(fmt::format("fabric spec '{}': {}", spec, e.what()));
      }
    }
    return topo;
  }
  try {
    return sim::load_topology(topology_file);
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace madengine::node
