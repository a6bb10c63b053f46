// Per-MAD cost of a core's data path: rx burst from the loopback transport,
// classify, hand-off to the owner core when it is another one, the handler,
// and the tx burst. The loopback replays 64 SA PathRecord queries forever and
// discards what is sent, so the cores are the only work. Target: < 100 ns
// per MAD per core at burst 32.
#include <benchmark/benchmark.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "engine/loopback_transport.hpp"
#include "engine/engine.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine {
namespace {

constexpr std::size_t kReplayMads = 64;
constexpr std::uint64_t kMadsPerIteration = 32 * 1024;

struct NullHandler final : MadHandler {
  void on_mad(MadBuf&, CoreContext&) noexcept override {}
};

// Turns the query into its response in place and queues it: the tx half.
struct EchoHandler final : MadHandler {
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    buf.hdr().method = wire::method::kGetResp;
    ctx.tx().send(buf);
  }
};

std::vector<MadBuf> replay_set(std::uint8_t port_num) {
  std::vector<MadBuf> mads(kReplayMads);
  for (std::size_t i = 0; i < mads.size(); ++i) {
    MadBuf& b = mads[i];
    auto& h = b.hdr();
    h.base_version = 1;
    h.mgmt_class = 0x03;
    h.class_version = 2;
    h.method = wire::method::kGet;
    h.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
    h.tid = wire::be64::from(0x100 + i);
    const auto dlid = static_cast<std::uint16_t>(1 + i);  // odd and even: both cores own some
    b.mad.bytes[kPathRecordDlidOffset] = static_cast<std::uint8_t>(dlid >> 8);
    b.mad.bytes[kPathRecordDlidOffset + 1] = static_cast<std::uint8_t>(dlid);
    b.addr.port_num = port_num;
  }
  return mads;
}

// CPU time of the whole process: on a shared machine the engine threads get
// only part of a CPU, so wall time x cores overstates the cost; CPU time per
// MAD does not (the benchmark thread itself mostly sleeps).
double process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

EngineConfig bench_config(std::uint16_t cores) {
  EngineConfig c;
  c.cores = cores;
  c.pool.rx_burst_max = 32;
  c.pin = true;
  return c;
}

// `cores` cores, each owning one loopback port that replays PathRecord Gets
// (sharded by DLID) into a null or echoing handler.
struct Bench {
  Engine engine;
  std::vector<std::unique_ptr<LoopbackTransport>> ports;
  std::vector<std::vector<MadBuf>> sets;
  NullHandler null_handler;
  EchoHandler echo_handler;

  Bench(std::uint16_t cores, bool echo) : engine(bench_config(cores)) {
    for (std::uint16_t c = 0; c < cores; ++c) {
      const auto port = static_cast<std::uint8_t>(c + 1);
      ports.push_back(std::make_unique<LoopbackTransport>("lo", port, 64));
      sets.push_back(replay_set(port));
      ports.back()->set_replay(sets.back());
      ports.back()->set_record_tx(false);
      engine.add_transport(*ports.back(), c);
    }
    engine.add_handler({0x03, wire::method::kGet, wire::sa_attr::kPathRecord},
                       echo ? static_cast<MadHandler&>(echo_handler) : null_handler,
                       OwnerSelector::by_be16_at(kPathRecordDlidOffset));
  }
};

// Cores driven in turn from the benchmark thread: no threads, no scheduler,
// no idle loops. With 2 cores each owns one loopback port and PathRecords are
// sharded by DLID, so half the MADs take the hand-off ring (and, with echo,
// their responses the tx ring back); the cache lines stay on one CPU, so this
// is the software cost of the path, the threaded runs add the transfers.
void BM_DispatchInline(benchmark::State& state) {
  const auto cores = static_cast<std::uint16_t>(state.range(0));
  const bool echo = state.range(1) != 0;
  Bench bench(cores, echo);
  Engine& engine = bench.engine;
  for (auto _ : state) engine.poll_all_once();
  const EngineStats s = engine.stats();
  const std::uint64_t handled = s.total().handled;
  state.SetItemsProcessed(static_cast<std::int64_t>(handled));
  state.counters["ns_per_mad"] =
      benchmark::Counter(static_cast<double>(handled), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["handed_off_pct"] =
      100.0 * static_cast<double>(s.total().handed_off) / static_cast<double>(std::max<std::uint64_t>(1, s.total().rx));
  engine.quiesce();
}
BENCHMARK(BM_DispatchInline)
    ->Name("dispatch/inline")
    ->ArgNames({"cores", "echo"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 0})
    ->Args({2, 1});

// Real threads: `cores` cores, each owning one loopback port; PathRecords are
// sharded by DLID, so with 2 cores half of each core's MADs cross to the other.
void BM_DispatchThreads(benchmark::State& state) {
  const auto cores = static_cast<std::uint16_t>(state.range(0));
  const bool echo = state.range(1) != 0;
  Bench bench(cores, echo);
  Engine& engine = bench.engine;
  engine.start();
  std::uint64_t first = 0, last = 0;
  double cpu_first = 0;
  bool started = false;
  for (auto _ : state) {
    const std::uint64_t from = engine.stats().total().handled;
    if (!started) {
      first = from;
      cpu_first = process_cpu_ns();
      started = true;
    }
    std::uint64_t now = from;
    while (now < from + kMadsPerIteration) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      now = engine.stats().total().handled;
    }
    last = now;
  }
  const double cpu_ns = process_cpu_ns() - cpu_first;
  engine.stop();
  const EngineStats s = engine.stats();
  const double mads = static_cast<double>(last - first);
  state.SetItemsProcessed(static_cast<std::int64_t>(last - first));
  // Wall time x cores / MADs: the cost each MAD takes of one core.
  state.counters["ns_per_mad_core"] =
      benchmark::Counter(mads / cores, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["cpu_ns_per_mad"] = mads > 0 ? cpu_ns / mads : 0;
  state.counters["handed_off_pct"] = 100.0 * static_cast<double>(s.total().handed_off) /
                                     static_cast<double>(std::max<std::uint64_t>(1, s.total().rx));
  state.counters["ring_full"] = static_cast<double>(s.total().ring_full);
}
BENCHMARK(BM_DispatchThreads)
    ->Name("dispatch/threads")
    ->ArgNames({"cores", "echo"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({2, 0})
    ->Args({2, 1})
    ->UseRealTime()
    ->MinTime(1.0);

}  // namespace
}  // namespace madengine
