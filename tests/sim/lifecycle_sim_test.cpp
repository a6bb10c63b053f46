// The engine's device life cycle on the sim transport: the engine's node dies
// with SMPs in flight and returns (every request completes after a re-send,
// none lost or answered twice), stays away longer than device_wait_ms (every
// request fails with kDeviceLost, reported by TID), and a LID change set on
// its own port reaches a listener and Engine::local_port(). Deterministic:
// one thread, the fabric's clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "engine/engine.hpp"
#include "engine/lifecycle.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"

using namespace madengine;
using namespace madengine::sim;

namespace {

constexpr std::uint32_t kTimeoutMs = 5;  // sim time
constexpr Nanos kStepNs = 10 * kNanosPerMicro;

// Gives every response to the transaction manager.
class ResponseHook final : public MadHandler {
 public:
  explicit ResponseHook(TransactionManager& t) : txn_(t) {}
  void on_mad(MadBuf& buf, CoreContext&) noexcept override { txn_.on_response(buf); }

 private:
  TransactionManager& txn_;
};

// What a listener heard, and what became of each request.
struct Recorder final : LifecycleListener {
  std::vector<PortEvent> events;
  std::vector<std::uint64_t> resent, failed;
  std::vector<TxnStatus> failed_why;
  void on_port_event(const PortEvent& ev) noexcept override { events.push_back(ev); }
  void on_txn_report(const TxnReport& r) noexcept override {
    EXPECT_EQ(r.count, r.tids.size());
    for (std::uint64_t t : r.tids) {
      (r.resent ? resent : failed).push_back(t);
      if (!r.resent) failed_why.push_back(r.why);
    }
  }
};

struct Request {
  wire::DrPath path;
  std::uint64_t expect_guid = 0;  // the NodeGUID that must answer (0: not checked)
  std::vector<TxnResult> results;  // one per completion: more than one is a duplicate
};

void on_done(void* user, const TxnResult& r) noexcept { static_cast<Request*>(user)->results.push_back(r); }

MadBuf make_smp(std::uint8_t method, std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path,
                std::span<const std::uint8_t> data = {}) {
  MadBuf b{};
  wire::DrSmp smp = wire::make_dr_smp(method, attr, mod, 0, path);
  std::copy(data.begin(), data.end(), smp.data.begin());
  wire::encode(smp, std::span<std::uint8_t>(b.mad.bytes));
  b.len = wire::kMadSize;
  b.addr.lid = wire::kPermissiveLid;
  b.addr.port_num = 1;
  return b;
}

std::uint64_t answered_guid(const TxnResult& r) {
  const auto smp = wire::decode<wire::DrSmp>(std::span<const std::uint8_t>(r.response.mad.bytes));
  if (!smp || smp->smp_status() != wire::status::kOk) return 0;
  const auto ni = wire::decode<wire::NodeInfo>(std::span<const std::uint8_t>(smp->data));
  return ni ? ni->node_guid.get() : 0;
}

// One engine with a transaction manager on host-0-0 of a k=4 fat tree. The
// parameter is the manager's core: 0 (1 core, the transport's own) or 1
// (2 cores: the manager learns of the device through TransportLife).
class LifecycleSim : public ::testing::TestWithParam<std::uint16_t> {
 protected:
  void build(std::uint32_t device_wait_ms) {
    const std::uint16_t txn_core = GetParam();
    host_ = fabric_.find_node("host-0-0");
    leaf_ = fabric_.find_node("leaf-0");
    transport_ = std::make_unique<SimTransport>(fabric_, host_, 1);
    ASSERT_TRUE(transport_->open(AgentSpec{.smi = true, .is_sm = true, .gsi_client = true}));
    EngineConfig cfg;
    cfg.cores = static_cast<std::uint16_t>(txn_core + 1);
    cfg.pin = false;
    cfg.clock = &fabric_.clock();
    cfg.device_wait_ms = device_wait_ms;
    engine_ = std::make_unique<Engine>(cfg);
    engine_->add_transport(*transport_, 0);
    txn_ = std::make_unique<TransactionManager>(
        fabric_.clock(), engine_->core(txn_core),
        TransactionConfig{.core_id = static_cast<std::uint8_t>(txn_core), .window_max = 256, .window_per_dest_max = 64, .queue_max = 256});
    hook_ = std::make_unique<ResponseHook>(*txn_);
    engine_->set_response_hook(txn_core, *hook_);
    engine_->add_transaction_manager(txn_core, *txn_, 1);
    engine_->add_lifecycle_listener(txn_core, rec_);
  }

  // Polls until idle, moves time a step; repeats for `for_ns` of sim time.
  void drive(Nanos for_ns) {
    const Nanos end = fabric_.now_ns() + for_ns;
    while (fabric_.now_ns() < end) {
      for (int i = 0; i < 1000 && engine_->poll_all_once() != 0; ++i) {
      }
      fabric_.advance(kStepNs);
    }
  }

  // After the device is back: new requests are answered, every buffer but
  // the `baseline` returns to the pool, and all of them after quiesce.
  void expect_engine_works_and_releases_all(std::size_t baseline) {
    std::vector<Request> after;
    submit(after, 2);
    drive(10 * kNanosPerMilli);
    for (const Request& r : after) {
      ASSERT_EQ(r.results.size(), 1u);
      EXPECT_EQ(r.results[0].status, TxnStatus::kOk);
      EXPECT_EQ(answered_guid(r.results[0]), r.expect_guid);
    }
    EXPECT_EQ(engine_->pool().in_use(), baseline);
    engine_->quiesce();
    EXPECT_EQ(engine_->pool().in_use(), 0u);
  }

  // NodeInfo requests to the local port, leaf-0 and each of leaf-0's
  // neighbours, `per_dest` to each; all submitted now, sent on the next poll.
  void submit(std::vector<Request>& reqs, int per_dest) {
    std::vector<Request> dests;
    dests.push_back(Request{wire::DrPath{}, fabric_.node_guid(host_), {}});
    wire::DrPath to_leaf;
    to_leaf.push(1);
    dests.push_back(Request{to_leaf, fabric_.node_guid(leaf_), {}});
    for (std::uint8_t p = 1; p <= fabric_.num_ports(leaf_); ++p) {
      const PortIdx peer = fabric_.peer(fabric_.port(leaf_, p));
      if (peer == kNoPortIdx) continue;
      wire::DrPath path = to_leaf;
      path.push(p);
      dests.push_back(Request{path, fabric_.node_guid(fabric_.node_of(peer)), {}});
    }
    reqs.reserve(reqs.size() + dests.size() * static_cast<std::size_t>(per_dest));
    for (int i = 0; i < per_dest; ++i)
      for (const Request& d : dests) reqs.push_back(d);
    for (Request& r : reqs) {
      if (!r.results.empty()) continue;
      const MadBuf m = make_smp(wire::method::kGet, wire::smp_attr::kNodeInfo, 0, r.path);
      ASSERT_EQ(txn_->request(m, RequestOptions{.timeout_ms = kTimeoutMs, .retries = 3}, &on_done, &r),
                TxnStatus::kOk);
    }
  }

  CoreCounters counters() const { return engine_->stats().total(); }

  Fabric fabric_{make_fat_tree_2level({4})};
  std::uint32_t host_ = 0, leaf_ = 0;
  std::unique_ptr<SimTransport> transport_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TransactionManager> txn_;
  std::unique_ptr<ResponseHook> hook_;
  Recorder rec_;
};

TEST_P(LifecycleSim, DeviceReturnsInFlightRequestsAreResentOnce) {
  build(1000);
  drive(kNanosPerMilli);  // idle: the core holds its rx spares
  const std::size_t baseline = engine_->pool().in_use();

  std::vector<Request> reqs;
  submit(reqs, 8);
  const std::size_t n = reqs.size();
  ASSERT_GE(n, 40u);
  engine_->poll_all_once();  // sends every request
  ASSERT_EQ(txn_->in_flight(), n);
  fabric_.kill_node(host_);  // before any response is back

  // Much longer than timeout x retries: a paused manager neither retries into
  // the lost device nor times out.
  drive(100 * kNanosPerMilli);
  EXPECT_EQ(counters().device_lost, 1u);
  EXPECT_EQ(txn_->in_flight(), n);
  for (const Request& r : reqs) EXPECT_TRUE(r.results.empty());
  EXPECT_EQ(engine_->pool().in_use(), 0u) << "buffers held for the lost transport go back to the pool";
  EXPECT_EQ(engine_->local_port(1)->state, PortState::kDown);

  fabric_.revive_node(host_);
  drive(50 * kNanosPerMilli);
  const CoreCounters c = counters();
  EXPECT_EQ(c.device_back, 1u);
  EXPECT_EQ(c.txn_resent, n);
  EXPECT_EQ(c.txn_failed_device, 0u);
  EXPECT_EQ(txn_->in_flight(), 0u);

  std::set<std::uint64_t> tids;
  for (const Request& r : reqs) {
    ASSERT_EQ(r.results.size(), 1u) << "lost or duplicated";
    EXPECT_EQ(r.results[0].status, TxnStatus::kOk) << to_string(r.results[0].status);
    EXPECT_EQ(answered_guid(r.results[0]), r.expect_guid);
    tids.insert(r.results[0].tid);
  }
  EXPECT_EQ(tids.size(), n);
  // The report names exactly the requests that were in flight.
  EXPECT_EQ(std::set<std::uint64_t>(rec_.resent.begin(), rec_.resent.end()), tids);
  EXPECT_EQ(rec_.resent.size(), n);
  EXPECT_TRUE(rec_.failed.empty());
  EXPECT_EQ(txn_->counters().resent, n);
  // Listeners heard the loss and the return, in that order.
  ASSERT_GE(rec_.events.size(), 2u);
  EXPECT_EQ(rec_.events[0].event, DeviceEvent::kDeviceLost);
  EXPECT_EQ(rec_.events[0].port_num, 1);
  EXPECT_TRUE(std::any_of(rec_.events.begin(), rec_.events.end(),
                          [](const PortEvent& e) { return e.event == DeviceEvent::kDeviceBack; }));

  // The engine works afterwards.
  expect_engine_works_and_releases_all(baseline);
}

TEST_P(LifecycleSim, DeviceAwayLongerThanWaitFailsEveryRequest) {
  build(10);
  drive(kNanosPerMilli);
  const std::size_t baseline = engine_->pool().in_use();

  std::vector<Request> reqs;
  submit(reqs, 4);
  const std::size_t n = reqs.size();
  engine_->poll_all_once();
  fabric_.kill_node(host_);
  drive(30 * kNanosPerMilli);

  std::set<std::uint64_t> tids;
  for (const Request& r : reqs) {
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].status, TxnStatus::kDeviceLost);
    tids.insert(r.results[0].tid);
  }
  EXPECT_EQ(tids.size(), n);
  EXPECT_EQ(std::set<std::uint64_t>(rec_.failed.begin(), rec_.failed.end()), tids);
  EXPECT_TRUE(std::all_of(rec_.failed_why.begin(), rec_.failed_why.end(),
                          [](TxnStatus s) { return s == TxnStatus::kDeviceLost; }));
  EXPECT_EQ(counters().txn_failed_device, n);
  EXPECT_EQ(txn_->counters().failed_by[static_cast<std::size_t>(TxnStatus::kDeviceLost)], n);

  // Still away: a new request fails too, at the next check.
  std::vector<Request> late;
  submit(late, 1);
  drive(2 * kNanosPerMilli);
  for (const Request& r : late) {
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].status, TxnStatus::kDeviceLost);
  }
  EXPECT_EQ(engine_->pool().in_use(), 0u);

  // It returns: nothing left to re-send, new requests work.
  fabric_.revive_node(host_);
  drive(5 * kNanosPerMilli);
  EXPECT_EQ(counters().device_back, 1u);
  EXPECT_EQ(counters().txn_resent, 0u);
  expect_engine_works_and_releases_all(baseline);
}

TEST_P(LifecycleSim, LidChangeReachesListenerAndLocalPort) {
  build(1000);
  drive(kNanosPerMilli);
  EXPECT_EQ(engine_->local_port(1)->lid, 0);
  EXPECT_FALSE(engine_->local_port(2).has_value());

  // Get our own PortInfo, then set a LID and SM LID on it (as an SM does for itself).
  Request get{wire::DrPath{}, 0, {}};
  ASSERT_EQ(txn_->request(make_smp(wire::method::kGet, wire::smp_attr::kPortInfo, 1, get.path), {}, &on_done, &get),
            TxnStatus::kOk);
  drive(kNanosPerMilli);
  ASSERT_EQ(get.results.size(), 1u);
  ASSERT_EQ(get.results[0].status, TxnStatus::kOk);
  const auto smp = wire::decode<wire::DrSmp>(std::span<const std::uint8_t>(get.results[0].response.mad.bytes));
  ASSERT_TRUE(smp.has_value());
  auto pi = wire::decode<wire::PortInfo>(std::span<const std::uint8_t>(smp->data));
  ASSERT_TRUE(pi.has_value());
  pi->lid = wire::be16::from(0x42);
  pi->master_sm_lid = wire::be16::from(0x42);
  pi->set_port_state(0);  // no change
  pi->set_port_physical_state(0);
  std::array<std::uint8_t, wire::kSmpDataSize> data{};
  wire::encode(*pi, std::span<std::uint8_t>(data));
  Request set{wire::DrPath{}, 0, {}};
  ASSERT_EQ(txn_->request(make_smp(wire::method::kSet, wire::smp_attr::kPortInfo, 1, set.path, data), {}, &on_done,
                          &set),
            TxnStatus::kOk);
  drive(2 * kNanosPerMilli);
  ASSERT_EQ(set.results.size(), 1u);
  ASSERT_EQ(set.results[0].status, TxnStatus::kOk);

  ASSERT_FALSE(rec_.events.empty());
  const PortEvent& ev = rec_.events.back();
  EXPECT_EQ(ev.event, DeviceEvent::kPortChanged);
  EXPECT_EQ(ev.port_num, 1);
  EXPECT_EQ(ev.port.lid, 0x42);
  EXPECT_EQ(ev.port.sm_lid, 0x42);
  EXPECT_EQ(engine_->local_port(1)->lid, 0x42);
  EXPECT_EQ(counters().device_lost, 0u);
  engine_->quiesce();
}

INSTANTIATE_TEST_SUITE_P(ManagerCore, LifecycleSim, ::testing::Values(std::uint16_t{0}, std::uint16_t{1}),
                         [](const ::testing::TestParamInfo<std::uint16_t>& p) {
                           return p.param == 0 ? "SameCore" : "OtherCore";
                         });

TEST(LifecycleSetup, ManagerIsEitherPollerOrManaged) {
  ManualClock clock;
  EngineConfig cfg;
  cfg.pin = false;
  cfg.clock = &clock;
  Engine engine(cfg);
  TransactionManager a(clock, engine.core(0)), b(clock, engine.core(0));
  engine.add_poller(0, a);
  EXPECT_THROW(engine.add_transaction_manager(0, a), std::invalid_argument);
  engine.add_transaction_manager(0, b);
  EXPECT_THROW(engine.add_transaction_manager(0, b), std::invalid_argument);
  EXPECT_THROW(engine.add_poller(0, b), std::invalid_argument);
  EXPECT_THROW(engine.add_transaction_manager(1, b), std::invalid_argument);
}

}  // namespace
