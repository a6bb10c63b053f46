// The storm's transport in --embedded runs: one endpoint at every CA port of
// the simulated fabric (sim::Fabric::attach_ports), so each emulated host's
// queries leave from its own port with its own LID and the SA sees one
// requester per host. Hosts come from the fabric, not from the SA under test.
// It can also plant one wrong answer (corrupt a field of one PathRecord
// answer on its way in) to prove the checks catch it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/planted_fault.hpp"
#include "lib/requester_ports.hpp"
#include "madengine/engine/transport.hpp"
#include "sim/fabric.hpp"

namespace madstorm {

class FabricHostsTransport final : public madengine::Transport, public RequesterPorts {
 public:
  // The hosts: every CA port of `fabric` that has a LID and is ACTIVE, by
  // LID (call after subnet up). Throws std::invalid_argument if none.
  explicit FabricHostsTransport(madengine::sim::Fabric& fabric, std::uint32_t rx_depth = 4096);
  ~FabricHostsTransport() override;
  FabricHostsTransport(const FabricHostsTransport&) = delete;
  FabricHostsTransport& operator=(const FabricHostsTransport&) = delete;

  std::string_view name() const noexcept override { return "sim-hosts"; }
  bool open(const madengine::AgentSpec& agents) override;
  void close() noexcept override;
  // The first host's port (the SM LID every host knows).
  const madengine::LocalPort& local_port() const noexcept override { return port_; }
  // From the first host (host discovery, tools that know no requesters).
  std::size_t rx_burst(std::span<madengine::MadBuf*> bufs) noexcept override;
  std::size_t tx_burst(std::span<madengine::MadBuf* const> bufs) noexcept override;
  madengine::DeviceEvent poll_events() noexcept override;

  std::span<const Host> requesters() const noexcept override { return hosts_; }
  std::size_t tx_burst_from(std::span<madengine::MadBuf* const> bufs,
                            std::span<const std::uint32_t> from) noexcept override;
  std::size_t rx_burst_at(std::span<madengine::MadBuf*> bufs, std::span<std::uint32_t> at) noexcept override;

  const std::vector<Host>& hosts() const noexcept { return hosts_; }
  // Corrupts `fault`'s field of the `nth` (1-based) successful PathRecord
  // GetResp that arrives.
  void plant(PlantedFault fault, std::uint64_t nth = 1) noexcept {
    plant_ = fault;
    plant_nth_ = nth;
  }
  std::uint64_t planted() const noexcept { return planted_; }  // answers corrupted so far

 private:
  void tamper(madengine::MadBuf& b) noexcept;

  madengine::sim::Fabric& fabric_;
  std::uint32_t rx_depth_;
  std::vector<Host> hosts_;
  std::vector<madengine::sim::PortIdx> port_of_host_;
  std::vector<std::uint32_t> host_of_port_;  // PortIdx -> host index or kNoHost
  std::vector<madengine::sim::PortIdx> arrived_;  // rx scratch, one burst
  madengine::sim::EndpointId ep_ = madengine::sim::kNoEndpoint;
  madengine::LocalPort port_{};
  PlantedFault plant_ = PlantedFault::kNone;
  std::uint64_t plant_nth_ = 1;
  std::uint64_t path_answers_ = 0;
  std::uint64_t planted_ = 0;
};

}  // namespace madstorm
