// Bounded lock-free rings of pointers between cores: burst (as many as fit)
// and bulk (all or nothing) enqueue/dequeue, single- or multi-producer/consumer.
// Two backends behind one interface: DPDK rte_ring, initialised with
// rte_ring_init on our own cache-aligned memory (no EAL needed: rte_ring_init
// only fills the header; rte_ring_create is the call that needs EAL memzones),
// and Boost.Lockfree. Ring<T, Mode> is the backend chosen at configure time
// (MADENGINE_RING_DPDK); both stay available by name for the benchmarks.
// A full ring is back-pressure: the caller keeps what did not fit, and the
// ring counts the event (enqueue_full), so nothing is lost silently.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <string>

#include <boost/lockfree/policies.hpp>
#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/spsc_queue.hpp>

#if defined(MADENGINE_RING_DPDK)
// Use rte_ring's C11 memory-model variant (acquire/release __atomic builtins)
// rather than the generic one (volatile plus rte_smp_*mb barriers) Debian's
// x86 build defaults to: same ring layout, same cost on x86 (acquire loads and
// release stores are plain moves), and ThreadSanitizer can see its ordering.
// The choice only affects the inline enqueue/dequeue code we compile here.
#ifndef RTE_USE_C11_MEM_MODEL
#define RTE_USE_C11_MEM_MODEL 1
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#if defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-volatile"
#pragma GCC diagnostic ignored "-Wgnu-zero-variadic-macro-arguments"
#else
#pragma GCC diagnostic ignored "-Wvolatile"
#endif
#include <rte_ring.h>
#pragma GCC diagnostic pop
#endif

namespace madengine {

enum class RingMode : std::uint8_t {
  kSpsc,  // one producer thread, one consumer thread (the per-pair core mesh)
  kMpmc,  // any threads on either side (the pool's shared free ring)
};

inline constexpr std::size_t kCacheLineBytes = 64;

// Counters of one ring. Producer-side and consumer-side counters sit on their
// own cache lines so the two threads never write the same line. Each counter
// has one writer in SPSC mode (relaxed load+store) and many in MPMC mode
// (relaxed fetch_add); readers (stats snapshots) only need eventual values.
struct RingStats {
  std::uint64_t enqueued = 0;
  std::uint64_t dequeued = 0;
  std::uint64_t enqueue_full = 0;  // enqueue calls that could not place everything
};

namespace ring_detail {

template <RingMode Mode>
struct alignas(kCacheLineBytes) SideCounter {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> full{0};  // only used on the producer side

  void add(std::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
    if constexpr (Mode == RingMode::kSpsc) {
      // Single writer: a plain read-modify-write avoids the locked instruction.
      c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    } else {
      c.fetch_add(n, std::memory_order_relaxed);
    }
  }
};

// Shared by both backends: counts the outcome of each call.
template <RingMode Mode>
class Counters {
 public:
  void on_enqueue(std::size_t asked, std::size_t done) noexcept {
    if (done != 0) prod_.add(prod_.count, done);
    if (done != asked) prod_.add(prod_.full, 1);
  }
  void on_dequeue(std::size_t done) noexcept {
    if (done != 0) cons_.add(cons_.count, done);
  }
  RingStats stats() const noexcept {
    return {prod_.count.load(std::memory_order_relaxed), cons_.count.load(std::memory_order_relaxed),
            prod_.full.load(std::memory_order_relaxed)};
  }

 private:
  SideCounter<Mode> prod_;
  SideCounter<Mode> cons_;
};

}  // namespace ring_detail

// Boost.Lockfree backend. spsc_queue has native burst push/pop. The MPMC
// boost::lockfree::queue has neither bursts nor all-or-nothing bulk, so two
// reservation counters make them exact: a producer first claims free slots
// (free_), pushes, then publishes them as used (used_); a consumer claims used
// slots, pops (each pop is certain to succeed: every claimed slot was pushed
// before it was published), then returns them to free_.
template <typename T, RingMode Mode>
class BoostRing {
 public:
  // The MPMC queue indexes its nodes with 16 bits when fixed-sized.
  static constexpr std::size_t kCapacityMax = Mode == RingMode::kSpsc ? (std::size_t{1} << 31) : 65534;

  explicit BoostRing(std::size_t capacity) : capacity_(check(capacity)), q_(capacity) {
    if constexpr (Mode == RingMode::kMpmc) free_.value.store(static_cast<std::int64_t>(capacity));
  }
  BoostRing(const BoostRing&) = delete;
  BoostRing& operator=(const BoostRing&) = delete;

  std::size_t capacity() const noexcept { return capacity_; }

  std::size_t enqueue_burst(std::span<T* const> objs) noexcept {
    const std::size_t done = enqueue(objs, false);
    counters_.on_enqueue(objs.size(), done);
    return done;
  }
  bool enqueue_bulk(std::span<T* const> objs) noexcept {
    const std::size_t done = enqueue(objs, true);
    counters_.on_enqueue(objs.size(), done);
    return done == objs.size();
  }
  std::size_t dequeue_burst(std::span<T*> out) noexcept {
    const std::size_t done = dequeue(out, false);
    counters_.on_dequeue(done);
    return done;
  }
  bool dequeue_bulk(std::span<T*> out) noexcept {
    const std::size_t done = dequeue(out, true);
    counters_.on_dequeue(done);
    return done == out.size();
  }
  bool enqueue(T* obj) noexcept { return enqueue_bulk(std::span<T* const>(&obj, 1)); }
  T* dequeue() noexcept {
    T* obj = nullptr;
    return dequeue_bulk(std::span<T*>(&obj, 1)) ? obj : nullptr;
  }

  // Entries in the ring; exact only while no thread is enqueueing or dequeueing.
  std::size_t size() const noexcept {
    if constexpr (Mode == RingMode::kSpsc) {
      return q_.read_available();
    } else {
      return capacity_ - static_cast<std::size_t>(std::max<std::int64_t>(
                             0, free_.value.load(std::memory_order_acquire)));
    }
  }
  RingStats stats() const noexcept { return counters_.stats(); }

 private:
  struct alignas(kCacheLineBytes) PaddedCount {
    std::atomic<std::int64_t> value{0};
  };
  using Queue = std::conditional_t<Mode == RingMode::kSpsc, boost::lockfree::spsc_queue<T*>,
                                   boost::lockfree::queue<T*, boost::lockfree::fixed_sized<true>>>;

  static std::size_t check(std::size_t capacity) {
    if (capacity == 0 || capacity > kCapacityMax)
      throw std::invalid_argument("BoostRing: capacity " + std::to_string(capacity) + " outside 1.." +
                                  std::to_string(kCapacityMax));
    return capacity;
  }

  // Claims up to `want` (or exactly `want` when bulk) units from `c`.
  static std::size_t claim(std::atomic<std::int64_t>& c, std::size_t want, bool bulk) noexcept {
    std::int64_t have = c.load(std::memory_order_acquire);
    for (;;) {
      if (have <= 0) return 0;
      const auto take = std::min<std::int64_t>(have, static_cast<std::int64_t>(want));
      if (bulk && take != static_cast<std::int64_t>(want)) return 0;
      // acq_rel: pairs with the release in the other side's publish, so the
      // slots (free_) or the pushed nodes (used_) we claim are visible.
      if (c.compare_exchange_weak(have, have - take, std::memory_order_acq_rel, std::memory_order_acquire))
        return static_cast<std::size_t>(take);
    }
  }

  std::size_t enqueue(std::span<T* const> objs, bool bulk) noexcept {
    if (objs.empty()) return 0;
    if constexpr (Mode == RingMode::kSpsc) {
      if (bulk && q_.write_available() < objs.size()) return 0;
      return q_.push(objs.data(), objs.size());
    } else {
      const std::size_t n = claim(free_.value, objs.size(), bulk);
      for (std::size_t i = 0; i < n; ++i) {
        // A claimed slot always has a free node: free_ never exceeds the node count.
        [[maybe_unused]] const bool ok = q_.bounded_push(objs[i]);
        if (!ok) std::abort();
      }
      if (n != 0) used_.value.fetch_add(static_cast<std::int64_t>(n), std::memory_order_release);
      return n;
    }
  }

  std::size_t dequeue(std::span<T*> out, bool bulk) noexcept {
    if (out.empty()) return 0;
    if constexpr (Mode == RingMode::kSpsc) {
      if (bulk && q_.read_available() < out.size()) return 0;
      return q_.pop(out.data(), out.size());
    } else {
      const std::size_t n = claim(used_.value, out.size(), bulk);
      for (std::size_t i = 0; i < n; ++i) {
        // Every claimed entry was pushed before used_ was published and
        // claims never exceed what was published, so the queue holds at
        // least one entry for us; the loop only guards that reasoning.
        while (!q_.pop(out[i])) {
        }
      }
      if (n != 0) free_.value.fetch_add(static_cast<std::int64_t>(n), std::memory_order_release);
      return n;
    }
  }

  const std::size_t capacity_;
  Queue q_;
  PaddedCount free_;  // MPMC only: slots producers may still claim
  PaddedCount used_;  // MPMC only: pushed entries consumers may claim
  ring_detail::Counters<Mode> counters_;
};

#if defined(MADENGINE_RING_DPDK)

// DPDK rte_ring backend on memory we allocate ourselves (cache-line aligned),
// so it needs no EAL: rte_ring_init does not touch hugepages or memzones.
// RING_F_EXACT_SZ makes the capacity exactly what was asked for.
template <typename T, RingMode Mode>
class DpdkRing {
 public:
  static constexpr std::size_t kCapacityMax = RTE_RING_SZ_MASK - 1;

  explicit DpdkRing(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0 || capacity > kCapacityMax)
      throw std::invalid_argument("DpdkRing: capacity " + std::to_string(capacity) + " out of range");
    // rte_ring_create_elem does the same rounding before sizing an exact-size ring.
    const auto count = rte_align32pow2(static_cast<std::uint32_t>(capacity) + 1);
    const ssize_t bytes = rte_ring_get_memsize(count);
    if (bytes < 0) throw std::invalid_argument("DpdkRing: rte_ring_get_memsize failed");
    const std::size_t rounded = (static_cast<std::size_t>(bytes) + kCacheLineBytes - 1) / kCacheLineBytes *
                                kCacheLineBytes;
    mem_.reset(static_cast<rte_ring*>(std::aligned_alloc(kCacheLineBytes, rounded)));
    if (!mem_) throw std::bad_alloc();
    unsigned flags = RING_F_EXACT_SZ;
    if constexpr (Mode == RingMode::kSpsc) {
      flags |= RING_F_SP_ENQ | RING_F_SC_DEQ;
    } else {
      // HTS (head/tail sync) rather than plain MP/MC. In MP/MC mode a
      // producer waits for the previous producer's tail with a relaxed load,
      // which the C++ memory model does not count as ordering the earlier
      // producer's slot writes before a consumer (x86 forgives it; TSan
      // does not). HTS waits with acquire loads. TSan still cannot pair
      // HTS's 8-byte CAS with its 4-byte tail store, but HTS runs through
      // functions of its own, so the tests' suppression can name exactly this
      // path and leave the per-core SPSC rings checked. Our one MPMC ring is
      // the pool's free ring, touched once per cache refill or flush.
      flags |= RING_F_MP_HTS_ENQ | RING_F_MC_HTS_DEQ;
    }
    if (rte_ring_init(mem_.get(), "madengine", static_cast<unsigned>(capacity), flags) != 0)
      throw std::invalid_argument("DpdkRing: rte_ring_init failed");
  }
  DpdkRing(const DpdkRing&) = delete;
  DpdkRing& operator=(const DpdkRing&) = delete;

  std::size_t capacity() const noexcept { return capacity_; }

  // The _elem calls take the table as void*, so T* entries need no cast of
  // the pointer array's type (esize = sizeof(T*)).
  std::size_t enqueue_burst(std::span<T* const> objs) noexcept {
    const unsigned done = rte_ring_enqueue_burst_elem(mem_.get(), objs.data(), sizeof(T*),
                                                      static_cast<unsigned>(objs.size()), nullptr);
    counters_.on_enqueue(objs.size(), done);
    return done;
  }
  bool enqueue_bulk(std::span<T* const> objs) noexcept {
    const unsigned done = rte_ring_enqueue_bulk_elem(mem_.get(), objs.data(), sizeof(T*),
                                                     static_cast<unsigned>(objs.size()), nullptr);
    counters_.on_enqueue(objs.size(), done);
    return done == objs.size();
  }
  std::size_t dequeue_burst(std::span<T*> out) noexcept {
    const unsigned done = rte_ring_dequeue_burst_elem(mem_.get(), out.data(), sizeof(T*),
                                                      static_cast<unsigned>(out.size()), nullptr);
    counters_.on_dequeue(done);
    return done;
  }
  bool dequeue_bulk(std::span<T*> out) noexcept {
    const unsigned done = rte_ring_dequeue_bulk_elem(mem_.get(), out.data(), sizeof(T*),
                                                     static_cast<unsigned>(out.size()), nullptr);
    counters_.on_dequeue(done);
    return done == out.size();
  }
  bool enqueue(T* obj) noexcept { return enqueue_bulk(std::span<T* const>(&obj, 1)); }
  T* dequeue() noexcept {
    T* obj = nullptr;
    return dequeue_bulk(std::span<T*>(&obj, 1)) ? obj : nullptr;
  }

  std::size_t size() const noexcept { return rte_ring_count(mem_.get()); }
  RingStats stats() const noexcept { return counters_.stats(); }

 private:
  struct Free {
    void operator()(rte_ring* r) const noexcept { std::free(r); }
  };
  const std::size_t capacity_;
  std::unique_ptr<rte_ring, Free> mem_;
  ring_detail::Counters<Mode> counters_;
};

inline constexpr const char* kRingBackend = "dpdk";
template <typename T, RingMode Mode>
using Ring = DpdkRing<T, Mode>;

#else

inline constexpr const char* kRingBackend = "boost";
template <typename T, RingMode Mode>
using Ring = BoostRing<T, Mode>;

#endif

}  // namespace madengine
