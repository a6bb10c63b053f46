// Port GUID -> base LID for the GID-addressed queries clients send (rdma_cm,
// IPoIB: SGID|DGID). Buckets of eight 8-byte slots (LID, LMC, a 16-bit hint
// and a tag of the GUID's hash), one cache line each, at most half full:
// 256 KB at 11,664 hosts, so it stays in cache, and a lookup reads one line
// and compares its eight tags at once (no probe chain, no mispredicted
// branch per slot). The GUID itself is checked against the snapshot's LID
// entry, the very line the PathRecord reads next, so a hit costs no line of
// its own. The hint (the port's switch in the path database) lets a query
// fetch its path entry while that check is still on its way.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace madengine::sa {

class GuidIndex {
 public:
  // A port's LIDs: its base LID and how many it has (2^LMC).
  struct Lids {
    std::uint16_t base = 0;  // 0: no such port
    std::uint8_t count = 0;
  };
  static constexpr std::uint16_t kNoHint = 0xffff;
  struct Entry {
    std::uint64_t guid = 0;  // 0 is not a port's
    Lids lids;
    std::uint16_t hint = kNoHint;  // returned by guess(), unchecked
  };
  // What the slot of a GUID says, unchecked: its base LID (0: none) and hint.
  struct Guess {
    std::uint16_t lid = 0;
    std::uint16_t hint = kNoHint;
  };
  void build(const std::vector<Entry>& entries);
  // `guid_of(lid)`: the port GUID of the port with that base LID.
  template <typename GuidOfLid>
  Lids find(std::uint64_t guid, GuidOfLid&& guid_of) const noexcept {
    if (buckets_.empty() || guid == 0) return {};
    const std::uint64_t h = mix(guid);
    const std::uint64_t t = tag(h);
    for (std::size_t b = home(h), n = 0; n < buckets_.size(); b = (b + 1) & mask_, ++n) {
      const Bucket& k = buckets_[b];
      // Slots of another GUID's tag are rejected without reading their LID entry.
      for (unsigned m = matches(k, t); m != 0; m &= m - 1) {
        const std::uint64_t s = k.slots[static_cast<unsigned>(std::countr_zero(m))];
        const auto lid = static_cast<std::uint16_t>(s);
        if (guid_of(lid) == guid) return {lid, static_cast<std::uint8_t>(1u << ((s >> 16) & 7u))};
      }
      if (k.slots[kSlots - 1] == 0) return {};  // a bucket with room never sent a GUID on
    }
    return {};
  }
  // The slot the GUID most likely has, unchecked: what to prefetch for it
  // (LID 0 when its buckets hold none of its tag).
  Guess guess(std::uint64_t guid) const noexcept {
    if (buckets_.empty()) return {};
    const std::uint64_t h = mix(guid);
    for (std::size_t b = home(h), n = 0; n < buckets_.size(); b = (b + 1) & mask_, ++n) {
      const Bucket& k = buckets_[b];
      if (const unsigned m = matches(k, tag(h)); m != 0) {
        const std::uint64_t s = k.slots[static_cast<unsigned>(std::countr_zero(m))];
        return {static_cast<std::uint16_t>(s), static_cast<std::uint16_t>(s >> kHintShift)};
      }
      if (k.slots[kSlots - 1] == 0) return {};
    }
    return {};
  }
  std::uint16_t likely_lid(std::uint64_t guid) const noexcept { return guess(guid).lid; }
  void prefetch(std::uint64_t guid) const noexcept {
    if (!buckets_.empty()) __builtin_prefetch(&buckets_[home(mix(guid))]);
  }

 private:
  static constexpr unsigned kSlots = 8;
  static constexpr unsigned kHintShift = 19;
  // Slots fill from the front and are never removed, so an empty last slot
  // means the bucket never overflowed into the next.
  struct alignas(64) Bucket {
    std::array<std::uint64_t, kSlots> slots{};  // LID | log2(count) << 16 | hint << 19 | tag << 35; 0: empty
  };
  static_assert(sizeof(Bucket) == 64);
  // Bit i set when slot i holds tag `t` (an empty slot never does: a tag's
  // top bit is set). One compare per slot, no branch: vector compares.
  static unsigned matches(const Bucket& k, std::uint64_t t) noexcept {
    unsigned m = 0;
    for (unsigned i = 0; i < kSlots; ++i) m |= static_cast<unsigned>((k.slots[i] & kTagMask) == t) << i;
    return m;
  }
  // GUIDs are often sequential: one multiply by an odd constant (Fibonacci
  // hashing, the high half folded in first) spreads them over the top bits
  // that pick the bucket, and keeps the low bits (the tag) distinct.
  static std::uint64_t mix(std::uint64_t x) noexcept { return (x ^ x >> 29) * 0x9e3779b97f4a7c15ull; }
  std::size_t home(std::uint64_t h) const noexcept { return static_cast<std::size_t>(h >> shift_) & mask_; }
  // 28 low bits of the hash in the slot's top bits, above a bit that marks
  // the slot used: a lookup rejects another GUID's slot without reading that
  // GUID (1 in 2.7 * 10^8 needs the check).
  static constexpr std::uint64_t kTagMask = ~0ull << 35;
  static std::uint64_t tag(std::uint64_t h) noexcept { return (h << 36 >> 1) | 1ull << 63; }
  std::vector<Bucket> buckets_;
  std::size_t mask_ = 0;  // buckets - 1
  unsigned shift_ = 0;
};

}  // namespace madengine::sa
