// Work a core's poll loop runs once per iteration besides MAD bursts: the
// task scheduler, the transaction manager's timers, RMPP retransmission,
// device life-cycle checks. Keeps the core loop ignorant of what it drives.
#pragma once

#include <cstddef>

#include "madengine/engine/clock.hpp"

namespace madengine {

class Poller {
 public:
  virtual ~Poller() = default;
  // Does whatever is due at `now_ns`; returns how much work it did (0 = idle),
  // which lets the core decide whether to back off.
  virtual std::size_t poll(Nanos now_ns) noexcept = 0;
};

}  // namespace madengine
