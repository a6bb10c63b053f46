// LatencyHistogram: bucket edges, quantiles against exact sorted samples,
// merge, clamping.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "lib/histogram.hpp"

namespace madstorm {
namespace {

TEST(Histogram, BucketEdgesAreContiguousAndContainTheirValues) {
  for (std::size_t i = 0; i + 1 < LatencyHistogram::kBuckets; ++i) {
    ASSERT_EQ(LatencyHistogram::upper_of(i) + 1, LatencyHistogram::lower_of(i + 1)) << i;
    ASSERT_EQ(LatencyHistogram::index_of(LatencyHistogram::lower_of(i)), i);
    ASSERT_EQ(LatencyHistogram::index_of(LatencyHistogram::upper_of(i)), i);
  }
  EXPECT_EQ(LatencyHistogram::index_of(LatencyHistogram::kValueMax), LatencyHistogram::kBuckets - 1);
  EXPECT_EQ(LatencyHistogram::upper_of(LatencyHistogram::kBuckets - 1), LatencyHistogram::kValueMax);
}

TEST(Histogram, QuantilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(11.0, 1.5);  // around 60 us, long tail
  std::vector<std::uint64_t> v;
  LatencyHistogram h;
  for (int i = 0; i < 100'000; ++i) {
    const auto x = static_cast<std::uint64_t>(d(rng));
    v.push_back(x);
    h.record(static_cast<std::int64_t>(x));
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.min(), v.front());
  EXPECT_EQ(h.max(), v.back());
  EXPECT_EQ(h.quantile(1.0), v.back());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const auto exact = v[static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1];
    const auto got = h.quantile(q);
    EXPECT_GE(got, exact) << q;  // the upper edge of the bucket holding it
    EXPECT_LE(static_cast<double>(got), static_cast<double>(exact) * 1.01 + 1) << q;
  }
}

TEST(Histogram, SmallValuesAreExactAndOutOfRangeIsClamped) {
  LatencyHistogram h;
  h.record(-5);
  h.record(3);
  h.record(255);
  h.record(static_cast<std::int64_t>(LatencyHistogram::kValueMax) * 4);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.quantile(0.5), 3u);
  EXPECT_EQ(h.quantile(0.75), 255u);
  EXPECT_EQ(h.max(), LatencyHistogram::kValueMax);
  LatencyHistogram g;
  g.record(1000);
  g.merge(h);
  EXPECT_EQ(g.count(), 5u);
  EXPECT_EQ(g.min(), 0u);
  g.clear();
  EXPECT_EQ(g.count(), 0u);
  EXPECT_EQ(g.quantile(0.5), 0u);
}

}  // namespace
}  // namespace madstorm
