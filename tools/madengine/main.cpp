// madengine: the SM + SA daemon.
//   madengine [--config FILE] [--transport umad|sim] [flags...]
// Flags override the config file; `madengine --help` lists them. Without
// flags it runs on the first active InfiniBand port (umad); the in-process
// simulator is `--transport sim`. As a service (docs/operations.md): metrics
// over HTTP, the admin socket (madengine-ctl), sd_notify with a watchdog,
// SIGHUP reloads what can change and reopens the log file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sysexits.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_line.hpp"
#include "daemon_flags.hpp"
#include "madengine/node/node.hpp"
#include "node/control.hpp"
#include "service/admin.hpp"
#include "service/metrics.hpp"
#include "service/service_config.hpp"
#include "service/supervisor.hpp"

using namespace madengine;

namespace {

// A shutdown ends within this from the signal that asked for it, through
// the orderly path (status 0) or, past it, forced (kExitForced); systemd's
// TimeoutStopSec is far longer.
constexpr auto kShutdownTimeout = std::chrono::milliseconds(1000);
// What the orderly path keeps for the node's destruction and the process's
// exit (pools' bounded waits, closing the port, atexit handlers).
constexpr auto kExitMargin = std::chrono::milliseconds(300);
// A forced shutdown's status: sysexits(3) EX_SOFTWARE, an internal error,
// so neither systemd nor a script takes it for a clean stop.
constexpr int kExitForced = EX_SOFTWARE;

// Set just before the log is shut down: a forced exit after that writes to stderr.
std::atomic<bool> g_log_closed{false};

[[noreturn]] void exit_forced(const std::string& why) {
  if (!g_log_closed.load()) {
    spdlog::error("shutdown: {}: exiting with status {} (forced)", why, kExitForced);
    spdlog::default_logger()->flush();
  } else {
    fmt::print(stderr, "madengine: shutdown: {}: exiting with status {} (forced)\n", why, kExitForced);
  }
  std::_Exit(kExitForced);
}

// The shutdown's safety net: unless the process has ended by `deadline`
// (the orderly path returns from main and runs the exit handlers, all of it
// watched), it is ended with kExitForced. Detached: nothing waits for it.
void arm_shutdown_watchdog(std::chrono::steady_clock::time_point deadline) {
  std::thread([deadline] {
    std::this_thread::sleep_until(deadline);
    exit_forced(fmt::format("not done after {} ms (a call has not returned)", kShutdownTimeout.count()));
  }).detach();
}

// SIGTERM, SIGINT and SIGHUP are blocked in every thread (the mask is set
// before the first thread starts and inherited) and taken by the main loop
// with sigtimedwait(), so a stop starts the moment it is asked for.
sigset_t daemon_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// The next signal within `wait`, 0 when none came.
int next_signal(const sigset_t& set, std::chrono::milliseconds wait) {
  const timespec ts{.tv_sec = static_cast<time_t>(wait.count() / 1000), .tv_nsec = static_cast<long>(wait.count() % 1000) * 1'000'000};
  const int sig = ::sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

void log_status(const node::NodeControl& d) {
  const node::SmStatus s = d.sm_status();
  const node::SaRecordCounters sa = d.sa_counters().total;
  spdlog::info("status: {} epoch {} heavy sweeps {} light sweeps {} traps {} | SA received {} answered {} busy {} dropped {}",
               s.subnet_up ? "subnet up" : "subnet not up", s.epoch, s.heavy_sweeps, s.light_sweeps, s.traps,
               sa.received, sa.answered, sa.busy, sa.dropped);
}

// SIGHUP: the file read again (flags still win), the log reopened (after
// logrotate moved it) at the file's level, then what the node can change
// while it runs; every other changed key is named in one warning.
void reload(node::NodeControl d, const daemon_cli::CommandLine& cl, node::NodeConfig& cfg, service::ServiceConfig& running) {
  spdlog::info("SIGHUP: reloading{}", cl.config_file.empty() ? " (no --config file: the log is reopened)" : " " + cl.config_file);
  try {
    service::ServiceConfig svc;
    daemon_cli::load_configuration(cl, cfg, svc);
    service::apply_daemon_log(cfg.log);
    node::ReloadResult r = d.reload(cfg);
    node::ReloadResult perf = d.reload_perfmgr(svc.perfmgr);
    r.applied.insert(r.applied.end(), perf.applied.begin(), perf.applied.end());
    r.restart_needed.insert(r.restart_needed.end(), perf.restart_needed.begin(), perf.restart_needed.end());
    for (const std::string& what : r.applied) spdlog::info("reloaded: {}", what);
    // The metrics endpoint and the admin socket are opened once, at start.
    if (svc.metrics_listen != running.metrics_listen) r.restart_needed.push_back("metrics.listen");
    if (svc.admin_socket != running.admin_socket) r.restart_needed.push_back("admin.socket");
    if (!r.restart_needed.empty())
      spdlog::warn("SIGHUP: not applied until a restart (the values in use are kept): {}", fmt::join(r.restart_needed, ", "));
  } catch (const std::exception& e) {
    // A bad edit keeps everything as it was; the daemon runs on.
    spdlog::error("SIGHUP: not reloaded: {}", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread exists (the log's flusher is one): every thread inherits the mask.
  const sigset_t signals = daemon_signals();
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  CLI::App app{"madengine: InfiniBand subnet manager and subnet administrator"};
  node::NodeConfig cfg;  // the file's values go here, then the flags that were given
  daemon_cli::CommandLine cl;
  daemon_cli::add_flags(app, cl, cfg);
  if (const auto rc = cli::parse(app, argc, argv)) return *rc;

  service::ServiceConfig svc;
  try {
    daemon_cli::load_configuration(cl, cfg, svc);
  } catch (const node::ConfigError& e) {
    fmt::print(stderr, "madengine: {}\n", e.what());
    return 2;
  }
  service::apply_daemon_log(cfg.log);

  try {
    // umad: the engine's cores; sim: a thread drives the fabric at --sim-speed.
    node::ControlOptions options;
    options.perfmgr = svc.perfmgr;
    node::ControlledNode owned(cfg, {}, options);
    node::Node& d = owned.node();
    node::NodeControl control = owned.control();
    // The service's parts read the node; they go before it does.
    service::MetricsRenderer renderer(control);
    std::unique_ptr<service::MetricsServer> metrics;
    if (!svc.metrics_listen.empty())
      metrics = std::make_unique<service::MetricsServer>(svc.metrics_listen, [&renderer] { return renderer.render(); });
    service::AdminCommands commands(control);
    std::unique_ptr<service::AdminServer> admin;
    try {
      if (!svc.admin_socket.empty()) admin = std::make_unique<service::AdminServer>(svc.admin_socket, commands);
    } catch (const std::exception& e) {
      // A second daemon on this host (another port) without a socket of its
      // own runs on without one; a socket that was asked for must work.
      if (svc.admin_socket_given) throw;
      spdlog::warn("{}: no admin socket for this daemon (set admin.socket to give it one)", e.what());
    }
    d.start();
    service::Supervisor supervisor(control);
    auto last_status = std::chrono::steady_clock::now();
    bool was_up = false;
    for (;;) {
      const int sig = next_signal(signals, std::chrono::milliseconds(50));
      if (sig == SIGTERM || sig == SIGINT) {
        spdlog::info("shutdown: {}", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        break;
      }
      supervisor.tick();
      if (sig == SIGHUP) reload(control, cl, cfg, svc);
      const bool up = control.sm_status().subnet_up;
      if (up && !was_up && cl.sim_wedge_core_ms != 0) {
        const auto ms = std::chrono::milliseconds(cl.sim_wedge_core_ms);
        spdlog::warn("test fault: the SM's core is wedged for {} ms", ms.count());
        control.post(control.sm_core(), [ms] { std::this_thread::sleep_for(ms); });
      }
      if (up && !was_up && cl.exit_after_up) break;
      was_up = up;
      if (std::chrono::steady_clock::now() - last_status > std::chrono::seconds(30)) {
        log_status(control);
        last_status = std::chrono::steady_clock::now();
      }
    }
    // From here the process ends within kShutdownTimeout whatever a device
    // or a thread does: the journal first, the admin socket and metrics
    // endpoint (a command waiting on the SM's core still gets its answer),
    // then the node's threads within what is left, keeping kExitMargin for
    // the destruction and the exit. A thread still inside a call then is
    // not waited for: the exit is forced, with its own status.
    const auto deadline = std::chrono::steady_clock::now() + kShutdownTimeout;
    arm_shutdown_watchdog(deadline);
    supervisor.stopping();
    log_status(control);
    control.write_journal_now();
    admin.reset();
    metrics.reset();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - kExitMargin - std::chrono::steady_clock::now());
    if (!control.stop_within(std::max(left, std::chrono::milliseconds(0))))
      exit_forced(fmt::format("an engine core or the event thread did not stop within {} ms of the signal",
                              (kShutdownTimeout - kExitMargin).count()));
  } catch (const node::ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  spdlog::info("shutdown: done");
  g_log_closed.store(true);
  spdlog::shutdown();
  return 0;
}
