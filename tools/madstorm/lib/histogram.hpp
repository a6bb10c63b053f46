// A log-linear latency histogram in the style of HdrHistogram: exact below
// 256 ns, then 128 sub-buckets per power of two (under 0.8 % error). All
// storage is a fixed array, so recording on the fast path never allocates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace madstorm {

class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 7;                    // 128 sub-buckets per octave
  static constexpr std::uint64_t kLinearMax = 2u << kSubBits;  // 256: exact below this
  static constexpr unsigned kTopBit = 40;                    // 2^40 ns is about 18 minutes
  static constexpr std::size_t kBuckets =
      kLinearMax + std::size_t{kTopBit - kSubBits} * (1u << kSubBits);
  static constexpr std::uint64_t kValueMax = (std::uint64_t{1} << (kTopBit + 1)) - 1;

  // Negative values count as 0; values above kValueMax as kValueMax.
  void record(std::int64_t value_ns) noexcept;
  void merge(const LatencyHistogram& other) noexcept;
  void clear() noexcept;
  // Rebuilds a histogram written out bucket by bucket (madstorm merge):
  // false, and nothing changed, if an index is out of range or the summary
  // does not fit the buckets.
  bool restore(std::span<const std::pair<std::size_t, std::uint64_t>> buckets, std::uint64_t sum, std::uint64_t min,
               std::uint64_t max) noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t min() const noexcept { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const noexcept { return max_; }
  std::uint64_t sum() const noexcept { return sum_; }
  double mean() const noexcept { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_); }
  // The value at quantile q (0..1): the upper edge of the bucket that holds
  // it, clamped to [min, max], so p100 is the exact maximum.
  std::uint64_t quantile(double q) const noexcept;

  // Bucket walk for plots: index -> [lower, upper] value range and count.
  static std::size_t index_of(std::uint64_t v) noexcept;
  static std::uint64_t lower_of(std::size_t index) noexcept;
  static std::uint64_t upper_of(std::size_t index) noexcept;
  std::uint64_t at(std::size_t index) const noexcept { return counts_[index]; }

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
  std::uint64_t sum_ = 0;
};

}  // namespace madstorm
