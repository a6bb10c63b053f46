// SmpQueue's feeder budget: a feeder that produces nothing (a re-route
// whose switches' blocks are all unchanged) is called at most kFeedsPerPump
// times a pump; the queue asks the core for its next iteration
// (next_deadline_ns 0) and goes on from poll(), so a sweep with nothing to
// send never holds the core for the whole fabric; drained() waits for it.
#include "sm/smp_queue.hpp"

#include <gtest/gtest.h>

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

struct Rig {
  ManualClock clock;
  MemSink sink;
  TransactionManager txn{clock, sink, TransactionConfig{.window_max = 64, .window_per_dest_max = 4, .queue_max = 64}};
  SmpQueue q{txn, 64, RequestOptions{}};

  void answer_all() {
    std::vector<MadBuf> out;
    out.swap(sink.sent);
    for (MadBuf r : out) {
      r.hdr().method = wire::method::kGetResp;
      EXPECT_TRUE(txn.on_response(r));
    }
  }
};

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
