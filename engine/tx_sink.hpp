// Where a component (transaction manager, RMPP sender, SA handler) puts a MAD
// to be transmitted. The core implements it with its tx burst queue; tests
// implement it with an in-memory link.
#pragma once

#include "madengine/engine/mad_buf.hpp"

namespace madengine {

class TxSink {
 public:
  virtual ~TxSink() = default;
  // Queues a copy of `buf` for transmission; false if the queue is full
  // (back-pressure: the caller keeps the buffer and retries or fails).
  virtual bool send(const MadBuf& buf) noexcept = 0;
};

}  // namespace madengine
