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
      // The extended speeds as discovery reads them (the rates need them).
      port.info.link_width_active = port.link_width;
      port.info.set_link_speed_active(port.link_speed);
      port.info.set_link_speed_ext_active(active_speed_ext(tp.speed_ext_enabled, other.speed_ext_enabled));
      port.info.set_link_speed_ext_active2(active_speed_ext2(tp.speed_ext2_enabled, other.speed_ext2_enabled));
    }
    // Every port advertises extended speeds (as ibsim's do), and the second
    // ones where the node has XDR; a switch's through port 0.
    bool xdr = false;
    for (const TopoPort& tp : tn.ports) xdr = xdr || tp.speed_ext2_enabled != 0;
    for (std::uint8_t p = 0; p <= tn.num_ports; ++p) {
      wire::PortInfo& pi = n.ports[p].info;
      pi.capability_mask = wire::be32::from(wire::port_cap::kIsExtendedSpeedsSupported |
                                            wire::port_cap::kIsCapabilityMask2Supported);
      if (xdr) pi.capability_mask2 = wire::be16::from(wire::port_cap2::kIsExtendedSpeeds2Supported);
    }
    f.nodes.push_back(std::move(n));
  }
  return f;
}

}  // namespace madengine::sim
