// The event trace and its digest (see trace.hpp).
#include "lib/trace.hpp"

#include <fmt/format.h>

namespace madsim {

void Trace::add(Nanos at_ns, std::string text, bool fault) {
  const std::string line = fmt::format("{} {}\n", at_ns, text);
  for (const char c : line) {
    digest_ ^= static_cast<std::uint8_t>(c);
    digest_ *= 0x100000001b3ull;
  }
  entries_.push_back(TraceEntry{at_ns, fault, std::move(text)});
}

std::size_t Trace::last_fault_before(Nanos at_ns) const noexcept {
  std::size_t found = entries_.size();
  for (std::size_t i = 0; i < entries_.size() && entries_[i].at_ns <= at_ns; ++i)
    if (entries_[i].fault) found = i;
  return found;
}

std::string Trace::format(std::size_t index) const {
  if (index >= entries_.size()) return "none (before any fault)";
  const TraceEntry& e = entries_[index];
  return fmt::format("#{} at {:.3f} s: {}", index, static_cast<double>(e.at_ns) / 1e9, e.text);
}

}  // namespace madsim
