// verbs-ud transport: the address-handle cache (AhKey -> ibv_ah*, bounded,
// least recently used evicted). Pure bookkeeping, no verbs calls, so it is
// unit-tested without a device; the transport creates and destroys the AHs.
#include <bit>
#include <cassert>
#include <cstring>

#include "engine/verbs/verbs_transport.hpp"

namespace madengine::verbs {

AhKey ah_key_of(const MadAddr& a) noexcept {
  AhKey k;
  k.dlid = a.lid;
  k.sl = a.sl;
  k.path_bits = a.path_bits;
  k.has_grh = a.has_grh;
  if (a.has_grh) {
    k.gid_index = a.gid_index;
    k.hop_limit = a.hop_limit;
    k.traffic_class = a.traffic_class;
    k.flow_label = a.flow_label & 0xfffffu;  // 20 bits on the wire
    k.dgid = a.gid;
  }
  return k;
}

std::uint64_t hash_ah_key(const AhKey& k) noexcept {
  // FNV-1a over the fields (not the struct's bytes: padding is indeterminate).
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  mix(k.dlid, 2);
  mix(k.sl, 1);
  mix(k.path_bits, 1);
  mix(k.has_grh ? 1 : 0, 1);
  if (k.has_grh) {
    mix(k.gid_index, 1);
    mix(k.hop_limit, 1);
    mix(k.traffic_class, 1);
    mix(k.flow_label, 4);
    mix(k.dgid.prefix.get(), 8);
    mix(k.dgid.guid.get(), 8);
  }
  return h;
}

AhCache::AhCache(std::size_t capacity) {
  assert(capacity > 0 && capacity <= kVerbsAhCacheMax);
  entries_.resize(capacity);
  // At most half full: short probe sequences.
  index_.assign(std::bit_ceil(capacity * 2), kNil);
  mask_ = index_.size() - 1;
  free_.reserve(capacity);
  for (std::size_t i = capacity; i-- > 0;) free_.push_back(static_cast<std::uint32_t>(i));
}

std::uint32_t AhCache::probe(const AhKey& k, std::uint64_t h) const noexcept {
  for (std::size_t s = h & mask_;; s = (s + 1) & mask_) {
    const std::uint32_t e = index_[s];
    if (e == kNil) return kNil;
    if (entries_[e].hash == h && entries_[e].key == k) return static_cast<std::uint32_t>(s);
  }
}

void AhCache::unlink(std::uint32_t e) noexcept {
  Entry& x = entries_[e];
  if (x.prev != kNil) entries_[x.prev].next = x.next; else lru_head_ = x.next;
  if (x.next != kNil) entries_[x.next].prev = x.prev; else lru_tail_ = x.prev;
  x.prev = x.next = kNil;
}

void AhCache::push_front(std::uint32_t e) noexcept {
  Entry& x = entries_[e];
  x.prev = kNil;
  x.next = lru_head_;
  if (lru_head_ != kNil) entries_[lru_head_].prev = e;
  lru_head_ = e;
  if (lru_tail_ == kNil) lru_tail_ = e;
}

ibv_ah* AhCache::find(const AhKey& k) noexcept {
  const std::uint32_t s = probe(k, hash_ah_key(k));
  if (s == kNil) return nullptr;
  const std::uint32_t e = index_[s];
  if (lru_head_ != e) {
    unlink(e);
    push_front(e);
  }
  return entries_[e].ah;
}

ibv_ah* AhCache::remove(std::uint32_t e) noexcept {
  Entry& x = entries_[e];
  std::size_t hole = probe(x.key, x.hash);
  assert(hole != kNil);
  // Backward-shift deletion keeps linear probing correct without tombstones:
  // move later members of the run into the hole unless that would put them
  // before their home slot.
  index_[hole] = kNil;
  for (std::size_t j = (hole + 1) & mask_; index_[j] != kNil; j = (j + 1) & mask_) {
    const std::size_t home = entries_[index_[j]].hash & mask_;
    const bool movable = (j > hole) ? (home <= hole || home > j) : (home <= hole && home > j);
    if (movable) {
      index_[hole] = index_[j];
      index_[j] = kNil;
      hole = j;
    }
  }
  unlink(e);
  ibv_ah* ah = x.ah;
  x.ah = nullptr;
  free_.push_back(e);  // never grows past capacity: reserved in the constructor
  --size_;
  return ah;
}

ibv_ah* AhCache::insert(const AhKey& k, ibv_ah* ah) noexcept {
  const std::uint64_t h = hash_ah_key(k);
  assert(probe(k, h) == kNil);
  ibv_ah* evicted = nullptr;
  if (free_.empty()) evicted = remove(lru_tail_);
  const std::uint32_t e = free_.back();
  free_.pop_back();
  Entry& x = entries_[e];
  x.key = k;
  x.ah = ah;
  x.hash = h;
  std::size_t s = h & mask_;
  while (index_[s] != kNil) s = (s + 1) & mask_;
  index_[s] = e;
  push_front(e);
  ++size_;
  return evicted;
}

}  // namespace madengine::verbs
