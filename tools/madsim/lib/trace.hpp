// The event trace of a run: every fault applied, SM state change,
// publication, client outcome and check, in order, with its simulated time.
// Its digest (FNV-1a over the lines) is what "the same seed replays
// exactly" compares; a violation names the trace entry after which it broke.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "madengine/engine/clock.hpp"

namespace madsim {

using madengine::Nanos;

struct TraceEntry {
  Nanos at_ns = 0;
  bool fault = false;  // a fault applied (what a violation is blamed on)
  std::string text;
};

class Trace {
 public:
  void add(Nanos at_ns, std::string text, bool fault = false);
  std::uint64_t digest() const noexcept { return digest_; }
  const std::vector<TraceEntry>& entries() const noexcept { return entries_; }
  // The index of the last fault at or before `at_ns` (entries().size() when none).
  std::size_t last_fault_before(Nanos at_ns) const noexcept;
  std::string format(std::size_t index) const;

 private:
  std::vector<TraceEntry> entries_;
  std::uint64_t digest_ = 0xcbf29ce484222325ull;
};

}  // namespace madsim
