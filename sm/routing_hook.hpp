// Runs an embedder's routing (NodeHooks::routing, the C ABI's callback)
// as the routing step of a heavy sweep: LFTs sized and cleared for it, its
// answer checked (one LFT per switch, each port one the switch has), the
// result in the shape the SM's own engines return. The hook runs where
// routing runs: on the compute pool, never on a MAD core.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/lft.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sm {

// `lfts` arrives with one entry per switch, in node order (Lft::node set),
// each `ports` sized top LID + 1 and filled with kLftNoRoute. The hook sets
// ports[lid] to an output port (0 = the switch itself, 1..num_ports) for the
// LIDs it routes. Returning false (with `error` set) fails the routing pass:
// nothing is programmed and the sweep reports the error. The fabric and the
// LFTs are valid only during the call.
using RoutingHook =
    std::function<bool(const fabric::Fabric& fabric, std::vector<fabric::Lft>& lfts, std::string& error)>;

// On a compute thread. A hook that fails, throws or returns a bad table
// gives a RoutingResult with `error` set: nothing is programmed.
RoutingResult route_by_hook(const fabric::Fabric& f, const RoutingHook& hook);

}  // namespace madengine::sm
