// FabricHostsTransport: hosts from the fabric, sends from each host's port,
// arrivals mapped back to hosts, and the planted wrong answer.
#include "lib/fabric_hosts.hpp"

#include <algorithm>
#include <stdexcept>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "lib/storm.hpp"

namespace madstorm {

namespace wire = madengine::wire;
using madengine::MadBuf;
using madengine::sim::PortIdx;

FabricHostsTransport::FabricHostsTransport(madengine::sim::Fabric& fabric, std::uint32_t rx_depth)
    : fabric_(fabric), rx_depth_(rx_depth), host_of_port_(fabric.port_count(), kNoHost) {
  for (PortIdx p = 0; p < fabric.port_count(); ++p) {
    const std::uint32_t node = fabric.node_of(p);
    if (fabric.is_switch(node) || fabric.lid(p) == 0 || fabric.port_state(p) != wire::PortState::kActive) continue;
    hosts_.push_back(Host{fabric.lid(p), fabric.port_guid(p), fabric.node_guid(node)});
    port_of_host_.push_back(p);
  }
  if (hosts_.empty()) throw std::invalid_argument("the simulated fabric has no active CA port with a LID");
  std::vector<std::uint32_t> order(hosts_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return hosts_[a].lid < hosts_[b].lid; });
  std::vector<Host> h;
  std::vector<PortIdx> p;
  for (const std::uint32_t i : order) {
    h.push_back(hosts_[i]);
    p.push_back(port_of_host_[i]);
  }
  hosts_ = std::move(h);
  port_of_host_ = std::move(p);
  for (std::uint32_t i = 0; i < port_of_host_.size(); ++i) host_of_port_[port_of_host_[i]] = i;
  arrived_.resize(1024);
}

FabricHostsTransport::~FabricHostsTransport() { close(); }

bool FabricHostsTransport::open(const madengine::AgentSpec& agents) {
  close();
  ep_ = fabric_.attach_ports(port_of_host_, agents, rx_depth_, kStormTidTag);
  port_ = fabric_.local_port(ep_);
  if (!fabric_.device_present(ep_)) {
    close();
    return false;
  }
  return true;
}

void FabricHostsTransport::close() noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return;
  fabric_.detach(ep_);
  ep_ = madengine::sim::kNoEndpoint;
}

std::size_t FabricHostsTransport::rx_burst(std::span<MadBuf*> bufs) noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return 0;
  fabric_.poll();
  const std::size_t n = fabric_.receive(ep_, bufs);
  for (std::size_t i = 0; i < n; ++i) tamper(*bufs[i]);
  return n;
}

std::size_t FabricHostsTransport::rx_burst_at(std::span<MadBuf*> bufs, std::span<std::uint32_t> at) noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return 0;
  fabric_.poll();
  bufs = bufs.first(std::min({bufs.size(), at.size(), arrived_.size()}));
  const std::size_t n = fabric_.receive(ep_, bufs, std::span<PortIdx>(arrived_).first(bufs.size()));
  for (std::size_t i = 0; i < n; ++i) {
    at[i] = arrived_[i] < host_of_port_.size() ? host_of_port_[arrived_[i]] : kNoHost;
    tamper(*bufs[i]);
  }
  return n;
}

std::size_t FabricHostsTransport::tx_burst(std::span<MadBuf* const> bufs) noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return 0;
  std::size_t n = 0;
  while (n < bufs.size() && fabric_.send(ep_, *bufs[n])) ++n;
  return n;
}

std::size_t FabricHostsTransport::tx_burst_from(std::span<MadBuf* const> bufs,
                                                std::span<const std::uint32_t> from) noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return 0;
  std::size_t n = 0;
  for (; n < bufs.size() && n < from.size(); ++n) {
    const std::uint32_t h = from[n];
    if (h >= port_of_host_.size() || !fabric_.send_from(ep_, port_of_host_[h], *bufs[n])) break;
  }
  return n;
}

madengine::DeviceEvent FabricHostsTransport::poll_events() noexcept {
  if (ep_ == madengine::sim::kNoEndpoint) return madengine::DeviceEvent::kNone;
  const madengine::DeviceEvent ev = fabric_.take_event(ep_);
  if (ev != madengine::DeviceEvent::kNone) port_ = fabric_.local_port(ep_);
  if (ev == madengine::DeviceEvent::kDeviceLost) port_.state = madengine::PortState::kDown;
  return ev;
}

void FabricHostsTransport::tamper(MadBuf& b) noexcept {
  if (plant_ == PlantedFault::kNone || planted_ != 0) return;
  const auto& h = b.hdr();
  if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || h.method != wire::method::kGetResp ||
      h.attr_id.get() != wire::sa_attr::kPathRecord || h.status.get() != 0 || b.as<wire::SaMad>().rmpp.active())
    return;
  if (++path_answers_ < plant_nth_) return;
  auto& sa = b.as<wire::SaMad>();
  auto pr = *wire::decode<wire::PathRecord>(std::span<const std::uint8_t>(sa.data));
  switch (plant_) {
    case PlantedFault::kNone: return;
    case PlantedFault::kMtu: pr.set_mtu(static_cast<std::uint8_t>(pr.mtu() == 1 ? 2 : pr.mtu() - 1)); break;
    case PlantedFault::kRate: pr.set_rate(static_cast<std::uint8_t>(pr.rate() == 2 ? 3 : 2)); break;
    case PlantedFault::kPKey: pr.pkey = wire::be16::from(static_cast<std::uint16_t>(pr.pkey.get() ^ 0x0001)); break;
    case PlantedFault::kSl: pr.set_sl(static_cast<std::uint8_t>((pr.sl() + 1) & 0xf)); break;
    case PlantedFault::kDlid: pr.dlid = wire::be16::from(static_cast<std::uint16_t>(pr.dlid.get() ^ 0x0001)); break;
    case PlantedFault::kHopLimit: pr.set_hop_limit(64); break;
  }
  wire::encode(pr, std::span<std::uint8_t>(sa.data));
  ++planted_;
}

}  // namespace madstorm
