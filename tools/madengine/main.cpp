// madengine: the SM + SA daemon.
//   madengine [--config FILE] [--transport umad|sim] [flags...]
// Flags override the config file; `madengine --help` lists them. Without
// flags it runs on the first active InfiniBand port (umad); the in-process
// simulator is `--transport sim`. As a service (docs/operations.md): metrics
// over HTTP, the admin socket (madengine-ctl), sd_notify with a watchdog,
// SIGHUP reloads what can change and reopens the log file.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <csignal>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

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

// A flag bound to its own copy of a config field: after the file is read,
// only the flags that were given overwrite it (so 0 or "" can be set too).
class Overrides {
 public:
  template <typename T>
  CLI::Option* add(CLI::App& app, const std::string& name, T& field_in_file_config, const std::string& help) {
    auto value = std::make_shared<T>();
    CLI::Option* opt = app.add_option(name, *value, help);
    applies_.push_back([opt, value, &field_in_file_config] {
      if (opt->count() != 0) field_in_file_config = *value;
    });
    return opt;
  }
  void apply() const {
    for (const auto& f : applies_) f();
  }

 private:
  std::vector<std::function<void()>> applies_;
};

// SIGHUP: the file read again (flags still win), the log reopened (after
// logrotate moved it) at the file's level, then what the node can reload.
void reload(node::InternalNode& d, const std::string& config_file, node::NodeConfig& cfg, const Overrides& flags) {
  spdlog::info("SIGHUP: reloading{}", config_file.empty() ? " (no --config file: the log is reopened)" : " " + config_file);
  try {
    if (!config_file.empty()) {
      cfg = node::load_config_file(config_file);
      flags.apply();
    }
    service::apply_daemon_log(cfg.log);
    for (const std::string& what : d.reload(cfg)) spdlog::info("reloaded: {}", what);
  } catch (const std::exception& e) {
    // A bad edit keeps everything as it was; the daemon runs on.
    spdlog::error("SIGHUP: not reloaded: {}", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"madengine: InfiniBand subnet manager and subnet administrator"};
  node::NodeConfig cfg;  // the file's values go here, then the flags that were given
  Overrides flags;
  std::string config_file, transport;
  bool exit_after_up = false;
  app.add_option("-c,--config", config_file, "TOML configuration file (see config/madengine.toml)");
  CLI::Option* transport_opt = app.add_option("--transport", transport, "umad (HCA or ibsim; the default) or sim (in-process fabric)")
                                   ->check(CLI::IsMember({"umad", "sim"}));
  flags.add(app, "--ca", cfg.transport.ca, "umad: CA name (default: the CA of the first active IB port)");
  flags.add(app, "--port", cfg.transport.port, "umad: port number (default: the first active port)")->check(CLI::Range(0, 254));
  flags.add(app, "--topology", cfg.transport.topology, "sim: ibnetdiscover/ibsim topology file");
  flags.add(app, "--generate", cfg.transport.generate, "sim: ft2:RADIX | ft3:RADIX[:PODS] | random:SW:DEGREE:HOSTS[:SEED]");
  flags.add(app, "--sim-node", cfg.transport.sim_node, "sim: node (topology name) of our SM port");
  flags.add(app, "--seed", cfg.transport.seed, "sim: seed");
  flags.add(app, "--sim-speed", cfg.transport.sim_speed, "sim: simulated seconds per wall second (0 = as fast as possible)");
  flags.add(app, "--cores", cfg.engine.cores, "engine cores")->check(CLI::Range(1, 256));
  flags.add(app, "--priority", cfg.sm.priority, "SM priority 0..15")->check(CLI::Range(0, 15));
  flags.add(app, "--routing", cfg.sm.routing, "engine or chain tried in order: minhop | updn | ftree | dfsssp | nue | dor, e.g. dfsssp,updn,minhop");
  CLI::Option* guid2lid_opt = flags.add(app, "--guid2lid", cfg.sm.guid2lid,
                                        "GUID-to-LID file kept across restarts (OpenSM's format; \"\" = none)");
  std::string sa_journal;
  CLI::Option* journal_opt =
      app.add_option("--sa-journal", sa_journal,
                     "SA state journal kept across restarts (\"\" = none; default: beside --guid2lid when that is given)");
  flags.add(app, "--sweep-interval-ms", cfg.sm.sweep_interval_ms, "light sweep interval")->check(CLI::Range(100, 3'600'000));
  flags.add(app, "--log-level", cfg.log.level, "trace | debug | info | warn | error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  flags.add(app, "--log-file", cfg.log.file, "log to this file instead of stderr");
  app.add_flag("--exit-after-subnet-up", exit_after_up, "exit 0 once the subnet is up (tests, demos)");
  service::ServiceConfig svc;
  std::string metrics_listen, admin_socket;
  CLI::Option* metrics_opt =
      app.add_option("--metrics-listen", metrics_listen, "serve Prometheus metrics on HOST:PORT (\"\" = off, the default)");
  CLI::Option* admin_opt = app.add_option("--admin-socket", admin_socket,
                                          fmt::format("admin socket path (\"\" = none; default {})", service::kDefaultAdminSocket));
  CLI11_PARSE(app, argc, argv);

  try {
    // The file's values, then the flags that were given on top.
    if (!config_file.empty()) {
      cfg = node::load_config_file(config_file);
      svc = service::load_service_config(config_file);
    }
    flags.apply();
    if (metrics_opt->count() != 0) svc.metrics_listen = metrics_listen;
    if (admin_opt->count() != 0) {
      svc.admin_socket = admin_socket;
      svc.admin_socket_given = true;
    }
    std::string host, error;
    unsigned port = 0;
    if (!svc.metrics_listen.empty() && !service::parse_listen(svc.metrics_listen, host, port, error))
      throw node::ConfigError(fmt::format("--metrics-listen \"{}\": {}", svc.metrics_listen, error));
    if (transport_opt->count() != 0)
      cfg.transport.kind = transport == "sim" ? node::TransportKind::kSim : node::TransportKind::kUmad;
    service::apply_service_defaults(svc, cfg.transport.kind == node::TransportKind::kSim);
    // The journal lives beside the GUID-to-LID map unless named.
    if (journal_opt->count() != 0)
      cfg.sa.journal = sa_journal;
    else if (guid2lid_opt->count() != 0 && !cfg.sm.guid2lid.empty() && !cfg.given.contains("sa.journal"))
      cfg.sa.journal = (std::filesystem::path(cfg.sm.guid2lid).parent_path() / "sa-state.journal").string();
    node::apply_state_defaults(cfg, guid2lid_opt->count() != 0, journal_opt->count() != 0);
    node::validate(cfg);
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
    node::InternalNode d(cfg);
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
      if (g_reload.exchange(false)) reload(d, config_file, cfg, flags);
      const bool up = d.sm().status().subnet_up;
      if (up && !was_up && exit_after_up) break;
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
