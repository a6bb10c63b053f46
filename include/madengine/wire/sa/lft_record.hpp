// LinearForwardingTableRecord (IBA 15.2.5.6, 72 bytes): one 64-entry block
// of a switch's linear forwarding table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/lft.hpp"

namespace madengine::wire {

namespace lft_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kBlockNum = 1ull << 1;
inline constexpr std::uint64_t kReserved = 1ull << 2;
inline constexpr std::uint64_t kLinearForwardingTable = 1ull << 3;
}  // namespace lft_record_cm

struct LftRecord {
  be16 lid;
  be16 block_num;
  be32 reserved;
  LftBlock lft;
};
static_assert(sizeof(LftRecord) == 72 && alignof(LftRecord) == 1);
static_assert(offsetof(LftRecord, block_num) == 2);
static_assert(offsetof(LftRecord, lft) == 8);

}  // namespace madengine::wire
