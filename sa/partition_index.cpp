// PathRecord partition sets (see partition_index.hpp).
#include "sa/partition_index.hpp"

#include <algorithm>
#include <map>

#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::sa {

namespace {

constexpr std::uint16_t order_key(std::uint16_t pkey) noexcept {
  const std::uint16_t base = wire::pkey_base(pkey);
  return static_cast<std::uint16_t>(base >> 8 | (base & 0xff) << 8);
}

constexpr std::uint16_t kDefaultTable[] = {wire::kDefaultPKey};

}  // namespace

void PartitionIndex::build(const std::vector<std::span<const std::uint16_t>>& tables, std::vector<PartitionInfo> partitions) {
  lid_set_.assign(tables.size(), kNoSet);
  sets_.clear();
  matrix_.clear();
  std::map<std::vector<std::uint16_t>, std::uint16_t> ids;
  for (std::size_t lid = 0; lid < tables.size(); ++lid) {
    std::span<const std::uint16_t> t = tables[lid];
    if (t.empty()) t = kDefaultTable;
    std::vector<std::uint16_t> keys;
    for (const std::uint16_t k : t)
      if (wire::pkey_is_valid(k)) keys.push_back(k);
    std::sort(keys.begin(), keys.end(), [](std::uint16_t a, std::uint16_t b) {
      if (order_key(a) != order_key(b)) return order_key(a) < order_key(b);
      return wire::pkey_is_full_member(a) && !wire::pkey_is_full_member(b);
    });
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    auto [it, fresh] = ids.try_emplace(keys, static_cast<std::uint16_t>(sets_.size()));
    if (fresh) {
      if (sets_.size() >= kNoSet) continue;  // more distinct tables than ports can have: leave unindexed
      Set set;
      for (const std::uint16_t k : keys) {
        const std::uint16_t base = wire::pkey_base(k);
        auto m = std::find_if(set.by_base.begin(), set.by_base.end(), [&](const Member& x) { return x.base == base; });
        if (m == set.by_base.end()) m = set.by_base.insert(set.by_base.end(), Member{base, 0});
        m->bits = static_cast<std::uint8_t>(m->bits | (wire::pkey_is_full_member(k) ? 2 : 1));
      }
      std::sort(set.by_base.begin(), set.by_base.end(), [](const Member& x, const Member& y) { return x.base < y.base; });
      set.keys = it->first;
      sets_.push_back(std::move(set));
    }
    lid_set_[lid] = it->second;
  }
  std::sort(partitions.begin(), partitions.end(),
            [](const PartitionInfo& a, const PartitionInfo& b) { return a.pkey < b.pkey; });
  partitions_ = std::move(partitions);
  if (sets_.size() <= kMatrixSetsMax) {
    matrix_.assign(sets_.size() * sets_.size(), 0);
    for (std::uint16_t a = 0; a < sets_.size(); ++a)
      for (std::uint16_t b = 0; b < sets_.size(); ++b) matrix_[std::size_t{a} * sets_.size() + b] = compute_common(a, b);
  }
  build_bits();
}

void PartitionIndex::build_bits() {
  slot_of_base_.clear();
  bits_.clear();
  std::vector<std::uint16_t> bases;
  for (const Set& set : sets_)
    for (const Member& m : set.by_base) bases.push_back(m.base);
  std::sort(bases.begin(), bases.end());
  bases.erase(std::unique(bases.begin(), bases.end()), bases.end());
  if (bases.size() > kSlotsMax) return;
  slot_of_base_.assign(std::size_t{wire::kPKeyBaseMask} + 1, kNoSlot);
  for (std::size_t u = 0; u < bases.size(); ++u) {
    slot_of_base_[bases[u]] = static_cast<std::uint8_t>(u);
    slot_sl_[u] = sl_slow(bases[u]);
  }
  bits_.resize(sets_.size());
  for (std::size_t i = 0; i < sets_.size(); ++i)
    for (const Member& m : sets_[i].by_base) {
      const std::uint64_t b = std::uint64_t{1} << slot_of_base_[m.base];
      bits_[i].any |= b;
      if ((m.bits & 2) != 0) bits_[i].full |= b;
    }
}

std::uint8_t PartitionIndex::bits(const Set& s, std::uint16_t base) noexcept {
  const auto it = std::lower_bound(s.by_base.begin(), s.by_base.end(), base,
                                   [](const Member& m, std::uint16_t b) { return m.base < b; });
  return it != s.by_base.end() && it->base == base ? it->bits : 0;
}

std::uint16_t PartitionIndex::compute_common(std::uint16_t src, std::uint16_t dst) const noexcept {
  const Set& a = sets_[src];
  const Set& b = sets_[dst];
  for (const std::uint16_t k : a.keys) {
    const std::uint8_t other = bits(b, wire::pkey_base(k));
    if (other == 0) continue;
    if (wire::pkey_is_full_member(k) || (other & 2) != 0) return k;
  }
  return 0;
}

bool PartitionIndex::shares_slow(std::uint16_t src, std::uint16_t dst, std::uint16_t pkey) const noexcept {
  if (src >= sets_.size() || dst >= sets_.size() || !wire::pkey_is_valid(pkey)) return false;
  const std::uint16_t base = wire::pkey_base(pkey);
  const std::uint8_t a = bits(sets_[src], base), b = bits(sets_[dst], base);
  return a != 0 && b != 0 && ((a | b) & 2) != 0;
}

std::uint16_t PartitionIndex::first_shared_in(std::uint16_t src, std::uint16_t dst, std::uint16_t lo,
                                              std::uint16_t hi) const noexcept {
  if (src >= sets_.size() || dst >= sets_.size()) return 0;
  const auto& m = sets_[src].by_base;
  for (auto it = std::lower_bound(m.begin(), m.end(), lo, [](const Member& x, std::uint16_t b) { return x.base < b; });
       it != m.end() && it->base <= hi; ++it) {
    const std::uint8_t other = bits(sets_[dst], it->base);
    if (other != 0 && ((other | it->bits) & 2) != 0) return it->base;
  }
  return 0;
}

std::uint8_t PartitionIndex::sl_slow(std::uint16_t pkey) const noexcept {
  const std::uint16_t base = wire::pkey_base(pkey);
  const auto it = std::lower_bound(partitions_.begin(), partitions_.end(), base,
                                   [](const PartitionInfo& p, std::uint16_t k) { return p.pkey < k; });
  return it != partitions_.end() && it->pkey == base ? it->sl : 0;
}

}  // namespace madengine::sa
