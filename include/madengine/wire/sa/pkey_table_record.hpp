// P_KeyTableRecord (IBA 15.2.5.11, 72 bytes): one 32-entry block of a port's
// P_Key table, keyed by LID, block and port number.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::wire {

namespace pkey_table_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kBlockNum = 1ull << 1;
inline constexpr std::uint64_t kPortNum = 1ull << 2;
inline constexpr std::uint64_t kReserved = 1ull << 3;
inline constexpr std::uint64_t kPKeyTable = 1ull << 4;
}  // namespace pkey_table_record_cm

struct PKeyTableRecord {
  be16 lid;
  be16 block_num;
  std::uint8_t port_num;
  std::array<std::uint8_t, 3> reserved;
  PKeyTableBlock pkey_table;
};
static_assert(sizeof(PKeyTableRecord) == 72 && alignof(PKeyTableRecord) == 1);
static_assert(offsetof(PKeyTableRecord, port_num) == 4);
static_assert(offsetof(PKeyTableRecord, pkey_table) == 8);

}  // namespace madengine::wire
