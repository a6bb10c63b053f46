// TransactionManager: TID layout and matching, per-destination and global
// windows with the wait queue, timeouts with retries and back-off, the device
// life cycle (resend_all / fail_all), cancellation and shutdown, and a seeded
// random run checking every request completes exactly once.
#include "engine/transaction.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <random>
#include <vector>

#include "engine/dispatch.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine {
namespace {

using wire::MgmtClass;

struct MemSink final : TxSink {
  const ManualClock* clock = nullptr;
  std::vector<MadBuf> sent;
  std::vector<Nanos> sent_at;
  bool accept = true;
  bool send(const MadBuf& b) noexcept override {
    if (!accept) return false;
    sent.push_back(b);
    sent_at.push_back(clock != nullptr ? clock->now_ns() : 0);
    return true;
  }
};

MadBuf lid_get(std::uint16_t dlid, std::uint16_t attr = wire::smp_attr::kNodeInfo, std::uint64_t tid = 0) {
  MadBuf b;
  b.hdr() = wire::make_smp_header(MgmtClass::kSubnLid, wire::method::kGet, attr, 0, tid);
  b.addr.lid = dlid;
  return b;
}

MadBuf dr_get(std::initializer_list<std::uint8_t> ports) {
  wire::DrPath p;
  for (auto port : ports) p.push(port);
  MadBuf b;
  b.as<wire::DrSmp>() = wire::make_dr_smp(wire::method::kGet, wire::smp_attr::kNodeInfo, 0, 0, p);
  b.addr.lid = wire::kPermissiveLid;
  return b;
}

MadBuf response_to(const MadBuf& req) {
  MadBuf r = req;
  r.hdr().method = static_cast<std::uint8_t>(req.hdr().method | wire::method::kResponse);
  return r;
}

struct Completion {
  std::vector<TxnResult> results;
  static void cb(void* user, const TxnResult& r) noexcept { static_cast<Completion*>(user)->results.push_back(r); }
};

struct Rig {
  ManualClock clock;
  MemSink sink;
  TransactionManager txn;
  explicit Rig(TransactionConfig cfg = {}) : txn(clock, sink, cfg) { sink.clock = &clock; }
  void advance_ms(Nanos ms) {
    for (Nanos i = 0; i < ms; ++i) {
      clock.advance_ns(kNanosPerMilli);
      txn.poll(clock.now_ns());
    }
  }
};

TEST(Transaction, TidCarriesCoreIdKeepsHighHalfAndMatchesIgnoringIt) {
  Completion done;
  Rig rig(TransactionConfig{.core_id = 5});
  ASSERT_EQ(rig.txn.request(lid_get(7, 0x11, 0xabcd'0000'0000'0000ull), {}, &Completion::cb, &done), TxnStatus::kOk);
  ASSERT_EQ(rig.sink.sent.size(), 1u);
  const std::uint64_t tid = rig.sink.sent[0].hdr().tid.get();
  EXPECT_EQ(tid >> 32, 0xabcd'0000u);
  EXPECT_EQ(TransactionManager::core_of_tid(tid), 5);
  EXPECT_EQ(rig.sink.sent[0].resp_timeout_ms, 200u);

  rig.clock.advance_ns(3 * kNanosPerMilli);
  MadBuf resp = response_to(rig.sink.sent[0]);
  resp.hdr().tid = wire::be64::from((0x1234ull << 32) | (tid & 0xffffffffu));  // agent rewrote the high half
  MadBuf wrong_class = resp;
  wrong_class.hdr().mgmt_class = static_cast<std::uint8_t>(MgmtClass::kSubnAdm);
  EXPECT_FALSE(rig.txn.on_response(wrong_class));
  MadBuf not_a_response = rig.sink.sent[0];
  EXPECT_FALSE(rig.txn.on_response(not_a_response));
  EXPECT_TRUE(rig.txn.on_response(resp));
  EXPECT_FALSE(rig.txn.on_response(resp));  // duplicate
  MadBuf unknown = resp;
  unknown.hdr().tid = wire::be64::from(tid ^ 0x1);
  EXPECT_FALSE(rig.txn.on_response(unknown));

  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].status, TxnStatus::kOk);
  EXPECT_EQ(done.results[0].attempts, 1);
  EXPECT_EQ(done.results[0].rtt_ns, 3 * kNanosPerMilli);
  EXPECT_EQ(done.results[0].tid, tid);
  EXPECT_EQ(done.results[0].response.hdr().method, wire::method::kGetResp);
  EXPECT_EQ(rig.txn.counters().matched, 1u);
  EXPECT_EQ(rig.txn.counters().unmatched, 4u);
  EXPECT_EQ(rig.txn.in_flight(), 0u);
}

TEST(Transaction, TidsAreUniqueAndReuseOfASlotChangesTheTid) {
  Completion done;
  Rig rig(TransactionConfig{.core_id = 15, .window_max = 4, .window_per_dest_max = 4, .queue_max = 0});
  std::vector<std::uint64_t> seen;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(rig.txn.request(lid_get(static_cast<std::uint16_t>(i + 1)), {}, &Completion::cb, &done), TxnStatus::kOk);
    EXPECT_EQ(rig.txn.request(lid_get(9), {}, &Completion::cb, &done), TxnStatus::kQueueFull);
    for (std::size_t k = rig.sink.sent.size() - 4; k < rig.sink.sent.size(); ++k) {
      seen.push_back(rig.sink.sent[k].hdr().tid.get());
      ASSERT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[k])));
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(done.results.size(), 200u);
  EXPECT_EQ(rig.txn.counters().queue_full, 50u);
}

TEST(Transaction, PerDestinationAndGlobalWindowsQueueInOrder) {
  Completion done;
  Rig rig(TransactionConfig{.window_max = 3, .window_per_dest_max = 2, .queue_max = 8});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(rig.txn.request(lid_get(1), {}, &Completion::cb, &done), TxnStatus::kOk);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(rig.txn.request(lid_get(2), {}, &Completion::cb, &done), TxnStatus::kOk);
  // LID 1 gets its 2; LID 1's third waits; with it queued, LID 2 waits behind.
  ASSERT_EQ(rig.sink.sent.size(), 2u);
  EXPECT_EQ(rig.txn.queued(), 3u);
  rig.txn.poll(rig.clock.now_ns());  // LID 2's first fits the global window
  ASSERT_EQ(rig.sink.sent.size(), 3u);
  EXPECT_EQ(rig.sink.sent[2].addr.lid, 2);
  EXPECT_EQ(rig.txn.in_flight_to(lid_get(1)), 2u);
  EXPECT_EQ(rig.txn.in_flight_to(lid_get(2)), 1u);
  EXPECT_EQ(rig.txn.in_flight(), 3u);

  ASSERT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[0])));
  rig.txn.poll(rig.clock.now_ns());
  ASSERT_EQ(rig.sink.sent.size(), 4u);
  EXPECT_EQ(rig.sink.sent[3].addr.lid, 1);  // FIFO among those that fit
  ASSERT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[2])));
  rig.txn.poll(rig.clock.now_ns());
  ASSERT_EQ(rig.sink.sent.size(), 5u);
  EXPECT_EQ(rig.sink.sent[4].addr.lid, 2);
  EXPECT_EQ(rig.txn.queued(), 0u);
  EXPECT_EQ(rig.txn.counters().queued, 3u);
}

TEST(Transaction, DirectedRoutePathsAreSeparateDestinations) {
  Completion done;
  Rig rig(TransactionConfig{.window_max = 16, .window_per_dest_max = 1, .queue_max = 8});
  ASSERT_EQ(rig.txn.request(dr_get({1, 3}), {}, &Completion::cb, &done), TxnStatus::kOk);
  ASSERT_EQ(rig.txn.request(dr_get({1, 4}), {}, &Completion::cb, &done), TxnStatus::kOk);
  ASSERT_EQ(rig.txn.request(dr_get({1}), {}, &Completion::cb, &done), TxnStatus::kOk);
  EXPECT_EQ(rig.sink.sent.size(), 3u);
  ASSERT_EQ(rig.txn.request(dr_get({1, 3}), {}, &Completion::cb, &done), TxnStatus::kOk);
  EXPECT_EQ(rig.sink.sent.size(), 3u);  // same path: waits
  EXPECT_EQ(rig.txn.queued(), 1u);
  EXPECT_EQ(rig.txn.in_flight_to(dr_get({1, 3})), 1u);
  MadBuf r = response_to(rig.sink.sent[0]);
  r.as<wire::DrSmp>().set_direction_in(true);
  ASSERT_TRUE(rig.txn.on_response(r));
  rig.txn.poll(rig.clock.now_ns());
  EXPECT_EQ(rig.sink.sent.size(), 4u);
}

TEST(Transaction, TimeoutRetriesWithBackoffThenFails) {
  Completion done;
  Rig rig;
  const RequestOptions opts{.timeout_ms = 100, .retries = 2, .backoff_factor = 2, .timeout_max_ms = 10'000};
  ASSERT_EQ(rig.txn.request(lid_get(3), opts, &Completion::cb, &done), TxnStatus::kOk);
  rig.advance_ms(2000);
  ASSERT_EQ(rig.sink.sent_at.size(), 3u);
  EXPECT_EQ(rig.sink.sent_at[0], 0);
  EXPECT_EQ(rig.sink.sent_at[1], 100 * kNanosPerMilli);
  EXPECT_EQ(rig.sink.sent_at[2], 300 * kNanosPerMilli);
  EXPECT_EQ(rig.sink.sent[1].hdr().tid, rig.sink.sent[0].hdr().tid);  // a retry keeps its TID
  EXPECT_EQ(rig.sink.sent[2].resp_timeout_ms, 400u);
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].status, TxnStatus::kTimeout);
  EXPECT_EQ(done.results[0].attempts, 3);
  EXPECT_EQ(rig.txn.counters().retried, 2u);
  EXPECT_EQ(rig.txn.counters().timed_out, 1u);
  EXPECT_EQ(rig.txn.counters().sent, 3u);
}

TEST(Transaction, OpenSmDefaultsAndBackoffCap) {
  Completion done;
  Rig rig;
  ASSERT_EQ(rig.txn.request(lid_get(3), {}, &Completion::cb, &done), TxnStatus::kOk);  // 200 ms x (1 + 3)
  rig.advance_ms(799);
  EXPECT_TRUE(done.results.empty());
  rig.advance_ms(1);
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].attempts, 4);

  const RequestOptions capped{.timeout_ms = 100, .retries = 3, .backoff_factor = 10, .timeout_max_ms = 300};
  ASSERT_EQ(rig.txn.request(lid_get(3), capped, &Completion::cb, &done), TxnStatus::kOk);
  rig.advance_ms(100 + 300 + 300 + 299);
  EXPECT_EQ(done.results.size(), 1u);
  rig.advance_ms(1);
  EXPECT_EQ(done.results.size(), 2u);
}

TEST(Transaction, ResponseToARetryMatches) {
  Completion done;
  Rig rig;
  ASSERT_EQ(rig.txn.request(lid_get(3), {.timeout_ms = 50, .retries = 3}, &Completion::cb, &done), TxnStatus::kOk);
  rig.advance_ms(60);
  ASSERT_EQ(rig.sink.sent.size(), 2u);
  ASSERT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[1])));
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].attempts, 2);
  EXPECT_EQ(done.results[0].rtt_ns, 10 * kNanosPerMilli);
  rig.advance_ms(1000);
  EXPECT_EQ(rig.sink.sent.size(), 2u);
}

TEST(Transaction, QueueFullAndSendFailedAreImmediate) {
  Completion done;
  Rig rig(TransactionConfig{.window_max = 1, .window_per_dest_max = 1, .queue_max = 1});
  EXPECT_EQ(rig.txn.request(lid_get(1), {}, &Completion::cb, &done), TxnStatus::kOk);
  EXPECT_EQ(rig.txn.request(lid_get(2), {}, &Completion::cb, &done), TxnStatus::kOk);
  EXPECT_EQ(rig.txn.request(lid_get(3), {}, &Completion::cb, &done), TxnStatus::kQueueFull);
  EXPECT_EQ(rig.txn.counters().queue_full, 1u);
  rig.sink.accept = false;
  ASSERT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[0])));
  rig.txn.poll(rig.clock.now_ns());  // the queued one's first send is refused
  ASSERT_EQ(done.results.size(), 2u);
  EXPECT_EQ(done.results[1].status, TxnStatus::kSendFailed);
  EXPECT_EQ(rig.txn.request(lid_get(4), {}, &Completion::cb, &done), TxnStatus::kSendFailed);
  EXPECT_EQ(rig.txn.in_flight(), 0u);
  EXPECT_EQ(rig.txn.queued(), 0u);
}

TEST(Transaction, ResendAllAndFailAllReportTheirTids) {
  Completion done;
  Rig rig(TransactionConfig{.window_max = 3, .window_per_dest_max = 3, .queue_max = 4});
  for (int i = 0; i < 5; ++i) ASSERT_EQ(rig.txn.request(lid_get(1), {}, &Completion::cb, &done), TxnStatus::kOk);
  ASSERT_EQ(rig.sink.sent.size(), 3u);
  rig.advance_ms(150);
  std::vector<std::uint64_t> resent(8);
  ASSERT_EQ(rig.txn.resend_all(resent), 3u);
  ASSERT_EQ(rig.sink.sent.size(), 6u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(resent[i], rig.sink.sent[i].hdr().tid.get());
    EXPECT_EQ(rig.sink.sent[3 + i].hdr().tid, rig.sink.sent[i].hdr().tid);
  }
  rig.advance_ms(199);  // timers restarted at the resend
  EXPECT_EQ(rig.sink.sent.size(), 6u);
  EXPECT_EQ(rig.txn.counters().resent, 3u);

  std::vector<std::uint64_t> failed(8);
  ASSERT_EQ(rig.txn.fail_all(TxnStatus::kDeviceLost, failed), 5u);  // 3 in flight + 2 queued
  ASSERT_EQ(done.results.size(), 5u);
  for (const auto& r : done.results) EXPECT_EQ(r.status, TxnStatus::kDeviceLost);
  EXPECT_EQ(rig.txn.counters().failed_by[static_cast<std::size_t>(TxnStatus::kDeviceLost)], 5u);
  EXPECT_EQ(rig.txn.in_flight(), 0u);
  EXPECT_EQ(rig.txn.queued(), 0u);
  EXPECT_FALSE(rig.txn.on_response(response_to(rig.sink.sent[0])));
}

TEST(Transaction, CancelByTidWithdrawsQueuedAndInFlightRequests) {
  Completion done;
  Rig rig(TransactionConfig{.window_max = 1, .window_per_dest_max = 1, .queue_max = 4});
  ASSERT_EQ(rig.txn.request(lid_get(1), {}, &Completion::cb, &done), TxnStatus::kOk);
  ASSERT_EQ(rig.txn.request(lid_get(2), {}, &Completion::cb, &done), TxnStatus::kOk);
  const std::uint64_t first = rig.sink.sent[0].hdr().tid.get();
  ASSERT_TRUE(rig.txn.cancel(first));
  EXPECT_FALSE(rig.txn.cancel(first));
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].status, TxnStatus::kCancelled);
  EXPECT_EQ(done.results[0].tid, first);
  rig.txn.poll(rig.clock.now_ns());  // the queued one takes the window
  ASSERT_EQ(rig.sink.sent.size(), 2u);
  EXPECT_FALSE(rig.txn.on_response(response_to(rig.sink.sent[0])));  // late answer to the cancelled one
  EXPECT_TRUE(rig.txn.on_response(response_to(rig.sink.sent[1])));
  EXPECT_EQ(rig.txn.counters().cancelled, 1u);
}

TEST(Transaction, CallbackMayResubmitDuringFailAll) {
  struct Resubmit {
    TransactionManager* txn = nullptr;
    int calls = 0;
    static void cb(void* user, const TxnResult&) noexcept {
      auto* self = static_cast<Resubmit*>(user);
      if (++self->calls == 1) self->txn->request(lid_get(9), {}, &Resubmit::cb, self);
    }
  } r;
  Rig rig;
  r.txn = &rig.txn;
  ASSERT_EQ(rig.txn.request(lid_get(1), {}, &Resubmit::cb, &r), TxnStatus::kOk);
  EXPECT_EQ(rig.txn.fail_all(TxnStatus::kDeviceLost), 1u);  // the new request is not part of it
  EXPECT_EQ(r.calls, 1);
  EXPECT_EQ(rig.txn.in_flight(), 1u);
}

TEST(Transaction, CoroutineRequestAndCancellation) {
  ManualClock clock;
  MemSink sink;
  sink.clock = &clock;
  Scheduler sched(clock);
  TransactionManager txn(clock, sink);
  std::vector<TxnResult> got;
  auto task = [&](std::uint16_t lid) -> Task<void> {
    TxnResult r = co_await txn.request(lid_get(lid));
    got.push_back(r);
    if (!r) co_return;
    TxnResult r2 = co_await txn.request(lid_get(lid));  // sticky cancellation shows here
    got.push_back(r2);
  };
  const TaskHandle a = sched.spawn(task(1));
  const TaskHandle b = sched.spawn(task(2));
  sched.poll(clock.now_ns());
  ASSERT_EQ(sink.sent.size(), 2u);
  clock.advance_ns(kNanosPerMilli);
  ASSERT_TRUE(txn.on_response(response_to(sink.sent[0])));
  EXPECT_TRUE(got.empty());  // resumes from the scheduler, not inside on_response
  sched.poll(clock.now_ns());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, TxnStatus::kOk);
  EXPECT_EQ(got[0].rtt_ns, kNanosPerMilli);
  ASSERT_EQ(sink.sent.size(), 3u);  // a's second request

  sched.cancel(b);
  EXPECT_EQ(txn.in_flight(), 1u);  // b's request was withdrawn at once
  sched.poll(clock.now_ns());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].status, TxnStatus::kCancelled);
  EXPECT_FALSE(txn.on_response(response_to(sink.sent[1])));  // late answer for b: ignored
  EXPECT_TRUE(sched.alive(a));
  EXPECT_FALSE(sched.alive(b));
}

// The shape of SM logic: a polling loop (SMInfo-style) that requests, then
// sleeps, and a one-shot sweep that fans out requests from sub-tasks; the
// poller is cancelled while asleep and leaves cleanly.
TEST(Transaction, PollingLoopAndFanOutUnderOneScheduler) {
  ManualClock clock;
  MemSink sink;
  sink.clock = &clock;
  Scheduler sched(clock);
  TransactionManager txn(clock, sink, TransactionConfig{.window_max = 4, .window_per_dest_max = 1, .queue_max = 64});
  int polls_ok = 0;
  int polls_failed = 0;
  bool poller_exited = false;
  auto poller = [&]() -> Task<void> {
    for (;;) {
      const TxnResult r = co_await txn.request(lid_get(50, wire::smp_attr::kSmInfo), {.timeout_ms = 10, .retries = 1});
      if (r.status == TxnStatus::kCancelled) break;
      ++(r ? polls_ok : polls_failed);
      const Wake w = co_await sched.sleep_for(100 * kNanosPerMilli);
      if (!w) break;
    }
    poller_exited = true;
  };
  auto probe = [&](std::uint16_t lid) -> Task<int> {
    const TxnResult r = co_await txn.request(lid_get(lid));
    co_return r ? 1 : 0;
  };
  int swept = -1;
  auto sweep = [&]() -> Task<void> {
    int found = 0;
    for (std::uint16_t lid = 1; lid <= 8; ++lid) found += co_await probe(lid);
    swept = found;
  };
  const TaskHandle p = sched.spawn(poller());
  sched.spawn(sweep());
  // The fabric: answers every request on the next millisecond, except that
  // the SMInfo target (LID 50) stays silent between 250 and 450 ms.
  std::size_t answered = 0;
  for (int ms = 0; ms < 1000; ++ms) {
    sched.poll(clock.now_ns());
    for (; answered < sink.sent.size(); ++answered) {
      const MadBuf& m = sink.sent[answered];
      if (m.addr.lid == 50 && ms >= 250 && ms < 450) continue;
      txn.on_response(response_to(m));
    }
    clock.advance_ns(kNanosPerMilli);
    txn.poll(clock.now_ns());
    if (ms == 700) sched.cancel(p);
  }
  EXPECT_EQ(swept, 8);
  EXPECT_TRUE(poller_exited);
  EXPECT_GE(polls_ok, 5);
  EXPECT_GE(polls_failed, 1);
  EXPECT_EQ(sched.live_tasks(), 0u);
  EXPECT_EQ(txn.in_flight(), 0u);
}

TEST(Transaction, SchedulerShutdownWithdrawsPendingRequests) {
  ManualClock clock;
  MemSink sink;
  TransactionManager txn(clock, sink);
  bool resumed = false;
  {
    Scheduler sched(clock);
    auto task = [&]() -> Task<void> {
      TxnResult r = co_await txn.request(lid_get(1));
      resumed = true;
      (void)r;
    };
    sched.spawn(task());
    sched.poll(0);
    EXPECT_EQ(txn.in_flight(), 1u);
  }
  EXPECT_FALSE(resumed);
  EXPECT_EQ(txn.in_flight(), 0u);
  EXPECT_EQ(txn.counters().cancelled, 1u);
  txn.poll(kNanosPerSecond * 10);  // nothing left to time out
  EXPECT_EQ(txn.counters().timed_out, 0u);
}

TEST(Transaction, ManagerShutdownResumesTasksWithCancelled) {
  ManualClock clock;
  MemSink sink;
  Scheduler sched(clock);
  std::vector<TxnStatus> got;
  std::optional<TransactionManager> txn(std::in_place, clock, sink);
  auto task = [&]() -> Task<void> {
    TxnResult r = co_await txn->request(lid_get(1));
    got.push_back(r.status);
  };
  sched.spawn(task());
  sched.poll(0);
  txn.reset();
  sched.poll(0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], TxnStatus::kCancelled);
}

TEST(Transaction, BadConfigurationIsRejected) {
  ManualClock clock;
  MemSink sink;
  EXPECT_THROW(TransactionManager(clock, sink, TransactionConfig{.window_max = 0}), std::invalid_argument);
  EXPECT_THROW(TransactionManager(clock, sink, TransactionConfig{.window_max = 1u << 20, .queue_max = 1u << 20}),
               std::invalid_argument);
}

// Random loss, duplicates and late answers: every request completes exactly
// once, windows are never exceeded, and the books balance at the end.
TEST(Transaction, RandomLossAndDuplicatesCompleteEachRequestOnce) {
  const char* env = std::getenv("MADENGINE_SEED");
  const std::uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 0) : 20261129;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (replay with MADENGINE_SEED)");
  std::mt19937_64 rng(seed);
  // Each request goes to a random one of 8 LIDs; its callback counts by index.
  struct PerReq {
    std::vector<int>* counts;
    int index;
  };
  std::vector<int> counts(2000, 0);
  std::vector<PerReq> reqs(2000);
  Rig rig(TransactionConfig{.core_id = 3, .window_max = 16, .window_per_dest_max = 3, .queue_max = 64});
  auto cb = [](void* user, const TxnResult&) noexcept {
    auto* p = static_cast<PerReq*>(user);
    (*p->counts)[static_cast<std::size_t>(p->index)]++;
  };
  int submitted = 0;
  std::size_t delivered = 0;
  for (int step = 0; step < 20000; ++step) {
    if (submitted < 2000 && rng() % 2 == 0) {
      reqs[static_cast<std::size_t>(submitted)] = PerReq{&counts, submitted};
      const TxnStatus s = rig.txn.request(lid_get(static_cast<std::uint16_t>(1 + rng() % 8)),
                                          {.timeout_ms = 20, .retries = 2},
                                          +cb, &reqs[static_cast<std::size_t>(submitted)]);
      if (s == TxnStatus::kQueueFull) {
        counts[static_cast<std::size_t>(submitted)]++;
      } else {
        ASSERT_EQ(s, TxnStatus::kOk);
      }
      ++submitted;
    }
    // Answer some of what was sent, in random order, some twice, some never.
    while (delivered < rig.sink.sent.size() && rng() % 4 != 0) {
      const std::size_t k = delivered + rng() % (rig.sink.sent.size() - delivered);
      std::swap(rig.sink.sent[delivered], rig.sink.sent[k]);
      const MadBuf& m = rig.sink.sent[delivered++];
      const auto fate = rng() % 10;
      if (fate < 3) continue;  // lost
      rig.txn.on_response(response_to(m));
      if (fate == 9) rig.txn.on_response(response_to(m));  // duplicate
    }
    ASSERT_LE(rig.txn.in_flight(), 16u);
    rig.clock.advance_ns(kNanosPerMilli);
    rig.txn.poll(rig.clock.now_ns());
  }
  rig.advance_ms(1000);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(counts[static_cast<std::size_t>(i)], 1) << "request " << i;
  const auto& c = rig.txn.counters();
  EXPECT_EQ(c.matched + c.timed_out + c.queue_full, 2000u);
  EXPECT_GT(c.retried, 0u);
  EXPECT_GT(c.unmatched, 0u);
  EXPECT_EQ(rig.txn.in_flight(), 0u);
}

// The TID layout is the Dispatcher's: a response to a request that core 1's
// (or core 200's) manager sent is routed to that core's response hook, and
// that manager matches it.
TEST(Transaction, DispatcherRoutesResponsesToTheSendingCore) {
  struct Hook final : MadHandler {
    void on_mad(MadBuf&, CoreContext&) noexcept override {}
  };
  for (const std::uint8_t core : {std::uint8_t{1}, std::uint8_t{200}}) {
    Completion done;
    Rig rig(TransactionConfig{.core_id = core});
    Dispatcher d(static_cast<std::uint16_t>(core + 1));
    Hook hook0, hook_core;
    d.set_response_hook(0, hook0);
    d.set_response_hook(core, hook_core);
    for (int i = 0; i < 20; ++i)  // many slots and generations
      ASSERT_EQ(rig.txn.request(dr_get({1, static_cast<std::uint8_t>(i % 5 + 1)}), {}, &Completion::cb, &done),
                TxnStatus::kOk);
    ASSERT_EQ(rig.sink.sent.size(), 20u);  // 5 destinations x window 4
    for (std::size_t k = 0; k < rig.sink.sent.size(); ++k) {
      MadBuf resp = response_to(rig.sink.sent[k]);
      const Route r = d.route(resp);
      EXPECT_EQ(r.verdict, DispatchVerdict::kResponse);
      EXPECT_EQ(r.core, core);
      EXPECT_EQ(r.handler, &hook_core);
      EXPECT_EQ(TransactionManager::core_of_tid(resp.hdr().tid.get()), tid_core(resp.hdr().tid.get()));
      EXPECT_TRUE(rig.txn.on_response(resp));
    }
    EXPECT_EQ(done.results.size(), 20u);
  }
}

}  // namespace
}  // namespace madengine
