// LinkRecord (IBA 15.2.5.13, 6 bytes): one direction of a link, from a
// (LID, port) to the port it reaches. GetTable strides round it up to 8.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"

namespace madengine::wire {

namespace link_record_cm {
inline constexpr std::uint64_t kFromLid = 1ull << 0;
inline constexpr std::uint64_t kFromPort = 1ull << 1;
inline constexpr std::uint64_t kToPort = 1ull << 2;
inline constexpr std::uint64_t kToLid = 1ull << 3;
}  // namespace link_record_cm

struct LinkRecord {
  be16 from_lid;
  std::uint8_t from_port;
  std::uint8_t to_port;
  be16 to_lid;
};
static_assert(sizeof(LinkRecord) == 6 && alignof(LinkRecord) == 1);
static_assert(offsetof(LinkRecord, from_port) == 2);
static_assert(offsetof(LinkRecord, to_port) == 3);
static_assert(offsetof(LinkRecord, to_lid) == 4);

}  // namespace madengine::wire
