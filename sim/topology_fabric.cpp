// Topology -> fabric::Fabric (see topology_fabric.hpp). Node ids are the
// topology's node indexes.
#include "sim/topology_fabric.hpp"

#include <algorithm>

namespace madengine::sim {

fabric::Fabric to_sm_fabric(const Topology& t, const SmFabricOptions& opts) {
  fabric::Fabric f;
  f.nodes.reserve(t.nodes.size());
  for (const TopoNode& tn : t.nodes) {
    fabric::Node n;
    n.kind = tn.is_switch() ? fabric::NodeKind::kSwitch : fabric::NodeKind::kCa;
    n.node_guid = tn.node_guid;
    n.system_guid = tn.system_guid;
    n.description = tn.description;
    n.ports.resize(tn.num_ports + 1u);
    if (!tn.is_switch()) n.port_lids.assign(tn.num_ports + 1u, 0);
    for (std::uint8_t p = tn.first_port(); p <= tn.num_ports; ++p) {
      const TopoPort& tp = tn.ports[p];
      fabric::Port& port = n.ports[p];
      port.guid = tn.is_switch() ? tn.node_guid : tp.guid;
      port.mtu = opts.mtu_cap;
      port.vl_cap = opts.vl_cap;
      if (!tp.connected()) continue;
      const TopoPort& other = t.nodes[tp.peer_node].ports[tp.peer_port];
      port.peer = tp.peer_node;
      port.peer_port = tp.peer_port;
      port.link_width = active_width(tp.width_enabled, other.width_enabled);
      port.link_speed = active_speed(tp.speed_enabled, other.speed_enabled);
      port.state = 4;  // ACTIVE
    }
    f.nodes.push_back(std::move(n));
  }
  return f;
}

}  // namespace madengine::sim
