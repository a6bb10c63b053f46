// The `sim` transport (see sim_transport.hpp): bursts are copies to and from
// the fabric endpoint's bounded receive ring; nothing allocates after open().
#include "sim/sim_transport.hpp"

#include <stdexcept>

namespace madengine::sim {

SimTransport::SimTransport(Fabric& fabric, std::uint32_t node, std::uint8_t port_num, std::string name)
    : fabric_(fabric), node_(node), port_num_(port_num), name_(std::move(name)) {
  if (node >= fabric.node_count() || fabric.port(node, port_num) == kNoPortIdx ||
      (fabric.is_switch(node) && port_num != 0))
    throw std::invalid_argument("sim transport: node " + std::to_string(node) + " has no management port " +
                                std::to_string(port_num));
}

SimTransport::~SimTransport() { close(); }

bool SimTransport::open(const AgentSpec& agents) {
  close();
  ep_ = fabric_.attach(node_, port_num_, agents);
  port_ = fabric_.local_port(ep_);
  if (!fabric_.device_present(ep_)) {
    fabric_.detach(ep_);
    ep_ = kNoEndpoint;
    return false;
  }
  return true;
}

void SimTransport::close() noexcept {
  if (ep_ == kNoEndpoint) return;
  fabric_.detach(ep_);
  ep_ = kNoEndpoint;
}

std::size_t SimTransport::rx_burst(std::span<MadBuf*> bufs) noexcept {
  if (ep_ == kNoEndpoint) return 0;
  fabric_.poll();
  const std::size_t n = fabric_.receive(ep_, bufs);
  counters_.rx += n;
  return n;
}

std::size_t SimTransport::tx_burst(std::span<MadBuf* const> bufs) noexcept {
  if (ep_ == kNoEndpoint) return 0;
  std::size_t n = 0;
  for (MadBuf* b : bufs) {
    if (!fabric_.send(ep_, *b)) {
      ++counters_.tx_refused;
      break;
    }
    ++n;
  }
  counters_.tx += n;
  return n;
}

DeviceEvent SimTransport::poll_events() noexcept {
  if (ep_ == kNoEndpoint) return DeviceEvent::kNone;
  const DeviceEvent ev = fabric_.take_event(ep_);
  if (ev != DeviceEvent::kNone) port_ = fabric_.local_port(ep_);
  if (ev == DeviceEvent::kDeviceLost) port_.state = PortState::kDown;
  return ev;
}

}  // namespace madengine::sim
