// Timed fault shapes (see schedule.hpp).
#include "sim/faults/schedule.hpp"

namespace madengine::sim {

Nanos schedule_link_flap(Fabric& fabric, PortIdx port, Nanos at_ns, Nanos down_ns) {
  fabric.schedule(at_ns, EventKind::kLinkDown, port);
  fabric.schedule(at_ns + down_ns, EventKind::kLinkUp, port);
  return at_ns + down_ns;
}

Nanos schedule_resetting_sma(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos period_ns, unsigned count) {
  for (unsigned i = 0; i < count; ++i) fabric.schedule(at_ns + period_ns * i, EventKind::kNodeReset, node);
  return at_ns + period_ns * (count == 0 ? 0 : count - 1);
}

Nanos schedule_mute(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos muted_ns) {
  fabric.schedule(at_ns, EventKind::kNodeMute, node);
  fabric.schedule(at_ns + muted_ns, EventKind::kNodeUnmute, node);
  return at_ns + muted_ns;
}

Nanos schedule_port_bounce(Fabric& fabric, std::uint32_t node, Nanos at_ns, Nanos gone_ns) {
  fabric.schedule(at_ns, EventKind::kNodeKill, node);
  fabric.schedule(at_ns + gone_ns, EventKind::kNodeRevive, node);
  return at_ns + gone_ns;
}

}  // namespace madengine::sim
