// Tests of the ibsim harness itself: fabric start/stop on a private socket,
// diags with a timeout, the console (Unlink/Link), and topology sizing.
#include <signal.h>

#include <chrono>

#include <gtest/gtest.h>

#include "ibsim_harness.hpp"

namespace madengine::ibsim {
namespace {

using namespace std::chrono_literals;

TEST(IbsimHarness, TopologySize) {
  const auto sz = topology_size(topology_path("chain3.topo"));
  ASSERT_TRUE(sz.has_value());
  EXPECT_EQ(sz->nodes, 5);
  EXPECT_EQ(sz->switches, 3);
  EXPECT_EQ(sz->ports, 2 * 2 + 3 * 5);
  EXPECT_FALSE(topology_size("/nonexistent/topology").has_value());
}

TEST(IbsimHarness, MissingTopologyIsAnError) {
  IbsimFabric f("/nonexistent/topology");
  EXPECT_FALSE(f.ok());
  EXPECT_NE(f.error().find("no topology"), std::string::npos);
}

TEST(IbsimHarness, TwoFabricsSideBySideAndCleanUp) {
  pid_t pid_a = -1;
  std::string dir_a;
  {
    IbsimFabric a(topology_path("chain3.topo"));
    IbsimFabric b(topology_path("chain3.topo"));
    ASSERT_TRUE(a.ok()) << a.error();
    ASSERT_TRUE(b.ok()) << b.error();
    EXPECT_NE(a.sockname(), b.sockname());
    const auto r = a.run("smpquery -D nodeinfo 0,1,2,2", "H1");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("NodeType:........................Switch"), std::string::npos) << r.out;
    const auto r2 = b.run("smpquery -D nodeinfo 0", "H2");
    EXPECT_EQ(r2.exit_code, 0) << r2.err;
    EXPECT_NE(r2.out.find("Channel Adapter"), std::string::npos) << r2.out;
    pid_a = a.ibsim_pid();
    dir_a = a.work_dir();
  }
  EXPECT_NE(kill(pid_a, 0), 0) << "ibsim still running after the fabric was destroyed";
}

TEST(IbsimHarness, RunTimesOut) {
  IbsimFabric f(topology_path("chain3.topo"));
  ASSERT_TRUE(f.ok()) << f.error();
  const auto r = f.run("sleep 30", {}, 200ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  // The report says where the command and ibsim waited.
  EXPECT_NE(r.err.find("sleep 30"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ibsim -s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wchan"), std::string::npos) << r.err;
}

TEST(IbsimHarness, ConsoleUnlinkCutsTheChain) {
  IbsimFabric f(topology_path("chain3.topo"), {.console = true});
  ASSERT_TRUE(f.ok()) << f.error();
  EXPECT_EQ(f.run("smpquery -D nodeinfo 0,1,2,2", "H1").exit_code, 0);
  ASSERT_TRUE(f.console("Unlink \"S2\"[2]"));
  ASSERT_TRUE(f.console("Dump"));  // any reply proves the console read the line
  // smpquery runs its own timer (libibmad polls with a timeout): it fails, not hangs.
  const auto r = f.run("smpquery -D nodeinfo 0,1,2,2", "H1");
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.exit_code, 0) << r.out;
  ASSERT_TRUE(f.console("Link \"S2\"[2] \"S3\"[1]"));
  const auto r2 = f.run("smpquery -D nodeinfo 0,1,2,2", "H1");
  EXPECT_EQ(r2.exit_code, 0) << r2.err << f.ibsim_output();
}

TEST(IbsimHarness, OpenSmComesUp) {
  IbsimFabric f(topology_path("chain3.topo"));
  ASSERT_TRUE(f.ok()) << f.error();
  ASSERT_TRUE(f.start_opensm(0, "H1"));
  ASSERT_TRUE(f.wait_subnet_up(60s)) << f.opensm_log();
  const auto r = f.run("sminfo", "H1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SMINFO_MASTER"), std::string::npos) << r.out;
  f.stop_opensm();
}

}  // namespace
}  // namespace madengine::ibsim
