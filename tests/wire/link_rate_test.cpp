// Link rates for every width and speed a port reports, against the rate
// codes the IBA and OpenSM's ib_port_info_compute_rate give them, and the
// capability masks that decide which speed fields count.
#include <gtest/gtest.h>

#include <array>
#include <cstring>

#include "madengine/wire/link_rate.hpp"

namespace madengine::wire {
namespace {

struct Speed {
  const char* name;
  LinkSpeed s;
};
constexpr std::array<Speed, 9> kSpeeds{{
    {"SDR", {link_speed::k2_5, 0, 0}},
    {"DDR", {link_speed::k5, 0, 0}},
    {"QDR", {link_speed::k10, 0, 0}},
    {"FDR10", {link_speed::k10, 0, 0}},  // reports QDR; its data rate is QDR's
    {"FDR", {0, link_speed_ext::k14, 0}},
    {"EDR", {0, link_speed_ext::k25, 0}},
    {"HDR", {0, link_speed_ext::k50, 0}},
    {"NDR", {0, link_speed_ext::k100, 0}},
    {"XDR", {0, 0, link_speed_ext2::k200}},
}};
constexpr std::array<std::uint8_t, 5> kWidths{link_width::k1x, link_width::k2x, link_width::k4x, link_width::k8x,
                                              link_width::k12x};
// [speed][width 1x 2x 4x 8x 12x]
constexpr std::uint8_t kExpected[9][5] = {
    {2, 5, 3, 6, 4},        // SDR: 2.5 5 10 20 30
    {5, 3, 6, 7, 8},        // DDR: 5 10 20 40 60
    {3, 6, 7, 9, 10},       // QDR: 10 20 40 80 120
    {3, 6, 7, 9, 10},       // FDR10
    {11, 19, 12, 13, 14},   // FDR: 14 28 56 112 168
    {15, 20, 16, 17, 18},   // EDR: 25 50 100 200 300
    {20, 16, 17, 21, 22},   // HDR: 50 100 200 400 600
    {16, 17, 21, 23, 24},   // NDR: 100 200 400 800 1200
    {17, 21, 23, 24, 24},   // XDR: 200 400 800, and 1600/2400 as the fastest code, 1200
};

TEST(LinkRate, EveryWidthAndSpeedGivesTheIbaRateCode) {
  for (std::size_t s = 0; s < kSpeeds.size(); ++s)
    for (std::size_t w = 0; w < kWidths.size(); ++w)
      EXPECT_EQ(rate_code_for(link_mbps(kWidths[w], kSpeeds[s].s)), kExpected[s][w])
          << kSpeeds[s].name << " width code " << int{kWidths[w]};
}

TEST(LinkRate, CodesMapToTheirBandwidthAndBack) {
  for (std::uint8_t c = 2; c <= rate_code::kMax; ++c) {
    ASSERT_NE(rate_mbps(c), 0u) << int{c};
    EXPECT_EQ(rate_code_for(rate_mbps(c)), c);
  }
  EXPECT_EQ(rate_mbps(0), 0u);
  EXPECT_EQ(rate_mbps(1), 0u);
  EXPECT_EQ(rate_mbps(25), 0u);
  EXPECT_EQ(rate_code_for(1000), 0);
  EXPECT_EQ(rate_code_below(rate_mbps(rate_code::k25Gbps)), rate_code::k20Gbps);
  EXPECT_EQ(rate_code_below(2500), 0);
  EXPECT_TRUE(rate_less(rate_code::k600Gbps, rate_code::k800Gbps));  // 22 < 23 by bandwidth too
  EXPECT_TRUE(rate_less(rate_code::k56Gbps, rate_code::k60Gbps));    // 12 < 8 by bandwidth
  EXPECT_EQ(rate_min(rate_code::k112Gbps, rate_code::k120Gbps), rate_code::k112Gbps);
}

PortInfo port(std::uint8_t width, LinkSpeed s, std::uint32_t cap, std::uint16_t cap2) {
  PortInfo pi{};
  pi.link_width_active = width;
  pi.set_link_speed_active(s.speed);
  pi.set_link_speed_ext_active(s.ext);
  pi.set_link_speed_ext_active2(s.ext2);
  pi.capability_mask = be32::from(cap);
  pi.capability_mask2 = be16::from(cap2);
  return pi;
}

TEST(LinkRate, ExtendedSpeedsCountOnlyWhereTheCapabilityMasksAdvertiseThem) {
  constexpr std::uint32_t kExt = port_cap::kIsExtendedSpeedsSupported | port_cap::kIsCapabilityMask2Supported;
  // A 4x NDR port that says so: 400 Gb/s.
  const PortInfo ndr = port(link_width::k4x, {link_speed::k10, link_speed_ext::k100, 0}, kExt, 0);
  EXPECT_EQ(port_rate_code(ndr, ndr), rate_code::k400Gbps);
  // Without IsExtendedSpeedsSupported the extended field is undefined: QDR's 40.
  const PortInfo legacy = port(link_width::k4x, {link_speed::k10, link_speed_ext::k100, 0}, 0, 0);
  EXPECT_EQ(port_rate_code(legacy, legacy), rate_code::k40Gbps);
  // XDR needs CapabilityMask2's IsExtendedSpeeds2Supported.
  const PortInfo xdr = port(link_width::k2x, {link_speed::k10, 0, link_speed_ext2::k200}, kExt,
                            port_cap2::kIsExtendedSpeeds2Supported | port_cap2::kIsLinkSpeedXDRSupported);
  EXPECT_EQ(port_rate_code(xdr, xdr), rate_code::k400Gbps);
  EXPECT_EQ(port_rate_code(xdr, ndr), rate_code::k20Gbps);  // masks without ExtSpeeds2: 2x QDR
  // A switch's external port reads its masks from port 0.
  const PortInfo ext_port = port(link_width::k2x, {link_speed::k10, link_speed_ext::k50, 0}, 0, 0);
  EXPECT_EQ(port_rate_code(ext_port, ndr), rate_code::k100Gbps);
  // Nothing usable: 2.5 Gb/s, as OpenSM.
  const PortInfo none = port(0, {}, kExt, 0);
  EXPECT_EQ(port_rate_code(none, none), rate_code::k2_5Gbps);
}

TEST(LinkRate, SecondExtendedSpeedsSitInByte56) {
  PortInfo pi{};
  pi.set_link_speed_ext_active2(link_speed_ext2::k200);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&pi)[56], 0x20);
  pi.set_link_speed_ext_supported2(1);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&pi)[56], 0x28);
  pi.set_link_speed_ext_enabled2(link_speed_ext2::kSetToSupported);
  EXPECT_EQ(reinterpret_cast<const std::uint8_t*>(&pi)[56], 0x2f);
  EXPECT_EQ(pi.link_round_trip_latency(), 0u);
  EXPECT_EQ(port_info_modifier(7, true), 0x80000007u);
}

}  // namespace
}  // namespace madengine::wire
