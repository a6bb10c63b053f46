// The madengine daemon stops on SIGTERM whatever its device does (label
// ibsim): the executable runs on H1 of a fabric; its simulator is killed
// (the device gone) or stopped (a device that no longer answers), or the
// daemon is stopped in the middle of its first heavy sweep, while a
// madstorm storm loads its SA, or as a standby behind OpenSM. SIGTERM must
// end it through the orderly path, status 0, within kStopBound, with the SA
// journal written at shutdown (or said why not). The time each stop took is
// printed for docs/operations.md.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "daemon_process.hpp"
#include "ibsim_harness.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::DaemonProcess;
using ibsim::IbsimFabric;
using ibsim::read_file;
using ibsim::wait_until;

// The daemon's promise: SIGTERM to exit within a second, orderly. Stops
// measure 0.1-0.4 s on this loaded 2-core machine; past a second the
// daemon's own watchdog would force the exit (status 70).
constexpr double kStopBoundMs = 1000;

TEST(DaemonStopIbsim, SigtermEndsItAfterItsDeviceIsGone) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  DaemonProcess d;
  ASSERT_TRUE(d.start(fabric, "H1"));
  ASSERT_TRUE(wait_until([&] { return d.logged("sm: subnet up"); }, 60s)) << d.log();
  fabric.kill_ibsim();  // the device is gone: the next send fails
  ASSERT_TRUE(wait_until([&] { return d.logged("is lost"); }, 30s)) << d.log();
  double took_ms = 0;
  const int status = d.terminate(took_ms);
  std::printf("device lost: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_EQ(status, 0) << d.log();
  EXPECT_LT(took_ms, kStopBoundMs) << d.log();
  EXPECT_FALSE(d.logged("(forced)")) << d.log();
  EXPECT_TRUE(d.logged("sa journal")) << d.log();
  EXPECT_TRUE(d.logged("written at shutdown") || d.logged("not written at shutdown")) << d.log();
}

TEST(DaemonStopIbsim, SigtermEndsItMidSweep) {
  SKIP_WITHOUT_SHIM();
  // 5,184 hosts: the first heavy sweep takes seconds through the shim, so a
  // SIGTERM a second after the start lands in it (the log then has no subnet up).
  const std::string topo = std::filesystem::temp_directory_path() / ("stop-ft-" + std::to_string(::getpid()) + ".topo");
  ASSERT_EQ(std::system(("python3 " MADENGINE_TOPOLOGY_GEN " 144 36 36 > " + topo).c_str()), 0);
  IbsimFabric fabric(topo);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  DaemonProcess d;
  ASSERT_TRUE(d.start(fabric, "H1"));
  std::this_thread::sleep_for(1s);
  double took_ms = 0;
  const int status = d.terminate(took_ms);
  const bool mid_sweep = !d.logged("sm: subnet up");
  std::printf("mid sweep (%s): SIGTERM to exit %.0f ms wall\n", mid_sweep ? "the first sweep unfinished" : "after subnet up",
              took_ms);
  EXPECT_EQ(status, 0) << d.log();
  EXPECT_LT(took_ms, kStopBoundMs) << d.log();
  EXPECT_TRUE(d.logged("sm/ha: NOTACTIVE -> DISCOVERING")) << d.log();
  std::filesystem::remove(topo);
}

TEST(DaemonStopIbsim, SigtermEndsItUnderAStorm) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  DaemonProcess d;
  ASSERT_TRUE(d.start(fabric, "H1"));
  ASSERT_TRUE(wait_until([&] { return d.logged("sm: subnet up"); }, 60s)) << d.log();
  // A storm from H2 for longer than the test lasts, in the background.
  const std::string storm_pid = d.dir + "/storm.pid";
  fabric.run(std::string("setsid sh -c '\"") + MADSTORM_BIN + "\" -p random -w 64 -d 60000 --no-progress & echo $! > " +
                 storm_pid + "' </dev/null >" + d.dir + "/storm 2>&1 & while [ ! -s " + storm_pid +
                 " ]; do sleep 0.01; done",
             "H2", 10s);
  const pid_t storm = static_cast<pid_t>(std::atoi(read_file(storm_pid).c_str()));
  std::this_thread::sleep_for(1500ms);  // the storm is running
  double took_ms = 0;
  const int status = d.terminate(took_ms);
  std::printf("under a storm: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_EQ(status, 0) << d.log();
  EXPECT_LT(took_ms, kStopBoundMs) << d.log();
  EXPECT_TRUE(d.logged("written at shutdown")) << d.log();
  if (storm > 0) ::kill(storm, SIGKILL);
}

// ibsim alive but not answering (SIGSTOP): the shim's request to ibsim when
// the IsSM device closes, and again at exit, would wait for a reply forever;
// the transport bounds the shim's socket waits, so the stop stays orderly.
TEST(DaemonStopIbsim, SigtermEndsItWhileItsSimulatorHangs) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  DaemonProcess d;
  ASSERT_TRUE(d.start(fabric, "H1"));
  ASSERT_TRUE(wait_until([&] { return d.logged("sm: subnet up"); }, 60s)) << d.log();
  ASSERT_EQ(::kill(fabric.ibsim_pid(), SIGSTOP), 0);
  std::this_thread::sleep_for(300ms);
  double took_ms = 0;
  const int status = d.terminate(took_ms);
  ::kill(fabric.ibsim_pid(), SIGCONT);
  std::printf("simulator stopped: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_EQ(status, 0) << d.log();
  EXPECT_LT(took_ms, kStopBoundMs) << d.log();
  EXPECT_TRUE(d.logged("written at shutdown")) << d.log();
  EXPECT_FALSE(d.logged("(forced)")) << d.log();
}

// A standby behind OpenSM (priority 15 on H2) stops as fast as a master.
TEST(DaemonStopIbsim, SigtermEndsAStandby) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(15, "H2")) << fabric.opensm_log();
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  DaemonProcess d;
  ASSERT_TRUE(d.start(fabric, "H1", "priority = 1\nha_poll_interval_ms = 200\n"));
  ASSERT_TRUE(wait_until([&] { return d.logged("-> STANDBY"); }, 60s)) << d.log();
  std::this_thread::sleep_for(500ms);  // polling the master
  double took_ms = 0;
  const int status = d.terminate(took_ms);
  std::printf("standby: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_EQ(status, 0) << d.log();
  EXPECT_LT(took_ms, kStopBoundMs) << d.log();
  EXPECT_TRUE(d.logged("not written at shutdown: this SM is not a master vouching for the SA state")) << d.log();
}

}  // namespace
}  // namespace madengine
