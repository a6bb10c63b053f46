// ibsim harness: child processes (ibsim, OpenSM, diags) started with fork/exec
// into their own process group, with PR_SET_PDEATHSIG so a crashed test
// leaves nothing running; outputs go to files in a per-fabric work dir.
#include "ibsim_harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#ifndef MADENGINE_IBSIM_TOPOLOGY_DIR
#error "MADENGINE_IBSIM_TOPOLOGY_DIR must be defined by tests/ibsim/CMakeLists.txt"
#endif

namespace madengine::ibsim {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kPollStep = std::chrono::milliseconds(10);
constexpr auto kTermGrace = std::chrono::milliseconds(2000);

// ibsim's built-in capacities (ibsim.c): only raised, never lowered.
constexpr int kDefaultNodesMax = 2048;
constexpr int kDefaultSwitchesMax = 256;
constexpr int kDefaultPortsMax = 13312;

std::atomic<unsigned> g_fabric_seq{0};

// Libraries to preload before the shim (and the RMPP layer) in every program
// on ibsim, e.g. libmad_count.so to count each SM's SMPs: from
// MADENGINE_IBSIM_PRELOAD, with a trailing space when set.
std::string extra_preload() {
  const char* extra = std::getenv("MADENGINE_IBSIM_PRELOAD");
  return extra != nullptr && *extra != 0 ? std::string(extra) + " " : std::string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Spawn {
  std::vector<std::string> argv;
  std::vector<std::string> env_extra;  // added to (and overriding) the current environment
  std::string cwd;
  std::string out_path;
  std::string err_path;  // empty: same as out_path
  int stdin_fd = -1;     // -1: /dev/null
};

// fork/exec with the child in its own process group, dying with its parent.
pid_t spawn(const Spawn& s) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    bool overridden = false;
    for (const auto& x : s.env_extra)
      if (kv.substr(0, kv.find('=') + 1) == std::string_view(x).substr(0, x.find('=') + 1))
        overridden = true;
    if (!overridden) env.emplace_back(kv);
  }
  env.insert(env.end(), s.env_extra.begin(), s.env_extra.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = s.argv;
  std::vector<char*> argvp;
  for (auto& a : args) argvp.push_back(a.data());
  argvp.push_back(nullptr);

  // The files are opened before fork: in a test process with umad2sim
  // preloaded, open() is the shim's, which takes its device mutex; a child
  // forked while an engine thread held it would wait for it for ever.
  const int out = ::open(s.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err = s.err_path.empty() ? out : ::open(s.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int in = s.stdin_fd >= 0 ? s.stdin_fd : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const auto close_files = [&] {
    if (out >= 0) ::close(out);
    if (err >= 0 && err != out) ::close(err);
    if (in >= 0 && in != s.stdin_fd) ::close(in);
  };
  if (in < 0 || out < 0 || err < 0) {
    close_files();
    return -1;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) setpgid(pid, pid);  // also done in the child: whichever runs first
    close_files();
    return pid;
  }
  // Child: only async-signal-safe calls the shim does not wrap from here on
  // (it wraps open, close, read, write, ioctl, poll, opendir and scandir).
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  dup2(in, 0);
  dup2(out, 1);
  dup2(err, 2);
  if (!s.cwd.empty() && chdir(s.cwd.c_str()) != 0) _exit(127);
  execve(argvp[0], argvp.data(), envp.data());
  execvpe(argvp[0], argvp.data(), envp.data());
  _exit(127);
}

// Waits for `pid` up to `timeout`; returns the wait status or nullopt.
std::optional<int> wait_for(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return std::nullopt;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPollStep);
  }
}

// SIGTERM to the process group, then SIGKILL after a grace period; reaps.
void terminate(pid_t& pid) {
  if (pid <= 0) return;
  kill(-pid, SIGTERM);
  if (!wait_for(pid, kTermGrace)) {
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  kill(-pid, SIGKILL);  // anything left in the group
  pid = -1;
}

bool unix_socket_bound(const std::string& abstract_name) {
  // /proc/net/unix shows an abstract name with '@' for each NUL: a leading
  // one, and a trailing one because ibsim binds the name with its terminator.
  std::ifstream in("/proc/net/unix");
  std::string line;
  const std::string needle = "@" + abstract_name;
  while (std::getline(in, line)) {
    const auto pos = line.rfind(' ');
    if (pos == std::string::npos) continue;
    const std::string_view name = std::string_view(line).substr(pos + 1);
    if (name == needle || name == needle + "@") return true;
  }
  return false;
}

}  // namespace

std::string topology_path(std::string_view file_name) {
  return std::string(MADENGINE_IBSIM_TOPOLOGY_DIR) + "/" + std::string(file_name);
}

std::optional<TopologySize> topology_size(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  TopologySize sz;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string type;
    int ports = 0;
    if (!(ls >> type >> ports)) continue;
    if (type == "Switch") {
      ++sz.switches;
    } else if (type != "Hca" && type != "Ca" && type != "Rt") {
      continue;
    }
    ++sz.nodes;
    sz.ports += ports + 1;  // port 0 counts too
  }
  return sz;
}

IbsimFabric::IbsimFabric(std::string topology_path, Options options)
    : topology_(std::move(topology_path)), options_(options) {
  const unsigned seq = g_fabric_seq.fetch_add(1);
  sockname_ = "madeng-" + std::to_string(getpid()) + "-" + std::to_string(seq);
  std::string tmpl = (fs::temp_directory_path() / ("ibsim-" + sockname_ + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    error_ = "mkdtemp failed: " + std::string(std::strerror(errno));
    return;
  }
  work_dir_ = tmpl;
  if (!fs::exists(topology_)) {
    error_ = "no topology file " + topology_;
    return;
  }
  start_ibsim();
}

IbsimFabric::~IbsimFabric() {
  stop_opensm();
  kill_ibsim();
  if (!work_dir_.empty() && std::getenv("MADENGINE_KEEP_IBSIM_DIR") == nullptr) {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
  }
}

bool IbsimFabric::start_ibsim() {
  const auto sz = topology_size(topology_);
  if (!sz || sz->nodes == 0) {
    error_ = "cannot size topology " + topology_;
    return false;
  }
  std::vector<std::string> argv = {"ibsim", "-s"};
  if (!options_.console) argv.push_back("-n");  // without a console ibsim spins on stdin
  argv.insert(argv.end(),
              {"-N", std::to_string(std::max(kDefaultNodesMax, sz->nodes * 2)), "-S",
               std::to_string(std::max(kDefaultSwitchesMax, sz->switches * 2)), "-P",
               std::to_string(std::max(kDefaultPortsMax, sz->ports * 2)), topology_});
  int pipe_fds[2] = {-1, -1};
  if (options_.console) {
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      error_ = "pipe failed";
      return false;
    }
  }
  // The test process itself may run with the shim preloaded: ibsim must not.
  Spawn s{argv, {"IBSIM_SOCKNAME=" + sockname_, "LD_PRELOAD="}, work_dir_, work_dir_ + "/ibsim.out", "",
          options_.console ? pipe_fds[0] : -1};
  ibsim_pid_ = spawn(s);
  if (options_.console) {
    ::close(pipe_fds[0]);
    console_fd_ = pipe_fds[1];
  }
  if (ibsim_pid_ < 0) {
    error_ = "fork failed";
    return false;
  }
  if (!wait_ready(options_.start_timeout)) return false;
  error_.clear();
  return true;
}

bool IbsimFabric::wait_ready(std::chrono::milliseconds timeout) {
  // Ready once the control socket is bound: clients connecting earlier would
  // sit in the shim's 2-second retry loop.
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(ibsim_pid_, &status, WNOHANG) == ibsim_pid_) {
      ibsim_pid_ = -1;
      error_ = "ibsim exited early: " + ibsim_output();
      return false;
    }
    if (unix_socket_bound(sockname_ + ":ctl") &&
        ibsim_output().find("simulator ready") != std::string::npos)
      return true;
    std::this_thread::sleep_for(kPollStep);
  }
  error_ = "ibsim did not become ready: " + ibsim_output();
  return false;
}

void IbsimFabric::kill_ibsim() {
  if (console_fd_ >= 0) {
    ::close(console_fd_);
    console_fd_ = -1;
  }
  if (ibsim_pid_ > 0) {
    kill(-ibsim_pid_, SIGKILL);
    waitpid(ibsim_pid_, nullptr, 0);
    ibsim_pid_ = -1;
  }
}

bool IbsimFabric::restart() {
  kill_ibsim();
  error_.clear();
  return start_ibsim();
}

std::vector<std::string> IbsimFabric::client_env(std::string_view sim_host) const {
  // SIM_HOST is always set, empty for the default node, so a value the test
  // process gave itself (attach_self) does not leak into its children.
  // The layer goes first: it wraps libibumad calls the shim then serves.
  const std::string preload =
      extra_preload() + (options_.rmpp_layer ? std::string(kRmppLayerPath) + " " + kShimPath : kShimPath);
  return {"LD_PRELOAD=" + preload, "IBSIM_SOCKNAME=" + sockname_,
          "SIM_HOST=" + std::string(sim_host)};
}

RunResult IbsimFabric::run(const std::string& cmd, std::string_view sim_host,
                           std::chrono::milliseconds timeout) const {
  RunResult r;
  static std::atomic<unsigned> run_seq{0};
  const std::string base = work_dir_ + "/run" + std::to_string(run_seq.fetch_add(1));
  Spawn s{{"/bin/sh", "-c", cmd}, client_env(sim_host), work_dir_, base + ".out", base + ".err", -1};
  pid_t pid = spawn(s);
  if (pid < 0) {
    r.err = "fork failed";
    return r;
  }
  std::string hang;
  if (const auto status = wait_for(pid, timeout)) {
    r.exit_code = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  } else {
    // The shim never reports a send timeout: a diag waiting for an answer
    // that will not come hangs. Its ibsim client slot stays taken.
    r.timed_out = true;
    hang = hang_report(pid);
    kill(-pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  kill(-pid, SIGKILL);
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  if (!hang.empty()) r.err += "\n--- timed out; where each process waited ---\n" + hang;
  return r;
}

std::string IbsimFabric::hang_report(pid_t group) const {
  // Where each process of the hung command, ibsim and this test process
  // wait: scheduler state, kernel wait channel and every thread's stack
  // (gdb, when installed). A hang seen once in many runs is traced from this.
  const std::string pids = "$(pgrep -g " + std::to_string(group) + ") " + std::to_string(ibsim_pid_) + " " +
                           std::to_string(::getpid());
  const std::string script =
      "for p in " + pids +
      "; do echo \"== pid $p: $(tr '\\0' ' ' < /proc/$p/cmdline)\"; "
      "echo \"state $(cut -d' ' -f3 /proc/$p/stat) wchan $(cat /proc/$p/wchan)\"; "
      "command -v gdb >/dev/null && timeout 20 gdb -p $p -batch -ex 'thread apply all bt 16' 2>/dev/null | "
      "grep -E '^(#|Thread)'; done";
  static std::atomic<unsigned> seq{0};
  const std::string out = work_dir_ + "/hang" + std::to_string(seq.fetch_add(1)) + ".txt";
  const pid_t pid = spawn(Spawn{{"/bin/sh", "-c", script}, {"LD_PRELOAD="}, work_dir_, out, "", -1});
  if (pid < 0) return "";
  if (!wait_for(pid, std::chrono::seconds(90))) kill(-pid, SIGKILL);
  return read_file(out);
}

IbsimFabric::Background::~Background() {
  if (pid_ > 0) kill(pid_, SIGKILL);
}

IbsimFabric::Background IbsimFabric::start_background(const std::string& cmd, const std::string& log,
                                                      std::string_view sim_host) const {
  static std::atomic<unsigned> seq{0};
  const std::string pid_file = "background" + std::to_string(seq.fetch_add(1)) + ".pid";
  std::string quoted;  // `cmd` inside sh -c '...'
  for (const char c : cmd) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  // run() kills its command's process group on return: the shell waits
  // until the new session has written its pid.
  const auto r = run("setsid sh -c 'echo $$ > " + pid_file + "; exec " + quoted + "' </dev/null >" + log + " 2>&1 & " +
                         "while [ ! -s " + pid_file + " ]; do sleep 0.01; done; cat " + pid_file,
                     sim_host, std::chrono::seconds(10));
  const pid_t pid = r.exit_code == 0 ? static_cast<pid_t>(std::atoi(r.out.c_str())) : -1;
  return Background(pid > 0 ? pid : -1);
}

bool IbsimFabric::console(std::string_view command) {
  if (console_fd_ < 0) return false;
  std::string line(command);
  line.push_back('\n');
  return ::write(console_fd_, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

std::string IbsimFabric::ibsim_output() const { return read_file(work_dir_ + "/ibsim.out"); }

bool IbsimFabric::wait_ibsim_output(std::string_view needle,
                                    std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  do {
    if (ibsim_output().find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(kPollStep);
  } while (Clock::now() < deadline);
  return false;
}

bool IbsimFabric::start_opensm(int priority, std::string_view sim_host, const std::vector<std::string>& extra_args) {
  stop_opensm();
  const std::string dir = work_dir_ + "/opensm";
  std::error_code ec;
  fs::create_directories(dir, ec);
  auto env = client_env(sim_host);
  env.push_back("OSM_TMP_DIR=" + dir);
  env.push_back("OSM_CACHE_DIR=" + dir);
  // -d 2 flushes the log after each message: without it "SUBNET UP" sits in
  // OpenSM's stdio buffer and never reaches the file while it runs.
  Spawn s{{"opensm", "-f", dir + "/osm.log", "-e", "-d", "2", "-s", "0", "-p",
           std::to_string(priority)},
          env,
          dir,
          dir + "/opensm.out",
          "",
          -1};
  s.argv.insert(s.argv.end(), extra_args.begin(), extra_args.end());
  opensm_pid_ = spawn(s);
  return opensm_pid_ > 0;
}

std::string IbsimFabric::opensm_log() const { return read_file(work_dir_ + "/opensm/osm.log"); }

bool IbsimFabric::wait_subnet_up(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  do {
    if (opensm_log().find("SUBNET UP") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  return false;
}

void IbsimFabric::stop_opensm() { terminate(opensm_pid_); }

void IbsimFabric::attach_self(std::string_view sim_host) const {
  setenv("IBSIM_SOCKNAME", sockname_.c_str(), 1);
  if (!sim_host.empty())
    setenv("SIM_HOST", std::string(sim_host).c_str(), 1);
  else
    unsetenv("SIM_HOST");
  // The shim creates its fake sysfs under ./sys-<pid>: keep it in the work dir.
  if (chdir(work_dir_.c_str()) != 0)
    std::fprintf(stderr, "ibsim harness: chdir %s: %s\n", work_dir_.c_str(), std::strerror(errno));
}

bool under_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string_view(ci) == "true";
}

bool shim_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libumad2sim.so") != std::string::npos) return true;
  return false;
}

void reexec_with_shim(int argc, char** argv, bool with_layer) {
  (void)argc;
  if (shim_loaded()) return;
  if (std::getenv("MADENGINE_IBSIM_REEXEC") != nullptr) {
    std::fprintf(stderr, "ibsim harness: %s is preloaded but not mapped; ibsim tests will skip\n",
                 kShimPath);
    return;
  }
  if (access(kShimPath, R_OK) != 0) {
    std::fprintf(stderr, "ibsim harness: %s missing (apt-get install libumad2sim0)\n", kShimPath);
    return;
  }
  const std::string preload = extra_preload() + (with_layer ? std::string(kRmppLayerPath) + " " + kShimPath : kShimPath);
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("MADENGINE_IBSIM_REEXEC", "1", 1);
  // Sanitizer builds: ASan insists on being first in the link order, which a
  // preloaded shim breaks; the check is only a guard, the runtime still works.
  std::string asan = std::getenv("ASAN_OPTIONS") ? std::getenv("ASAN_OPTIONS") : "";
  if (asan.find("verify_asan_link_order") == std::string::npos) {
    asan += (asan.empty() ? "" : ":") + std::string("verify_asan_link_order=0");
    setenv("ASAN_OPTIONS", asan.c_str(), 1);
  }
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "ibsim harness: re-exec failed: %s\n", std::strerror(errno));
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit, std::chrono::milliseconds step) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(step);
  }
  return pred();
}

std::string topology_lids(const IbsimFabric& f, std::string_view host, std::chrono::milliseconds timeout) {
  std::istringstream in(f.run("ibnetdiscover", host, timeout).out);
  std::string kept, line;
  while (std::getline(in, line))
    if (line.rfind("# Topology file:", 0) != 0) kept += line + "\n";
  return kept;
}

}  // namespace madengine::ibsim
