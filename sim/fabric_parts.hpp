// Fabric's private shorthands shared by the files that hold its roles:
// fabric.cpp (construction, time), fabric_forwarding.cpp,
// fabric_endpoints.cpp and fabric_faults.cpp.
#pragma once

#include <cstdint>

#include "madengine/wire/mad.hpp"
#include "madengine/wire/smp.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

using wire::DrSmp;
using wire::kPermissiveLid;

inline constexpr std::uint8_t kDown = static_cast<std::uint8_t>(wire::PortState::kDown);
inline constexpr std::uint8_t kInit = static_cast<std::uint8_t>(wire::PortState::kInit);
inline constexpr std::uint8_t kActive = static_cast<std::uint8_t>(wire::PortState::kActive);
inline constexpr std::uint8_t kLinkUp = static_cast<std::uint8_t>(wire::PortPhysState::kLinkUp);
inline constexpr std::uint8_t kPolling = static_cast<std::uint8_t>(wire::PortPhysState::kPolling);

inline DrSmp& dr(Packet& p) noexcept { return *reinterpret_cast<DrSmp*>(p.mad.bytes.data()); }
inline const wire::MadHeader& hdr(const Packet& p) noexcept {
  return *reinterpret_cast<const wire::MadHeader*>(p.mad.bytes.data());
}

}  // namespace madengine::sim
