// A started sim node's driver: a thread that pumps the engine and the
// simulated fabric, paced to `speed` simulated seconds per wall second (0:
// as fast as it goes). The fabric is single-threaded by design, so once it
// runs only this thread touches it.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>

#include "engine/thread_exit.hpp"

namespace madengine::sim {
class Fabric;
}

namespace madengine::node {

class SimDriver {
 public:
  // `pump` runs one turn of the engine (advancing the fabric when idle) and
  // returns the work done.
  SimDriver(const sim::Fabric& fabric, double speed, std::function<std::size_t()> pump);
  ~SimDriver();  // stops and joins
  // Asks the thread to end after its current turn; joins it if it ended by
  // `deadline` (false: still inside a turn; the destructor waits for it).
  bool stop_until(StopDeadline deadline);
  SimDriver(const SimDriver&) = delete;
  SimDriver& operator=(const SimDriver&) = delete;

 private:
  void run() noexcept;

  const sim::Fabric& fabric_;
  double speed_;
  std::function<std::size_t()> pump_;
  std::atomic<bool> stop_{false};
  ThreadExit exit_;
  std::thread thread_;
};

}  // namespace madengine::node
