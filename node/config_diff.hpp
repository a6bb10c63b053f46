// Which keys of the daemon's TOML differ between two configurations, by
// their names in the file ("sm.routing"): a reload applies some and names
// the others as waiting for a restart.
#pragma once

#include <string>
#include <vector>

#include "madengine/node/config.hpp"

namespace madengine::node {

// Every key NodeConfig carries, in the file's order ("engine.cores", ...).
std::vector<std::string> config_keys();
// The keys whose values differ, in config_keys() order.
std::vector<std::string> changed_keys(const NodeConfig& before, const NodeConfig& after);

}  // namespace madengine::node
