// GUID -> LID slots (see guid_index.hpp).
#include "sa/guid_index.hpp"

#include <algorithm>
#include <bit>

namespace madengine::sa {

void GuidIndex::build(const std::vector<Entry>& entries) {
  // At most half the slots in use: a bucket overflows into the next rarely.
  const std::size_t buckets = std::bit_ceil(std::max<std::size_t>(2, entries.size() * 2 / kSlots + 1));  // 2: a shift below 64
  buckets_.assign(buckets, Bucket{});
  mask_ = buckets - 1;
  shift_ = 64u - static_cast<unsigned>(std::countr_zero(buckets));
  for (const Entry& e : entries) {
    if (e.guid == 0 || e.lids.base == 0) continue;  // a port without a LID is not reachable by GID either
    const std::uint64_t h = mix(e.guid);
    const std::uint64_t slot = std::uint64_t{e.lids.base} |
                               static_cast<std::uint64_t>(std::countr_zero(unsigned{e.lids.count})) << 16 |
                               std::uint64_t{e.hint} << kHintShift | tag(h);
    for (std::size_t b = home(h);; b = (b + 1) & mask_) {
      auto& slots = buckets_[b].slots;
      const auto free = std::find(slots.begin(), slots.end(), std::uint64_t{0});
      if (free == slots.end()) continue;
      *free = slot;
      break;
    }
  }
}

}  // namespace madengine::sa
