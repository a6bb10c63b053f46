// A minimal parallel loop for start-up and per-epoch batch work (routing
// phases, path tables). Each index is processed by exactly one thread;
// callers write only what their own index owns, so results never depend on
// the thread count. Called on a thread of a pool that offers itself
// (ParallelExecutor, e.g. the SM's compute pool), the loop runs on that
// pool's threads instead of starting its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace madengine {

class ParallelExecutor {
 public:
  virtual ~ParallelExecutor() = default;
  // Runs fn(0..count-1) with up to `threads` threads, the caller's included.
  virtual void run_parallel(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn) = 0;
};

namespace detail {
// The executor of the pool the calling thread belongs to (set by the pool on its threads).
inline thread_local ParallelExecutor* t_parallel_executor = nullptr;
}  // namespace detail

template <typename Fn>
void parallel_for(std::size_t count, unsigned threads, Fn&& fn) {
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(count, 1))));
  if (threads == 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  if (ParallelExecutor* ex = detail::t_parallel_executor) {
    ex->run_parallel(count, threads, std::function<void(std::size_t)>(std::ref(fn)));
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t i = t; i < count; i += threads) fn(i);  // interleaved: balances uneven work
    });
  for (auto& th : pool) th.join();
}

}  // namespace madengine
