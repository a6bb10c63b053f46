// GUIDInfoRecord (IBA 15.2.5.18, 72 bytes): one 8-entry block of a port's
// GUIDInfo (its alias GUIDs), keyed by LID and block number.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/guid_info.hpp"

namespace madengine::wire {

namespace guid_info_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kBlockNum = 1ull << 1;
inline constexpr std::uint64_t kReserved0 = 1ull << 2;
inline constexpr std::uint64_t kReserved1 = 1ull << 3;
// GUID i of the block is bit 4 + i (i < 8).
constexpr std::uint64_t guid(unsigned i) noexcept { return i < 8 ? 1ull << (4 + i) : 0; }
inline constexpr std::uint64_t kGuid0 = 1ull << 4;
inline constexpr std::uint64_t kGuid7 = 1ull << 11;
}  // namespace guid_info_record_cm

struct GuidInfoRecord {
  be16 lid;
  std::uint8_t block_num;
  std::uint8_t reserved0;
  be32 reserved1;
  GuidInfoBlock guid_info;
};
static_assert(sizeof(GuidInfoRecord) == 72 && alignof(GuidInfoRecord) == 1);
static_assert(offsetof(GuidInfoRecord, block_num) == 2);
static_assert(offsetof(GuidInfoRecord, guid_info) == 8);

}  // namespace madengine::wire
