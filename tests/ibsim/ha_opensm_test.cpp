// HA against OpenSM 3.3.23 on ibsim (label ibsim): madengine's HaAgent (in
// the small host of tests/sm/ha_host.hpp: discovery + agent, it programs
// nothing) and OpenSM elect, hand over and take over through real SMInfo
// SMPs, checked with `sminfo` on each SM's port: OpenSM hands over to a
// higher madengine; madengine hands over to a higher OpenSM; a standby
// madengine takes over when the OpenSM master is stopped.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "engine/umad/umad_transport.hpp"
#include "ha_host.hpp"
#include "ibsim_harness.hpp"
#include "engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sm/sm.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::topology_lids;
using ibsim::wait_until;
using sm::ha::HaConfig;
using sm::ha::testing::HaHost;

constexpr auto kDiagTimeout = std::chrono::seconds(60);  // a bound for a hung diag, not a timing check

// `sminfo -D 0` on a host: the SMInfo of the SM attached there. A short
// bound: an SM busy in its first sweep may not answer (the shim never times
// out a send), and the callers retry.
std::string sminfo_at(const IbsimFabric& f, const char* host) {
  const auto r = f.run("sminfo -D 0", host, std::chrono::seconds(5));
  return r.out + r.err;
}

struct Attached {
  SteadyClock clock;
  UmadTransport transport{{}, clock};
  std::unique_ptr<HaHost> host;
  bool start(std::uint8_t prio, HaConfig cfg) {
    if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) return false;
    host = std::make_unique<HaHost>(transport, nullptr, prio, cfg, /*sm_key=*/1);
    host->engine().start();
    return true;
  }
  ~Attached() {
    host.reset();
    transport.close();
  }
};

HaConfig fast_polls() { return HaConfig{.poll_interval_ms = 100, .poll_retries = 3, .poll_timeout_ms = 100}; }

TEST(HaOpenSm, OpenSmHandsOverToHigherMadengine) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(1, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  fabric.attach_self("H2");
  Attached me;
  ASSERT_TRUE(me.start(10, fast_polls()));
  ASSERT_TRUE(wait_until([&] { return me.host->state() == wire::SmState::kMaster; }, 60s)) << fabric.opensm_log();
  // OpenSM: STANDBY; us: MASTER, as each SM's port answers.
  EXPECT_TRUE(wait_until([&] { return sminfo_at(fabric, "H1").find("SMINFO_STANDBY") != std::string::npos; }, 30s))
      << sminfo_at(fabric, "H1");
  const std::string ours = sminfo_at(fabric, "H2");
  EXPECT_NE(ours.find("SMINFO_MASTER"), std::string::npos) << ours;
  EXPECT_NE(ours.find("priority 10"), std::string::npos) << ours;
  // Every port still ACTIVE (OpenSM's configuration stays).
  for (const char* path : {"0", "0,1,2,2,2"}) {
    const auto pi = fabric.run(std::string("smpquery -D portinfo ") + path + " 1", "H1", kDiagTimeout);
    EXPECT_NE(pi.out.find("Active"), std::string::npos) << path << ": " << pi.out << pi.err;
  }
  const auto log = me.host->log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ(log.back().to, wire::SmState::kMaster);
}

TEST(HaOpenSm, MadengineHandsOverToHigherOpenSm) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H2");
  Attached me;
  ASSERT_TRUE(me.start(1, fast_polls()));
  ASSERT_TRUE(wait_until([&] { return me.host->state() == wire::SmState::kMaster; }, 30s));
  ASSERT_TRUE(fabric.start_opensm(10, "H1"));
  // OpenSM finds us master and stands by; our next sweep finds a higher SM
  // and hands over; OpenSM takes the subnet. (This host programs nothing, so
  // the fabric OpenSM takes is unconfigured: OpenSM 3.3.23 then needs about
  // a minute to log SUBNET UP; the SubnetManager test below hands over a
  // configured fabric.)
  ASSERT_TRUE(wait_until([&] { return me.host->state() == wire::SmState::kStandby; }, 60s)) << fabric.opensm_log();
  EXPECT_TRUE(wait_until([&] { return sminfo_at(fabric, "H1").find("SMINFO_MASTER") != std::string::npos; }, 30s))
      << sminfo_at(fabric, "H1");
  EXPECT_NE(sminfo_at(fabric, "H2").find("SMINFO_STANDBY"), std::string::npos) << sminfo_at(fabric, "H2");
}

TEST(HaOpenSm, StandbyMadengineTakesOverWhenOpenSmStops) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(10, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  fabric.attach_self("H2");
  Attached me;
  ASSERT_TRUE(me.start(1, fast_polls()));
  ASSERT_TRUE(wait_until([&] { return me.host->state() == wire::SmState::kStandby; }, 60s));
  const std::string lids_before = topology_lids(fabric, "H2");
  fabric.stop_opensm();
  ASSERT_TRUE(wait_until([&] { return me.host->state() == wire::SmState::kMaster; }, 30s));
  const auto log = me.host->log();
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2].to, wire::SmState::kDiscovering);
  EXPECT_STREQ(log[log.size() - 2].reason, "master polling failed");
  EXPECT_NE(sminfo_at(fabric, "H2").find("SMINFO_MASTER"), std::string::npos);
  // The host programs nothing, so this shows only that the takeover itself
  // renumbers nothing.
  EXPECT_EQ(topology_lids(fabric, "H2"), lids_before);
}

// The full SubnetManager (LIDs, routing, bring-up) with OpenSM.
struct SmAttached {
  SteadyClock clock;
  UmadTransport transport{{}, clock};
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  std::unique_ptr<sm::SubnetManager> sm;
  bool start(std::uint8_t prio) {
    if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) return false;
    engine = std::make_unique<Engine>(EngineConfig{.cores = 1, .pin = false});
    engine->add_transport(transport, 0);
    sm::SmConfig cfg;
    cfg.priority = prio;
    cfg.sm_key = 1;  // OpenSM's default: SMs with other keys ignore each other
    cfg.ha_poll_interval_ms = 100;
    cfg.ha_poll_retries = 3;
    cfg.light_sweep_interval_ms = 500;
    sm = std::make_unique<sm::SubnetManager>(*engine, transport, cfg, store);
    engine->start();
    return true;
  }
  ~SmAttached() {
    if (engine) engine->stop();
    sm.reset();
    engine.reset();
    transport.close();
  }
};

TEST(HaOpenSmSubnetManager, OpenSmHandsOverAndWeProgramTheSubnet) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(1, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  const std::string lids_before = topology_lids(fabric, "H1");
  fabric.attach_self("H2");
  SmAttached me;
  ASSERT_TRUE(me.start(10));
  ASSERT_TRUE(me.sm->wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 60s))
      << fabric.opensm_log();
  EXPECT_TRUE(wait_until([&] { return sminfo_at(fabric, "H1").find("SMINFO_STANDBY") != std::string::npos; }, 30s))
      << sminfo_at(fabric, "H1");
  // `sminfo` from H1 asks the SM its port's MasterSMLID names: us now.
  const auto si = fabric.run("sminfo", "H1", kDiagTimeout);
  EXPECT_NE(si.out.find("SMINFO_MASTER"), std::string::npos) << si.out << si.err;
  EXPECT_NE(si.out.find("priority 10"), std::string::npos) << si.out;
  for (const char* path : {"0", "0,1", "0,1,2", "0,1,2,2", "0,1,2,2,2"}) {
    const auto pi = fabric.run(std::string("smpquery -D portinfo ") + path + " 1", "H1", kDiagTimeout);
    EXPECT_NE(pi.out.find("Active"), std::string::npos) << path << ": " << pi.out << pi.err;
  }
  // OpenSM's LIDs kept: no renumbering on takeover.
  EXPECT_EQ(me.sm->status().last_heavy.lids_new, 0u);
  EXPECT_EQ(topology_lids(fabric, "H1"), lids_before);
}

TEST(HaOpenSmSubnetManager, HigherOpenSmJoiningGetsTheSubnetFromUs) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H2");
  SmAttached me;
  ASSERT_TRUE(me.start(1));
  ASSERT_TRUE(me.sm->wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 60s));
  const std::string lids_before = topology_lids(fabric, "H2");
  ASSERT_TRUE(fabric.start_opensm(10, "H1"));
  // OpenSM finds us master and stands by (trap 144 to us); our sweep finds a
  // higher SM: HANDOVER; once OpenSM shows MASTER we stand by.
  ASSERT_TRUE(me.sm->wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kStandby; }, 60s))
      << fabric.opensm_log();
  // One HANDOVER, or two when OpenSM's second trap 144 makes us sweep again
  // before it shows MASTER (a re-sent HANDOVER covers a lost one).
  EXPECT_GE(me.sm->status().ha.handovers_sent, 1u);
  EXPECT_LE(me.sm->status().ha.handovers_sent, 2u);
  EXPECT_TRUE(wait_until([&] { return sminfo_at(fabric, "H1").find("SMINFO_MASTER") != std::string::npos; }, 30s))
      << sminfo_at(fabric, "H1");
  EXPECT_NE(sminfo_at(fabric, "H2").find("SMINFO_STANDBY"), std::string::npos) << sminfo_at(fabric, "H2");
  // OpenSM keeps our LIDs.
  EXPECT_TRUE(wait_until([&] { return topology_lids(fabric, "H2") == lids_before; }, 30s)) << topology_lids(fabric, "H2");
}

TEST(HaOpenSmSubnetManager, StandbyTakesOverFromStoppedOpenSmKeepingLids) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(10, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  fabric.attach_self("H2");
  SmAttached me;
  ASSERT_TRUE(me.start(1));
  ASSERT_TRUE(me.sm->wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kStandby; }, 60s));
  const std::string lids_before = topology_lids(fabric, "H2");
  fabric.stop_opensm();
  ASSERT_TRUE(me.sm->wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 30s));
  EXPECT_EQ(me.sm->status().last_heavy.lids_new, 0u);
  EXPECT_EQ(topology_lids(fabric, "H2"), lids_before);
  const auto si = fabric.run("sminfo", "H2", kDiagTimeout);
  EXPECT_NE(si.out.find("SMINFO_MASTER"), std::string::npos) << si.out << si.err;
}

}  // namespace
}  // namespace madengine
