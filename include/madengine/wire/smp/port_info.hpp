// PortInfo (IBA 14.2.5.6): the 64-byte state and configuration of one port,
// the attribute the SM reads and writes most (LIDs, SM LID, link state, MTU,
// VLs, timeouts). Field order and bit positions follow Table 146 exactly.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

// PortState (Table 146); 0 in a Set means "no state change".
enum class PortState : std::uint8_t { kNop = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4 };

// PortPhysicalState; 0 in a Set means "no state change".
enum class PortPhysState : std::uint8_t {
  kNop = 0,
  kSleep = 1,
  kPolling = 2,
  kDisabled = 3,
  kPortConfigurationTraining = 4,
  kLinkUp = 5,
  kLinkErrorRecovery = 6,
  kPhyTest = 7,
};

// LinkDownDefaultState.
enum class LinkDownDefaultState : std::uint8_t { kNop = 0, kSleep = 1, kPolling = 2 };

// MTU codes used by NeighborMTU, MTUCap and the SA's PathRecord (IBA 9.6.2).
enum class Mtu : std::uint8_t { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };

// Bytes of payload for an MTU code; 0 for a code the IBA does not define.
constexpr std::uint32_t mtu_bytes(std::uint8_t code) noexcept {
  return (code >= 1 && code <= 5) ? (128u << code) : 0;
}
constexpr std::uint8_t mtu_code(std::uint32_t bytes) noexcept {
  for (std::uint8_t c = 1; c <= 5; ++c)
    if (mtu_bytes(c) == bytes) return c;
  return 0;
}

// LinkWidth{Enabled,Supported,Active} bits. Enabled also takes 0 (no change)
// and 0xff (set to LinkWidthSupported).
namespace link_width {
inline constexpr std::uint8_t kNop = 0x00;
inline constexpr std::uint8_t k1x = 0x01;
inline constexpr std::uint8_t k4x = 0x02;
inline constexpr std::uint8_t k8x = 0x04;
inline constexpr std::uint8_t k12x = 0x08;
inline constexpr std::uint8_t k2x = 0x10;
inline constexpr std::uint8_t kSetToSupported = 0xff;
}  // namespace link_width

// LinkSpeed{Supported,Enabled,Active} bits (4 bits). Active 0 means the link
// runs at an extended speed (see LinkSpeedExtActive); Enabled 0 is no change
// and 15 sets it to LinkSpeedSupported.
namespace link_speed {
inline constexpr std::uint8_t kNop = 0;
inline constexpr std::uint8_t kExtended = 0;
inline constexpr std::uint8_t k2_5 = 1;   // SDR
inline constexpr std::uint8_t k5 = 2;     // DDR
inline constexpr std::uint8_t k10 = 4;    // QDR
inline constexpr std::uint8_t kSetToSupported = 15;
}  // namespace link_speed

// LinkSpeedExt{Active,Supported} bits (4 bits) and LinkSpeedExtEnabled
// (5 bits, with 30 = disable extended speeds and 31 = set to supported).
namespace link_speed_ext {
inline constexpr std::uint8_t kNone = 0;
inline constexpr std::uint8_t k14 = 1;    // FDR
inline constexpr std::uint8_t k25 = 2;    // EDR
inline constexpr std::uint8_t k50 = 4;    // HDR
inline constexpr std::uint8_t k100 = 8;   // NDR
inline constexpr std::uint8_t kDisable = 30;
inline constexpr std::uint8_t kSetToSupported = 31;
}  // namespace link_speed_ext

// LinkSpeedExt{Active,Supported}2 bits (2 bits) and LinkSpeedExtEnabled2
// (3 bits): the second extended speeds, valid when CapabilityMask2 has
// kIsExtendedSpeeds2Supported. Enabled2 0 is no change, 7 sets it to
// LinkSpeedExtSupported2.
namespace link_speed_ext2 {
inline constexpr std::uint8_t kNone = 0;
inline constexpr std::uint8_t k200 = 1;  // XDR
inline constexpr std::uint8_t kSetToSupported = 7;
}  // namespace link_speed_ext2

// VLCap and OperationalVLs codes (OperationalVLs 0 = no change).
namespace vl_cap {
inline constexpr std::uint8_t kVl0 = 1;
inline constexpr std::uint8_t kVl0To1 = 2;
inline constexpr std::uint8_t kVl0To3 = 3;
inline constexpr std::uint8_t kVl0To7 = 4;
inline constexpr std::uint8_t kVl0To14 = 5;
}  // namespace vl_cap

// CapabilityMask bits (IBA 14.2.5.6, Table 147), host order.
namespace port_cap {
inline constexpr std::uint32_t kIsSM = 1u << 1;
inline constexpr std::uint32_t kIsNoticeSupported = 1u << 2;
inline constexpr std::uint32_t kIsTrapSupported = 1u << 3;
inline constexpr std::uint32_t kIsOptionalIPDSupported = 1u << 4;
inline constexpr std::uint32_t kIsAutomaticMigrationSupported = 1u << 5;
inline constexpr std::uint32_t kIsSLMappingSupported = 1u << 6;
inline constexpr std::uint32_t kIsMKeyNVRAM = 1u << 7;
inline constexpr std::uint32_t kIsPKeyNVRAM = 1u << 8;
inline constexpr std::uint32_t kIsLedInfoSupported = 1u << 9;
inline constexpr std::uint32_t kIsSMdisabled = 1u << 10;
inline constexpr std::uint32_t kIsSystemImageGUIDSupported = 1u << 11;
inline constexpr std::uint32_t kIsPKeySwitchExternalPortTrapSupported = 1u << 12;
inline constexpr std::uint32_t kIsCableInfoSupported = 1u << 13;
inline constexpr std::uint32_t kIsExtendedSpeedsSupported = 1u << 14;
inline constexpr std::uint32_t kIsCapabilityMask2Supported = 1u << 15;
inline constexpr std::uint32_t kIsCommunicationManagementSupported = 1u << 16;
inline constexpr std::uint32_t kIsSNMPTunnelingSupported = 1u << 17;
inline constexpr std::uint32_t kIsReinitSupported = 1u << 18;
inline constexpr std::uint32_t kIsDeviceManagementSupported = 1u << 19;
inline constexpr std::uint32_t kIsVendorClassSupported = 1u << 20;
inline constexpr std::uint32_t kIsDRNoticeSupported = 1u << 21;
inline constexpr std::uint32_t kIsCapabilityMaskNoticeSupported = 1u << 22;
inline constexpr std::uint32_t kIsBootManagementSupported = 1u << 23;
inline constexpr std::uint32_t kIsLinkRoundTripLatencySupported = 1u << 24;
inline constexpr std::uint32_t kIsClientReregistrationSupported = 1u << 25;
inline constexpr std::uint32_t kIsOtherLocalChangesNoticeSupported = 1u << 26;
inline constexpr std::uint32_t kIsLinkSpeedWidthPairsTableSupported = 1u << 27;
inline constexpr std::uint32_t kIsVendorSpecificMadsTableSupported = 1u << 28;
inline constexpr std::uint32_t kIsMcastPKeyTrapSuppressionSupported = 1u << 29;
inline constexpr std::uint32_t kIsMulticastFDBTopSupported = 1u << 30;
inline constexpr std::uint32_t kIsHierarchyInfoSupported = 1u << 31;
}  // namespace port_cap

// CapabilityMask2 bits, host order (valid when kIsCapabilityMask2Supported).
namespace port_cap2 {
inline constexpr std::uint16_t kIsSetNodeDescriptionSupported = 1u << 0;
inline constexpr std::uint16_t kIsPortInfoExtendedSupported = 1u << 1;
inline constexpr std::uint16_t kIsVirtualizationSupported = 1u << 2;
inline constexpr std::uint16_t kIsSwitchPortStateTableSupported = 1u << 3;
inline constexpr std::uint16_t kIsLinkWidth2xSupported = 1u << 4;
inline constexpr std::uint16_t kIsLinkSpeedHDRSupported = 1u << 5;
inline constexpr std::uint16_t kIsLinkSpeedNDRSupported = 1u << 10;
inline constexpr std::uint16_t kIsExtendedSpeeds2Supported = 1u << 11;
inline constexpr std::uint16_t kIsLinkSpeedXDRSupported = 1u << 12;
}  // namespace port_cap2

// SubnetTimeOut as OpenSM writes it by default: 4.096 us * 2^18, about 1 s.
inline constexpr std::uint8_t kDefaultSubnetTimeout = 18;

struct PortInfo {
  be64 m_key;                 // 0
  be64 gid_prefix;            // 8
  be16 lid;                   // 16
  be16 master_sm_lid;         // 18
  be32 capability_mask;       // 20: port_cap bits
  be16 diag_code;             // 24
  be16 m_key_lease_period;    // 26: seconds
  std::uint8_t local_port_num;        // 28: port the SMP arrived on (Get only)
  std::uint8_t link_width_enabled;    // 29: link_width bits
  std::uint8_t link_width_supported;  // 30
  std::uint8_t link_width_active;     // 31
  std::array<std::uint8_t, 6> bits32_;  // 32..37: sub-byte fields, use the accessors
  std::uint8_t vl_high_limit;            // 38
  std::uint8_t vl_arbitration_high_cap;  // 39
  std::uint8_t vl_arbitration_low_cap;   // 40
  std::array<std::uint8_t, 3> bits41_;   // 41..43
  be16 m_key_violations;      // 44
  be16 p_key_violations;      // 46
  be16 q_key_violations;      // 48
  std::uint8_t guid_cap;      // 50: GUIDInfo entries
  std::array<std::uint8_t, 3> bits51_;   // 51..53
  be16 max_credit_hint;       // 54
  std::array<std::uint8_t, 4> bits56_;   // 56 LinkSpeedExt*2, 57..59 LinkRoundTripLatency
  be16 capability_mask2;      // 60: port_cap2 bits
  std::array<std::uint8_t, 2> bits62_;   // 62..63

  MADENGINE_WIRE_BITS(link_speed_supported, 32, 0, 4);
  MADENGINE_WIRE_BITS(port_state, 32, 4, 4);
  MADENGINE_WIRE_BITS(port_physical_state, 33, 0, 4);
  MADENGINE_WIRE_BITS(link_down_default_state, 33, 4, 4);
  MADENGINE_WIRE_BITS(m_key_protect_bits, 34, 0, 2);
  MADENGINE_WIRE_BITS(lmc, 34, 5, 3);
  MADENGINE_WIRE_BITS(link_speed_active, 35, 0, 4);
  MADENGINE_WIRE_BITS(link_speed_enabled, 35, 4, 4);
  MADENGINE_WIRE_BITS(neighbor_mtu, 36, 0, 4);
  MADENGINE_WIRE_BITS(master_sm_sl, 36, 4, 4);
  MADENGINE_WIRE_BITS(vl_cap, 37, 0, 4);
  MADENGINE_WIRE_BITS(init_type, 37, 4, 4);
  MADENGINE_WIRE_BITS(init_type_reply, 41, 0, 4);
  MADENGINE_WIRE_BITS(mtu_cap, 41, 4, 4);
  MADENGINE_WIRE_BITS(vl_stall_count, 42, 0, 3);
  MADENGINE_WIRE_BITS(hoq_life, 42, 3, 5);
  MADENGINE_WIRE_BITS(operational_vls, 43, 0, 4);
  MADENGINE_WIRE_BITS(partition_enforcement_inbound, 43, 4, 1);
  MADENGINE_WIRE_BITS(partition_enforcement_outbound, 43, 5, 1);
  MADENGINE_WIRE_BITS(filter_raw_inbound, 43, 6, 1);
  MADENGINE_WIRE_BITS(filter_raw_outbound, 43, 7, 1);
  // ClientReregister (IBA 14.4.11): set by the SM to make clients re-register
  // their SA subscriptions; the SMA clears it after acting on it.
  MADENGINE_WIRE_BITS(client_reregister, 51, 0, 1);
  MADENGINE_WIRE_BITS(multicast_pkey_trap_suppression_enabled, 51, 1, 2);
  MADENGINE_WIRE_BITS(subnet_timeout, 51, 3, 5);   // 4.096 us * 2^value (kDefaultSubnetTimeout)
  MADENGINE_WIRE_BITS(resp_time_value, 52, 3, 5);  // 4.096 us * 2^value
  MADENGINE_WIRE_BITS(local_phy_errors, 53, 0, 4);
  MADENGINE_WIRE_BITS(overrun_errors, 53, 4, 4);
  MADENGINE_WIRE_BITS(link_speed_ext_active2, 56, 1, 2);     // link_speed_ext2 codes
  MADENGINE_WIRE_BITS(link_speed_ext_supported2, 56, 3, 2);
  MADENGINE_WIRE_BITS(link_speed_ext_enabled2, 56, 5, 3);
  MADENGINE_WIRE_BITS(link_round_trip_latency, 57, 0, 24);  // nanoseconds
  MADENGINE_WIRE_BITS(link_speed_ext_active, 62, 0, 4);
  MADENGINE_WIRE_BITS(link_speed_ext_supported, 62, 4, 4);
  MADENGINE_WIRE_BITS(link_speed_ext_enabled, 63, 3, 5);

  PortState state() const noexcept { return static_cast<PortState>(port_state()); }
  void set_state(PortState s) noexcept { set_port_state(static_cast<std::uint8_t>(s)); }
  PortPhysState phys_state() const noexcept {
    return static_cast<PortPhysState>(port_physical_state());
  }
  bool has_cap(std::uint32_t port_cap_bit) const noexcept {
    return (capability_mask.get() & port_cap_bit) != 0;
  }
};
static_assert(sizeof(PortInfo) == kSmpDataSize && alignof(PortInfo) == 1);
static_assert(offsetof(PortInfo, gid_prefix) == 8);
static_assert(offsetof(PortInfo, lid) == 16);
static_assert(offsetof(PortInfo, master_sm_lid) == 18);
static_assert(offsetof(PortInfo, capability_mask) == 20);
static_assert(offsetof(PortInfo, local_port_num) == 28);
static_assert(offsetof(PortInfo, bits32_) == 32);
static_assert(offsetof(PortInfo, vl_high_limit) == 38);
static_assert(offsetof(PortInfo, bits41_) == 41);
static_assert(offsetof(PortInfo, m_key_violations) == 44);
static_assert(offsetof(PortInfo, guid_cap) == 50);
static_assert(offsetof(PortInfo, max_credit_hint) == 54);
static_assert(offsetof(PortInfo, capability_mask2) == 60);
static_assert(offsetof(PortInfo, bits62_) == 62);

// PortInfo's attribute modifier is the port number (0 = a switch's
// management port, or the port the SMP arrived on at a CA). Bit 31,
// SMSupportExtendedSpeeds, tells the port that the SM reads and writes the
// extended speed fields: ports past HDR report their true speeds only then.
inline constexpr std::uint32_t kSmSupportsExtendedSpeeds = 1u << 31;
constexpr std::uint32_t port_info_modifier(std::uint8_t port, bool extended_speeds = false) noexcept {
  return port | (extended_speeds ? kSmSupportsExtendedSpeeds : 0u);
}

}  // namespace madengine::wire
