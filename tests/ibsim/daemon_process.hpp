// The madengine executable as an ibsim client in a session of its own, for
// tests that start, signal and read it (daemon_stop, state_identity,
// ha_failover).
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ibsim_harness.hpp"

namespace madengine::ibsim {

using namespace std::chrono_literals;

constexpr auto kHangGuard = 30s;  // a stop that takes this long is a hang, not a slow stop

inline std::string read_file(const std::string& path) {
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
  // `extra_config` lines go into [sm]; `name` is the daemon's folder in the fabric's work dir.
  bool start(const IbsimFabric& f, const char* host, const std::string& extra_config = "",
             const std::string& name = "daemon") {
    dir = f.work_dir() + "/" + name;
    std::filesystem::create_directories(dir);
    // A daemon started again in the same folder: its own pid, status and log
    // (its state files stay).
    for (const char* old : {"/pid", "/status", "/log", "/out"}) std::filesystem::remove(dir + old);
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
  // SIGKILL, not waited for (a crash).
  void kill() {
    if (pid > 0) ::kill(pid, SIGKILL);
    pid = -1;
  }
  ~DaemonProcess() { kill(); }
};

}  // namespace madengine::ibsim
