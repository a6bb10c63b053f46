// The simulated fabric's endpoints: agents attached to one port or many,
// their receive rings, sends, the LocalPort and device events they see.
#include <algorithm>
#include <stdexcept>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sim/fabric_parts.hpp"

namespace madengine::sim {

// ---- endpoints ------------------------------------------------------------

EndpointId Fabric::attach(std::uint32_t node, std::uint8_t port_num, const AgentSpec& spec) {
  if (node >= node_count()) throw std::invalid_argument("attach: no such node");
  if (is_switch(node) && port_num != 0)
    throw std::invalid_argument("attach: a switch's management agents live on port 0");
  const PortIdx p = port(node, port_num);
  if (p == kNoPortIdx) throw std::invalid_argument("attach: node has no port " + std::to_string(port_num));
  Endpoint ep;
  ep.port = p;
  ep.spec = spec;
  ep.attached = true;
  ep.device_present = !(node_flags_[node] & kDead);
  ep.ring.resize(config_.endpoint_rx_depth);
  endpoints_.push_back(std::move(ep));
  const auto id = static_cast<EndpointId>(endpoints_.size() - 1);
  port_endpoints_[p].push_back(id);
  return id;
}

EndpointId Fabric::attach_ports(std::span<const PortIdx> ports, const AgentSpec& spec, std::uint32_t rx_depth,
                                std::uint32_t tid_tag) {
  if (ports.empty() || rx_depth == 0) throw std::invalid_argument("attach_ports: no ports or no receive depth");
  Endpoint ep;
  ep.ports.assign(ports.begin(), ports.end());
  std::sort(ep.ports.begin(), ep.ports.end());
  ep.ports.erase(std::unique(ep.ports.begin(), ep.ports.end()), ep.ports.end());
  bool dead = false;
  for (const PortIdx p : ep.ports) {
    if (p >= port_count() || is_switch(port_node_[p]))
      throw std::invalid_argument("attach_ports: port " + std::to_string(p) + " is not a CA port");
    dead = dead || (node_flags_[port_node_[p]] & kDead) != 0;
  }
  ep.port = ports.front();
  ep.tid_tag = tid_tag;
  ep.spec = spec;
  ep.attached = true;
  ep.device_present = !dead;
  ep.ring.resize(rx_depth);
  ep.ring_at.resize(rx_depth);
  endpoints_.push_back(std::move(ep));
  const auto id = static_cast<EndpointId>(endpoints_.size() - 1);
  for (const PortIdx p : endpoints_[id].ports) port_endpoints_[p].push_back(id);
  return id;
}

void Fabric::detach(EndpointId e) noexcept {
  if (e >= endpoints_.size() || !endpoints_[e].attached) return;
  Endpoint& ep = endpoints_[e];
  auto unlist = [&](PortIdx p) {
    auto& v = port_endpoints_[p];
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
  };
  if (ep.ports.empty()) unlist(ep.port);
  for (const PortIdx p : ep.ports) unlist(p);
  ep.attached = false;
  ep.count = 0;
}

bool Fabric::send(EndpointId e, const MadBuf& buf) noexcept {
  if (e >= endpoints_.size()) return false;
  return send_at(e, endpoints_[e].port, buf);
}

bool Fabric::send_from(EndpointId e, PortIdx from, const MadBuf& buf) noexcept {
  if (e >= endpoints_.size()) return false;
  const auto& ports = endpoints_[e].ports;
  if (!std::binary_search(ports.begin(), ports.end(), from)) return false;
  return send_at(e, from, buf);
}

bool Fabric::send_at(EndpointId e, PortIdx src, const MadBuf& buf) noexcept {
  const Endpoint& ep = endpoints_[e];
  if (!ep.attached || !ep.device_present) return false;
  Packet pkt;
  pkt.mad = buf.mad;
  pkt.slid = static_cast<std::uint16_t>(lid_[src] | buf.addr.path_bits);
  pkt.dlid = buf.addr.lid;
  const wire::MgmtClass k = hdr(pkt).klass();
  const bool smp = k == wire::MgmtClass::kSubnLid || k == wire::MgmtClass::kSubnDirected;
  pkt.src_qp = smp ? 0 : 1;
  pkt.dst_qp = buf.addr.remote_qpn;
  pkt.qkey = buf.addr.qkey;
  pkt.sl = buf.addr.sl;
  pkt.pkey_index = buf.addr.pkey_index;
  pkt.from_endpoint = e;
  inject(pkt, src);
  return true;
}

std::size_t Fabric::receive(EndpointId e, std::span<MadBuf*> bufs) noexcept { return receive(e, bufs, {}); }

std::size_t Fabric::receive(EndpointId e, std::span<MadBuf*> bufs, std::span<PortIdx> arrived_at) noexcept {
  if (e >= endpoints_.size()) return 0;
  Endpoint& ep = endpoints_[e];
  if (!arrived_at.empty() && arrived_at.size() < bufs.size()) bufs = bufs.first(arrived_at.size());
  std::size_t n = 0;
  while (n < bufs.size() && ep.count > 0) {
    if (!arrived_at.empty()) arrived_at[n] = ep.ring_at.empty() ? ep.port : ep.ring_at[ep.head];
    MadBuf& src = ep.ring[ep.head];
    MadBuf& dst = *bufs[n++];
    dst.mad = src.mad;
    dst.addr = src.addr;
    dst.len = src.len;
    ep.head = (ep.head + 1) % ep.ring.size();
    --ep.count;
  }
  return n;
}

std::size_t Fabric::pending(EndpointId e) const noexcept { return e < endpoints_.size() ? endpoints_[e].count : 0; }

LocalPort Fabric::local_port(EndpointId e) const noexcept {
  LocalPort lp;
  if (e >= endpoints_.size()) return lp;
  const PortIdx p = endpoints_[e].port;
  const std::uint32_t n = port_node_[p];
  lp.node_guid = node_guid_[n];
  lp.port_guid = cfg_[p].guid;
  if (cfg_[p].gid_prefix) lp.subnet_prefix = cfg_[p].gid_prefix;
  lp.lid = lid_[p];
  lp.lmc = cfg_[p].lmc;
  lp.sm_lid = cfg_[p].sm_lid;
  lp.sm_sl = cfg_[p].sm_sl;
  lp.port_num = port_num_of(p);
  lp.state = static_cast<PortState>(state_[p]);
  lp.is_switch = is_switch(n);
  return lp;
}

DeviceEvent Fabric::take_event(EndpointId e) noexcept {
  if (e >= endpoints_.size()) return DeviceEvent::kNone;
  Endpoint& ep = endpoints_[e];
  DeviceEvent ev = ep.event;
  ep.event = DeviceEvent::kNone;
  if (ev == DeviceEvent::kNone && ep.owe_back) ev = DeviceEvent::kDeviceBack;
  if (ev != DeviceEvent::kDeviceLost) ep.owe_back = false;
  return ev;
}

bool Fabric::device_present(EndpointId e) const noexcept {
  return e < endpoints_.size() && endpoints_[e].device_present;
}

void Fabric::set_sm_info(std::uint32_t node, const wire::SmInfo& info) {
  if (node >= node_count()) throw std::invalid_argument("set_sm_info: no such node");
  node_flags_[node] |= kHostsSm;
  sm_info_[node] = info;
}

}  // namespace madengine::sim
