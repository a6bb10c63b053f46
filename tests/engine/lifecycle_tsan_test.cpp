// The device life cycle with real threads (label fast, and tsan): the
// transport runs on core 0, the transaction manager, its client and a
// listener on core 1, so everything the manager learns crosses cores through
// TransportLife. A fault hook on the transport swallows requests, then loses
// the device and brings it back.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "engine/loopback_transport.hpp"
#include "engine/engine.hpp"
#include "engine/lifecycle.hpp"
#include "engine/rmpp.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/sa.hpp"

#include "tsan_suppressions.hpp"
#include "wait_for.hpp"

namespace madengine {
namespace {

using testing::wait_for;

using namespace std::chrono_literals;

// A loopback port with a fault hook the test thread drives: `swallow` drops
// every MAD sent (the device dies with them in flight), `present` false makes
// poll_events() report kDeviceLost (then bursts do nothing) and true again
// kDeviceBack. Everything but the two flags runs on the owner core.
class FaultyTransport final : public Transport {
 public:
  explicit FaultyTransport(std::uint8_t port_num = 1, std::uint16_t local_lid = 7)
      : port_number(port_num), lid(local_lid), lo_("faulty", port_num, 1024) {
    port_.port_num = port_num;
    port_.lid = local_lid;
    port_.state = PortState::kActive;
  }
  std::atomic<bool> swallow{false};
  std::atomic<bool> present{true};
  std::atomic<std::uint64_t> swallowed{0};
  const std::uint8_t port_number;  // readable from any thread (local_port() is the core's)
  const std::uint16_t lid;
  LoopbackTransport& wire() noexcept { return lo_; }

  std::string_view name() const noexcept override { return "faulty"; }
  bool open(const AgentSpec& a) override { return lo_.open(a); }
  void close() noexcept override { lo_.close(); }
  const LocalPort& local_port() const noexcept override { return port_; }
  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override { return reported_ ? lo_.rx_burst(bufs) : 0; }
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override {
    if (!reported_) return 0;
    if (swallow.load(std::memory_order_acquire)) {
      swallowed.fetch_add(bufs.size(), std::memory_order_release);
      return bufs.size();
    }
    return lo_.tx_burst(bufs);
  }
  DeviceEvent poll_events() noexcept override {
    const bool now = present.load(std::memory_order_acquire);
    if (now == reported_) return DeviceEvent::kNone;
    reported_ = now;
    port_.state = now ? PortState::kActive : PortState::kDown;
    return now ? DeviceEvent::kDeviceBack : DeviceEvent::kDeviceLost;
  }

 private:
  LoopbackTransport lo_;
  LocalPort port_;
  bool reported_ = true;  // owner core only
};

// Submits requests on core 1 when asked; results are written on core 1 and
// read by the test after `done` (release/acquire) or after stop().
class Client final : public Poller {
 public:
  static constexpr int kMax = 256;
  explicit Client(TransactionManager& t) : txn_(t), results_(kMax) {
    for (int i = 0; i < kMax; ++i) slots_[i] = Slot{this, i};
  }
  std::atomic<int> to_submit{0};
  std::atomic<int> done{0};
  std::atomic<int> refused{0};
  const std::vector<std::vector<TxnResult>>& results() const { return results_; }
  int submitted() const { return next_; }

  std::size_t poll(Nanos) noexcept override {
    int n = to_submit.exchange(0, std::memory_order_acq_rel);
    for (; n > 0 && next_ < kMax; --n, ++next_) {
      MadBuf m{};
      auto& h = m.hdr();
      h.base_version = 1;
      h.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
      h.class_version = wire::kSaClassVersion;
      h.method = wire::method::kGet;
      h.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
      m.len = wire::kMadSize;
      m.addr.port_num = 1;
      m.addr.lid = static_cast<std::uint16_t>(1 + next_ % 8);
      if (txn_.request(m, RequestOptions{.timeout_ms = 200, .retries = 2}, &Client::on_done, &slots_[next_]) !=
          TxnStatus::kOk)
        refused.fetch_add(1);
    }
    return 0;
  }

 private:
  struct Slot {
    Client* c;
    int i;
  };
  static void on_done(void* user, const TxnResult& r) noexcept {
    auto* s = static_cast<Slot*>(user);
    s->c->results_[static_cast<std::size_t>(s->i)].push_back(r);
    s->c->done.fetch_add(1, std::memory_order_release);  // pairs with the test's acquire load
  }
  TransactionManager& txn_;
  std::vector<std::vector<TxnResult>> results_;
  std::array<Slot, kMax> slots_{};
  int next_ = 0;
};

class Hook final : public MadHandler {
 public:
  explicit Hook(TransactionManager& t) : txn_(t) {}
  void on_mad(MadBuf& buf, CoreContext&) noexcept override { txn_.on_response(buf); }

 private:
  TransactionManager& txn_;
};

struct Listener final : LifecycleListener {
  std::vector<DeviceEvent> events;
  std::vector<std::uint64_t> resent, failed;
  void on_port_event(const PortEvent& ev) noexcept override { events.push_back(ev.event); }
  void on_txn_report(const TxnReport& r) noexcept override {
    for (std::uint64_t t : r.tids) (r.resent ? resent : failed).push_back(t);
  }
};

// Answers every request the transport sent (the remote SA).
void answer(LoopbackTransport& lo) {
  MadBuf out[64];
  const std::size_t n = lo.take_sent(out);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].hdr().method = wire::method::kGetResp;
    while (!lo.inject(out[i])) std::this_thread::yield();
  }
}

struct Rig {
  explicit Rig(std::uint32_t device_wait_ms)
      : engine([&] {
          EngineConfig c;
          c.cores = 2;
          c.pin = false;
          c.backoff.sleep_us = 10;
          c.device_wait_ms = device_wait_ms;
          return c;
        }()),
        txn(clock, engine.core(1), TransactionConfig{.core_id = 1}),
        client(txn),
        hook(txn) {
    engine.add_transport(port, 0);
    engine.set_response_hook(1, hook);
    engine.add_transaction_manager(1, txn, 1);
    engine.add_poller(1, client);
    engine.add_lifecycle_listener(1, listener);
  }
  std::uint64_t stat(std::uint64_t CoreCounters::*field) const { return engine.stats().total().*field; }

  SteadyClock clock;
  FaultyTransport port;
  Engine engine;
  TransactionManager txn;
  Client client;
  Hook hook;
  Listener listener;
};

TEST(LifecycleThreads, LostWithRequestsInFlightThenBackEveryRequestOnce) {
  constexpr int kN = 32;
  Rig r(60'000);
  r.engine.start();
  r.port.swallow = true;
  r.client.to_submit = kN;
  ASSERT_TRUE(wait_for([&] { return r.port.swallowed.load(std::memory_order_acquire) >= kN; }));
  r.port.present = false;
  ASSERT_TRUE(wait_for([&] { return r.stat(&CoreCounters::device_lost) == 1; }));
  // Longer than timeout x (retries + 1): a paused manager times nothing out.
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(r.client.done.load(std::memory_order_acquire), 0);
  EXPECT_EQ(r.engine.local_port(1)->state, PortState::kDown);

  r.port.swallow = false;
  r.port.present = true;
  ASSERT_TRUE(wait_for([&] {
    answer(r.port.wire());
    return r.client.done.load(std::memory_order_acquire) == kN;
  }));
  // Then new requests work.
  r.client.to_submit = 8;
  ASSERT_TRUE(wait_for([&] {
    answer(r.port.wire());
    return r.client.done.load(std::memory_order_acquire) == kN + 8;
  }));
  r.engine.stop();

  EXPECT_EQ(r.client.refused.load(), 0);
  std::set<std::uint64_t> tids;
  for (int i = 0; i < kN + 8; ++i) {
    const auto& res = r.client.results()[static_cast<std::size_t>(i)];
    ASSERT_EQ(res.size(), 1u) << "request " << i << " lost or completed twice";
    EXPECT_EQ(res[0].status, TxnStatus::kOk) << to_string(res[0].status);
    if (i < kN) tids.insert(res[0].tid);
  }
  EXPECT_EQ(tids.size(), std::size_t{kN});
  EXPECT_EQ(std::set<std::uint64_t>(r.listener.resent.begin(), r.listener.resent.end()), tids);
  EXPECT_TRUE(r.listener.failed.empty());
  const CoreCounters c = r.engine.stats().total();
  EXPECT_EQ(c.device_lost, 1u);
  EXPECT_EQ(c.device_back, 1u);
  EXPECT_EQ(c.txn_resent, std::uint64_t{kN});
  EXPECT_EQ(c.txn_failed_device, 0u);
  EXPECT_EQ(r.txn.counters().timed_out, 0u);
  ASSERT_EQ(r.listener.events.size(), 2u);
  EXPECT_EQ(r.listener.events[0], DeviceEvent::kDeviceLost);
  EXPECT_EQ(r.listener.events[1], DeviceEvent::kDeviceBack);
  EXPECT_EQ(r.engine.pool().in_use(), 0u);
}

TEST(LifecycleThreads, AwayLongerThanDeviceWaitFailsThenRecovers) {
  constexpr int kN = 16;
  Rig r(50);
  r.engine.start();
  r.port.swallow = true;
  r.client.to_submit = kN;
  ASSERT_TRUE(wait_for([&] { return r.port.swallowed.load(std::memory_order_acquire) >= kN; }));
  r.port.present = false;
  ASSERT_TRUE(wait_for([&] { return r.client.done.load(std::memory_order_acquire) == kN; }));
  r.port.swallow = false;
  r.port.present = true;
  ASSERT_TRUE(wait_for([&] { return r.stat(&CoreCounters::device_back) == 1; }));
  r.client.to_submit = 8;
  ASSERT_TRUE(wait_for([&] {
    answer(r.port.wire());
    return r.client.done.load(std::memory_order_acquire) == kN + 8;
  }));
  r.engine.stop();

  std::set<std::uint64_t> failed;
  for (int i = 0; i < kN + 8; ++i) {
    const auto& res = r.client.results()[static_cast<std::size_t>(i)];
    ASSERT_EQ(res.size(), 1u);
    EXPECT_EQ(res[0].status, i < kN ? TxnStatus::kDeviceLost : TxnStatus::kOk) << i;
    if (i < kN) failed.insert(res[0].tid);
  }
  EXPECT_EQ(std::set<std::uint64_t>(r.listener.failed.begin(), r.listener.failed.end()), failed);
  EXPECT_EQ(r.engine.stats().total().txn_failed_device, std::uint64_t{kN});
  EXPECT_EQ(r.engine.pool().in_use(), 0u);
}

// ---- RMPP through a device that goes away ----------------------------------
// Two ports of one engine joined by the test thread (a cable): port 1 (LID
// 10, core 0) sends an RMPP GetTableResp with an RmppSender, port 2 (LID 20,
// core 1) receives it with an RmppReceiver. Port 1's device disappears in the
// middle of the transfer. The RMPP state machines are plain Pollers: a short
// absence is bridged by the sender's window retransmission, a long one ends
// in ABORT on both sides; either way each side's callback runs once.

constexpr std::uint16_t kLidA = 10, kLidB = 20;

struct RmppRig {
  explicit RmppRig(const RmppConfig& cfg)
      : engine([] {
          EngineConfig c;
          c.cores = 2;
          c.pin = false;
          c.backoff.sleep_us = 10;
          return c;
        }()),
        a(1, kLidA),
        b(2, kLidB),
        sender(clock, engine.core(0), cfg),
        receiver(clock, engine.core(1), &RmppRig::on_received, this, cfg),
        starter(*this),
        acks(sender),
        data(receiver) {
    engine.add_transport(a, 0);
    engine.add_transport(b, 1);
    engine.add_poller(0, starter);
    engine.add_poller(0, sender);
    engine.add_poller(1, receiver);
    // DATA segments are responses (to core 1 by their TID); the receiver's
    // ACK/ABORT flip the response bit and arrive as GetTable requests.
    engine.set_response_hook(1, data);
    engine.add_handler(DispatchKey{static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm), wire::method::kGetTable,
                                   std::nullopt},
                       acks, OwnerSelector::fixed(0));
    std::mt19937_64 rng(42);
    payload.resize(200 * 40);
    for (auto& x : payload) x = static_cast<std::uint8_t>(rng());
  }

  // Moves what each port sent to the other end of the cable, unless that
  // end's device is gone (then the MAD is lost, as on a real link).
  void cable() {
    MadBuf out[64];
    for (int dir = 0; dir < 2; ++dir) {
      FaultyTransport& from = dir == 0 ? a : b;
      FaultyTransport& to = dir == 0 ? b : a;
      const std::size_t n = from.wire().take_sent(out);
      moved[dir] += n;
      for (std::size_t i = 0; i < n; ++i) {
        if (!to.present.load(std::memory_order_acquire)) continue;
        out[i].addr.port_num = to.port_number;
        out[i].addr.lid = from.lid;  // the source, as a receiver sees it
        out[i].addr.remote_qpn = 1;
        while (!to.wire().inject(out[i])) std::this_thread::yield();
      }
    }
  }

  struct Starter final : Poller {
    explicit Starter(RmppRig& r) : rig(r) {}
    std::size_t poll(Nanos) noexcept override {
      if (!rig.go.exchange(false, std::memory_order_acq_rel)) return 0;
      MadBuf tmpl;
      auto& sa = tmpl.as<wire::SaMad>();
      sa.hdr.base_version = 1;
      sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
      sa.hdr.class_version = wire::kSaClassVersion;
      sa.hdr.method = wire::method::kGetTableResp;
      sa.hdr.tid = wire::be64::from(make_tid_low(1, 0x77));  // its DATA goes to core 1
      sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
      sa.attr_offset = wire::be16::from(wire::attr_offset_for(64));
      tmpl.addr.port_num = 1;
      tmpl.addr.lid = kLidB;
      tmpl.addr.remote_qpn = 1;
      tmpl.addr.qkey = kGsiQkey;
      started = rig.sender.send(tmpl, rig.payload, &RmppRig::on_sent, &rig);
      return 1;
    }
    RmppRig& rig;
    RmppStart started = RmppStart::kTableFull;
  };
  struct Offer final : MadHandler {
    explicit Offer(RmppSender& s) : sender(&s) {}
    explicit Offer(RmppReceiver& r) : receiver(&r) {}
    void on_mad(MadBuf& m, CoreContext&) noexcept override {
      if (sender != nullptr) sender->on_mad(m);
      if (receiver != nullptr) receiver->on_mad(m);
    }
    RmppSender* sender = nullptr;
    RmppReceiver* receiver = nullptr;
  };

  static void on_sent(void* user, const RmppSendDone& d) noexcept {
    auto* r = static_cast<RmppRig*>(user);
    r->sent_outcome = d.outcome;
    r->sent_calls.fetch_add(1, std::memory_order_release);
  }
  static void on_received(void* user, const RmppRecvDone& d) noexcept {
    auto* r = static_cast<RmppRig*>(user);
    r->recv_outcome = d.outcome;
    r->received.assign(d.payload.begin(), d.payload.end());
    r->recv_calls.fetch_add(1, std::memory_order_release);
  }

  SteadyClock clock;
  Engine engine;
  FaultyTransport a, b;
  RmppSender sender;
  RmppReceiver receiver;
  Starter starter;
  Offer acks, data;
  std::vector<std::uint8_t> payload;
  std::atomic<bool> go{false};
  std::uint64_t moved[2] = {0, 0};  // MADs the cable carried (or dropped) each way; test thread only
  // Written on cores 0 and 1 before the release increments; read after an
  // acquire load of the counters, or after stop().
  RmppOutcome sent_outcome = RmppOutcome::kDone, recv_outcome = RmppOutcome::kDone;
  std::vector<std::uint8_t> received;
  std::atomic<int> sent_calls{0}, recv_calls{0};
};

RmppConfig rmpp_config() {
  RmppConfig c;
  c.window_segs = 4;  // several round trips: the loss lands mid-transfer
  c.resp_timeout_ns = 100 * kNanosPerMilli;
  c.retries_max = 10;
  c.total_timeout_ns = 3 * kNanosPerSecond;
  return c;
}

TEST(LifecycleThreads, RmppTransferResumesAfterShortAbsence) {
  RmppRig r(rmpp_config());
  r.engine.start();
  // Let one window through, then pull the sender's device.
  r.go = true;
  ASSERT_TRUE(wait_for([&] {
    r.cable();
    return r.moved[0] >= 6;  // the first window (4 segments) and more
  }));
  r.a.present = false;
  const std::uint64_t sent_before_loss = r.moved[0];
  ASSERT_TRUE(wait_for([&] {
    r.cable();
    return r.engine.stats().total().device_lost == 1;
  }));
  // Away for much less than resp_timeout x retries_max (1 s).
  for (const auto until = std::chrono::steady_clock::now() + 150ms; std::chrono::steady_clock::now() < until;) {
    r.cable();
    std::this_thread::sleep_for(1ms);
  }
  r.a.present = true;
  ASSERT_TRUE(wait_for([&] {
    r.cable();
    return r.sent_calls.load(std::memory_order_acquire) == 1 && r.recv_calls.load(std::memory_order_acquire) == 1;
  }));
  r.engine.stop();
  EXPECT_EQ(r.starter.started, RmppStart::kOk);
  EXPECT_EQ(r.sent_outcome, RmppOutcome::kDone) << to_string(r.sent_outcome);
  EXPECT_EQ(r.recv_outcome, RmppOutcome::kDone) << to_string(r.recv_outcome);
  EXPECT_TRUE(r.received == r.payload) << "payload differs";
  EXPECT_LT(sent_before_loss, 40u) << "the transfer was over before the loss";
  EXPECT_GE(r.sender.counters().window_timeouts, 1u) << "nothing was lost with the device";
  EXPECT_EQ(r.sender.active(), 0u);
  EXPECT_EQ(r.engine.stats().total().device_back, 1u);
  EXPECT_EQ(r.engine.pool().in_use(), 0u);
}

TEST(LifecycleThreads, RmppTransferAbortsWhenDeviceStaysAway) {
  RmppRig r(rmpp_config());
  r.engine.start();
  r.go = true;
  ASSERT_TRUE(wait_for([&] {
    r.cable();
    return r.moved[0] >= 6;  // the first window (4 segments) and more
  }));
  r.a.present = false;
  // Both ends give up on their own bounds: the sender after retries_max
  // window timeouts, the receiver after total_timeout.
  ASSERT_TRUE(wait_for([&] {
    r.cable();
    return r.sent_calls.load(std::memory_order_acquire) == 1 && r.recv_calls.load(std::memory_order_acquire) == 1;
  }));
  r.a.present = true;
  r.engine.stop();
  EXPECT_EQ(r.sent_outcome, RmppOutcome::kAborted) << to_string(r.sent_outcome);
  EXPECT_EQ(r.recv_outcome, RmppOutcome::kAborted) << to_string(r.recv_outcome);
  EXPECT_TRUE(r.received.empty());
  EXPECT_EQ(r.sender.active(), 0u);
  EXPECT_EQ(r.receiver.active(), 0u);
  EXPECT_EQ(r.engine.pool().in_use(), 0u);
}

}  // namespace
}  // namespace madengine
