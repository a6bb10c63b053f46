// The `sim` transport: an engine attached at a node's port of an in-process
// Fabric. Several transports (two SMs, an SM and clients) can share a fabric.
//
// Time: the fabric owns it. Give engines the fabric's clock
// (EngineConfig::clock = &fabric.clock()); rx_burst() runs the fabric events
// that are due at that time, so the sim advances on the engine's poll, and
// the driving loop moves time with Fabric::advance() when the engines idle.
// Everything runs on the driving thread (Engine::poll_all_once()).
//
// Life cycle: fault injection on the fabric (kill_node/revive_node, link
// down/up, reset) shows up in poll_events() as kDeviceLost / kDeviceBack /
// kPortChanged, and local_port() is refreshed on each.
#pragma once

#include <cstdint>
#include <string>

#include "madengine/engine/transport.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

struct SimTransportCounters {
  std::uint64_t rx = 0;
  std::uint64_t tx = 0;
  std::uint64_t tx_refused = 0;  // sent while the device was gone
};

class SimTransport final : public Transport {
 public:
  // Throws std::invalid_argument if the node has no such port (a switch's
  // management port is 0).
  SimTransport(Fabric& fabric, std::uint32_t node, std::uint8_t port_num, std::string name = "sim");
  ~SimTransport() override;
  SimTransport(const SimTransport&) = delete;
  SimTransport& operator=(const SimTransport&) = delete;

  std::string_view name() const noexcept override { return name_; }
  bool open(const AgentSpec& agents) override;
  void close() noexcept override;
  const LocalPort& local_port() const noexcept override { return port_; }

  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override;
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override;
  DeviceEvent poll_events() noexcept override;

  EndpointId endpoint() const noexcept { return ep_; }
  const SimTransportCounters& counters() const noexcept { return counters_; }

 private:
  Fabric& fabric_;
  std::uint32_t node_;
  std::uint8_t port_num_;
  std::string name_;
  EndpointId ep_ = kNoEndpoint;
  LocalPort port_{};
  SimTransportCounters counters_;
};

}  // namespace madengine::sim
