// The madengine daemon stops on SIGTERM whatever its device does (label
// ibsim): the executable runs on H1 of a fabric; its simulator is killed
// (the device gone), or it is stopped in the middle of its first heavy
// sweep, or while a madstorm storm loads its SA; SIGTERM must end it with
// status 0, the SA journal written at shutdown (or said why not) and, for a
// lost device, the loss in its log. The time each stop took is printed for
// docs/operations.md; the only bound asserted is a hang guard.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "ibsim_harness.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::wait_until;

constexpr auto kHangGuard = 30s;  // a stop that takes this long is a hang, not a slow stop

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The daemon on `host` in a session of its own, its pid in dir/pid and, once
// it ends, its exit status in dir/status (the shell waits for it).
struct DaemonProcess {
  std::string dir;
  pid_t pid = -1;
  bool start(const IbsimFabric& f, const char* host, const std::string& extra_config = "") {
    dir = f.work_dir() + "/daemon";
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/madengine.toml") << "[engine]\ncores = 2\npin = false\n[transport]\nkind = \"umad\"\n"
                                            << "[sm]\nguid2lid = \"" << dir << "/guid2lid\"\n" << extra_config
                                            << "[sa]\njournal = \"" << dir << "/sa.journal\"\n"
                                            << "[log]\nlevel = \"info\"\nfile = \"" << dir << "/log\"\n";
    const auto r = f.run("setsid sh -c '\"" + std::string(MADENGINE_BIN) + "\" -c " + dir + "/madengine.toml & echo $! > " +
                             dir + "/pid; wait $!; echo $? > " + dir + "/status' </dev/null >" + dir +
                             "/out 2>&1 & while [ ! -s " + dir + "/pid ]; do sleep 0.01; done",
                         host, 10s);
    pid = static_cast<pid_t>(std::atoi(read_file(dir + "/pid").c_str()));
    return r.exit_code == 0 && pid > 0;
  }
  std::string log() const { return read_file(dir + "/log"); }
  bool logged(const std::string& what) const { return log().find(what) != std::string::npos; }
  // SIGTERM, then the exit status once it ended (-1: still running at the guard).
  int terminate(double& took_ms) const {
    const auto t0 = std::chrono::steady_clock::now();
    ::kill(pid, SIGTERM);
    const bool ended = wait_until([&] { return !read_file(dir + "/status").empty(); }, kHangGuard, 5ms);
    took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return ended ? std::atoi(read_file(dir + "/status").c_str()) : -1;
  }
  ~DaemonProcess() {
    if (pid > 0) ::kill(pid, SIGKILL);
  }
};

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
  EXPECT_TRUE(d.logged("written at shutdown")) << d.log();
  if (storm > 0) ::kill(storm, SIGKILL);
}

}  // namespace
}  // namespace madengine
