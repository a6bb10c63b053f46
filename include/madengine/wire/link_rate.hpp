// Link rates: from a port's active width and speed (PortInfo, IBA 14.2.5.6)
// to its data rate and to the static rate code PathRecords, MultiPathRecords
// and MCMemberRecords carry (IBA 15.2.5.16; codes past 18 as rdma-core's
// ibv_rate and OpenSM number them). Every rate the SM, the SA and the tools
// compute goes through here.
#pragma once

#include <array>
#include <cstdint>

#include "madengine/wire/sa/common.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::wire {

// Lanes of a LinkWidthActive code (1x, 2x, 4x, 8x, 12x); 0 for no width.
constexpr std::uint32_t width_lanes(std::uint8_t width_active) noexcept {
  switch (width_active) {
    case link_width::k1x: return 1;
    case link_width::k2x: return 2;
    case link_width::k4x: return 4;
    case link_width::k8x: return 8;
    case link_width::k12x: return 12;
    default: return 0;
  }
}

// The speed a link runs at, from the three PortInfo speed fields a port
// reports. `ext` and `ext2` are the extended speeds' active codes, passed
// only when the port advertises them (CapabilityMask IsExtendedSpeeds-
// Supported; CapabilityMask2 IsExtendedSpeeds2Supported): a port that does
// not leaves them undefined. FDR10 runs at QDR's data rate and reports QDR.
struct LinkSpeed {
  std::uint8_t speed = 0;  // LinkSpeedActive
  std::uint8_t ext = 0;    // LinkSpeedExtActive
  std::uint8_t ext2 = 0;   // LinkSpeedExtActive2
};

// Data rate of one lane in Mb/s (after line coding: EDR's 25.78125 Gb/s
// signalling carries 25 Gb/s); 0 for a speed the IBA does not define.
constexpr std::uint32_t lane_mbps(LinkSpeed s) noexcept {
  if (s.ext2 == link_speed_ext2::k200) return 200000;  // XDR
  switch (s.ext) {
    case link_speed_ext::k14: return 14000;    // FDR
    case link_speed_ext::k25: return 25000;    // EDR
    case link_speed_ext::k50: return 50000;    // HDR
    case link_speed_ext::k100: return 100000;  // NDR
    default: break;
  }
  switch (s.speed) {
    case link_speed::k2_5: return 2500;  // SDR
    case link_speed::k5: return 5000;    // DDR
    case link_speed::k10: return 10000;  // QDR, FDR10
    default: return 0;
  }
}

constexpr std::uint32_t link_mbps(std::uint8_t width_active, LinkSpeed s) noexcept {
  return width_lanes(width_active) * lane_mbps(s);
}

namespace rate_detail {
struct RateEntry {
  std::uint8_t code;
  std::uint32_t mbps;
};
// Every rate code by bandwidth (the codes themselves are not in speed order).
inline constexpr std::array<RateEntry, 23> kRates{{
    {rate_code::k2_5Gbps, 2500},     {rate_code::k5Gbps, 5000},       {rate_code::k10Gbps, 10000},
    {rate_code::k14Gbps, 14000},     {rate_code::k20Gbps, 20000},     {rate_code::k25Gbps, 25000},
    {rate_code::k28Gbps, 28000},     {rate_code::k30Gbps, 30000},     {rate_code::k40Gbps, 40000},
    {rate_code::k50Gbps, 50000},     {rate_code::k56Gbps, 56000},     {rate_code::k60Gbps, 60000},
    {rate_code::k80Gbps, 80000},     {rate_code::k100Gbps, 100000},   {rate_code::k112Gbps, 112000},
    {rate_code::k120Gbps, 120000},   {rate_code::k168Gbps, 168000},   {rate_code::k200Gbps, 200000},
    {rate_code::k300Gbps, 300000},   {rate_code::k400Gbps, 400000},   {rate_code::k600Gbps, 600000},
    {rate_code::k800Gbps, 800000},   {rate_code::k1200Gbps, 1200000},
}};
}  // namespace rate_detail

// Mb/s of a rate code; 0 for a code the IBA does not define.
constexpr std::uint32_t rate_mbps(std::uint8_t code) noexcept {
  for (const auto& r : rate_detail::kRates)
    if (r.code == code) return r.mbps;
  return 0;
}

// The rate code for a bandwidth: its own code, else the fastest code below
// it (8x and 12x XDR have no code of their own and report 1200 Gb/s, the
// fastest there is); 0 when even 2.5 Gb/s is more.
constexpr std::uint8_t rate_code_for(std::uint32_t mbps) noexcept {
  std::uint8_t best = 0;
  for (const auto& r : rate_detail::kRates)
    if (r.mbps <= mbps) best = r.code;
  return best;
}

// The fastest rate code below a bandwidth (a selector's "less than"); 0 when
// there is none.
constexpr std::uint8_t rate_code_below(std::uint32_t mbps) noexcept { return mbps == 0 ? 0 : rate_code_for(mbps - 1); }

// Rate codes compared by the bandwidth they stand for.
constexpr bool rate_less(std::uint8_t a, std::uint8_t b) noexcept { return rate_mbps(a) < rate_mbps(b); }
constexpr std::uint8_t rate_min(std::uint8_t a, std::uint8_t b) noexcept { return rate_less(b, a) ? b : a; }

// The speed a port reports, read as OpenSM reads it: the extended fields
// count only where the capability masks say they are there. For a switch's
// external port the masks are its port 0's (`caps`).
inline LinkSpeed link_speed_of(const PortInfo& pi, const PortInfo& caps) noexcept {
  LinkSpeed s{static_cast<std::uint8_t>(pi.link_speed_active()), 0, 0};
  if (caps.has_cap(port_cap::kIsExtendedSpeedsSupported))
    s.ext = static_cast<std::uint8_t>(pi.link_speed_ext_active());
  if (caps.has_cap(port_cap::kIsCapabilityMask2Supported) &&
      (caps.capability_mask2.get() & port_cap2::kIsExtendedSpeeds2Supported) != 0)
    s.ext2 = static_cast<std::uint8_t>(pi.link_speed_ext_active2());
  return s;
}

// The rate code of a port's link (2.5 Gb/s when its fields say nothing
// usable, as OpenSM).
inline std::uint8_t port_rate_code(const PortInfo& pi, const PortInfo& caps) noexcept {
  const std::uint8_t code = rate_code_for(link_mbps(pi.link_width_active, link_speed_of(pi, caps)));
  return code != 0 ? code : rate_code::k2_5Gbps;
}

}  // namespace madengine::wire
