// A minimal parallel loop for start-up and per-epoch batch work (routing
// phases, path tables). Each index is processed by exactly one thread;
// callers write only what their own index owns, so results never depend on
// the thread count.
#pragma once

#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace madengine {

template <typename Fn>
void parallel_for(std::size_t count, unsigned threads, Fn&& fn) {
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(count, 1))));
  if (threads == 1) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
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
