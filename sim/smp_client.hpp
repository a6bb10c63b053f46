// Synchronous SMP requests over a fabric endpoint, for tests, benchmarks and
// the conformance check: send one SMP, run the simulator until its response
// (matched by TID) arrives or nothing is left in flight. Not an engine path.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "madengine/wire/smp.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

class SmpClient {
 public:
  SmpClient(Fabric& fabric, EndpointId endpoint) noexcept : fabric_(fabric), ep_(endpoint) {}

  // Directed route along `path` (DrSLID/DrDLID permissive unless given).
  std::optional<wire::DrSmp> dr(std::uint8_t method, std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path,
                                std::span<const std::uint8_t> data = {}, std::uint64_t m_key = 0,
                                std::uint16_t dr_slid = wire::kPermissiveLid,
                                std::uint16_t dr_dlid = wire::kPermissiveLid, std::uint16_t lrh_dlid = 0);
  // LID routed (class 0x01) to `dlid`.
  std::optional<wire::Smp> lid(std::uint8_t method, std::uint16_t attr, std::uint32_t mod, std::uint16_t dlid,
                               std::span<const std::uint8_t> data = {}, std::uint64_t m_key = 0);
  // Sends any MAD and waits for the response with the same TID.
  std::optional<MadBuf> transact(const MadBuf& request);

  std::uint64_t next_tid() noexcept { return ++tid_; }
  EndpointId endpoint() const noexcept { return ep_; }

 private:
  Fabric& fabric_;
  EndpointId ep_;
  std::uint64_t tid_ = 0x5100000000ull;
};

}  // namespace madengine::sim
