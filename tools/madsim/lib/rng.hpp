// The seeded generator every madsim draw comes from: mt19937_64 (its output
// is fixed by the standard) with bounded draws that do not depend on the
// library's distributions, so a seed means the same run everywhere.
#pragma once

#include <cstdint>
#include <random>

namespace madsim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  std::uint64_t next() { return g_(); }
  // Uniform in [lo, hi] (inclusive).
  std::uint64_t range(std::uint64_t lo, std::uint64_t hi) { return hi <= lo ? lo : lo + g_() % (hi - lo + 1); }
  unsigned pick(unsigned n) { return n == 0 ? 0 : static_cast<unsigned>(g_() % n); }
  double unit() { return static_cast<double>(g_() >> 11) * (1.0 / 9007199254740992.0); }
  bool chance(double p) { return unit() < p; }

 private:
  std::mt19937_64 g_;
};

}  // namespace madsim
