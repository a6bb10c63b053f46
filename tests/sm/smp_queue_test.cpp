// SmpQueue over a TransactionManager with a 4-SMP destination window: SMPs
// queued destination after destination (a switch's LFT blocks, then the
// next switch's) still fill the 64-SMP window across destinations, each
// destination's SMPs go out in the order they were queued, none waits in
// the transaction manager's queue, and every SMP completes once. The
// feeder budget: a feeder that produces nothing (a re-route whose
// switches' blocks are all unchanged) is called at most kFeedsPerPump
// times a pump; the queue asks the core for its next iteration
// (next_deadline_ns 0) and goes on from poll(), so a sweep with nothing to
// send never holds the core for the whole fabric; drained() waits for it.
#include "sm/smp_queue.hpp"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine::sm {
namespace {

struct MemSink final : TxSink {
  std::vector<MadBuf> sent;
  bool send(const MadBuf& b) noexcept override {
    sent.push_back(b);
    return true;
  }
};

constexpr std::uint32_t kWindow = 64;
constexpr std::uint32_t kPerDest = 4;

struct Rig {
  ManualClock clock;
  MemSink sink;
  TransactionManager txn{clock, sink,
                         TransactionConfig{.window_max = 256, .window_per_dest_max = kPerDest, .queue_max = 4096}};
  SmpQueue q{txn, kWindow, RequestOptions{}, kPerDest};
  std::map<std::uint8_t, std::vector<std::uint32_t>> sent_order;  // by the switch's port: LFT blocks in send order

  // Answers every SMP sent so far (in send order) and returns how many.
  std::size_t answer_all() {
    std::vector<MadBuf> out;
    out.swap(sink.sent);
    for (const MadBuf& req : out) {
      const auto& smp = req.as<wire::DrSmp>();
      sent_order[smp.initial_path[1]].push_back(smp.hdr.attr_mod.get());
      MadBuf r = req;
      r.hdr().method = wire::method::kGetResp;
      EXPECT_TRUE(txn.on_response(r));
    }
    return out.size();
  }
};

MadBuf lft_set(std::uint8_t port, std::uint32_t block) {
  wire::DrPath p;
  p.push(port);
  return make_dr_request(wire::method::kSet, wire::smp_attr::kLinearFwdTable, block, p, 1);
}

TEST(SmpQueue, FillsTheWindowAcrossDestinationsWhenSubmittedOneDestinationAfterAnother) {
  Rig rig;
  constexpr std::uint8_t kSwitches = 20;
  constexpr std::uint32_t kBlocks = 50;
  std::size_t done = 0;
  for (std::uint8_t sw = 1; sw <= kSwitches; ++sw)
    for (std::uint32_t b = 0; b < kBlocks; ++b) rig.q.submit(lft_set(sw, b), [&done](const TxnResult& r) {
        EXPECT_TRUE(smp_response_ok(r));
        ++done;
      });
  // 16 destinations with 4 each: the whole window on the wire at once.
  EXPECT_EQ(rig.sink.sent.size(), kWindow);
  EXPECT_EQ(rig.q.in_flight(), kWindow);
  while (rig.answer_all() != 0) {
    EXPECT_LE(rig.q.in_flight(), kWindow);
  }
  EXPECT_EQ(done, std::size_t{kSwitches} * kBlocks);
  EXPECT_TRUE(rig.q.idle());
  EXPECT_EQ(rig.txn.counters().queued, 0u);  // never more than its window to one destination
  for (std::uint8_t sw = 1; sw <= kSwitches; ++sw) {
    const auto& order = rig.sent_order[sw];
    ASSERT_EQ(order.size(), kBlocks);
    for (std::uint32_t b = 0; b < kBlocks; ++b) EXPECT_EQ(order[b], b) << "switch " << int(sw);
  }
}

TEST(SmpQueue, AsksTheFeederForMoreWhileOneDestinationHoldsItsWork) {
  Rig rig;
  std::uint8_t next = 1;
  std::size_t done = 0;
  // One unit of work a call: a switch's 100 blocks (as bring-up's feeder).
  rig.q.set_feeder([&] {
    if (next > 30) return false;
    const std::uint8_t sw = next++;
    for (std::uint32_t b = 0; b < 100; ++b) rig.q.submit(lft_set(sw, b), [&done](const TxnResult&) { ++done; });
    return true;
  });
  EXPECT_EQ(rig.sink.sent.size(), kWindow);
  while (rig.answer_all() != 0) {
  }
  EXPECT_EQ(done, 3000u);
  EXPECT_TRUE(rig.q.idle());
  EXPECT_EQ(rig.txn.counters().queued, 0u);
}

TEST(SmpQueue, OneDestinationAloneStillDrains) {
  Rig rig;
  std::size_t done = 0;
  for (std::uint32_t b = 0; b < 40; ++b) rig.q.submit(lft_set(7, b), [&done](const TxnResult&) { ++done; });
  EXPECT_EQ(rig.sink.sent.size(), kPerDest);
  while (rig.answer_all() != 0) {
  }
  EXPECT_EQ(done, 40u);
  EXPECT_TRUE(rig.q.idle());
}

MadBuf port_info_get(std::uint8_t port) {
  wire::DrPath p;
  p.push(port);
  return make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, 0, p, 1);
}

TEST(SmpQueue, AFeederThatSendsNothingGoesOnAtTheNextPoll) {
  Rig r;
  constexpr std::uint32_t kUnits = 1000;  // switches with nothing to write
  std::uint32_t next = 0;
  r.q.set_feeder([&] { return next++ < kUnits; });
  EXPECT_EQ(next, SmpQueue::kFeedsPerPump);
  EXPECT_FALSE(r.q.idle());
  EXPECT_EQ(r.q.next_deadline_ns(), 0);  // due at once: the core must not block over it
  std::uint32_t polls = 0;
  while (!r.q.idle()) {
    const std::uint32_t before = next;
    ASSERT_EQ(r.q.poll(r.clock.now_ns()), 1u);
    EXPECT_LE(next - before, SmpQueue::kFeedsPerPump);
    ++polls;
  }
  EXPECT_EQ(next, kUnits + 1);  // every unit, then the feeder's "nothing left"
  // The first pump made kFeedsPerPump of the kUnits + 1 calls; each poll makes up to as many.
  EXPECT_EQ(polls, (kUnits + SmpQueue::kFeedsPerPump) / SmpQueue::kFeedsPerPump - 1);
  EXPECT_EQ(r.q.next_deadline_ns(), -1);
  EXPECT_EQ(r.q.poll(r.clock.now_ns()), 0u);
}

TEST(SmpQueue, EveryUnitIsSentWhenSomeFeedsSend) {
  Rig r;
  constexpr std::uint32_t kUnits = 500;
  std::uint32_t next = 0;
  std::uint32_t done = 0;
  r.q.set_feeder([&] {
    if (next >= kUnits) return false;
    // One switch in ten has a block to write.
    if (next % 10 == 0) r.q.submit(port_info_get(static_cast<std::uint8_t>(1 + next % 36)), [&](const TxnResult&) { ++done; });
    ++next;
    return true;
  });
  for (int i = 0; i < 10000 && !r.q.idle(); ++i) {
    r.answer_all();
    r.q.poll(r.clock.now_ns());
  }
  r.answer_all();
  EXPECT_TRUE(r.q.idle());
  EXPECT_EQ(next, kUnits);
  EXPECT_EQ(done, kUnits / 10);
}

}  // namespace
}  // namespace madengine::sm
