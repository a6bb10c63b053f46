// Generator specs for the sim transport ("ft2:36", "ft3:36:4",
// "random:16:4:4:7", each optionally with a link profile: "ft2:64@ndr200")
// and topology files, turned into a sim::Topology.
#pragma once

#include <string>

#include "sim/topology.hpp"

namespace madengine::node {

// Throws ConfigError with the spec and what is wrong with it.
sim::Topology make_topology(const std::string& generate, const std::string& topology_file);

}  // namespace madengine::node
