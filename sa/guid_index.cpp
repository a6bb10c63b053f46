// GUID -> LID slots (see guid_index.hpp).
#include "sa/guid_index.hpp"

#include <bit>

namespace madengine::sa {

void GuidIndex::build(const std::vector<Entry>& entries) {
  const std::size_t cap = std::bit_ceil(std::max<std::size_t>(16, entries.size() * 2));
  slots_.assign(cap, 0);
  mask_ = cap - 1;
  shift_ = 64u - static_cast<unsigned>(std::countr_zero(cap));
  for (const Entry& e : entries) {
    if (e.guid == 0 || e.lids.base == 0) continue;  // a port without a LID is not reachable by GID either
    const std::uint64_t h = mix(e.guid);
    std::size_t i = home(h);
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = std::uint32_t{e.lids.base} | static_cast<std::uint32_t>(std::countr_zero(unsigned{e.lids.count})) << 16 | tag(h);
  }
}

}  // namespace madengine::sa
