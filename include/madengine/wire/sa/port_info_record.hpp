// PortInfoRecord (IBA 15.2.5.3, 68 bytes): a port's PortInfo keyed by the
// end-port LID and the port number.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::wire {

// Bits 0-2 are the record's own fields; from bit 3 one bit per PortInfo
// field in wire order, reserved fields counted (IBA 15.2.5.3).
namespace port_info_record_cm {
inline constexpr std::uint64_t kEndportLid = 1ull << 0;
inline constexpr std::uint64_t kPortNum = 1ull << 1;
inline constexpr std::uint64_t kOptions = 1ull << 2;
inline constexpr std::uint64_t kMKey = 1ull << 3;
inline constexpr std::uint64_t kGidPrefix = 1ull << 4;
inline constexpr std::uint64_t kLid = 1ull << 5;
inline constexpr std::uint64_t kMasterSmLid = 1ull << 6;
inline constexpr std::uint64_t kCapabilityMask = 1ull << 7;
inline constexpr std::uint64_t kDiagCode = 1ull << 8;
inline constexpr std::uint64_t kMKeyLeasePeriod = 1ull << 9;
inline constexpr std::uint64_t kLocalPortNum = 1ull << 10;
inline constexpr std::uint64_t kLinkWidthEnabled = 1ull << 11;
inline constexpr std::uint64_t kLinkWidthSupported = 1ull << 12;
inline constexpr std::uint64_t kLinkWidthActive = 1ull << 13;
inline constexpr std::uint64_t kLinkSpeedSupported = 1ull << 14;
inline constexpr std::uint64_t kPortState = 1ull << 15;
inline constexpr std::uint64_t kPortPhysicalState = 1ull << 16;
inline constexpr std::uint64_t kLinkDownDefaultState = 1ull << 17;
inline constexpr std::uint64_t kMKeyProtectBits = 1ull << 18;
inline constexpr std::uint64_t kReserved0 = 1ull << 19;
inline constexpr std::uint64_t kLmc = 1ull << 20;
inline constexpr std::uint64_t kLinkSpeedActive = 1ull << 21;
inline constexpr std::uint64_t kLinkSpeedEnabled = 1ull << 22;
inline constexpr std::uint64_t kNeighborMtu = 1ull << 23;
inline constexpr std::uint64_t kMasterSmSl = 1ull << 24;
inline constexpr std::uint64_t kVlCap = 1ull << 25;
inline constexpr std::uint64_t kInitType = 1ull << 26;
inline constexpr std::uint64_t kVlHighLimit = 1ull << 27;
inline constexpr std::uint64_t kVlArbitrationHighCap = 1ull << 28;
inline constexpr std::uint64_t kVlArbitrationLowCap = 1ull << 29;
inline constexpr std::uint64_t kInitTypeReply = 1ull << 30;
inline constexpr std::uint64_t kMtuCap = 1ull << 31;
inline constexpr std::uint64_t kVlStallCount = 1ull << 32;
inline constexpr std::uint64_t kHoqLife = 1ull << 33;
inline constexpr std::uint64_t kOperationalVls = 1ull << 34;
inline constexpr std::uint64_t kPartitionEnforcementInbound = 1ull << 35;
inline constexpr std::uint64_t kPartitionEnforcementOutbound = 1ull << 36;
inline constexpr std::uint64_t kFilterRawInbound = 1ull << 37;
inline constexpr std::uint64_t kFilterRawOutbound = 1ull << 38;
inline constexpr std::uint64_t kMKeyViolations = 1ull << 39;
inline constexpr std::uint64_t kPKeyViolations = 1ull << 40;
inline constexpr std::uint64_t kQKeyViolations = 1ull << 41;
inline constexpr std::uint64_t kGuidCap = 1ull << 42;
inline constexpr std::uint64_t kClientReregister = 1ull << 43;
inline constexpr std::uint64_t kMulticastPKeyTrapSuppression = 1ull << 44;
inline constexpr std::uint64_t kSubnetTimeout = 1ull << 45;
inline constexpr std::uint64_t kReserved1 = 1ull << 46;
inline constexpr std::uint64_t kRespTimeValue = 1ull << 47;
inline constexpr std::uint64_t kLocalPhyErrors = 1ull << 48;
inline constexpr std::uint64_t kOverrunErrors = 1ull << 49;
inline constexpr std::uint64_t kMaxCreditHint = 1ull << 50;
inline constexpr std::uint64_t kReserved2 = 1ull << 51;
inline constexpr std::uint64_t kLinkRoundTripLatency = 1ull << 52;
inline constexpr std::uint64_t kCapabilityMask2 = 1ull << 53;
inline constexpr std::uint64_t kLinkSpeedExtActive = 1ull << 54;
inline constexpr std::uint64_t kLinkSpeedExtSupported = 1ull << 55;
inline constexpr std::uint64_t kReserved3 = 1ull << 56;
inline constexpr std::uint64_t kLinkSpeedExtEnabled = 1ull << 57;
}  // namespace port_info_record_cm

// AttributeModifier bit 31 of a SubnAdmGet/GetTable(PortInfoRecord): the
// CapabilityMask and CapabilityMask2 components select the ports that have
// every bit the query sets, not only those equal to it (IBA 1.2 errata;
// ClassPortInfo's IsPortInfoCapMaskMatchSupported and
// IsPortInfoCapMask2MatchSupported). `saquery -s` finds the SMs this way.
inline constexpr std::uint32_t kPortInfoRecordCapMaskMatch = 1u << 31;

struct PortInfoRecord {
  be16 endport_lid;
  std::uint8_t port_num;
  std::uint8_t options;  // IBA 1.3 options; reserved before
  PortInfo port_info;
};
static_assert(sizeof(PortInfoRecord) == 68 && alignof(PortInfoRecord) == 1);
static_assert(offsetof(PortInfoRecord, port_num) == 2);
static_assert(offsetof(PortInfoRecord, port_info) == 4);

}  // namespace madengine::wire
