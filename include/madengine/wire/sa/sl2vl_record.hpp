// SLtoVLMappingTableRecord (IBA 15.2.5.4, 16 bytes): a port pair's SL to VL
// map (for a CA or router, input port 0 and the port itself as output).
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/sl2vl.hpp"

namespace madengine::wire {

namespace sl2vl_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kInputPortNum = 1ull << 1;
inline constexpr std::uint64_t kOutputPortNum = 1ull << 2;
inline constexpr std::uint64_t kReserved = 1ull << 3;
inline constexpr std::uint64_t kSl2VlTable = 1ull << 4;
}  // namespace sl2vl_record_cm

struct Sl2VlTableRecord {
  be16 lid;
  std::uint8_t input_port_num;
  std::uint8_t output_port_num;
  be32 reserved;
  Sl2VlTable table;
};
static_assert(sizeof(Sl2VlTableRecord) == 16 && alignof(Sl2VlTableRecord) == 1);
static_assert(offsetof(Sl2VlTableRecord, output_port_num) == 3);
static_assert(offsetof(Sl2VlTableRecord, table) == 8);

}  // namespace madengine::wire
