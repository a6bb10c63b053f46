// Ring throughput between two threads (one producer, one consumer) for SPSC
// and MPMC rings, burst 1..64, with DPDK rte_ring and Boost.Lockfree side by
// side (the Boost variant is always built, whatever the configured backend).
#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <thread>

#include "engine/ring.hpp"

namespace madengine {
namespace {

struct Item {
  std::uint64_t v = 0;
};

constexpr std::size_t kRingDepth = 1024;
constexpr std::size_t kBurstMax = 64;

template <typename R>
void BM_Ring(benchmark::State& state) {
  const auto burst = static_cast<std::size_t>(state.range(0));
  R ring(kRingDepth);
  std::array<Item, kBurstMax> items{};
  std::array<Item*, kBurstMax> in{};
  for (std::size_t i = 0; i < kBurstMax; ++i) in[i] = &items[i];
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    // relaxed: the flag only ends the loop; no data is published through it.
    while (!stop.load(std::memory_order_relaxed)) {
      if (ring.enqueue_burst(std::span<Item* const>(in.data(), burst)) == 0) std::this_thread::yield();
    }
  });
  std::array<Item*, kBurstMax> out{};
  std::uint64_t got = 0;
  for (auto _ : state) {
    const std::size_t n = ring.dequeue_burst(std::span<Item*>(out.data(), burst));
    got += n;
    benchmark::DoNotOptimize(out[0]);
  }
  stop.store(true, std::memory_order_relaxed);
  producer.join();
  state.SetItemsProcessed(static_cast<std::int64_t>(got));
  state.counters["ns_per_mad"] = benchmark::Counter(static_cast<double>(got),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["full"] = static_cast<double>(ring.stats().enqueue_full);
}

// One thread enqueues a burst and dequeues it again: the cost of the ring
// operations themselves, without cache-line transfers or the scheduler (the
// two-thread numbers on a shared machine mostly measure the latter).
template <typename R>
void BM_RingSameThread(benchmark::State& state) {
  const auto burst = static_cast<std::size_t>(state.range(0));
  R ring(kRingDepth);
  std::array<Item, kBurstMax> items{};
  std::array<Item*, kBurstMax> in{};
  for (std::size_t i = 0; i < kBurstMax; ++i) in[i] = &items[i];
  std::array<Item*, kBurstMax> out{};
  for (auto _ : state) {
    ring.enqueue_burst(std::span<Item* const>(in.data(), burst));
    benchmark::DoNotOptimize(ring.dequeue_burst(std::span<Item*>(out.data(), burst)));
  }
  const auto moved = static_cast<double>(state.iterations()) * static_cast<double>(burst);
  state.SetItemsProcessed(static_cast<std::int64_t>(moved));
  state.counters["ns_per_mad"] = benchmark::Counter(moved, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Bursts(benchmark::internal::Benchmark* b) {
  for (int burst : {1, 4, 8, 16, 32, 64}) b->Arg(burst);
  b->UseRealTime();
}

void SameThreadBursts(benchmark::internal::Benchmark* b) {
  for (int burst : {1, 8, 32, 64}) b->Arg(burst);
}

BENCHMARK_TEMPLATE(BM_RingSameThread, BoostRing<Item, RingMode::kSpsc>)->Name("ring1t/boost/spsc")->Apply(SameThreadBursts);
BENCHMARK_TEMPLATE(BM_RingSameThread, BoostRing<Item, RingMode::kMpmc>)->Name("ring1t/boost/mpmc")->Apply(SameThreadBursts);
#if defined(MADENGINE_RING_DPDK)
BENCHMARK_TEMPLATE(BM_RingSameThread, DpdkRing<Item, RingMode::kSpsc>)->Name("ring1t/dpdk/spsc")->Apply(SameThreadBursts);
BENCHMARK_TEMPLATE(BM_RingSameThread, DpdkRing<Item, RingMode::kMpmc>)->Name("ring1t/dpdk/mpmc")->Apply(SameThreadBursts);
#endif

BENCHMARK_TEMPLATE(BM_Ring, BoostRing<Item, RingMode::kSpsc>)->Name("ring/boost/spsc")->Apply(Bursts);
BENCHMARK_TEMPLATE(BM_Ring, BoostRing<Item, RingMode::kMpmc>)->Name("ring/boost/mpmc")->Apply(Bursts);
#if defined(MADENGINE_RING_DPDK)
BENCHMARK_TEMPLATE(BM_Ring, DpdkRing<Item, RingMode::kSpsc>)->Name("ring/dpdk/spsc")->Apply(Bursts);
BENCHMARK_TEMPLATE(BM_Ring, DpdkRing<Item, RingMode::kMpmc>)->Name("ring/dpdk/mpmc")->Apply(Bursts);
#endif

}  // namespace
}  // namespace madengine
