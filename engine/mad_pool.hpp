// The MAD buffer pool: every MadBuf the engine will ever use, allocated once
// at start-up from explicit bounds, with a per-core cache in front of a shared
// MPMC free ring (the shape of a DPDK mempool cache). Nothing allocates after
// construction; an empty pool is an alloc failure that is counted, not a wait.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "madengine/engine/mad_buf.hpp"
#include "engine/ring.hpp"

namespace madengine {

// Everything that can hold a buffer at once, per core unless said otherwise.
// The pool must cover all of it simultaneously, or a full system could
// deadlock on buffers instead of applying back-pressure.
struct PoolBounds {
  std::uint16_t cores = 1;
  std::uint32_t ring_depth = 256;        // each per-pair ring (rx hand-off and tx hand-off meshes)
  std::uint32_t rx_burst_max = 32;       // rx buffers a core holds ready per transport
  std::uint32_t transports_per_core_max = 2;
  std::uint32_t tx_queue_depth = 256;    // MADs queued for transmission on one core
  std::uint32_t window_smps_max = 64;    // requests in flight held by the transaction manager
  std::uint32_t rmpp_window_max = 64;    // RMPP segments held for retransmission
  std::uint32_t cache_size = 64;         // per-core cache target (flush down to this)
  std::uint32_t slack = 64;              // for handlers holding a buffer across one call
  // Received buffers a core's handlers may keep past on_mad (CoreContext::keep):
  // the SA's admission queue holds its queries this way (its default queue_max).
  std::uint32_t handler_kept_max = 512;
};

// Buffers a per-core cache may hold before it flushes (like a mempool cache: 1.5x).
constexpr std::uint32_t cache_flush_threshold(const PoolBounds& b) noexcept {
  return b.cache_size + b.cache_size / 2;
}

// The capacity that covers every bound at once: two cores x cores meshes of
// rings full, and on every core its rx bursts, tx queues, windows and a full cache.
constexpr std::size_t pool_capacity(const PoolBounds& b) noexcept {
  const std::size_t c = b.cores;
  const std::size_t mesh = 2 * c * (c > 0 ? c - 1 : 0) * b.ring_depth;
  // Per transport a core holds one rx burst of spare buffers and one burst
  // waiting for a full hand-off ring; its tx queue and one pending tx queue
  // per transport (for a transport that does not take everything at once).
  const std::size_t per_core = 2 * std::size_t{b.rx_burst_max} * b.transports_per_core_max +
                               std::size_t{b.tx_queue_depth} * (1 + b.transports_per_core_max) +
                               b.window_smps_max + b.rmpp_window_max + b.handler_kept_max +
                               cache_flush_threshold(b);
  return mesh + c * per_core + b.slack;
}

// nullptr when the bounds are usable, else why not.
constexpr const char* validate(const PoolBounds& b) noexcept {
  if (b.cores == 0) return "cores must be at least 1";
  if (b.ring_depth == 0 || b.rx_burst_max == 0 || b.tx_queue_depth == 0) return "ring, burst and queue bounds must be positive";
  if (b.cache_size == 0) return "cache_size must be positive";
  if (b.transports_per_core_max == 0) return "transports_per_core_max must be positive";
  if (b.rx_burst_max > b.tx_queue_depth) return "tx_queue_depth must hold at least one rx burst of responses";
  if (pool_capacity(b) > Ring<MadBuf, RingMode::kMpmc>::kCapacityMax) return "pool capacity exceeds the free ring's maximum";
  return nullptr;
}

inline constexpr PoolBounds kDefaultPoolBounds{};
static_assert(validate(kDefaultPoolBounds) == nullptr);
static_assert(validate(PoolBounds{.cores = 8}) == nullptr, "8 cores must fit with default bounds");
static_assert(pool_capacity(PoolBounds{.cores = 2}) >= 2 * 256 * 2 + 2 * (32 + 256),
              "capacity covers both meshes and every core's rx and tx queues");

struct PoolStats {
  std::size_t capacity = 0;
  std::size_t in_use = 0;             // allocated and not yet freed
  std::size_t shared_free = 0;        // in the shared ring
  std::vector<std::size_t> cached;    // per core
  std::size_t peak_out = 0;           // peak of buffers outside the shared ring (in use + cached)
  std::uint64_t alloc_failures = 0;
};

class MadPool {
 public:
  // Callers that are not a core thread (start-up, tests, the engine at
  // stop) pass kNoCore and go straight to the shared ring.
  static constexpr std::uint16_t kNoCore = 0xffff;

  // Throws std::invalid_argument when validate(bounds) fails.
  explicit MadPool(const PoolBounds& bounds);
  MadPool(const MadPool&) = delete;
  MadPool& operator=(const MadPool&) = delete;
  ~MadPool();

  // `core` is the calling thread's core: a cache is touched only by its core's
  // thread. A buffer may be freed on any core, not only where it was allocated.
  MadBuf* alloc(std::uint16_t core) noexcept;
  bool alloc_bulk(std::uint16_t core, std::span<MadBuf*> out) noexcept;  // all or nothing
  void free(std::uint16_t core, MadBuf* buf) noexcept;
  void free_bulk(std::uint16_t core, std::span<MadBuf* const> bufs) noexcept;
  // Returns a core's cache to the shared ring (a core does it when it stops).
  void flush_cache(std::uint16_t core) noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  const PoolBounds& bounds() const noexcept { return bounds_; }
  // Exact while no thread allocates or frees; a close estimate otherwise.
  std::size_t in_use() const noexcept;
  PoolStats stats() const;
  bool owns(const MadBuf* buf) const noexcept { return buf >= bufs_.get() && buf < bufs_.get() + capacity_; }

 private:
  struct alignas(kCacheLineBytes) Cache {
    std::atomic<std::uint32_t> len{0};  // written by the owning core only; read by stats
    std::atomic<std::uint64_t> alloc_failures{0};
    MadBuf** objs = nullptr;            // slice of cache_objs_
  };

  bool refill(Cache& c, std::size_t need) noexcept;
  void flush_to(Cache& c, std::uint32_t keep) noexcept;
  void note_out() noexcept;
  void check_owned(const MadBuf* buf) const noexcept;
  void ring_put(std::span<MadBuf* const> bufs) noexcept;

  const PoolBounds bounds_;
  const std::size_t capacity_;
  const std::uint32_t flush_threshold_;
  const std::uint32_t cache_slots_;
  std::unique_ptr<MadBuf[]> bufs_;
  std::unique_ptr<MadBuf*[]> cache_objs_;
  std::unique_ptr<Cache[]> caches_;
  Ring<MadBuf, RingMode::kMpmc> free_ring_;
  alignas(kCacheLineBytes) std::atomic<std::uint64_t> shared_alloc_failures_{0};
  std::atomic<std::size_t> peak_out_{0};
};

}  // namespace madengine
