// A thread's end that can be awaited with a deadline: std::thread::join()
// has none, and a stop must stay bounded while a thread is stuck in a call
// that does not return (a device, an embedder's callback). The thread marks
// its exit last thing; the owner waits for the mark until a deadline and
// joins only then, which returns at once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace madengine {

using StopDeadline = std::chrono::steady_clock::time_point;

class ThreadExit {
 public:
  // The thread's last statement (any exit path: use Mark).
  void mark() noexcept {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
  }
  // True once the thread marked its exit; false at the deadline.
  bool wait_until(StopDeadline deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [this] { return done_; });
  }
  void reset() noexcept {
    std::lock_guard lock(mu_);
    done_ = false;
  }

  // Marks on scope exit, so every return path of a thread body marks.
  class Mark {
   public:
    explicit Mark(ThreadExit& e) noexcept : e_(e) {}
    ~Mark() { e_.mark(); }
    Mark(const Mark&) = delete;
    Mark& operator=(const Mark&) = delete;

   private:
    ThreadExit& e_;
  };

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// Joins `t` if it marked `exit` by `deadline`; true when `t` is joined (or
// was never started). Left joinable otherwise: a later call joins it.
inline bool join_until(std::thread& t, ThreadExit& exit, StopDeadline deadline) {
  if (!t.joinable()) return true;
  if (deadline != StopDeadline::max() && !exit.wait_until(deadline)) return false;
  t.join();
  return true;
}

}  // namespace madengine
