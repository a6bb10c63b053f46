// MadPool: one allocation of every buffer at construction, per-core caches
// refilled from and flushed to a shared MPMC ring in bursts, so a core touches
// shared memory once per cache_size buffers rather than once per buffer.
#include "engine/mad_pool.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace madengine {

MadPool::MadPool(const PoolBounds& bounds)
    : bounds_(bounds),
      capacity_(pool_capacity(bounds)),
      flush_threshold_(cache_flush_threshold(bounds)),
      // A cache below the threshold plus one bulk of at most cache_size never overflows.
      cache_slots_(cache_flush_threshold(bounds) + bounds.cache_size),
      free_ring_(std::max<std::size_t>(pool_capacity(bounds), 1)) {
  if (const char* why = validate(bounds)) throw std::invalid_argument(std::string("PoolBounds: ") + why);
  bufs_ = std::make_unique<MadBuf[]>(capacity_);
  cache_objs_ = std::make_unique<MadBuf*[]>(std::size_t{bounds.cores} * cache_slots_);
  caches_ = std::make_unique<Cache[]>(bounds.cores);
  for (std::uint16_t c = 0; c < bounds.cores; ++c) caches_[c].objs = &cache_objs_[std::size_t{c} * cache_slots_];
  for (std::size_t i = 0; i < capacity_; ++i) {
    MadBuf* b = &bufs_[i];
    if (!free_ring_.enqueue(b)) throw std::logic_error("MadPool: free ring smaller than the pool");
  }
}

MadPool::~MadPool() = default;

void MadPool::check_owned(const MadBuf* buf) const noexcept {
  // A foreign pointer would corrupt the free ring: an invariant that guards
  // memory, so it stays on in release builds.
  if (!owns(buf)) {
    std::fprintf(stderr, "madengine: MadPool::free of a buffer %p the pool does not own\n",
                 static_cast<const void*>(buf));
    std::abort();
  }
}

void MadPool::ring_put(std::span<MadBuf* const> bufs) noexcept {
  // The ring holds the whole pool, so it can only be full after a double free.
  if (!free_ring_.enqueue_bulk(bufs)) {
    std::fprintf(stderr, "madengine: MadPool free ring overflow (double free?)\n");
    std::abort();
  }
}

void MadPool::note_out() noexcept {
  const std::size_t out = capacity_ - free_ring_.size();
  std::size_t peak = peak_out_.load(std::memory_order_relaxed);
  while (out > peak && !peak_out_.compare_exchange_weak(peak, out, std::memory_order_relaxed)) {
  }
}

bool MadPool::refill(Cache& c, std::size_t need) noexcept {
  // Fill up to cache_size + need so the next few allocs stay local.
  const std::uint32_t len = c.len.load(std::memory_order_relaxed);
  const std::size_t want = std::min<std::size_t>(bounds_.cache_size + need - len, cache_slots_ - len);
  const std::size_t got = free_ring_.dequeue_burst(std::span<MadBuf*>(c.objs + len, want));
  c.len.store(static_cast<std::uint32_t>(len + got), std::memory_order_relaxed);
  if (got != 0) note_out();
  return len + got >= need;
}

void MadPool::flush_to(Cache& c, std::uint32_t keep) noexcept {
  const std::uint32_t len = c.len.load(std::memory_order_relaxed);
  if (len <= keep) return;
  ring_put(std::span<MadBuf* const>(c.objs + keep, len - keep));
  c.len.store(keep, std::memory_order_relaxed);
}

MadBuf* MadPool::alloc(std::uint16_t core) noexcept {
  if (core >= bounds_.cores) {
    MadBuf* b = free_ring_.dequeue();
    if (b == nullptr) {
      shared_alloc_failures_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    note_out();
    return b;
  }
  Cache& c = caches_[core];
  if (c.len.load(std::memory_order_relaxed) == 0 && !refill(c, 1)) {
    c.alloc_failures.store(c.alloc_failures.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return nullptr;
  }
  const std::uint32_t len = c.len.load(std::memory_order_relaxed) - 1;
  c.len.store(len, std::memory_order_relaxed);
  return c.objs[len];
}

bool MadPool::alloc_bulk(std::uint16_t core, std::span<MadBuf*> out) noexcept {
  if (out.empty()) return true;
  if (core >= bounds_.cores || out.size() > bounds_.cache_size) {
    // Too big for the cache (or no cache): straight from the shared ring.
    if (free_ring_.dequeue_bulk(out)) {
      note_out();
      return true;
    }
    if (core >= bounds_.cores) {
      shared_alloc_failures_.fetch_add(1, std::memory_order_relaxed);
    } else {
      Cache& c = caches_[core];
      c.alloc_failures.store(c.alloc_failures.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    return false;
  }
  Cache& c = caches_[core];
  if (c.len.load(std::memory_order_relaxed) < out.size() && !refill(c, out.size())) {
    c.alloc_failures.store(c.alloc_failures.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }
  std::uint32_t len = c.len.load(std::memory_order_relaxed);
  for (auto& b : out) b = c.objs[--len];
  c.len.store(len, std::memory_order_relaxed);
  return true;
}

void MadPool::free(std::uint16_t core, MadBuf* buf) noexcept {
  check_owned(buf);
  if (core >= bounds_.cores) {
    ring_put(std::span<MadBuf* const>(&buf, 1));
    return;
  }
  Cache& c = caches_[core];
  std::uint32_t len = c.len.load(std::memory_order_relaxed);
  c.objs[len++] = buf;
  c.len.store(len, std::memory_order_relaxed);
  if (len >= flush_threshold_) flush_to(c, bounds_.cache_size);
}

void MadPool::free_bulk(std::uint16_t core, std::span<MadBuf* const> bufs) noexcept {
  for (MadBuf* b : bufs) check_owned(b);
  if (bufs.empty()) return;
  if (core >= bounds_.cores || bufs.size() > bounds_.cache_size) {
    ring_put(bufs);
    return;
  }
  Cache& c = caches_[core];
  std::uint32_t len = c.len.load(std::memory_order_relaxed);
  for (MadBuf* b : bufs) c.objs[len++] = b;  // len < threshold + cache_size = cache_slots_
  c.len.store(len, std::memory_order_relaxed);
  if (len >= flush_threshold_) flush_to(c, bounds_.cache_size);
}

void MadPool::flush_cache(std::uint16_t core) noexcept {
  if (core < bounds_.cores) flush_to(caches_[core], 0);
}

std::size_t MadPool::in_use() const noexcept {
  std::size_t cached = 0;
  for (std::uint16_t c = 0; c < bounds_.cores; ++c) cached += caches_[c].len.load(std::memory_order_relaxed);
  const std::size_t free = free_ring_.size() + cached;
  return free >= capacity_ ? 0 : capacity_ - free;
}

PoolStats MadPool::stats() const {
  PoolStats s;
  s.capacity = capacity_;
  s.shared_free = free_ring_.size();
  s.cached.resize(bounds_.cores);
  std::size_t cached = 0;
  s.alloc_failures = shared_alloc_failures_.load(std::memory_order_relaxed);
  for (std::uint16_t c = 0; c < bounds_.cores; ++c) {
    s.cached[c] = caches_[c].len.load(std::memory_order_relaxed);
    cached += s.cached[c];
    s.alloc_failures += caches_[c].alloc_failures.load(std::memory_order_relaxed);
  }
  s.in_use = s.shared_free + cached >= capacity_ ? 0 : capacity_ - s.shared_free - cached;
  s.peak_out = peak_out_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace madengine
