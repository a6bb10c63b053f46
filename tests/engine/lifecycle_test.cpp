// Device life-cycle rules, deterministic (label fast): one thread drives the
// cores with poll_all_once() on a ManualClock, a scripted transport reports
// the events. Covers what the sim and threaded tests do not pin down: a
// flapping device is one outage, a return after a stable period restarts the
// wait, a return the engine never saw lost still re-sends, a kAnyPort manager
// follows every transport, and port changes reach a listener on another core.
#include <gtest/gtest.h>

#include <vector>

#include "engine/engine.hpp"
#include "engine/lifecycle.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine {
namespace {

// Sends into the void (so requests stay in flight) and reports whatever
// events the test queued, one per poll_events() call.
class ScriptedTransport final : public Transport {
 public:
  explicit ScriptedTransport(std::uint8_t port_num) {
    port_.port_num = port_num;
    port_.lid = 1;
    port_.state = PortState::kActive;
  }
  std::vector<DeviceEvent> script;  // front first
  LocalPort next_port{};            // applied with each kPortChanged
  std::uint64_t sent = 0;

  std::string_view name() const noexcept override { return "scripted"; }
  bool open(const AgentSpec&) override { return true; }
  void close() noexcept override {}
  const LocalPort& local_port() const noexcept override { return port_; }
  std::size_t rx_burst(std::span<MadBuf*>) noexcept override { return 0; }
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override {
    sent += bufs.size();
    return bufs.size();
  }
  DeviceEvent poll_events() noexcept override {
    if (script.empty()) return DeviceEvent::kNone;
    const DeviceEvent ev = script.front();
    script.erase(script.begin());
    if (ev == DeviceEvent::kPortChanged) port_ = next_port;
    return ev;
  }

 private:
  LocalPort port_;
};

struct Results {
  std::vector<TxnResult> done;
  static void on_done(void* user, const TxnResult& r) noexcept { static_cast<Results*>(user)->done.push_back(r); }
};

struct Heard final : LifecycleListener {
  std::vector<PortEvent> events;
  std::size_t resent = 0, failed = 0;
  void on_port_event(const PortEvent& ev) noexcept override { events.push_back(ev); }
  void on_txn_report(const TxnReport& r) noexcept override { (r.resent ? resent : failed) += r.count; }
};

MadBuf sa_get(std::uint8_t port_num) {
  MadBuf m{};
  auto& h = m.hdr();
  h.base_version = 1;
  h.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  h.class_version = wire::kSaClassVersion;
  h.method = wire::method::kGet;
  h.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
  m.len = wire::kMadSize;
  m.addr.port_num = port_num;
  m.addr.lid = 1;
  return m;
}

// Two transports (ports 1 and 2) on core 0, a manager and a listener on
// core `txn_core`, one thread.
struct Rig {
  explicit Rig(std::uint32_t device_wait_ms, std::uint16_t manager_port, std::uint16_t txn_core = 0)
      : engine([&] {
          EngineConfig c;
          c.cores = 2;
          c.pin = false;
          c.clock = &clock;
          c.device_wait_ms = device_wait_ms;
          return c;
        }()),
        txn(clock, engine.core(txn_core), TransactionConfig{.core_id = static_cast<std::uint8_t>(txn_core)}) {
    engine.add_transport(p1, 0);
    engine.add_transport(p2, 0);
    engine.add_transaction_manager(txn_core, txn, manager_port);
    engine.add_lifecycle_listener(txn_core, heard);
  }
  // Enough iterations for every core to check device events once (every 64).
  void spin() {
    for (int i = 0; i < 64; ++i) engine.poll_all_once();
  }
  void advance_ms(std::int64_t ms) {
    clock.advance_ns(ms * kNanosPerMilli);
    spin();
  }
  void request(std::uint8_t port) {
    ASSERT_EQ(txn.request(sa_get(port), RequestOptions{.timeout_ms = 1000, .retries = 3}, &Results::on_done, &results),
              TxnStatus::kOk);
  }
  CoreCounters total() const { return engine.stats().total(); }

  ManualClock clock;
  ScriptedTransport p1{1}, p2{2};
  // Declared before the engine and the manager: the manager's destructor
  // completes what is outstanding (kCancelled) into `results`.
  Heard heard;
  Results results;
  Engine engine;
  TransactionManager txn;
};

TEST(Lifecycle, FlappingDeviceIsOneOutage) {
  Rig r(100, 1);
  r.spin();
  r.request(1);
  r.spin();
  r.p1.script = {DeviceEvent::kDeviceLost};
  r.spin();  // lost at t = 0
  r.advance_ms(60);
  r.p1.script = {DeviceEvent::kDeviceBack};
  r.spin();  // back at 60: re-sent
  EXPECT_EQ(r.heard.resent, 1u);
  r.advance_ms(10);
  r.p1.script = {DeviceEvent::kDeviceLost};
  r.spin();  // lost again at 70, 10 ms after it returned: the same outage
  r.advance_ms(29);
  EXPECT_TRUE(r.results.done.empty());
  r.advance_ms(1);  // 100 ms after the first loss
  ASSERT_EQ(r.results.done.size(), 1u);
  EXPECT_EQ(r.results.done[0].status, TxnStatus::kDeviceLost);
  EXPECT_EQ(r.total().txn_failed_device, 1u);
  EXPECT_EQ(r.total().device_lost, 2u);
}

TEST(Lifecycle, ReturnStableLongerThanWaitStartsANewOutage) {
  Rig r(100, 1);
  r.spin();
  r.p1.script = {DeviceEvent::kDeviceLost};
  r.spin();
  r.advance_ms(50);
  r.p1.script = {DeviceEvent::kDeviceBack};
  r.spin();
  r.advance_ms(150);  // stable for longer than the wait
  r.request(1);
  r.spin();
  r.p1.script = {DeviceEvent::kDeviceLost};
  r.spin();  // a new outage starts here
  r.advance_ms(99);
  EXPECT_TRUE(r.results.done.empty());
  r.advance_ms(1);
  ASSERT_EQ(r.results.done.size(), 1u);
  EXPECT_EQ(r.results.done[0].status, TxnStatus::kDeviceLost);
}

TEST(Lifecycle, ReturnWithoutASeenLossStillResends) {
  Rig r(100, 1);
  r.spin();
  r.request(1);
  r.spin();
  const std::uint64_t sent = r.p1.sent;
  r.p1.script = {DeviceEvent::kDeviceBack};  // e.g. a reset noticed only at reopen
  r.spin();
  EXPECT_EQ(r.heard.resent, 1u);
  EXPECT_EQ(r.total().txn_resent, 1u);
  EXPECT_EQ(r.p1.sent, sent + 1);  // the same request went out again
  EXPECT_TRUE(r.results.done.empty());
  EXPECT_EQ(r.txn.in_flight(), 1u);
}

TEST(Lifecycle, ManagerFollowsOnlyItsPortOrAny) {
  // Manager of port 1: port 2 going away does not concern it.
  {
    Rig r(10, 1);
    r.spin();
    r.request(1);
    r.spin();
    r.p2.script = {DeviceEvent::kDeviceLost};
    r.spin();
    r.advance_ms(20);
    EXPECT_TRUE(r.results.done.empty());
    EXPECT_EQ(r.total().txn_failed_device, 0u);
    EXPECT_EQ(r.total().device_lost, 1u);
  }
  // kAnyPort, on another core than the transports: any device pauses and fails it.
  {
    Rig r(10, kAnyPort, 1);
    r.spin();
    r.request(1);
    r.spin();
    r.p2.script = {DeviceEvent::kDeviceLost};
    r.spin();
    r.advance_ms(10);
    ASSERT_EQ(r.results.done.size(), 1u);
    EXPECT_EQ(r.results.done[0].status, TxnStatus::kDeviceLost);
    EXPECT_EQ(r.heard.failed, 1u);
    EXPECT_EQ(r.engine.stats().cores[1].counters.txn_failed_device, 1u);
    EXPECT_EQ(r.engine.stats().cores[0].counters.device_lost, 1u);
  }
}

TEST(Lifecycle, PortChangesReachAListenerOnAnotherCore) {
  Rig r(100, 1, 1);
  r.spin();
  LocalPort a;
  a.port_num = 2;
  a.lid = 0x10;
  a.sm_lid = 0x10;
  a.state = PortState::kArmed;
  LocalPort b = a;
  b.lid = 0x11;
  b.state = PortState::kActive;
  // Port 2's transport is on core 0, the listener on core 1.
  r.p2.next_port = a;
  r.p2.script = {DeviceEvent::kPortChanged};
  r.spin();
  ASSERT_EQ(r.heard.events.size(), 1u);
  EXPECT_EQ(r.heard.events[0].port_num, 2);
  EXPECT_EQ(r.heard.events[0].port.lid, 0x10);
  EXPECT_EQ(r.heard.events[0].port.state, PortState::kArmed);
  r.p2.next_port = b;
  r.p2.script = {DeviceEvent::kPortChanged};
  r.spin();
  ASSERT_EQ(r.heard.events.size(), 2u);
  EXPECT_EQ(r.heard.events[1].port.lid, 0x11);
  EXPECT_EQ(r.engine.local_port(2)->lid, 0x11);
  EXPECT_EQ(r.engine.local_port(2)->state, PortState::kActive);
  EXPECT_EQ(r.engine.local_port(1)->lid, 1);
  EXPECT_EQ(r.total().device_lost + r.total().device_back, 0u);
  EXPECT_EQ(r.total().device_events, 2u);
}

}  // namespace
}  // namespace madengine
