// The ibsim test harness: starts a private ibsim fabric per test (own socket
// name, so tests run in parallel), runs infiniband-diags and OpenSM against it
// with a timeout, and attaches the test process itself through umad2sim.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace madengine::ibsim {

inline constexpr const char* kShimPath = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
// librmpp_layer.so (rmpp_layer/): the kernel MAD layer's RMPP under the shim.
inline constexpr const char* kRmppLayerPath = MADENGINE_RMPP_LAYER_PATH;
inline constexpr int kClientsMax = 10;  // IBSIM_MAX_CLIENTS: killed clients keep their slot

struct RunResult {
  int exit_code = -1;      // -1 when killed or not started
  bool timed_out = false;  // killed after the timeout (the shim never times out sends)
  std::string out;
  std::string err;  // when timed out, followed by where the command, ibsim and the test process waited
};

// Absolute path of a file in tests/ibsim/topologies/.
std::string topology_path(std::string_view file_name);

// Node, switch and port counts of an ibnetdiscover-format file, for -N/-S/-P.
struct TopologySize {
  int nodes = 0;
  int switches = 0;
  int ports = 0;
};
std::optional<TopologySize> topology_size(const std::string& path);

class IbsimFabric {
 public:
  struct Options {
    bool console = false;  // keep ibsim's console on a pipe (no -n) for console()
    // Preload kRmppLayerPath before the shim in every client run() starts and
    // in OpenSM: they exchange whole multi-MAD answers, as over the kernel's
    // MAD layer. Both ends need it (a layered SA waits for ACKs).
    bool rmpp_layer = false;
    std::chrono::milliseconds start_timeout{10'000};
  };

  // Starts ibsim on `topology_path`; check ok() (and error()) afterwards.
  explicit IbsimFabric(std::string topology_path) : IbsimFabric(std::move(topology_path), Options{}) {}
  IbsimFabric(std::string topology_path, Options options);
  // Stops OpenSM and ibsim (SIGTERM, then SIGKILL) and removes the work dir
  // unless MADENGINE_KEEP_IBSIM_DIR is set.
  ~IbsimFabric();
  IbsimFabric(const IbsimFabric&) = delete;
  IbsimFabric& operator=(const IbsimFabric&) = delete;

  bool ok() const noexcept { return ibsim_pid_ > 0 && error_.empty(); }
  const std::string& error() const noexcept { return error_; }
  const std::string& sockname() const noexcept { return sockname_; }  // IBSIM_SOCKNAME
  const std::string& work_dir() const noexcept { return work_dir_; }
  pid_t ibsim_pid() const noexcept { return ibsim_pid_; }

  // Environment entries ("K=V") a client of this fabric needs.
  std::vector<std::string> client_env(std::string_view sim_host = {}) const;

  // Runs `cmd` through /bin/sh as a client of this fabric (LD_PRELOAD, socket,
  // SIM_HOST), in work_dir(); kills its process group after `timeout`.
  RunResult run(const std::string& cmd, std::string_view sim_host = {},
                std::chrono::milliseconds timeout = std::chrono::seconds(15)) const;

  // A client that outlives run() (an SM under test): `cmd` through /bin/sh
  // in a session of its own, stdin from /dev/null, stdout and stderr into
  // `log` (relative to work_dir()). SIGKILLed when the handle goes.
  class Background {
   public:
    explicit Background(pid_t pid) noexcept : pid_(pid) {}
    ~Background();
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;
    pid_t pid() const noexcept { return pid_; }  // -1: it did not start
   private:
    pid_t pid_;
  };
  Background start_background(const std::string& cmd, const std::string& log, std::string_view sim_host = {}) const;

  // Console mode only: sends one command line (e.g. `Unlink "S1"[2]`).
  bool console(std::string_view command);
  // ibsim's stdout+stderr so far (console replies land here).
  std::string ibsim_output() const;
  // Waits until ibsim's output contains `needle`.
  bool wait_ibsim_output(std::string_view needle, std::chrono::milliseconds timeout) const;

  // OpenSM on this fabric, log and cache in work_dir()/opensm; `extra_args`
  // are appended to its command line (e.g. {"-Q"} for QoS).
  bool start_opensm(int priority = 0, std::string_view sim_host = {}, const std::vector<std::string>& extra_args = {});
  bool wait_subnet_up(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  void stop_opensm();
  std::string opensm_log() const;

  // Kills ibsim (SIGKILL) and, with restart(), starts it again on the same
  // socket name: for life-cycle tests.
  void kill_ibsim();
  bool restart();

  // Makes the calling process a client of this fabric: sets IBSIM_SOCKNAME
  // and SIM_HOST in its environment. Call before the first libibumad call of
  // the process: umad2sim connects once, on its first device access, and
  // never again (one fabric per process; ctest runs each test in its own).
  // Needs the shim preloaded: see reexec_with_shim().
  void attach_self(std::string_view sim_host = {}) const;

 private:
  bool start_ibsim();
  std::string hang_report(pid_t group) const;
  bool wait_ready(std::chrono::milliseconds timeout);

  std::string topology_;
  Options options_;
  std::string sockname_;
  std::string work_dir_;
  std::string error_;
  pid_t ibsim_pid_ = -1;
  int console_fd_ = -1;  // write end of ibsim's stdin in console mode
  pid_t opensm_pid_ = -1;
};

// True when umad2sim is loaded into this process.
bool shim_loaded();

// Called first in main() of an ibsim test binary: unless the shim is already
// preloaded, re-executes /proc/self/exe with LD_PRELOAD=kShimPath (and the
// same arguments). Returns only in the preloaded process (or on failure, with
// a message on stderr, in which case the tests skip). `with_layer` preloads
// kRmppLayerPath before the shim: madengine in the test process then gets
// whole MADs as from a kernel (the layer's relay repairs the shim's receive
// path; madengine's agents have no RMPP version, so the layer passes their
// MADs through). A binary asks for it with MADENGINE_IBSIM_SELF_LAYERED.
void reexec_with_shim(int argc, char** argv, bool with_layer = false);

// Polls `pred` every `step` until it holds or `limit` passes (a bound for a
// hung peer, not a timing check); returns the last answer.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit,
                std::chrono::milliseconds step = std::chrono::milliseconds(20));

// `ibnetdiscover` run on `host` without its "# Topology file:" line (which
// carries a date): what changes only when a GUID, a link or a LID does.
// CI=true in the environment: a missing peer fails a test instead of skipping it.
bool under_ci();

std::string topology_lids(const IbsimFabric& f, std::string_view host,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace madengine::ibsim

// In a test that needs the shim: skip when it is not preloaded, on a
// developer's machine; fail under CI (CI=true), where the test command
// installed it and a skip would read as a pass.
#define SKIP_WITHOUT_SHIM()                                                                           \
  do {                                                                                                \
    if (!::madengine::ibsim::shim_loaded()) {                                                         \
      if (::madengine::ibsim::under_ci()) FAIL() << "libumad2sim.so is not preloaded (CI=true: no skip)"; \
      GTEST_SKIP() << "libumad2sim.so is not preloaded";                                              \
    }                                                                                                 \
  } while (0)
