// Port GUID -> base LID for the GID-addressed queries clients send (rdma_cm,
// IPoIB: SGID|DGID). An open-addressed table of 4-byte slots (LID, LMC and
// a tag of the GUID's hash) at most half full, 128 KB at 11,664 hosts, so
// it stays in cache; the GUID itself is checked against the snapshot's LID
// entry, the very line the PathRecord reads next, so a hit costs no line of its own.
#pragma once

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
  struct Entry {
    std::uint64_t guid = 0;  // 0 is not a port's
    Lids lids;
  };
  void build(const std::vector<Entry>& entries);
  // `guid_of(lid)`: the port GUID of the port with that base LID.
  template <typename GuidOfLid>
  Lids find(std::uint64_t guid, GuidOfLid&& guid_of) const noexcept {
    if (slots_.empty() || guid == 0) return {};
    const std::uint64_t h = mix(guid);
    const std::uint32_t t = tag(h);
    for (std::size_t i = home(h);; i = (i + 1) & mask_) {
      const std::uint32_t s = slots_[i];
      if (s == 0) return {};
      if ((s & kTagMask) != t) continue;  // another GUID: no need to read its LID entry
      const auto lid = static_cast<std::uint16_t>(s);
      if (guid_of(lid) == guid) return {lid, static_cast<std::uint8_t>(1u << ((s >> 16) & 7u))};
    }
  }
  // The LID the GUID most likely has, unchecked: what to prefetch for it
  // (0 when its slots hold none of its tag).
  std::uint16_t likely_lid(std::uint64_t guid) const noexcept {
    if (slots_.empty()) return 0;
    const std::uint64_t h = mix(guid);
    for (std::size_t i = home(h);; i = (i + 1) & mask_) {
      const std::uint32_t s = slots_[i];
      if (s == 0) return 0;
      if ((s & kTagMask) == tag(h)) return static_cast<std::uint16_t>(s);
    }
  }
  void prefetch(std::uint64_t guid) const noexcept {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(mix(guid))]);
  }

 private:
  // GUIDs are often sequential: a full 64-bit mixer (splitmix64's
  // finaliser) spreads them before the top bits pick the slot.
  static std::uint64_t mix(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  std::size_t home(std::uint64_t h) const noexcept { return static_cast<std::size_t>(h >> shift_) & mask_; }
  // 13 low bits of the hash in the slot's top bits: a probe rejects another
  // GUID's slot without reading that GUID (1 in 8,192 needs the check).
  static constexpr std::uint32_t kTagMask = 0xfff80000u;
  static std::uint32_t tag(std::uint64_t h) noexcept { return static_cast<std::uint32_t>(h << 19) & kTagMask; }
  std::vector<std::uint32_t> slots_;  // LID | log2(count) << 16 | tag; 0: empty
  std::size_t mask_ = 0;
  unsigned shift_ = 0;
};

}  // namespace madengine::sa
