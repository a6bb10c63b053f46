// The engine end to end over the loopback transport: start/stop returns every
// buffer, MADs run on their owner core with 2 cores, responses are sent once,
// counters add up, unknown and malformed MADs are counted, back-pressure holds.
#include "engine/engine.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "engine/loopback_transport.hpp"
#include "madengine/wire/sa.hpp"

#include "tsan_suppressions.hpp"
#include "test_mads.hpp"
#include "wait_for.hpp"

namespace madengine {
namespace {

using testing::make_mad;
using testing::path_query;
using testing::wait_for;

constexpr std::uint8_t kSa = 0x03;

// Answers each PathRecord query and records where it ran.
struct EchoHandler final : MadHandler {
  std::array<std::atomic<std::uint64_t>, 4> on_core{};
  std::atomic<std::uint64_t> wrong_core{0};
  std::atomic<std::uint64_t> send_failed{0};
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    const std::uint16_t dlid = static_cast<std::uint16_t>(buf.mad.bytes[kPathRecordDlidOffset] << 8 |
                                                          buf.mad.bytes[kPathRecordDlidOffset + 1]);
    if (dlid % 2 != ctx.core_id()) wrong_core.fetch_add(1);
    on_core[ctx.core_id()].fetch_add(1);
    buf.hdr().method = wire::method::kGetResp;
    if (!ctx.tx().send(buf)) send_failed.fetch_add(1);
  }
};

struct CountingHook final : MadHandler {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<int> last_core{-1};
  void on_mad(MadBuf&, CoreContext& ctx) noexcept override {
    calls.fetch_add(1);
    last_core.store(ctx.core_id());
  }
};

struct CountingPoller final : Poller {
  std::atomic<std::uint64_t> polls{0};
  std::size_t poll(Nanos) noexcept override {
    polls.fetch_add(1);
    return 0;
  }
};

EngineConfig test_config(std::uint16_t cores) {
  EngineConfig c;
  c.cores = cores;
  c.pin = false;  // tests share the machine
  c.backoff.sleep_us = 10;
  return c;
}

TEST(Engine, StartStopReturnsEveryBuffer) {
  Engine engine(test_config(2));
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  CountingPoller poller;
  engine.add_poller(1, poller);
  engine.start();
  EXPECT_TRUE(engine.running());
  EXPECT_THROW(engine.start(), std::logic_error);
  EXPECT_THROW(engine.add_poller(0, poller), std::logic_error);
  ASSERT_TRUE(wait_for([&] { return poller.polls.load() > 10; }));
  engine.stop();
  EXPECT_FALSE(engine.running());
  EXPECT_EQ(engine.pool().in_use(), 0u);
  EXPECT_EQ(engine.pool().stats().shared_free, engine.pool().capacity());
  engine.stop();  // idempotent
  engine.start();  // restartable
  engine.stop();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, BadConfigIsRejected) {
  EngineConfig c = test_config(0);
  EXPECT_THROW(Engine{c}, std::invalid_argument);
  Engine engine(test_config(1));
  LoopbackTransport a("a", 1, 8), b("b", 1, 8), x("x", 2, 8), y("y", 3, 8);
  EXPECT_THROW(engine.add_transport(a, 1), std::invalid_argument);  // no core 1
  engine.add_transport(a, 0);
  EXPECT_THROW(engine.add_transport(b, 0), std::invalid_argument);  // port 1 taken
  engine.add_transport(x, 0);
  EXPECT_THROW(engine.add_transport(y, 0), std::invalid_argument);  // transports_per_core_max = 2
}

TEST(Engine, TwoCoresEachMadOnItsOwnerResponsesOnce) {
  constexpr std::uint64_t kMads = 3000;
  Engine engine(test_config(2));
  LoopbackTransport lo("lo", 1, 4096);
  engine.add_transport(lo, 0);
  EchoHandler echo;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, echo,
                     OwnerSelector::by_be16_at(kPathRecordDlidOffset));
  engine.start();
  std::uint64_t odd = 0;
  for (std::uint64_t i = 0; i < kMads; ++i) {
    const auto dlid = static_cast<std::uint16_t>(1 + i % 1000);
    odd += dlid % 2;
    while (!lo.inject(path_query(dlid, 0x1000 + i))) std::this_thread::yield();  // rx queue full: wait
  }
  ASSERT_TRUE(wait_for([&] { return lo.tx_count() == kMads; })) << lo.tx_count();
  engine.stop();

  std::vector<MadBuf> sent(kMads + 1);
  ASSERT_EQ(lo.take_sent(sent), kMads);
  std::set<std::uint64_t> tids;
  for (std::size_t i = 0; i < kMads; ++i) {
    EXPECT_EQ(sent[i].hdr().method, wire::method::kGetResp);
    tids.insert(sent[i].hdr().tid.get());
  }
  EXPECT_EQ(tids.size(), kMads);  // each response exactly once
  EXPECT_EQ(echo.wrong_core.load(), 0u);
  EXPECT_EQ(echo.on_core[1].load(), odd);
  EXPECT_EQ(echo.on_core[0].load(), kMads - odd);

  const EngineStats s = engine.stats();
  const CoreCounters& c0 = s.cores[0].counters;
  const CoreCounters& c1 = s.cores[1].counters;
  EXPECT_EQ(c0.rx, kMads);
  EXPECT_EQ(c1.rx, 0u);
  EXPECT_EQ(c0.handed_off, odd);
  EXPECT_EQ(c1.handled, odd);
  EXPECT_EQ(c0.handled, kMads - odd);
  EXPECT_EQ(c0.tx, kMads);  // core 1's responses came back through the tx ring
  EXPECT_EQ(s.rx_mesh[0 * 2 + 1].enqueued, odd);
  EXPECT_EQ(s.tx_mesh[1 * 2 + 0].dequeued, odd);
  EXPECT_EQ(s.total().no_handler + s.total().malformed, 0u);
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

// A spread handler runs on the receiving core while MADs come one at a time
// (no hand-off, no cross-core wake-up) and is steered by its selector once
// the transport delivers a backlog.
TEST(Engine, SpreadHandlerRunsWhereReceivedUnlessABacklogArrives) {
  constexpr std::uint64_t kSingles = 40;
  constexpr std::uint64_t kBacklog = 64;
  Engine engine(test_config(2));
  LoopbackTransport lo("lo", 1, 4096);
  engine.add_transport(lo, 0);
  EchoHandler echo;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, echo,
                     OwnerSelector::spread_by([](const MadBuf& b, const void*) noexcept -> std::uint32_t {
                       return b.mad.bytes[kPathRecordDlidOffset + 1];
                     }));
  // Queued before the cores start: the first receive burst is a backlog.
  std::uint64_t odd = 0;
  for (std::uint64_t i = 0; i < kBacklog; ++i) {
    odd += i % 2;
    ASSERT_TRUE(lo.inject(path_query(static_cast<std::uint16_t>(i), 0x2000 + i)));
  }
  engine.start();
  ASSERT_TRUE(wait_for([&] { return lo.tx_count() == kBacklog; })) << lo.tx_count();
  EXPECT_EQ(echo.on_core[1].load(), odd);  // steered by DLID
  EXPECT_EQ(echo.wrong_core.load(), 0u);
  // One at a time: every one runs on core 0, whatever its DLID.
  for (std::uint64_t i = 0; i < kSingles; ++i) {
    ASSERT_TRUE(lo.inject(path_query(static_cast<std::uint16_t>(1 + 2 * i), 0x3000 + i)));  // odd: core 1's shard
    ASSERT_TRUE(wait_for([&] { return lo.tx_count() == kBacklog + i + 1; })) << lo.tx_count();
  }
  engine.stop();
  EXPECT_EQ(echo.on_core[1].load(), odd);
  EXPECT_EQ(echo.on_core[0].load(), kBacklog - odd + kSingles);
  EXPECT_EQ(echo.wrong_core.load(), kSingles);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.cores[0].counters.handed_off, odd);
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, UnknownMalformedAndUnmatchedAreCounted) {
  EngineConfig cfg = test_config(2);
  cfg.answer_unsupported = true;
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 1);
  CountingHook hook;
  engine.set_response_hook(0, hook);
  // Driven from this thread: deterministic.
  for (int i = 0; i < 3; ++i) lo.inject(make_mad(kSa, wire::method::kGet, 0x7777, 10 + i));   // no handler
  lo.inject(make_mad(kSa, wire::method::kGetTable, 0x7778, 20));                             // no handler
  lo.inject(make_mad(kSa, wire::method::kSend, 0x7777, 21));                                  // no handler, no answer
  MadBuf bad = make_mad(kSa, wire::method::kGet, 0x35, 22);
  bad.hdr().base_version = 3;
  lo.inject(bad);                                                                              // malformed
  MadBuf runt = make_mad(kSa, wire::method::kGet, 0x35, 23);
  runt.len = 10;
  lo.inject(runt);                                                                             // malformed
  lo.inject(make_mad(kSa, wire::method::kGetResp, 0x35, make_tid_low(0, 5)));                 // to core 0's hook
  lo.inject(make_mad(kSa, wire::method::kGetResp, 0x35, make_tid_low(1, 6)));                 // core 1 has no hook
  for (int i = 0; i < 8; ++i) engine.poll_all_once();

  EXPECT_EQ(hook.calls.load(), 1u);
  EXPECT_EQ(hook.last_core.load(), 0);
  const EngineStats s = engine.stats();
  const CoreCounters& c1 = s.cores[1].counters;
  EXPECT_EQ(c1.rx, 9u);
  EXPECT_EQ(c1.malformed, 2u);
  EXPECT_EQ(c1.no_handler, 6u);
  EXPECT_EQ(c1.unsupported_sent, 4u);
  EXPECT_EQ(c1.handed_off, 1u);
  EXPECT_EQ(c1.tx, 4u);
  std::uint64_t get_bucket = 0, table_bucket = 0, send_bucket = 0, resp_bucket = 0;
  for (const NoHandlerBucket& b : s.cores[1].no_handler) {
    if (b.attr_id == 0x7777 && b.method == wire::method::kGet) get_bucket = b.count;
    if (b.attr_id == 0x7778 && b.method == wire::method::kGetTable) table_bucket = b.count;
    if (b.attr_id == 0x7777 && b.method == wire::method::kSend) send_bucket = b.count;
    if (b.attr_id == 0x35 && b.method == wire::method::kGetResp) resp_bucket = b.count;
    EXPECT_EQ(b.mgmt_class, kSa);
  }
  EXPECT_EQ(get_bucket, 3u);
  EXPECT_EQ(table_bucket, 1u);
  EXPECT_EQ(send_bucket, 1u);
  EXPECT_EQ(resp_bucket, 1u);
  std::array<MadBuf, 8> sent;
  ASSERT_EQ(lo.take_sent(sent), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(sent[i].hdr().status.get(), wire::status::kMethodAttrUnsupported);
  EXPECT_EQ(sent[3].hdr().method, wire::method::kGetTableResp);
  engine.quiesce();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, FullRingsAndSlowTransportApplyBackPressureWithoutLoss) {
  EngineConfig cfg = test_config(2);
  cfg.pool.ring_depth = 4;
  cfg.pool.rx_burst_max = 8;
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 256);
  lo.set_tx_burst_limit(3);
  engine.add_transport(lo, 0);
  EchoHandler echo;  // odd DLIDs on core 1
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, echo,
                     OwnerSelector::by_be16_at(kPathRecordDlidOffset));
  constexpr int kMads = 100;
  for (int i = 0; i < kMads; ++i) ASSERT_TRUE(lo.inject(path_query(1, 500 + i)));  // all for core 1
  // Drive only core 0 first: the 4-deep ring to core 1 fills and core 0 stops receiving.
  for (int i = 0; i < 5; ++i) engine.core(0).poll_once();
  EngineStats s = engine.stats();
  EXPECT_EQ(s.cores[0].counters.handed_off, 4u);
  EXPECT_GE(s.cores[0].counters.ring_full, 1u);
  EXPECT_EQ(s.cores[0].counters.rx, 8u);  // one burst, then no rx while the hand-off waits
  // Now both cores run until everything is answered.
  for (int i = 0; i < 2000 && lo.tx_count() < kMads; ++i) engine.poll_all_once();
  EXPECT_EQ(lo.tx_count(), static_cast<std::uint64_t>(kMads));
  s = engine.stats();
  EXPECT_EQ(s.cores[1].counters.handled, static_cast<std::uint64_t>(kMads));
  EXPECT_GT(s.cores[0].counters.tx_busy, 0u);  // the transport took 3 per burst
  EXPECT_EQ(echo.send_failed.load(), 0u);
  std::vector<MadBuf> sent(kMads);
  ASSERT_EQ(lo.take_sent(sent), static_cast<std::size_t>(kMads));
  for (int i = 0; i < kMads; ++i) EXPECT_EQ(sent[i].hdr().tid.get(), 500u + i);  // in order
  engine.quiesce();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, EmptyPoolStopsReceiveAndRecovers) {
  Engine engine(test_config(1));
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  EchoHandler echo;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, echo, OwnerSelector::fixed(0));
  // Someone holds every buffer: the core cannot post rx buffers.
  std::vector<MadBuf*> held;
  while (MadBuf* b = engine.pool().alloc(MadPool::kNoCore)) held.push_back(b);
  ASSERT_EQ(held.size(), engine.pool().capacity());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(lo.inject(path_query(2, 900 + i)));
  engine.poll_all_once();
  CoreCounters c = engine.stats().cores[0].counters;
  EXPECT_EQ(c.rx, 0u);
  EXPECT_GE(c.rx_alloc_failures, 1u);
  EXPECT_EQ(lo.rx_count(), 0u);  // nothing taken from the port, so nothing lost
  // Buffers come back: the queued MADs are received and answered.
  engine.pool().free_bulk(MadPool::kNoCore, held);
  for (int i = 0; i < 4 && lo.tx_count() < 4; ++i) engine.poll_all_once();
  c = engine.stats().cores[0].counters;
  EXPECT_EQ(c.rx, 4u);
  EXPECT_EQ(lo.tx_count(), 4u);
  engine.quiesce();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, TxQueueFullIsRefusedAndCounted) {
  EngineConfig cfg = test_config(1);
  cfg.pool.tx_queue_depth = 32;
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 256);
  engine.add_transport(lo, 0);
  // A handler that sends three copies of each request: the 32-deep tx queue
  // overflows within one rx burst of 32.
  struct Triple final : MadHandler {
    std::atomic<std::uint64_t> refused{0};
    void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
      for (int i = 0; i < 3; ++i)
        if (!ctx.tx().send(buf)) refused.fetch_add(1);
    }
  } triple;
  engine.add_handler({kSa, std::nullopt, std::nullopt}, triple, OwnerSelector::fixed(0));
  for (int i = 0; i < 32; ++i) lo.inject(path_query(2, i));
  engine.poll_all_once();
  const CoreCounters c = engine.stats().cores[0].counters;
  EXPECT_EQ(triple.refused.load(), 96u - 32u);
  EXPECT_EQ(c.tx_full, 64u);
  EXPECT_EQ(c.tx, 32u);
  engine.quiesce();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

// A handler keeps lent buffers (CoreContext::keep) up to the core's budget and
// answers them later from a poller without a copy; buffers handed from the
// receiving core to the owner core (2 cores) are kept the same way.
struct Keeper final : MadHandler, Poller {
  Core* core = nullptr;
  std::vector<MadBuf*> held;
  std::uint64_t refused = 0, copied_answers = 0, not_lent_refused = 0;
  MadBuf other;
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    if (ctx.keep(other)) return;  // never: `other` is not the lent buffer
    ++not_lent_refused;
    if (ctx.keep(buf)) {
      EXPECT_FALSE(ctx.keep(buf));  // a buffer is kept once
      held.push_back(&buf);
      return;
    }
    ++refused;
    buf.hdr().method = wire::method::kGetResp;
    if (ctx.tx().send(buf)) ++copied_answers;
  }
  std::size_t poll(Nanos) noexcept override {
    const std::size_t n = held.size();
    for (std::size_t i = 0; i < n; ++i) {
      MadBuf* b = held[i];
      if (b->hdr().tid.get() % 2 == 0) {
        b->hdr().method = wire::method::kGetResp;
        EXPECT_TRUE(core->send_kept(*b));
      } else {
        core->free_kept(*b);  // dropped on purpose: back to the pool
      }
    }
    held.clear();
    return n;
  }
};

void keep_and_answer_later(std::uint16_t cores, std::uint16_t owner) {
  EngineConfig cfg = test_config(cores);
  cfg.pool.handler_kept_max = 4;
  Engine engine(cfg);
  LoopbackTransport lo("lo", 1, 64);
  engine.add_transport(lo, 0);
  Keeper keeper;
  keeper.core = &engine.core(owner);
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, keeper, OwnerSelector::fixed(owner));
  engine.add_poller(owner, keeper);
  // Six queries in one burst: four kept (tids 100..103), two copied and answered at once.
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(lo.inject(path_query(2, 100 + i)));
  for (int i = 0; i < 8; ++i) engine.poll_all_once();
  EXPECT_EQ(keeper.not_lent_refused, 6u);
  EXPECT_EQ(keeper.refused, 2u);
  EXPECT_EQ(keeper.copied_answers, 2u);
  EXPECT_EQ(engine.core(owner).kept(), 0u);
  std::array<MadBuf, 16> out{};
  const std::size_t n = lo.take_sent(out);
  ASSERT_EQ(n, 4u);  // 2 kept and sent in place (tids 100, 102) + 2 copies (104, 105)
  std::set<std::uint64_t> tids;
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(out[i].hdr().method, wire::method::kGetResp);
    tids.insert(out[i].hdr().tid.get());
  }
  EXPECT_EQ(tids, (std::set<std::uint64_t>{100, 102, 104, 105}));
  engine.quiesce();
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

TEST(Engine, HandlerKeepsBuffersWithinItsBudgetAndSendsThemWithoutACopy) { keep_and_answer_later(1, 0); }
TEST(Engine, KeptBuffersHandedToAnotherCore) { keep_and_answer_later(2, 1); }

}  // namespace
}  // namespace madengine
