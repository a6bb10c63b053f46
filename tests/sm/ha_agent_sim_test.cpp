// HaAgent on the sim fabric (label sim, deterministic: the fabric owns time,
// one thread drives every engine): SMs on one fabric elect one master over
// the wire, a standby takes over within its polling budget when the
// master's node dies, a higher-priority SM started later gets the subnet by
// HANDOVER/ACKNOWLEDGE, and two subnets joined at run time end with one
// master. Each SM here is a small host (discovery + HaAgent); the full
// SubnetManager integration adds LIDs, routing and programming.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "madengine/engine/engine.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/ha/ha_agent.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm::ha {
namespace {

constexpr Nanos kStepNs = kNanosPerMilli;

class Handler final : public MadHandler {
 public:
  explicit Handler(std::function<void(MadBuf&, CoreContext&)> fn) : fn_(std::move(fn)) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { fn_(buf, ctx); }

 private:
  std::function<void(MadBuf&, CoreContext&)> fn_;
};

// One SM: its own engine on the shared fabric, discovery, and an HaAgent.
// Torn down like the SubnetManager: task frames, then the queue is closed,
// then the transaction manager cancels what is left.
struct MiniSm {
  sim::SimTransport transport;
  Engine engine;
  std::unique_ptr<Scheduler> sched_p;
  std::unique_ptr<TransactionManager> txn_p;
  std::unique_ptr<SmpQueue> queue_p;
  std::unique_ptr<HaAgent> agent_p;
  Handler sma{[this](MadBuf& b, CoreContext& ctx) { agent_p->on_sminfo(b, ctx); }};
  Handler responses{[this](MadBuf& b, CoreContext&) { txn_p->on_response(b); }};
  std::uint32_t master_sweep_ms;
  std::uint64_t sweeps = 0, programmed = 0, asserted = 0;
  std::vector<Transition> log;

  MiniSm(sim::Fabric& f, std::uint32_t node, std::uint8_t priority, HaConfig cfg, std::uint32_t sweep_ms = 300)
      : transport(f, node, 1), engine(EngineConfig{.cores = 1, .pin = false, .clock = &f.clock()}), master_sweep_ms(sweep_ms) {
    if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) throw std::runtime_error("sim transport did not open");
    engine.add_transport(transport, 0);
    sched_p = std::make_unique<Scheduler>(f.clock(), SchedulerConfig{.tasks_max = 8});
    txn_p = std::make_unique<TransactionManager>(
        f.clock(), engine.core(0),
        TransactionConfig{.core_id = 0, .window_max = 64, .window_per_dest_max = 4, .queue_max = 64});
    queue_p = std::make_unique<SmpQueue>(*txn_p, 64, RequestOptions{.timeout_ms = 50, .retries = 1});
    agent_p = std::make_unique<HaAgent>(
        *sched_p, *txn_p, engine.core(0),
        SmIdentity{.guid = f.port_guid(f.port(node, 1)), .priority = priority, .sm_key = 1}, 1, cfg);
  }
  ~MiniSm() {
    sched_p.reset();
    queue_p->close();
    txn_p.reset();
  }
  HaAgent& agent() { return *agent_p; }
  void start() {
    engine.add_poller(0, *txn_p);
    engine.add_poller(0, *sched_p);
    engine.set_response_hook(0, responses);
    for (const auto klass : {wire::MgmtClass::kSubnLid, wire::MgmtClass::kSubnDirected}) {
      const auto k = static_cast<std::uint8_t>(klass);
      engine.add_handler(DispatchKey{k, wire::method::kGet, wire::smp_attr::kSmInfo}, sma, OwnerSelector::fixed(0));
      engine.add_handler(DispatchKey{k, wire::method::kSet, wire::smp_attr::kSmInfo}, sma, OwnerSelector::fixed(0));
    }
    agent_p->set_on_transition([this](const Transition& t) { log.push_back(t); });
    agent_p->start();
    sched_p->spawn(agent_p->poll_loop());
    sched_p->spawn(run());
  }
  Task<void> run() {
    bool sweep = true;
    Nanos next = 0;
    for (;;) {
      const wire::SmState st = agent_p->state();
      const bool sweeping = st == wire::SmState::kDiscovering || st == wire::SmState::kMaster;
      if (sweeping && (sweep || sched_p->clock().now_ns() >= next)) {
        sweep = false;
        DiscoveryResult d = co_await discover(*queue_p, DiscoveryOptions{.port_num = 1});
        ++sweeps;
        const SweepDecision dec = co_await agent_p->after_discovery(*queue_p, d.fabric, transport.local_port().port_guid, 0);
        if (dec.program) {
          ++programmed;
          agent_p->note_activity();
        }
        if (dec.assert_all) ++asserted;
        next = sched_p->clock().now_ns() + Nanos{master_sweep_ms} * kNanosPerMilli;
      }
      const Wake w = co_await sched_p->sleep_for(10 * kNanosPerMilli);
      if (!w) co_return;
      if (agent_p->take_sweep_request()) sweep = true;
    }
  }
};

struct Rig {
  sim::Fabric fabric;
  std::vector<std::unique_ptr<MiniSm>> sms;
  explicit Rig(const sim::Topology& t) : fabric(t, sim::FabricConfig{.seed = 1}) {}
  ~Rig() {
    for (auto& s : sms) s->engine.quiesce();
  }
  MiniSm& add(std::uint32_t node, std::uint8_t prio, HaConfig cfg) {
    sms.push_back(std::make_unique<MiniSm>(fabric, node, prio, cfg));
    sms.back()->start();
    return *sms.back();
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& s : sms) work += s->engine.poll_all_once();
      if (work == 0) fabric.advance(kStepNs);
    }
    return pred();
  }
};

HaConfig fast_polls() { return HaConfig{.poll_interval_ms = 100, .poll_retries = 3}; }

TEST(HaAgentSim, TwoSmsElectOneMaster) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  MiniSm& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  MiniSm& hi = rig.add(rig.fabric.find_node("host-1-0"), 9, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return hi.agent().state() == wire::SmState::kMaster && lo.agent().state() == wire::SmState::kStandby; },
                            10'000));
  EXPECT_EQ(lo.agent().machine().polled_guid(), hi.agent().machine().self().guid);
  // Polls keep succeeding: it stays standby.
  const auto polls0 = lo.agent().counters().polls;
  ASSERT_TRUE(rig.run_until([&] { return lo.agent().counters().polls >= polls0 + 10; }, 5'000));
  EXPECT_EQ(lo.agent().state(), wire::SmState::kStandby);
  EXPECT_EQ(lo.agent().counters().polls_failed, 0u);
  EXPECT_EQ(lo.programmed, 0u);
  EXPECT_GE(hi.programmed, 1u);
}

TEST(HaAgentSim, StandbyTakesOverWithinPollingBudgetWhenMasterDies) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  const std::uint32_t master_node = rig.fabric.find_node("host-1-0");
  MiniSm& hi = rig.add(master_node, 9, fast_polls());
  MiniSm& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return lo.agent().state() == wire::SmState::kStandby && hi.programmed >= 1; }, 10'000));
  const Nanos t0 = rig.fabric.now_ns();
  rig.fabric.kill_node(master_node);
  ASSERT_TRUE(rig.run_until([&] { return lo.agent().state() == wire::SmState::kMaster && lo.programmed >= 1; }, 10'000));
  const Nanos took_ms = (rig.fabric.now_ns() - t0) / kNanosPerMilli;
  // Budget: 3 failed polls at 100 ms (each poll waits up to its 100 ms) and a sweep.
  EXPECT_LE(took_ms, 3 * (100 + 100) + 200) << took_ms << " ms of sim time";
  EXPECT_GE(lo.agent().counters().polls_failed, 3u);
  ASSERT_GE(lo.log.size(), 3u);
  EXPECT_EQ(lo.log[lo.log.size() - 2].to, wire::SmState::kDiscovering);
  EXPECT_EQ(lo.log.back().to, wire::SmState::kMaster);
}

TEST(HaAgentSim, HigherSmStartedLaterGetsTheSubnetByHandover) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  MiniSm& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return lo.agent().state() == wire::SmState::kMaster && lo.programmed >= 1; }, 10'000));
  MiniSm& hi = rig.add(rig.fabric.find_node("host-1-0"), 9, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return hi.agent().state() == wire::SmState::kMaster && lo.agent().state() == wire::SmState::kStandby &&
                                         hi.asserted >= 1; },
                            10'000));
  EXPECT_EQ(lo.agent().counters().handovers_sent, 1u);
  EXPECT_EQ(hi.agent().counters().acks_sent, 1u);
  EXPECT_EQ(lo.agent().machine().polled_guid(), hi.agent().machine().self().guid);
  EXPECT_GE(hi.asserted, 1u);  // a handed subnet is asserted whole
  // It stays that way.
  ASSERT_FALSE(rig.run_until([&] { return lo.agent().state() != wire::SmState::kStandby; }, 2'000));
}

TEST(HaAgentSim, TwoSubnetsJoinedEndWithOneMaster) {
  const sim::TwoSubnets two = sim::make_two_subnets(4);
  Rig rig(two.topo);
  MiniSm& a = rig.add(two.sm_a, 3, fast_polls());
  MiniSm& b = rig.add(two.sm_b, 7, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return a.agent().state() == wire::SmState::kMaster && b.agent().state() == wire::SmState::kMaster &&
                                         a.programmed >= 1 && b.programmed >= 1; },
                            10'000));
  // Phase 1, discovery: the link comes up; both masters' sweeps find each other.
  ASSERT_TRUE(rig.fabric.link(rig.fabric.port(two.join_a, two.join_a_port), rig.fabric.port(two.join_b, two.join_b_port)));
  // Phases 2-5: election (b outranks a), quiescence (a stops programming and
  // hands over), master assertion (b sweeps and asserts all), standby (a).
  ASSERT_TRUE(rig.run_until([&] { return b.agent().state() == wire::SmState::kMaster && a.agent().state() == wire::SmState::kStandby &&
                                         b.asserted >= 2; },
                            10'000));
  EXPECT_EQ(a.agent().machine().polled_guid(), b.agent().machine().self().guid);
  EXPECT_EQ(a.agent().counters().handovers_sent, 1u);
  EXPECT_GE(b.asserted, 2u);  // its first mastership, then the joined subnet
  const auto a_prog = a.programmed;
  ASSERT_FALSE(rig.run_until([&] { return a.programmed != a_prog || a.agent().state() != wire::SmState::kStandby; }, 2'000));
}

}  // namespace
}  // namespace madengine::sm::ha
