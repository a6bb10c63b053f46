// Waits, in 1 ms steps, for a state the engine threads will reach. The
// 30 s bound only keeps a broken build from hanging CI; it is not a timing
// assertion.
#pragma once

#include <chrono>
#include <thread>

namespace madengine::testing {

template <typename F>
bool wait_for(F&& done) {
  for (int i = 0; i < 30'000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

}  // namespace madengine::testing
