// A master busy routing keeps its standby (label ibsim, wall clock): our SM
// masters a star3 fabric (one switch, three hosts) with a routing hook that takes 2 s on every sweep
// after the first (a large fabric's routing, made slow on purpose), and a
// standby polls it every 100 ms with 3 retries: OpenSM 3.3.23
// (sminfo_polling_timeout 100, polling_retry_number 3) in one test, our own
// SM in the other. Routing runs on the compute pool, so the master's core
// answers every SMInfo poll throughout and the standby never leaves STANDBY.
// A control runs the same routing on the master's core (no compute pool):
// the standby's polls go unanswered and OpenSM leaves STANDBY to sweep the
// subnet (it finds us again once our core answers), which shows the test
// sees the stall it guards against.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "sm/routing/routing.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::wait_until;

constexpr auto kSlowRouting = 2000ms;  // > 100 ms x 3 polls many times over

struct HookCalls {
  std::atomic<int> started{0}, finished{0};
};

// Min-hop LFTs, after kSlowRouting of wall time on every call but the first.
sm::RoutingHook slow_minhop(HookCalls& calls) {
  return [&calls](const fabric::Fabric& f, std::vector<fabric::Lft>& lfts, std::string& error) {
    struct Done {
      HookCalls& c;
      ~Done() { ++c.finished; }
    } done{calls};
    if (calls.started.fetch_add(1) > 0) std::this_thread::sleep_for(kSlowRouting);
    sm::RoutingResult r = sm::compute_routes(f, sm::RoutingOptions{});
    if (!r.ok()) {
      error = r.error;
      return false;
    }
    for (auto& lft : lfts)
      for (const auto& got : r.lfts)
        if (got.node == lft.node) lft.ports = got.ports;
    return true;
  };
}

struct BusyMaster {
  HookCalls calls;
  ibsim::MadengineRig rig;
  // `offload`: routing on the node's compute pool (as the daemon runs it);
  // otherwise inline on the SM's core.
  bool start(bool offload) {
    node::NodeConfig c = ibsim::MadengineRig::opensm_keyed();
    c.sm.priority = 10;
    return rig.start(c, [this, offload](sm::SmConfig& s) {
      s.routing_hook = slow_minhop(calls);
      if (!offload) s.compute = nullptr;
    });
  }
  sm::SubnetManager& sm() { return rig.sm(); }
  // A heavy sweep routed slowly from start to end: true once a routing
  // that started after the request has finished, and the SM is idle again.
  bool busy_sweep(std::chrono::milliseconds timeout) {
    const int started = calls.started.load();
    sm().request_heavy_sweep();
    return wait_until([&] { return calls.started.load() > started && calls.finished.load() == calls.started.load(); },
                      timeout);
  }
};

std::string opensm_states(const IbsimFabric& f) {
  std::string out;
  const std::string log = f.opensm_log();
  for (std::size_t at = log.find("Entering "); at != std::string::npos; at = log.find("Entering ", at + 1))
    out += log.substr(at, log.find('\n', at) - at) + "\n";
  return out;
}

// OpenSM standby at 100 ms x 3; `offload` says where the master routes.
// `left_standby`: OpenSM gave up on its master and swept the subnet
// (DISCOVERING again after STANDBY), to become master or to find it again.
void run_with_opensm_standby(bool offload, bool& left_standby, std::string& states) {
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");
  BusyMaster m;
  ASSERT_TRUE(m.start(offload));
  ASSERT_TRUE(m.sm().wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 60s));
  const std::string opts = fabric.work_dir() + "/opensm-polling.conf";
  std::ofstream(opts) << "sminfo_polling_timeout 100\npolling_retry_number 3\n";
  ASSERT_TRUE(fabric.start_opensm(5, "H2", {"-F", opts}));
  ASSERT_TRUE(wait_until([&] { return opensm_states(fabric).find("STANDBY") != std::string::npos; }, 60s))
      << fabric.opensm_log();
  const std::uint64_t answered = m.sm().status().sminfo_answered;
  ASSERT_TRUE(m.busy_sweep(30s));
  std::this_thread::sleep_for(1s);  // a takeover would have shown by now (300 ms of failed polls)
  states = opensm_states(fabric);
  left_standby = states.find("DISCOVERING", states.find("STANDBY")) != std::string::npos;
  // OpenSM polled us all along: at least one poll a routing's worth of 100 ms.
  if (offload) {
    EXPECT_GE(m.sm().status().sminfo_answered - answered, 10u);
  }
  fabric.stop_opensm();
}

TEST(HaBusyMasterIbsim, OpenSmStandbyPollingAt100msNeverTakesOver) {
  SKIP_WITHOUT_SHIM();
  bool left_standby = true;
  std::string states;
  run_with_opensm_standby(true, left_standby, states);
  EXPECT_FALSE(left_standby) << states;
}

TEST(HaBusyMasterIbsim, ControlRoutingOnTheMastersCoreLosesTheStandby) {
  SKIP_WITHOUT_SHIM();
  bool left_standby = false;
  std::string states;
  run_with_opensm_standby(false, left_standby, states);
  EXPECT_TRUE(left_standby) << "OpenSM stood by through a 2 s stall of its master's core:\n" << states;
}

// Our own SM as the standby: the madengine daemon on H2, polling at 100 ms
// x 3; its log names every HA transition.
TEST(HaBusyMasterIbsim, MadengineStandbyPollingAt100msNeverTakesOver) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");
  BusyMaster m;
  ASSERT_TRUE(m.start(true));
  ASSERT_TRUE(m.sm().wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 60s));
  const std::string dir = fabric.work_dir();
  std::ofstream(dir + "/standby.toml")
      << "[engine]\ncores = 1\npin = false\n[transport]\nkind = \"umad\"\n"
      << "[sm]\npriority = 5\nguid2lid = \"" << dir << "/standby-guid2lid\"\n"
      << "ha_poll_interval_ms = 100\nha_poll_retries = 3\n[sa]\njournal = \"\"\n[log]\nlevel = \"info\"\n";
  const IbsimFabric::Background standby =
      fabric.start_background(std::string("\"") + MADENGINE_BIN + "\" -c standby.toml", "standby.log", "H2");
  ASSERT_GT(standby.pid(), 0);
  const auto log = [&] {
    std::ifstream in(dir + "/standby.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(wait_until([&] { return log().find("-> STANDBY") != std::string::npos; }, 60s)) << log();
  const std::uint64_t answered = m.sm().status().sminfo_answered;
  ASSERT_TRUE(m.busy_sweep(30s));
  std::this_thread::sleep_for(1s);
  const std::string l = log();
  EXPECT_EQ(l.find("STANDBY -> "), std::string::npos) << l;
  EXPECT_EQ(m.sm().status().state, wire::SmState::kMaster);
  EXPECT_GE(m.sm().status().sminfo_answered - answered, 10u);
}

}  // namespace
}  // namespace madengine
