// Two running cores under load from two injecting threads: requests cross
// both ways through the rx mesh, responses return through the tx mesh to the
// transport of the port they came in on, responses to our own TIDs reach the
// hook of the core in the TID, and pollers run on their core. Exact totals,
// no buffer leaked. Named *_tsan_test so the Tsan build runs it.
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

#include "test_mads.hpp"
#include "tsan_suppressions.hpp"

namespace madengine {
namespace {

using testing::path_query;

constexpr std::uint8_t kSa = 0x03;

MadBuf response_to_us(std::uint8_t port, std::uint16_t core, std::uint32_t seq) {
  MadBuf b = path_query(0, make_tid_low(core, seq), port);
  b.hdr().method = wire::method::kGetResp;
  return b;
}

struct Echo final : MadHandler {
  std::atomic<std::uint64_t> wrong_core{0};
  std::atomic<std::uint64_t> refused{0};
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    const auto dlid = static_cast<std::uint16_t>(buf.mad.bytes[kPathRecordDlidOffset] << 8 |
                                                 buf.mad.bytes[kPathRecordDlidOffset + 1]);
    if (dlid % 2 != ctx.core_id()) wrong_core.fetch_add(1);
    buf.hdr().method = wire::method::kGetResp;
    // addr.port_num still names the port it came in on: the response leaves there.
    if (!ctx.tx().send(buf)) refused.fetch_add(1);
  }
};

struct Hook final : MadHandler {
  std::uint16_t expect_core = 0;
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> wrong_core{0};
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    if (ctx.core_id() != expect_core || tid_core(buf.hdr().tid.get()) != expect_core) wrong_core.fetch_add(1);
    calls.fetch_add(1);
  }
};

struct Ticker final : Poller {
  std::atomic<std::uint64_t> polls{0};
  std::size_t poll(Nanos) noexcept override {
    polls.fetch_add(1);
    return 0;
  }
};

TEST(CoreStress, TwoCoresTwoPortsEverythingArrivesOnce) {
  constexpr std::uint64_t kRequestsPerPort = 4000;
  constexpr std::uint32_t kResponsesPerPort = 1000;
  EngineConfig cfg;
  cfg.cores = 2;
  cfg.pin = false;
  cfg.pool.ring_depth = 16;  // small rings: back-pressure happens under load
  cfg.backoff.sleep_us = 10;
  Engine engine(cfg);
  LoopbackTransport p1("p1", 1, 256), p2("p2", 2, 256);
  engine.add_transport(p1, 0);
  engine.add_transport(p2, 1);
  Echo echo;
  engine.add_handler({kSa, wire::method::kGet, wire::sa_attr::kPathRecord}, echo,
                     OwnerSelector::by_be16_at(kPathRecordDlidOffset));
  std::array<Hook, 2> hooks;
  hooks[1].expect_core = 1;
  engine.set_response_hook(0, hooks[0]);
  engine.set_response_hook(1, hooks[1]);
  std::array<Ticker, 2> tickers;
  engine.add_poller(0, tickers[0]);
  engine.add_poller(1, tickers[1]);
  engine.start();

  std::array<std::vector<std::uint64_t>, 2> sent_tids;
  auto inject = [&](LoopbackTransport& lo, std::uint8_t port, std::vector<std::uint64_t>& tids) {
    std::uint64_t req = 0;
    std::uint32_t resp = 0;
    for (std::uint64_t step = 0; req < kRequestsPerPort || resp < kResponsesPerPort; ++step) {
      MadBuf b;
      if (resp < kResponsesPerPort && (step % 5 == 4 || req == kRequestsPerPort)) {
        b = response_to_us(port, static_cast<std::uint16_t>(resp % 2), resp);
      } else {
        const std::uint64_t tid = (std::uint64_t{port} << 40) | req;
        b = path_query(static_cast<std::uint16_t>(req * 7 + port), tid, port);
      }
      while (!lo.inject(b)) std::this_thread::yield();
      if (b.hdr().is_response()) {
        ++resp;
      } else {
        tids.push_back(b.hdr().tid.get());
        ++req;
      }
    }
  };
  // Drain what the engine transmits while injecting, so tx never stalls for good.
  std::array<std::vector<MadBuf>, 2> got;
  std::atomic<bool> injecting{true};
  std::thread t1(inject, std::ref(p1), 1, std::ref(sent_tids[0]));
  std::thread t2(inject, std::ref(p2), 2, std::ref(sent_tids[1]));
  std::thread reader([&] {
    std::array<MadBuf, 64> buf;
    for (int spins = 0; spins < 60'000; ++spins) {
      for (int i = 0; i < 2; ++i) {
        LoopbackTransport& lo = i == 0 ? p1 : p2;
        const std::size_t n = lo.take_sent(buf);
        got[i].insert(got[i].end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
      }
      if (!injecting.load() && got[0].size() + got[1].size() == 2 * kRequestsPerPort) return;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  t1.join();
  t2.join();
  injecting.store(false);
  reader.join();
  engine.stop();

  for (int i = 0; i < 2; ++i) {
    std::set<std::uint64_t> tids;
    for (const MadBuf& b : got[i]) {
      EXPECT_EQ(b.hdr().method, wire::method::kGetResp);
      EXPECT_EQ(b.addr.port_num, i + 1);
      tids.insert(b.hdr().tid.get());
    }
    EXPECT_EQ(got[i].size(), kRequestsPerPort) << "port " << i + 1;
    EXPECT_EQ(tids, std::set<std::uint64_t>(sent_tids[i].begin(), sent_tids[i].end())) << "port " << i + 1;
  }
  EXPECT_EQ(echo.wrong_core.load(), 0u);
  EXPECT_EQ(echo.refused.load(), 0u);
  EXPECT_EQ(hooks[0].calls.load() + hooks[1].calls.load(), 2u * kResponsesPerPort);
  EXPECT_EQ(hooks[0].calls.load(), kResponsesPerPort);  // even sequence numbers went to core 0
  EXPECT_EQ(hooks[0].wrong_core.load() + hooks[1].wrong_core.load(), 0u);
  EXPECT_GT(tickers[0].polls.load(), 0u);
  EXPECT_GT(tickers[1].polls.load(), 0u);

  const EngineStats s = engine.stats();
  const CoreCounters t = s.total();
  EXPECT_EQ(t.rx, 2 * (kRequestsPerPort + kResponsesPerPort));
  EXPECT_EQ(t.handled, 2 * (kRequestsPerPort + kResponsesPerPort));
  EXPECT_EQ(t.tx, 2 * kRequestsPerPort);
  EXPECT_EQ(t.no_handler + t.malformed + t.tx_no_route + t.tx_full, 0u);
  std::uint64_t crossed = 0;
  for (const RingStats& r : s.rx_mesh) crossed += r.enqueued;
  EXPECT_EQ(crossed, t.handed_off);
  EXPECT_EQ(engine.pool().in_use(), 0u);
  EXPECT_EQ(engine.pool().stats().shared_free, engine.pool().capacity());
}

}  // namespace
}  // namespace madengine
