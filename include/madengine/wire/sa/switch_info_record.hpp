// SwitchInfoRecord (IBA 15.2.5.5): a switch's SwitchInfo keyed by its LID.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/switch_info.hpp"

namespace madengine::wire {

// Bits 0-1 are the record's own; from bit 2 one per SwitchInfo field in wire
// order, reserved fields counted.
namespace switch_info_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kReserved0 = 1ull << 1;
inline constexpr std::uint64_t kLinearFdbCap = 1ull << 2;
inline constexpr std::uint64_t kRandomFdbCap = 1ull << 3;
inline constexpr std::uint64_t kMulticastFdbCap = 1ull << 4;
inline constexpr std::uint64_t kLinearFdbTop = 1ull << 5;
inline constexpr std::uint64_t kDefaultPort = 1ull << 6;
inline constexpr std::uint64_t kDefaultMulticastPrimaryPort = 1ull << 7;
inline constexpr std::uint64_t kDefaultMulticastNotPrimaryPort = 1ull << 8;
inline constexpr std::uint64_t kLifeTimeValue = 1ull << 9;
inline constexpr std::uint64_t kPortStateChange = 1ull << 10;
inline constexpr std::uint64_t kOptimizedSl2VlMappingProgramming = 1ull << 11;
inline constexpr std::uint64_t kLidsPerPort = 1ull << 12;
inline constexpr std::uint64_t kPartitionEnforcementCap = 1ull << 13;
inline constexpr std::uint64_t kInboundEnforcementCap = 1ull << 14;
inline constexpr std::uint64_t kOutboundEnforcementCap = 1ull << 15;
inline constexpr std::uint64_t kFilterRawInboundCap = 1ull << 16;
inline constexpr std::uint64_t kFilterRawOutboundCap = 1ull << 17;
inline constexpr std::uint64_t kEnhancedPort0 = 1ull << 18;
inline constexpr std::uint64_t kReserved1 = 1ull << 19;
inline constexpr std::uint64_t kMulticastFdbTop = 1ull << 20;
}  // namespace switch_info_record_cm

struct SwitchInfoRecord {
  be16 lid;
  be16 reserved;
  SwitchInfo switch_info;
};
static_assert(sizeof(SwitchInfoRecord) == 4 + sizeof(SwitchInfo) && alignof(SwitchInfoRecord) == 1);
static_assert(offsetof(SwitchInfoRecord, switch_info) == 4);

}  // namespace madengine::wire
