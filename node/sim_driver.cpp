// The sim node's driver thread (see sim_driver.hpp).
#include "node/sim_driver.hpp"

#include <chrono>

#include "sim/fabric.hpp"

namespace madengine::node {

SimDriver::SimDriver(const sim::Fabric& fabric, double speed, std::function<std::size_t()> pump)
    : fabric_(fabric), speed_(speed), pump_(std::move(pump)) {
  thread_ = std::thread([this] {
    ThreadExit::Mark mark(exit_);
    run();
  });
}

SimDriver::~SimDriver() { stop_until(StopDeadline::max()); }

bool SimDriver::stop_until(StopDeadline deadline) {
  stop_.store(true);
  return join_until(thread_, exit_, deadline);
}

void SimDriver::run() noexcept {
  const auto wall0 = std::chrono::steady_clock::now();
  const Nanos sim0 = fabric_.now_ns();
  while (!stop_.load(std::memory_order_relaxed)) {
    // Pace simulated time to wall time unless asked to run flat out.
    const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall0).count();
    if (speed_ > 0 && fabric_.now_ns() - sim0 > static_cast<Nanos>(static_cast<double>(wall_ns) * speed_)) {
      if (pump_() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    pump_();
  }
}

}  // namespace madengine::node
