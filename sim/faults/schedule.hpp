// Timed fault shapes over the fabric's event queue: a link that goes down
// and comes back, an SMA that keeps resetting (LIDs and tables lost each
// time), a node whose port vanishes and returns. Each returns the time the
// fabric is whole again.
#pragma once

#include <cstdint>

#include "sim/fabric.hpp"

namespace madengine::sim {

Nanos schedule_link_flap(Fabric& fabric, PortIdx port, Nanos at_ns, Nanos down_ns);
// `count` resets, `period_ns` apart, from at_ns.
Nanos schedule_resetting_sma(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos period_ns, unsigned count);
Nanos schedule_mute(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos muted_ns);
// kill_node then revive_node: links down, endpoints see their device lost and back.
Nanos schedule_port_bounce(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos gone_ns);

}  // namespace madengine::sim
