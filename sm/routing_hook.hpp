// Runs an embedder's RoutingHook (madengine/sm/routing_hook.hpp) as the
// routing step of a heavy sweep: LFTs sized and cleared for it, its answer
// checked (one LFT per switch, each port one the switch has), the result in
// the shape the SM's own engines return.
#pragma once

#include "madengine/sm/routing_hook.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sm {

// On a compute thread. A hook that fails, throws or returns a bad table
// gives a RoutingResult with `error` set: nothing is programmed.
RoutingResult route_by_hook(const fabric::Fabric& f, const RoutingHook& hook);

}  // namespace madengine::sm
