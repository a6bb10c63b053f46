// MadPool accounting: capacity from the bounds, single and bulk alloc/free,
// the per-core cache refill and flush, exhaustion counted, and no loss.
#include "engine/mad_pool.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace madengine {
namespace {

PoolBounds small_bounds(std::uint16_t cores) {
  PoolBounds b;
  b.cores = cores;
  b.ring_depth = 4;
  b.rx_burst_max = 4;
  b.transports_per_core_max = 1;
  b.tx_queue_depth = 8;
  b.window_smps_max = 2;
  b.rmpp_window_max = 2;
  b.cache_size = 8;
  b.slack = 0;
  b.handler_kept_max = 0;
  return b;
}

TEST(PoolBounds, CapacityCoversEveryBound) {
  const PoolBounds b = small_bounds(2);
  // meshes 2*2*1*4 = 16; per core 2*4*1 + 8*2 + 2 + 2 + 12 = 40
  EXPECT_EQ(pool_capacity(b), 16u + 2 * 40u);
  EXPECT_EQ(validate(b), nullptr);
  PoolBounds bad = b;
  bad.cores = 0;
  EXPECT_NE(validate(bad), nullptr);
  EXPECT_THROW(MadPool{bad}, std::invalid_argument);
  bad = b;
  bad.rx_burst_max = b.tx_queue_depth + 1;  // a burst of responses must fit the tx queue
  EXPECT_NE(validate(bad), nullptr);
}

TEST(MadPool, SingleAllocFreeAccounting) {
  MadPool pool(small_bounds(1));
  const std::size_t cap = pool.capacity();
  EXPECT_EQ(pool.in_use(), 0u);
  MadBuf* a = pool.alloc(0);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(pool.owns(a));
  EXPECT_EQ(pool.in_use(), 1u);
  PoolStats s = pool.stats();
  EXPECT_EQ(s.capacity, cap);
  EXPECT_EQ(s.cached[0], 8u);  // refilled to cache_size + 1, handed one out
  EXPECT_EQ(s.shared_free, cap - 9);
  pool.free(0, a);
  EXPECT_EQ(pool.in_use(), 0u);
  pool.flush_cache(0);
  EXPECT_EQ(pool.stats().shared_free, cap);
}

TEST(MadPool, CacheFlushesAboveThreshold) {
  MadPool pool(small_bounds(1));
  // Take 20 from the no-core path (straight from the ring), give them back on core 0.
  std::vector<MadBuf*> bufs(20);
  ASSERT_TRUE(pool.alloc_bulk(MadPool::kNoCore, bufs));
  for (std::size_t i = 0; i < 11; ++i) pool.free(0, bufs[i]);
  EXPECT_EQ(pool.stats().cached[0], 11u);  // below the 1.5 x 8 = 12 threshold
  pool.free(0, bufs[11]);
  EXPECT_EQ(pool.stats().cached[0], 8u);   // reached 12: flushed down to cache_size
  pool.free_bulk(0, std::span<MadBuf* const>(bufs.data() + 12, 8));
  EXPECT_EQ(pool.stats().cached[0], 8u);   // 16 >= 12: flushed again
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(MadPool, BulkAllocIsAllOrNothingAndExhaustionIsCounted) {
  MadPool pool(small_bounds(2));
  const std::size_t cap = pool.capacity();
  std::vector<MadBuf*> all;
  std::set<MadBuf*> distinct;
  for (;;) {
    std::array<MadBuf*, 4> b{};
    if (!pool.alloc_bulk(1, b)) break;
    for (MadBuf* p : b) {
      all.push_back(p);
      distinct.insert(p);
    }
  }
  // Bulk of 4 fails only when fewer than 4 are left.
  EXPECT_GT(all.size() + 4, cap);
  EXPECT_EQ(distinct.size(), all.size());
  // The failed bulk left what it found in core 1's cache: singles take those.
  while (MadBuf* p = pool.alloc(1)) {
    all.push_back(p);
    distinct.insert(p);
  }
  EXPECT_EQ(all.size(), cap);
  EXPECT_EQ(distinct.size(), cap);
  EXPECT_EQ(pool.in_use(), cap);
  EXPECT_EQ(pool.alloc(0), nullptr);
  EXPECT_EQ(pool.alloc(MadPool::kNoCore), nullptr);
  const PoolStats s = pool.stats();
  EXPECT_EQ(s.alloc_failures, 4u);  // bulk and single on core 1, single on core 0, no core
  EXPECT_EQ(s.peak_out, cap);
  // Free everything on mixed cores and paths; nothing is lost.
  std::size_t i = 0;
  for (; i + 16 <= all.size(); i += 16) pool.free_bulk(static_cast<std::uint16_t>(i / 16 % 2), std::span<MadBuf* const>(&all[i], 16));
  for (; i < all.size(); ++i) pool.free(MadPool::kNoCore, all[i]);
  EXPECT_EQ(pool.in_use(), 0u);
  pool.flush_cache(0);
  pool.flush_cache(1);
  EXPECT_EQ(pool.stats().shared_free, cap);
}

TEST(MadPool, LargeBulkBypassesTheCache) {
  MadPool pool(small_bounds(1));
  std::vector<MadBuf*> b(pool.bounds().cache_size + 1);
  ASSERT_TRUE(pool.alloc_bulk(0, b));
  EXPECT_EQ(pool.stats().cached[0], 0u);
  pool.free_bulk(0, b);
  EXPECT_EQ(pool.stats().cached[0], 0u);
  EXPECT_EQ(pool.in_use(), 0u);
}

TEST(MadPoolDeathTest, ForeignPointerAborts) {
  MadPool pool(small_bounds(1));
  MadBuf outside;
  EXPECT_DEATH(pool.free(0, &outside), "does not own");
}

}  // namespace
}  // namespace madengine
