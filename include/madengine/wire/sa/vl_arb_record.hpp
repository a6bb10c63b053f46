// VLArbitrationTableRecord (IBA 15.2.5.9, 72 bytes): one block of a port's
// VL arbitration table (block 1-4: low/high, lower/upper halves).
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/vl_arb.hpp"

namespace madengine::wire {

namespace vl_arb_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kOutputPortNum = 1ull << 1;
inline constexpr std::uint64_t kBlockNum = 1ull << 2;
inline constexpr std::uint64_t kReserved = 1ull << 3;
inline constexpr std::uint64_t kVlArbTable = 1ull << 4;
}  // namespace vl_arb_record_cm

struct VlArbTableRecord {
  be16 lid;
  std::uint8_t output_port_num;
  std::uint8_t block_num;
  be32 reserved;
  VlArbTableBlock vl_arb_table;
};
static_assert(sizeof(VlArbTableRecord) == 72 && alignof(VlArbTableRecord) == 1);
static_assert(offsetof(VlArbTableRecord, block_num) == 3);
static_assert(offsetof(VlArbTableRecord, vl_arb_table) == 8);

}  // namespace madengine::wire
