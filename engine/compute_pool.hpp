// Threads beside the MAD cores for work too long for a poll loop: routing,
// path-database builds, snapshot preparation (a compute pool), and fsync-ing
// writers (an I/O pool of one thread). A MAD core only receives, dispatches,
// answers and sends; its tasks hand long work here (offload.hpp) and keep
// answering meanwhile. Pool threads run at a lower priority than the cores
// (nice; the normal policy even when the process is real-time), so on a box
// with fewer CPUs than threads the SA still answers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/parallel_for.hpp"

namespace madengine {

struct ComputePoolConfig {
  // 0: no threads; jobs run inline in submit() (deterministic simulation,
  // single-threaded tests).
  unsigned threads = 0;
  int nice = 10;                    // added to the threads' niceness (Linux per-thread)
  std::size_t queue_max = 256;      // jobs waiting at most; submit() refuses beyond
  std::string name = "mad-compute"; // thread names: <name><i>
  // At destruction a job still running after this long is left to finish on
  // its own (its thread detached): jobs own what they touch (offload.hpp).
  std::uint32_t shutdown_wait_ms = 500;
  // At destruction, queued jobs still run (within shutdown_wait_ms): an I/O
  // pool's writes are state. A compute pool drops them (nobody awaits them).
  bool finish_queued = false;
};

class ComputePool {
 public:
  explicit ComputePool(ComputePoolConfig cfg = {});
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  unsigned threads() const noexcept { return static_cast<unsigned>(threads_.size()); }
  bool inline_mode() const noexcept { return threads_.empty(); }

  // Queues `job` for a pool thread (inline mode: runs it now). False when
  // the queue is full or the pool is stopping (the job is not run). Any
  // thread. parallel_for() inside a job runs on this pool's threads.
  bool submit(std::function<void()> job);

  // Jobs queued or running now. Any thread.
  std::size_t pending() const;

  struct State;  // shared with the threads, so one left running at shutdown stays safe

 private:
  ComputePoolConfig cfg_;
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
};

// Drops `held` on a pool thread: what it holds (an epoch of a large fabric)
// may take a core milliseconds to free. Refused (the pool full or stopping)
// or out of memory for the job, it is dropped here.
template <typename T>
void release_on(ComputePool& pool, std::shared_ptr<T> held) noexcept {
  try {
    (void)pool.submit([h = std::move(held)]() mutable { h.reset(); });
  } catch (...) {
  }
}

}  // namespace madengine
