// MulticastForwardingTableRecord (IBA 15.2.5.8, 72 bytes): one block of 32
// MLIDs' port masks for 16 ports (the position selects which 16).
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"
#include "madengine/wire/smp/mft.hpp"

namespace madengine::wire {

namespace mft_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kPosition = 1ull << 1;
inline constexpr std::uint64_t kReserved0 = 1ull << 2;
inline constexpr std::uint64_t kBlockNum = 1ull << 3;
inline constexpr std::uint64_t kReserved1 = 1ull << 4;
inline constexpr std::uint64_t kMulticastForwardingTable = 1ull << 5;
}  // namespace mft_record_cm

struct MftRecord {
  be16 lid;
  be16 position_block;  // Position 4, reserved 3, BlockNum 9
  be32 reserved;
  MftBlock mft;

  MADENGINE_WIRE_NAMED_BITS(Position, position, 2, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(BlockNum, block_num, 2, 7, 9);
};
static_assert(sizeof(MftRecord) == 72 && alignof(MftRecord) == 1);
static_assert(offsetof(MftRecord, position_block) == 2);
static_assert(offsetof(MftRecord, mft) == 8);
static_assert(detail::field_within<MftRecord::Position>(2, 2));
static_assert(detail::field_within<MftRecord::BlockNum>(2, 2));

}  // namespace madengine::wire
