// Blocking idle (IdleMode::kBlock): a core blocked in its wait wakes for a
// MAD pushed into its ring by another thread, for a timer that falls due and
// for stop(). The cap on one wait is set to a minute, so a wake-up that only
// the cap would bring hangs the test (caught by ctest's timeout) rather than
// passing; the assertions are on what happened, never on how long it took.
#include "engine/engine.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/loopback_transport.hpp"
#include "engine/scheduler.hpp"
#include "madengine/wire/sa.hpp"

#include "tsan_suppressions.hpp"
#include "test_mads.hpp"
#include "wait_for.hpp"

namespace madengine {
namespace {

using testing::path_query;
using testing::wait_for;

constexpr std::uint8_t kSa = 0x03;
constexpr std::uint32_t kCapUs = 60'000'000;  // one wait may last a minute

struct CountingHandler final : MadHandler {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<int> last_core{-1};
  void on_mad(MadBuf&, CoreContext& ctx) noexcept override {
    last_core.store(ctx.core_id());
    calls.fetch_add(1);
  }
};

EngineConfig blocking_config(std::uint16_t cores) {
  EngineConfig c;
  c.cores = cores;
  c.pin = false;
  c.backoff.mode = IdleMode::kBlock;
  c.backoff.spin_loops_max = 4;
  c.backoff.block_max_us = kCapUs;
  return c;
}

CoreCounters counters(Engine& e, std::uint16_t core) { return e.stats().cores[core].counters; }

TEST(CoreIdle, BlockedCoreWakesForAMadPushedIntoItsRing) {
  Engine engine(blocking_config(2));
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  CountingHandler handler;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, handler, OwnerSelector::fixed(1));

  // Core 1 runs on its own thread; this thread is core 0 (poll_once), the
  // producer that hands the MAD over through the rx ring 0 -> 1.
  std::atomic<bool> stop{false};
  std::thread core1([&] { engine.core(1).run(stop); });
  ASSERT_TRUE(wait_for([&] { return counters(engine, 1).idle_blocks >= 1; }));

  ASSERT_TRUE(lo.inject(path_query(0, 0x10)));
  engine.core(0).poll_once();
  EXPECT_EQ(counters(engine, 0).handed_off, 1u);
  ASSERT_TRUE(wait_for([&] { return handler.calls.load() == 1; }));
  EXPECT_EQ(handler.last_core.load(), 1);

  // Blocked again, then a second MAD both wakes it and lets it see `stop`.
  ASSERT_TRUE(wait_for([&] { return counters(engine, 1).idle_blocks >= 2; }));
  stop.store(true, std::memory_order_release);
  ASSERT_TRUE(lo.inject(path_query(0, 0x11)));
  engine.core(0).poll_once();
  core1.join();
  engine.quiesce();

  const CoreCounters c1 = counters(engine, 1);
  EXPECT_GE(c1.idle_wake_event, 2u);  // each hand-off woke it through its eventfd
  EXPECT_EQ(c1.idle_wake_timeout, 0u);
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

Task<void> sleep_then_set(Scheduler& s, Nanos delay_ns, std::atomic<bool>& done) {
  if (const Wake w = co_await s.sleep_for(delay_ns); !w) co_return;
  done.store(true);
}

TEST(CoreIdle, BlockedCoreWakesWhenATimerFallsDue) {
  Engine engine(blocking_config(1));
  SteadyClock clock;
  Scheduler sched(clock);
  engine.add_poller(0, sched);
  std::atomic<bool> done{false};
  sched.spawn(sleep_then_set(sched, 20 * kNanosPerMilli, done));
  engine.start();
  ASSERT_TRUE(wait_for([&] { return done.load(); }));
  engine.stop();
  const CoreCounters c = counters(engine, 0);
  EXPECT_GE(c.idle_blocks, 1u);
  EXPECT_GE(c.idle_wake_timeout, 1u);  // the timer's deadline ended the wait, not the minute cap
}

TEST(CoreIdle, StopWakesABlockedCore) {
  Engine engine(blocking_config(2));
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  engine.start();
  ASSERT_TRUE(wait_for([&] { return counters(engine, 0).idle_blocks >= 1 && counters(engine, 1).idle_blocks >= 1; }));
  engine.stop();  // returns only once both cores saw stop
  EXPECT_FALSE(engine.running());
  const EngineStats s = engine.stats();
  for (const CoreSnapshot& c : s.cores) EXPECT_GE(c.counters.idle_wake_event, 1u);
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

// Reports work on every kEvery-th poll while `on` is set: work that arrives
// within a short spin, as in a storm.
struct PeriodicWork final : Poller {
  static constexpr std::uint64_t kEvery = 4;
  std::atomic<bool> on{false};
  std::uint64_t polls = 0;
  std::size_t poll(Nanos) noexcept override {
    if (!on.load(std::memory_order_relaxed)) return 0;
    return ++polls % kEvery == 0 ? 1 : 0;
  }
  Nanos next_deadline_ns() const noexcept override { return -1; }
};

// The spin before a wait adapts: MADs that come one at a time, each after
// the spin has run out, shrink it to spin_loops_min; work that keeps coming
// within the spin grows it back to spin_loops_max.
TEST(CoreIdle, SpinShrinksWhenWorkComesAfterItAndGrowsWhenWithin) {
  EngineConfig cfg = blocking_config(1);
  cfg.backoff.spin_loops_max = 256;
  cfg.backoff.spin_loops_min = 8;
  cfg.backoff.block_max_us = 200;  // the loopback transport has no fd to wake a wait
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  CountingHandler handler;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, handler, OwnerSelector::fixed(0));
  PeriodicWork work;
  engine.add_poller(0, work);
  EXPECT_EQ(engine.stats().cores[0].spin_budget, 256u);  // before the first idle spin runs out
  engine.start();
  for (std::uint64_t i = 1; i <= 10; ++i) {
    ASSERT_TRUE(lo.inject(path_query(0, i)));
    ASSERT_TRUE(wait_for([&] { return handler.calls.load() == i; }));
    // A wait that began after the answer: the spin that followed it ran out.
    const std::uint64_t blocks = counters(engine, 0).idle_blocks;
    ASSERT_TRUE(wait_for([&] { return counters(engine, 0).idle_blocks > blocks; }));
  }
  EXPECT_EQ(engine.stats().cores[0].spin_budget, 8u);
  work.on.store(true);
  ASSERT_TRUE(wait_for([&] { return engine.stats().cores[0].spin_budget == 256u; }));
  engine.stop();
}

TEST(CoreIdle, SpinModeNeverBlocks) {
  EngineConfig cfg = blocking_config(1);
  cfg.backoff.mode = IdleMode::kSpin;
  cfg.backoff.sleep_us = 10;
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  engine.start();
  ASSERT_TRUE(wait_for([&] { return counters(engine, 0).idle_loops > 1000; }));
  engine.stop();
  EXPECT_EQ(counters(engine, 0).idle_blocks, 0u);
}

}  // namespace
}  // namespace madengine
