// A vendor's routing in place of the SM's engines: each heavy sweep hands
// the discovered fabric (LIDs assigned) to the hook, which fills every
// switch's linear forwarding table; the SM programs those LFTs and the SA
// serves paths from them. The hook runs where routing runs: on the compute
// pool, never on a MAD core (see docs/embedding.md, threading).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"

namespace madengine::sm {

// `lfts` arrives with one entry per switch, in node order (Lft::node set),
// each `ports` sized top LID + 1 and filled with kLftNoRoute. The hook sets
// ports[lid] to an output port (0 = the switch itself, 1..num_ports) for the
// LIDs it routes. Returning false (with `error` set) fails the routing pass:
// nothing is programmed and the sweep reports the error. The fabric and the
// LFTs are valid only during the call.
using RoutingHook =
    std::function<bool(const fabric::Fabric& fabric, std::vector<fabric::Lft>& lfts, std::string& error)>;

}  // namespace madengine::sm
