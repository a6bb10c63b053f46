// HaAgent on the sim fabric (label sim, deterministic: the fabric owns time,
// one thread drives every engine): SMs on one fabric elect one master over
// the wire, a standby takes over within its polling budget when the
// master's node dies, a higher-priority SM started later gets the subnet by
// HANDOVER/ACKNOWLEDGE, and two subnets joined at run time end with one
// master (SMInfo Gets during an election answered with its outcome). Each
// SM here is a small host (discovery + HaAgent); the full SubnetManager
// integration adds LIDs, routing and programming.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <vector>

#include "engine/engine.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/ha/ha_agent.hpp"
#include "sm/smp_queue.hpp"
#include "ha_host.hpp"

namespace madengine::sm::ha {
namespace {

constexpr Nanos kStepNs = kNanosPerMilli;

using testing::HaHost;

struct Rig {
  sim::Fabric fabric;
  std::vector<std::unique_ptr<sim::SimTransport>> transports;
  std::vector<std::unique_ptr<HaHost>> sms;
  explicit Rig(const sim::Topology& t) : fabric(t, sim::FabricConfig{.seed = 1}) {}
  ~Rig() { sms.clear(); }
  HaHost& add(std::uint32_t node, std::uint8_t prio, HaConfig cfg) {
    transports.push_back(std::make_unique<sim::SimTransport>(fabric, node, 1));
    if (!transports.back()->open(AgentSpec{.smi = true, .is_sm = true})) throw std::runtime_error("sim transport did not open");
    sms.push_back(std::make_unique<HaHost>(*transports.back(), &fabric.clock(), prio, cfg));
    return *sms.back();
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& s : sms) work += s->engine().poll_all_once();
      if (work == 0) fabric.advance(kStepNs);
    }
    return pred();
  }
};

HaConfig fast_polls() { return HaConfig{.poll_interval_ms = 100, .poll_retries = 3}; }

TEST(HaAgentSim, TwoSmsElectOneMaster) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  HaHost& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  HaHost& hi = rig.add(rig.fabric.find_node("host-1-0"), 9, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return hi.state() == wire::SmState::kMaster && lo.state() == wire::SmState::kStandby; },
                            10'000));
  EXPECT_EQ(lo.agent().machine().polled_guid(), hi.agent().machine().self().guid);
  // Polls keep succeeding: it stays standby.
  const auto polls0 = lo.agent().counters().polls;
  ASSERT_TRUE(rig.run_until([&] { return lo.agent().counters().polls >= polls0 + 10; }, 5'000));
  EXPECT_EQ(lo.state(), wire::SmState::kStandby);
  EXPECT_EQ(lo.agent().counters().polls_failed, 0u);
  EXPECT_EQ(lo.programmed(), 0u);
  EXPECT_GE(hi.programmed(), 1u);
}

TEST(HaAgentSim, StandbyTakesOverWithinPollingBudgetWhenMasterDies) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  const std::uint32_t master_node = rig.fabric.find_node("host-1-0");
  HaHost& hi = rig.add(master_node, 9, fast_polls());
  HaHost& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return lo.state() == wire::SmState::kStandby && hi.programmed() >= 1; }, 10'000));
  const Nanos t0 = rig.fabric.now_ns();
  rig.fabric.kill_node(master_node);
  ASSERT_TRUE(rig.run_until([&] { return lo.state() == wire::SmState::kMaster && lo.programmed() >= 1; }, 10'000));
  const Nanos took_ms = (rig.fabric.now_ns() - t0) / kNanosPerMilli;
  // Budget: 3 failed polls at 100 ms (each poll waits up to its 100 ms) and a sweep.
  EXPECT_LE(took_ms, 3 * (100 + 100) + 200) << took_ms << " ms of sim time";
  EXPECT_GE(lo.agent().counters().polls_failed, 3u);
  const auto log = lo.log();
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[log.size() - 2].to, wire::SmState::kDiscovering);
  EXPECT_EQ(log.back().to, wire::SmState::kMaster);
}

TEST(HaAgentSim, HigherSmStartedLaterGetsTheSubnetByHandover) {
  Rig rig(sim::make_fat_tree_2level({.k = 4}));
  HaHost& lo = rig.add(rig.fabric.find_node("host-0-0"), 1, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return lo.state() == wire::SmState::kMaster && lo.programmed() >= 1; }, 10'000));
  HaHost& hi = rig.add(rig.fabric.find_node("host-1-0"), 9, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return hi.state() == wire::SmState::kMaster && lo.state() == wire::SmState::kStandby &&
                                         hi.asserted() >= 1; },
                            10'000));
  EXPECT_EQ(lo.agent().counters().handovers_sent, 1u);
  EXPECT_EQ(hi.agent().counters().acks_sent, 1u);
  EXPECT_EQ(lo.agent().machine().polled_guid(), hi.agent().machine().self().guid);
  EXPECT_GE(hi.asserted(), 1u);  // a handed subnet is asserted whole
  // It stays that way.
  ASSERT_FALSE(rig.run_until([&] { return lo.state() != wire::SmState::kStandby; }, 2'000));
}

TEST(HaAgentSim, TwoSubnetsJoinedEndWithOneMaster) {
  const sim::TwoSubnets two = sim::make_two_subnets(4);
  Rig rig(two.topo);
  HaHost& a = rig.add(two.sm_a, 3, fast_polls());
  HaHost& b = rig.add(two.sm_b, 7, fast_polls());
  ASSERT_TRUE(rig.run_until([&] { return a.state() == wire::SmState::kMaster && b.state() == wire::SmState::kMaster &&
                                         a.programmed() >= 1 && b.programmed() >= 1; },
                            10'000));
  // Phase 1, discovery: the link comes up; both masters' sweeps find each other.
  ASSERT_TRUE(rig.fabric.link(rig.fabric.port(two.join_a, two.join_a_port), rig.fabric.port(two.join_b, two.join_b_port)));
  // Phases 2-5: election (b outranks a), quiescence (a stops programming and
  // hands over), master assertion (b sweeps and asserts all), standby (a).
  ASSERT_TRUE(rig.run_until([&] { return b.state() == wire::SmState::kMaster && a.state() == wire::SmState::kStandby &&
                                         b.asserted() >= 2; },
                            10'000));
  EXPECT_EQ(a.agent().machine().polled_guid(), b.agent().machine().self().guid);
  EXPECT_EQ(a.agent().counters().handovers_sent, 1u);
  // b's SMInfo Get reached a during a's election and was answered after it
  // (what OpenSM as b needs: ha_join_ibsim_test.cpp).
  EXPECT_GE(a.agent().counters().gets_held, 1u);
  EXPECT_GE(b.asserted(), 2u);  // its first mastership, then the joined subnet
  const auto a_prog = a.programmed();
  ASSERT_FALSE(rig.run_until([&] { return a.programmed() != a_prog || a.state() != wire::SmState::kStandby; }, 2'000));
}

}  // namespace
}  // namespace madengine::sm::ha
