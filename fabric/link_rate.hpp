// The rate of a port and of a link in the SM's fabric model: the width and
// speed discovery recorded, the extended speeds from the PortInfo it read,
// gated by the capability masks of the port (a switch's port 0 for all of
// its ports, as OpenSM reads them).
#pragma once

#include <cstdint>

#include "fabric/fabric.hpp"
#include "madengine/wire/link_rate.hpp"

namespace madengine::fabric {

inline wire::LinkSpeed link_speed_of(const Node& n, std::uint8_t port) noexcept {
  const Port& p = n.ports[port];
  const wire::PortInfo& caps = n.is_switch() ? n.ports[0].info : p.info;
  wire::LinkSpeed s = wire::link_speed_of(p.info, caps);
  s.speed = p.link_speed;
  return s;
}

// Whether a port advertises extended speeds (a switch's ports through port
// 0): the SM then sets SMSupportExtendedSpeeds in its PortInfo Sets.
inline bool extended_speeds(const Node& n, std::uint8_t port) noexcept {
  const wire::PortInfo& caps = n.is_switch() ? n.ports[0].info : n.ports[port].info;
  return caps.has_cap(wire::port_cap::kIsExtendedSpeedsSupported);
}

// The rate code of one port (2.5 Gb/s when it reports nothing usable).
inline std::uint8_t port_rate_code(const Node& n, std::uint8_t port) noexcept {
  const std::uint8_t code = wire::rate_code_for(wire::link_mbps(n.ports[port].link_width, link_speed_of(n, port)));
  return code != 0 ? code : wire::rate_code::k2_5Gbps;
}

// The rate code of the link at `node`'s `port`: the lesser of its two ends
// (a path's rate is the least of every port it crosses, ingress included).
inline std::uint8_t link_rate_code(const Fabric& f, NodeId node, std::uint8_t port) noexcept {
  const Node& n = f.nodes[node];
  std::uint8_t rate = port_rate_code(n, port);
  const Port& p = n.ports[port];
  if (p.linked() && p.peer < f.nodes.size() && p.peer_port < f.nodes[p.peer].ports.size())
    rate = wire::rate_min(rate, port_rate_code(f.nodes[p.peer], p.peer_port));
  return rate;
}

}  // namespace madengine::fabric
