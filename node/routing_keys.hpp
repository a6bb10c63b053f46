// [sm] routing, read in one place (config.cpp): the config reader (whose
// error names the line), the SM's configuration and the daemon's help take
// the engine chain and the engines' names from here; the names and the
// chain's grammar are sm/routing's alone (parse_routing_chain).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "madengine/node/config.hpp"

namespace madengine::sm {
enum class RoutingAlgo : std::uint8_t;
}

namespace madengine::node {

// The engines sm.routing names, in the order the SM tries them. Throws
// ConfigError naming the key and what is wrong with it.
std::vector<sm::RoutingAlgo> routing_chain(const SmSection& c);
// Every engine sm.routing may name, separated by `sep`.
std::string routing_engine_names(std::string_view sep);

}  // namespace madengine::node
