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
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <csignal>
#include <thread>
#include <vector>

#include "cli/command_line.hpp"
#include "daemon_flags.hpp"
#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "service/admin.hpp"
#include "service/metrics.hpp"
#include "service/service_config.hpp"
#include "service/supervisor.hpp"
#include "sm/sm.hpp"

using namespace madengine;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void on_signal(int) { g_stop.store(true); }
void on_hangup(int) { g_reload.store(true); }

// Once a shutdown starts, the process ends within this (systemd's
// TimeoutStopSec is far longer; clients see the SM go either way).
constexpr int kShutdownTimeoutMs = 1000;

// Ends the process if the orderly shutdown has not finished by its deadline.
class ShutdownWatchdog {
 public:
  explicit ShutdownWatchdog(std::chrono::milliseconds limit)
      : thread_([this, limit] {
          std::unique_lock lock(mu_);
          if (cv_.wait_for(lock, limit, [this] { return done_; })) return;
          spdlog::warn("shutdown: not done after {} ms (a device call has not returned): exiting now", limit.count());
          spdlog::default_logger()->flush();
          std::_Exit(0);
        }) {}
  ~ShutdownWatchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

void log_status(node::InternalNode& d) {
  const auto s = d.sm().status();
  const auto sa = d.sa().counters().total();
  spdlog::info("status: {} epoch {} heavy sweeps {} light sweeps {} traps {} | SA received {} answered {} busy {} dropped {}",
               s.subnet_up ? "subnet up" : "subnet not up", s.epoch, s.heavy_sweeps, s.light_sweeps, s.traps,
               sa.received, sa.answered, sa.busy, sa.dropped);
}

// SIGHUP: the file read again (flags still win), the log reopened (after
// logrotate moved it) at the file's level, then what the node can change
// while it runs; every other changed key is named in one warning.
void reload(node::InternalNode& d, const daemon_cli::CommandLine& cl, node::NodeConfig& cfg, const service::ServiceConfig& running) {
  spdlog::info("SIGHUP: reloading{}", cl.config_file.empty() ? " (no --config file: the log is reopened)" : " " + cl.config_file);
  try {
    service::ServiceConfig svc;
    daemon_cli::load_configuration(cl, cfg, svc);
    service::apply_daemon_log(cfg.log);
    node::InternalNode::ReloadResult r = d.reload(cfg);
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
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_hangup);

  std::optional<ShutdownWatchdog> watchdog;  // outlives the daemon: its destruction is watched too
  try {
    // umad: the engine's cores; sim: a thread drives the fabric at --sim-speed.
    node::InternalOptions options;
    options.perfmgr = svc.perfmgr;
    node::InternalNode d(cfg, {}, options);
    // The service's parts read the node; they go before it does.
    service::MetricsRenderer renderer(d);
    std::unique_ptr<service::MetricsServer> metrics;
    if (!svc.metrics_listen.empty())
      metrics = std::make_unique<service::MetricsServer>(svc.metrics_listen, [&renderer] { return renderer.render(); });
    service::AdminCommands commands(d);
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
    service::Supervisor supervisor(d);
    auto last_status = std::chrono::steady_clock::now();
    bool was_up = false;
    while (!g_stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      supervisor.tick();
      if (g_reload.exchange(false)) reload(d, cl, cfg, svc);
      const bool up = d.sm().status().subnet_up;
      if (up && !was_up && cl.exit_after_up) break;
      was_up = up;
      if (std::chrono::steady_clock::now() - last_status > std::chrono::seconds(30)) {
        log_status(d);
        last_status = std::chrono::steady_clock::now();
      }
    }
    supervisor.stopping();
    log_status(d);
    // A shutdown ends within shutdown_timeout_ms whatever the device does
    // (a call into a dead device's driver or simulator may never return):
    // the journal first, then the orderly stop under a watchdog; the admin
    // socket and metrics endpoint close first within it (a command waiting
    // on the SM's core still gets its answer).
    d.write_journal_now();
    watchdog.emplace(std::chrono::milliseconds(kShutdownTimeoutMs));
    admin.reset();
    metrics.reset();
    d.stop();
  } catch (const node::ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  watchdog.reset();
  spdlog::shutdown();
  return 0;
}
