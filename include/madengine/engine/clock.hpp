// Time as the engine sees it. Everything that waits (timers, transaction
// timeouts, RMPP retransmission, SMInfo polling) reads a Clock, so tests and
// the simulator can own time and replay exactly.
#pragma once

#include <chrono>
#include <cstdint>

namespace madengine {

using Nanos = std::int64_t;  // nanoseconds since an arbitrary epoch

inline constexpr Nanos kNanosPerMicro = 1'000;
inline constexpr Nanos kNanosPerMilli = 1'000'000;
inline constexpr Nanos kNanosPerSecond = 1'000'000'000;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Nanos now_ns() const noexcept = 0;
};

// Monotonic wall time for real transports.
class SteadyClock final : public Clock {
 public:
  Nanos now_ns() const noexcept override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// Time that moves only when told to: unit tests and the simulator.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Nanos start_ns = 0) noexcept : now_ns_(start_ns) {}
  Nanos now_ns() const noexcept override { return now_ns_; }
  void advance_ns(Nanos delta_ns) noexcept { now_ns_ += delta_ns; }
  void set_ns(Nanos t_ns) noexcept { now_ns_ = t_ns; }

 private:
  Nanos now_ns_;
};

}  // namespace madengine
