// SmpQueue over a TransactionManager with a 4-SMP destination window: SMPs
// queued destination after destination (a switch's LFT blocks, then the
// next switch's) still fill the 64-SMP window across destinations, each
// destination's SMPs go out in the order they were queued, none waits in
// the transaction manager's queue, and every SMP completes once.
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
  std::size_t answered = 0;

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

}  // namespace
}  // namespace madengine::sm
