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
  // The earliest time poll() will find work that no received MAD or ring
  // push brings (a timer), so an idle core can block until then; -1 if none
  // is known. A core blocks at most IdleBackoff::block_max_us whatever this
  // says, so a poller that cannot tell still runs at least that often.
  virtual Nanos next_deadline_ns() const noexcept { return -1; }
};

}  // namespace madengine
