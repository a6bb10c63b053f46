// A transport whose wait fd cannot share a ppoll() set (only the transport's
// own poll() knows the fd) takes an idle core's whole wait itself: Core::block
// asks it through this interface, found once when the transport joins a core.
#pragma once

#include "madengine/engine/clock.hpp"

namespace madengine {

class SoleWait {
 public:
  // True while wait_fd() is such an fd (it may change with a reopen).
  virtual bool waits_alone() const noexcept = 0;
  // Waits up to `timeout_ns` for a MAD: > 0 when one waits, 0 on timeout,
  // < 0 on an error (poll()'s result).
  virtual int wait_alone(Nanos timeout_ns) noexcept = 0;

 protected:
  ~SoleWait() = default;
};

}  // namespace madengine
