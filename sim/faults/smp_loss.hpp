// SMP loss as a fault: a share of the SMPs (classes 0x01 and 0x81) lost on
// each link they cross, for every attribute or for one, inside a window of
// simulated time. GMPs (the SA's traffic) pass: their clients retry on
// their own timers, the SM's transactions are what loss should test.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sim/fabric.hpp"

namespace madengine::sim {

struct SmpLossRule {
  double rate = 0.0;            // 0..1 per link crossing
  std::uint16_t attr_id = 0;    // 0: every attribute
  Nanos from_ns = 0;            // active in [from_ns, until_ns)
  Nanos until_ns = kNanosPerSecond * 3600;
};

class SmpLoss final : public PacketFault {
 public:
  // Reads time from `fabric`; install with fabric.set_packet_fault(this).
  SmpLoss(const Fabric& fabric, std::uint64_t seed) : fabric_(fabric), rng_(seed) {}
  void add(const SmpLossRule& rule) { rules_.push_back(rule); }
  bool drop(const Packet& pkt, PortIdx out) noexcept override;
  std::uint64_t dropped() const noexcept { return dropped_; }

 private:
  const Fabric& fabric_;
  std::mt19937_64 rng_;
  std::vector<SmpLossRule> rules_;
  std::uint64_t dropped_ = 0;
};

}  // namespace madengine::sim
