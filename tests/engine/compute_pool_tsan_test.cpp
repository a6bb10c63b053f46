// ComputePool and offload(): jobs on pool threads (parallel_for inside them
// on the same threads, nested without deadlock), inline pools, shutdown
// (queued compute jobs dropped, queued I/O jobs finished), and a core task
// awaiting a job while the same core keeps polling its other tasks; a task
// cancelled while its job runs resumes at once and the job's result is
// dropped. Runs under TSan too (label tsan).
#include "engine/compute_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "engine/engine.hpp"
#include "engine/offload.hpp"
#include "engine/scheduler.hpp"
#include "tsan_suppressions.hpp"
#include "wait_for.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;

TEST(ComputePool, InlineModeRunsJobsInSubmit) {
  ComputePool pool;
  EXPECT_TRUE(pool.inline_mode());
  int ran = 0;
  EXPECT_TRUE(pool.submit([&] { ++ran; }));
  EXPECT_EQ(ran, 1);
}

TEST(ComputePool, ParallelForInAJobRunsOnThePoolsThreads) {
  ComputePool pool(ComputePoolConfig{.threads = 3});
  std::mutex mu;
  std::set<std::thread::id> seen;
  std::atomic<bool> done{false};
  std::vector<int> hits(1000, 0);
  const std::thread::id test_thread = std::this_thread::get_id();
  ASSERT_TRUE(pool.submit([&] {
    // Nested: each index of the outer loop runs an inner loop.
    parallel_for(10, 3, [&](std::size_t o) {
      parallel_for(100, 3, [&](std::size_t i) {
        ++hits[o * 100 + i];  // each index once: no lock needed
        std::lock_guard lock(mu);
        seen.insert(std::this_thread::get_id());
      });
    });
    done = true;
  }));
  ASSERT_TRUE(testing::wait_for([&] { return done.load(); }));
  for (const int h : hits) ASSERT_EQ(h, 1);
  std::lock_guard lock(mu);
  EXPECT_FALSE(seen.contains(test_thread));
  EXPECT_LE(seen.size(), 3u);  // only the pool's threads
}

TEST(ComputePool, ShutdownDropsQueuedComputeJobsAndFinishesQueuedWrites) {
  for (const bool finish : {false, true}) {
    std::atomic<int> ran{0};
    std::atomic<bool> release{false}, started{false};
    {
      ComputePool pool(ComputePoolConfig{.threads = 1, .shutdown_wait_ms = 5000, .finish_queued = finish});
      ASSERT_TRUE(pool.submit([&] {
        started = true;
        while (!release) std::this_thread::sleep_for(1ms);
        ++ran;
      }));
      ASSERT_TRUE(testing::wait_for([&] { return started.load(); }));
      for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.submit([&] { ++ran; }));
      std::thread releaser([&] {
        std::this_thread::sleep_for(20ms);
        release = true;
      });
      releaser.detach();
    }
    EXPECT_EQ(ran.load(), finish ? 4 : 1) << "finish_queued " << finish;
  }
}

TEST(ComputePool, AFullQueueRefuses) {
  std::atomic<bool> release{false}, started{false};
  ComputePool pool(ComputePoolConfig{.threads = 1, .queue_max = 2});
  ASSERT_TRUE(pool.submit([&] {
    started = true;
    while (!release) std::this_thread::sleep_for(1ms);
  }));
  ASSERT_TRUE(testing::wait_for([&] { return started.load(); }));  // running, queue empty
  EXPECT_TRUE(pool.submit([] {}));
  EXPECT_TRUE(pool.submit([] {}));
  EXPECT_FALSE(pool.submit([] {}));
  release = true;
}

// One engine core running a scheduler and the mailbox; tasks spawned before start.
struct CoreRig {
  EngineConfig config() {
    EngineConfig c;
    c.cores = 1;
    c.pin = false;
    return c;
  }
  Engine engine{config()};
  Scheduler sched{engine.core(0).clock()};
  std::shared_ptr<OffloadMailbox> box = std::make_shared<OffloadMailbox>(engine.core(0));
  CoreRig() {
    engine.add_poller(0, *box);
    engine.add_poller(0, sched);
  }
  ~CoreRig() {
    engine.stop();
    box->close();
  }
};

TEST(Offload, TheCoreKeepsPollingWhileItsJobRuns) {
  CoreRig rig;
  ComputePool pool(ComputePoolConfig{.threads = 1});
  std::atomic<int> ticks{0};
  std::atomic<int> ticks_when_resumed{-1};
  std::atomic<int> result{0};
  std::atomic<bool> resumed_on_core{false};
  std::atomic<std::thread::id> core_thread{};
  // The job waits until the other task has ticked five times on the core.
  auto waiter = [&]() -> Task<void> {
    core_thread = std::this_thread::get_id();
    auto job = offload(pool, rig.box, [&] {
      const auto end = std::chrono::steady_clock::now() + 10s;
      while (ticks < 5 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(100us);
      return ticks >= 5 ? 7 : -1;
    });
    Offloaded<int> r = co_await job;
    resumed_on_core = std::this_thread::get_id() == core_thread.load();
    ticks_when_resumed = ticks.load();
    result = r.value.value_or(-2);
  };
  auto ticker = [&]() -> Task<void> {
    for (int i = 0; i < 1000 && ticks_when_resumed < 0; ++i) {
      if (const Wake w = co_await rig.sched.sleep_for(kNanosPerMilli); !w) co_return;
      ++ticks;
    }
  };
  rig.sched.spawn(waiter());
  rig.sched.spawn(ticker());
  rig.engine.start();
  ASSERT_TRUE(testing::wait_for([&] { return result.load() != 0; }));
  EXPECT_EQ(result.load(), 7);
  EXPECT_GE(ticks_when_resumed.load(), 5);
  EXPECT_TRUE(resumed_on_core.load());
}

TEST(Offload, ACancelledTaskResumesAtOnceAndTheResultIsDropped) {
  CoreRig rig;
  ComputePool pool(ComputePoolConfig{.threads = 1});
  std::atomic<bool> release{false}, job_done{false}, cancelled{false}, finished{false};
  auto waiter = [&]() -> Task<void> {
    auto job = offload(pool, rig.box, [&] {
      while (!release) std::this_thread::sleep_for(1ms);
      job_done = true;
      return 1;
    });
    Offloaded<int> r = co_await job;
    cancelled = r.cancelled && !r.value;
    finished = true;
  };
  const TaskHandle h = rig.sched.spawn(waiter());
  // Cancel from the core itself (the scheduler is single-threaded), once the job started.
  auto canceller = [&]() -> Task<void> {
    if (const Wake w = co_await rig.sched.sleep_for(5 * kNanosPerMilli); !w) co_return;
    rig.sched.cancel(h);
  };
  rig.sched.spawn(canceller());
  rig.engine.start();
  ASSERT_TRUE(testing::wait_for([&] { return finished.load(); }));
  EXPECT_TRUE(cancelled.load());
  EXPECT_FALSE(job_done.load());  // resumed before the job ended
  release = true;
  ASSERT_TRUE(testing::wait_for([&] { return job_done.load(); }));
  std::this_thread::sleep_for(20ms);  // its completion reaches the mailbox and is ignored
}

TEST(Offload, InlinePoolsResumeWithoutSuspending) {
  ManualClock clock;
  Scheduler sched(clock);
  EngineConfig ec;
  ec.cores = 1;
  ec.pin = false;
  Engine engine(ec);
  auto box = std::make_shared<OffloadMailbox>(engine.core(0));
  ComputePool pool;
  int got = 0;
  auto t = [&]() -> Task<void> {
    auto job = offload(pool, box, [] { return 41 + 1; });
    Offloaded<int> r = co_await job;
    got = r.value.value_or(-1);
  };
  sched.spawn(t());
  sched.poll(clock.now_ns());
  EXPECT_EQ(got, 42);
}

}  // namespace
}  // namespace madengine
