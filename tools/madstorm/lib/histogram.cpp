// LatencyHistogram: index arithmetic of the log-linear buckets.
#include "lib/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace madstorm {

std::size_t LatencyHistogram::index_of(std::uint64_t v) noexcept {
  if (v < kLinearMax) return static_cast<std::size_t>(v);
  v = std::min(v, kValueMax);
  const unsigned msb = 63u - static_cast<unsigned>(std::countl_zero(v));  // >= kSubBits + 1
  const unsigned shift = msb - kSubBits;                                   // >= 1
  const std::uint64_t sub = (v >> shift) - (std::uint64_t{1} << kSubBits);  // 0..127
  return static_cast<std::size_t>(kLinearMax + std::uint64_t{shift - 1} * (1u << kSubBits) + sub);
}

std::uint64_t LatencyHistogram::lower_of(std::size_t index) noexcept {
  if (index < kLinearMax) return index;
  const std::size_t rel = index - kLinearMax;
  const unsigned shift = static_cast<unsigned>(rel >> kSubBits) + 1;
  const std::uint64_t sub = (rel & ((1u << kSubBits) - 1)) + (std::uint64_t{1} << kSubBits);
  return sub << shift;
}

std::uint64_t LatencyHistogram::upper_of(std::size_t index) noexcept {
  if (index < kLinearMax) return index;
  const unsigned shift = static_cast<unsigned>((index - kLinearMax) >> kSubBits) + 1;
  return lower_of(index) + (std::uint64_t{1} << shift) - 1;
}

void LatencyHistogram::record(std::int64_t value_ns) noexcept {
  const std::uint64_t v = value_ns < 0 ? 0 : std::min(static_cast<std::uint64_t>(value_ns), kValueMax);
  ++counts_[index_of(v)];
  ++count_;
  sum_ += v;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void LatencyHistogram::clear() noexcept { *this = LatencyHistogram{}; }

bool LatencyHistogram::restore(std::span<const std::pair<std::size_t, std::uint64_t>> buckets, std::uint64_t sum,
                               std::uint64_t min, std::uint64_t max) noexcept {
  std::uint64_t n = 0;
  std::size_t lo = kBuckets, hi = 0;
  for (const auto& [i, c] : buckets) {
    if (i >= kBuckets) return false;
    n += c;
    if (c != 0) lo = std::min(lo, i), hi = std::max(hi, i);
  }
  if (n != 0 && (min > max || index_of(min) != lo || index_of(max) != hi)) return false;
  clear();
  for (const auto& [i, c] : buckets) counts_[i] += c;
  count_ = n;
  sum_ = sum;
  if (n != 0) {
    min_ = min;
    max_ = max;
  }
  return true;
}

std::uint64_t LatencyHistogram::quantile(double q) const noexcept {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the sample (1-based) that holds the quantile.
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::clamp(upper_of(i), min(), max_);
  }
  return max_;
}

}  // namespace madstorm
