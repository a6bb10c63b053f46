// Workloads: job start walks every peer after itself, restart covers every
// pair once, shards split the sources, mcast leaves after a barrier, bad
// configurations are refused.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "lib/workload.hpp"

namespace madstorm {
namespace {

std::vector<Host> hosts(std::uint32_t n) {
  std::vector<Host> h;
  for (std::uint32_t i = 0; i < n; ++i) h.push_back(Host{static_cast<std::uint16_t>(i + 1), 0x100 + i, 0x200 + i});
  return h;
}

std::vector<Query> drain(Workload& w, std::size_t cap = 1'000'000) {
  std::vector<Query> out;
  Query q;
  while (out.size() < cap && w.next(q)) out.push_back(q);
  return out;
}

TEST(Workload, JobStartEachRankWalksPeersAfterItself) {
  const auto h = hosts(6);
  Workload w(WorkloadConfig{.pattern = Pattern::kJobStart}, h);
  const auto qs = drain(w);
  ASSERT_EQ(qs.size(), 30u);
  EXPECT_EQ(w.total(), 30u);
  // Round k: every rank asks for rank + k; so rank r's own sequence is r+1, r+2, ...
  for (std::uint32_t r = 0; r < 6; ++r) {
    std::uint32_t k = 1;
    for (const Query& q : qs)
      if (q.src == r) {
        EXPECT_EQ(q.dst, (r + k++) % 6);
      }
  }
  // The first round is every rank at once.
  for (std::uint32_t r = 0; r < 6; ++r) EXPECT_EQ(qs[r].src, r);
}

TEST(Workload, RestartCoversEveryPairOnceAndShardsSplitSources) {
  const auto h = hosts(9);
  std::set<std::pair<std::uint32_t, std::uint32_t>> all;
  for (std::uint32_t s = 0; s < 3; ++s) {
    Workload w(WorkloadConfig{.pattern = Pattern::kRestart, .shard_index = s, .shard_count = 3, .seed = 5}, h);
    for (const Query& q : drain(w)) {
      EXPECT_EQ(q.src % 3, s);
      EXPECT_NE(q.src, q.dst);
      EXPECT_TRUE(all.emplace(q.src, q.dst).second) << "pair twice";
    }
  }
  EXPECT_EQ(all.size(), 9u * 8u);
}

TEST(Workload, RepeatRunsAFinitePatternAgain) {
  const auto h = hosts(4);
  Workload once(WorkloadConfig{.pattern = Pattern::kGetTable}, h);
  EXPECT_EQ(drain(once).size(), 4u);
  Workload again(WorkloadConfig{.pattern = Pattern::kJobStart, .repeat = true}, h);
  EXPECT_EQ(again.total(), 0u);
  const auto qs = drain(again, 36);
  ASSERT_EQ(qs.size(), 36u);
  for (std::size_t i = 12; i < 36; ++i) {
    EXPECT_EQ(qs[i].src, qs[i % 12].src);
    EXPECT_EQ(qs[i].dst, qs[i % 12].dst);
  }
}

TEST(Workload, McastJoinsThenLeavesBehindABarrier) {
  const auto h = hosts(4);
  Workload w(WorkloadConfig{.pattern = Pattern::kMcastJoin}, h);
  const auto qs = drain(w);
  ASSERT_EQ(qs.size(), 8u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(qs[i].kind, QueryKind::kMcJoin);
  for (std::size_t i = 4; i < 8; ++i) EXPECT_EQ(qs[i].kind, QueryKind::kMcLeave);
  EXPECT_TRUE(qs[4].barrier);
}

TEST(Workload, HotSpotAndRandomStayInRange) {
  const auto h = hosts(50);
  Workload hot(WorkloadConfig{.pattern = Pattern::kHotSpot, .hot_dests = 3}, h);
  Workload rnd(WorkloadConfig{.pattern = Pattern::kRandomPairs, .seed = 3}, h);
  Query q;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(hot.next(q));
    EXPECT_LT(q.dst, 3u);
    EXPECT_NE(q.src, q.dst);
    ASSERT_TRUE(rnd.next(q));
    EXPECT_LT(q.src, 50u);
    EXPECT_LT(q.dst, 50u);
    EXPECT_NE(q.src, q.dst);
  }
  EXPECT_EQ(hot.total(), 0u);
}

TEST(Workload, MixFollowsWeights) {
  std::string err;
  const auto mix = parse_mix("pr:6,nr:3,table:1", err);
  ASSERT_TRUE(mix) << err;
  Workload w(WorkloadConfig{.pattern = Pattern::kMix, .mix = *mix}, hosts(20));
  std::array<int, kQueryKindCount> n{};
  Query q;
  for (int i = 0; i < 10000; ++i) {
    ASSERT_TRUE(w.next(q));
    ++n[static_cast<std::size_t>(q.kind)];
  }
  EXPECT_NEAR(n[0], 6000, 300);
  EXPECT_NEAR(n[2], 3000, 300);
  EXPECT_NEAR(n[1], 1000, 200);
  EXPECT_FALSE(parse_mix("pr:x", err));
  EXPECT_FALSE(parse_mix("foo:1", err));
  EXPECT_FALSE(parse_mix("pr:0", err));
}

TEST(Workload, RefusesBadConfigurations) {
  EXPECT_THROW(Workload(WorkloadConfig{}, hosts(1)), std::invalid_argument);
  EXPECT_THROW(Workload(WorkloadConfig{.shard_index = 2, .shard_count = 2}, hosts(4)), std::invalid_argument);
  EXPECT_THROW(Workload(WorkloadConfig{.job_size = 9}, hosts(4)), std::invalid_argument);
  EXPECT_THROW(Workload(WorkloadConfig{.pattern = Pattern::kHotSpot, .hot_dests = 4}, hosts(4)), std::invalid_argument);
  EXPECT_EQ(pattern_from_string("job-start"), Pattern::kJobStart);
  EXPECT_FALSE(pattern_from_string("nope"));
}

}  // namespace
}  // namespace madstorm
