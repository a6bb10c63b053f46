// SMInfoRecord (IBA 15.2.5, Table "SMInfoRecord"; 25 bytes): an SM's SMInfo keyed by the LID of
// its port. GetTable strides round it up to 32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/sm_info.hpp"

namespace madengine::wire {

namespace sm_info_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kReserved = 1ull << 1;
inline constexpr std::uint64_t kGuid = 1ull << 2;
inline constexpr std::uint64_t kSmKey = 1ull << 3;
inline constexpr std::uint64_t kActCount = 1ull << 4;
inline constexpr std::uint64_t kPriority = 1ull << 5;
inline constexpr std::uint64_t kSmState = 1ull << 6;
}  // namespace sm_info_record_cm

struct SmInfoRecord {
  be16 lid;
  be16 reserved;
  SmInfo sm_info;
};
static_assert(sizeof(SmInfoRecord) == 25 && alignof(SmInfoRecord) == 1);
static_assert(offsetof(SmInfoRecord, sm_info) == 4);

}  // namespace madengine::wire
