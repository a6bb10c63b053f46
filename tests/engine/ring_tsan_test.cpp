// Ring correctness for both backends: burst/bulk semantics and capacity on
// one thread, then two-thread stress where every pointer must arrive exactly
// once (and in order for SPSC). Named *_tsan_test so the Tsan build runs it.
#include "engine/ring.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "tsan_suppressions.hpp"

namespace madengine {
namespace {

struct Item {
  std::uint64_t seq;
};

template <typename R>
struct RingTest : ::testing::Test {};

template <template <typename, RingMode> class Backend, RingMode M>
struct Case {
  using Ring = Backend<Item, M>;
  static constexpr RingMode kMode = M;
};

using Cases = ::testing::Types<Case<BoostRing, RingMode::kSpsc>, Case<BoostRing, RingMode::kMpmc>
#if defined(MADENGINE_RING_DPDK)
                               ,
                               Case<DpdkRing, RingMode::kSpsc>, Case<DpdkRing, RingMode::kMpmc>
#endif
                               >;
TYPED_TEST_SUITE(RingTest, Cases);

TYPED_TEST(RingTest, BurstTakesWhatFitsBulkIsAllOrNothing) {
  typename TypeParam::Ring ring(8);
  EXPECT_EQ(ring.capacity(), 8u);
  std::array<Item, 12> items{};
  std::array<Item*, 12> ptrs{};
  for (std::size_t i = 0; i < items.size(); ++i) ptrs[i] = &items[i];

  EXPECT_TRUE(ring.enqueue_bulk(std::span<Item* const>(ptrs.data(), 5)));
  EXPECT_FALSE(ring.enqueue_bulk(std::span<Item* const>(ptrs.data() + 5, 4)));  // only 3 free
  EXPECT_EQ(ring.size(), 5u);
  EXPECT_EQ(ring.enqueue_burst(std::span<Item* const>(ptrs.data() + 5, 7)), 3u);
  EXPECT_EQ(ring.size(), 8u);
  EXPECT_FALSE(ring.enqueue(ptrs[11]));
  EXPECT_EQ(ring.stats().enqueue_full, 3u);  // bulk refused, burst short, single refused

  std::array<Item*, 12> out{};
  EXPECT_FALSE(ring.dequeue_bulk(std::span<Item*>(out.data(), 9)));
  EXPECT_TRUE(ring.dequeue_bulk(std::span<Item*>(out.data(), 2)));
  EXPECT_EQ(ring.dequeue_burst(std::span<Item*>(out.data() + 2, 10)), 6u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(out[i], ptrs[i]) << i;
  EXPECT_EQ(ring.dequeue(), nullptr);
  const RingStats s = ring.stats();
  EXPECT_EQ(s.enqueued, 8u);
  EXPECT_EQ(s.dequeued, 8u);
}

TYPED_TEST(RingTest, ZeroCapacityIsRejected) {
  using R = typename TypeParam::Ring;
  EXPECT_THROW(R ring(0), std::invalid_argument);
}

TYPED_TEST(RingTest, TwoThreadStressDeliversEachPointerOnce) {
  constexpr std::uint64_t kItems = 200'000;
  constexpr std::size_t kBurstMax = 32;
  typename TypeParam::Ring ring(64);
  std::vector<Item> items(kItems);
  for (std::uint64_t i = 0; i < kItems; ++i) items[i].seq = i;

  std::thread producer([&] {
    std::uint64_t next = 0;
    std::size_t burst = 1;
    std::array<Item*, kBurstMax> batch{};
    while (next < kItems) {
      const std::size_t n = std::min<std::uint64_t>(burst, kItems - next);
      for (std::size_t i = 0; i < n; ++i) batch[i] = &items[next + i];
      // Alternate bulk and burst so both paths carry real traffic.
      std::size_t done = 0;
      if (burst % 2 == 0) {
        done = ring.enqueue_bulk(std::span<Item* const>(batch.data(), n)) ? n : 0;
      } else {
        done = ring.enqueue_burst(std::span<Item* const>(batch.data(), n));
      }
      next += done;
      burst = burst % kBurstMax + 1;
      if (done == 0) std::this_thread::yield();
    }
  });

  std::vector<std::uint8_t> seen(kItems, 0);
  std::uint64_t got = 0;
  std::uint64_t expect_next = 0;
  bool in_order = true;
  std::array<Item*, kBurstMax> out{};
  std::size_t want = 1;
  while (got < kItems) {
    const std::size_t n = ring.dequeue_burst(std::span<Item*>(out.data(), want));
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t s = out[i]->seq;
      ASSERT_LT(s, kItems);
      ++seen[s];
      if (s != expect_next) in_order = false;
      expect_next = s + 1;
    }
    got += n;
    want = want % kBurstMax + 1;
    if (n == 0) std::this_thread::yield();
  }
  producer.join();
  for (std::uint64_t i = 0; i < kItems; ++i) ASSERT_EQ(seen[i], 1) << "item " << i;
  EXPECT_TRUE(in_order);  // one producer: FIFO holds for both modes
  EXPECT_EQ(ring.size(), 0u);
  const RingStats s = ring.stats();
  EXPECT_EQ(s.enqueued, kItems);
  EXPECT_EQ(s.dequeued, kItems);
}

// MPMC: two producers and two consumers; every pointer once, each
// producer's items in its own order.
TYPED_TEST(RingTest, MpmcFourThreadsDeliverEachPointerOnce) {
  if constexpr (TypeParam::kMode == RingMode::kMpmc) {
    constexpr std::uint64_t kPerProducer = 50'000;
    typename TypeParam::Ring ring(128);
    std::vector<Item> items(2 * kPerProducer);
    for (std::uint64_t i = 0; i < items.size(); ++i) items[i].seq = i;
    std::atomic<std::uint64_t> consumed{0};
    std::vector<std::vector<std::uint64_t>> logs(2);

    auto produce = [&](std::uint64_t base) {
      std::uint64_t next = 0;
      while (next < kPerProducer) {
        std::array<Item*, 8> b{};
        const std::size_t n = std::min<std::uint64_t>(8, kPerProducer - next);
        for (std::size_t i = 0; i < n; ++i) b[i] = &items[base + next + i];
        const std::size_t done = ring.enqueue_burst(std::span<Item* const>(b.data(), n));
        next += done;
        if (done == 0) std::this_thread::yield();
      }
    };
    auto consume = [&](std::size_t who) {
      std::array<Item*, 16> b{};
      while (consumed.load() < items.size()) {
        const bool bulk = logs[who].size() % 2 == 0;
        std::size_t n = 0;
        if (bulk) {
          n = ring.dequeue_bulk(std::span<Item*>(b.data(), 4)) ? 4 : 0;
        } else {
          n = ring.dequeue_burst(std::span<Item*>(b.data(), b.size()));
        }
        for (std::size_t i = 0; i < n; ++i) logs[who].push_back(b[i]->seq);
        consumed.fetch_add(n);
        if (n == 0) std::this_thread::yield();
      }
    };
    std::thread p0(produce, 0), p1(produce, kPerProducer), c0(consume, 0), c1(consume, 1);
    p0.join();
    p1.join();
    c0.join();
    c1.join();
    std::vector<std::uint8_t> seen(items.size(), 0);
    for (const auto& log : logs) {
      std::uint64_t last0 = 0, last1 = 0;
      bool first0 = true, first1 = true;
      for (const std::uint64_t s : log) {
        ++seen[s];
        // Per producer, a consumer sees increasing sequence numbers.
        if (s < kPerProducer) {
          if (!first0) {
            EXPECT_GT(s, last0);
          }
          last0 = s;
          first0 = false;
        } else {
          if (!first1) {
            EXPECT_GT(s, last1);
          }
          last1 = s;
          first1 = false;
        }
      }
    }
    for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "item " << i;
  } else {
    GTEST_SKIP() << "SPSC ring: single producer and consumer only";
  }
}

TEST(RingBackend, ConfiguredBackendIsNamed) {
#if defined(MADENGINE_RING_DPDK)
  EXPECT_STREQ(kRingBackend, "dpdk");
#else
  EXPECT_STREQ(kRingBackend, "boost");
#endif
}

}  // namespace
}  // namespace madengine
