// madengine: the SM + SA daemon.
//   madengine [--config FILE] [--transport umad|sim] [flags...]
// Flags override the config file; `madengine --help` lists them. Without
// flags it runs on the first active InfiniBand port (umad); the in-process
// simulator is `--transport sim`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "daemon.hpp"
#include "sim/fabric.hpp"

using namespace madengine;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};
void on_signal(int) { g_stop.store(true); }
void on_hangup(int) { g_reload.store(true); }  // as OpenSM: SIGHUP re-reads its files

void setup_logging(const daemon::LogSection& log) {
  if (!log.file.empty()) spdlog::set_default_logger(spdlog::basic_logger_mt("madengine", log.file));
  spdlog::set_level(spdlog::level::from_str(log.level));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  // A log file is read while the daemon runs (tail -f, an operator after an
  // incident): warnings and errors at once, everything else within a second.
  spdlog::flush_on(spdlog::level::warn);
  spdlog::flush_every(std::chrono::seconds(1));
}

void log_status(daemon::Daemon& d) {
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"madengine: InfiniBand subnet manager and subnet administrator"};
  daemon::Config cfg;  // the file's values go here, then the flags that were given
  Overrides flags;
  std::string config_file, transport;
  double sim_speed = 1.0;
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
  app.add_option("--sim-speed", sim_speed, "sim: simulated seconds per wall second (0 = as fast as possible)");
  flags.add(app, "--cores", cfg.engine.cores, "engine cores")->check(CLI::Range(1, 256));
  flags.add(app, "--priority", cfg.sm.priority, "SM priority 0..15")->check(CLI::Range(0, 15));
  flags.add(app, "--routing", cfg.sm.routing, "minhop | updn | ftree");
  CLI::Option* guid2lid_opt = flags.add(app, "--guid2lid", cfg.sm.guid2lid,
                                        "GUID-to-LID file kept across restarts (OpenSM's format; \"\" = none)");
  std::string sa_journal;
  CLI::Option* journal_opt =
      app.add_option("--sa-journal", sa_journal,
                     "SA state journal kept across restarts (\"\" = none; default: beside --guid2lid when that is given)");
  flags.add(app, "--sweep-interval-ms", cfg.sm.sweep_interval_ms, "light sweep interval")->check(CLI::Range(100, 3'600'000));
  flags.add(app, "--partition-config", cfg.sm.partition_config,
            "OpenSM's partitions.conf (as opensm -P); SIGHUP re-reads it");
  CLI::Option* guid2mkey_opt = flags.add(app, "--guid2mkey", cfg.sm.guid2mkey,
                                         "ports' M_Keys kept across restarts (OpenSM's guid2mkey format; \"\" = none)");
  flags.add(app, "--log-level", cfg.log.level, "trace | debug | info | warn | error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  flags.add(app, "--log-file", cfg.log.file, "log to this file instead of stderr");
  app.add_flag("--exit-after-subnet-up", exit_after_up, "exit 0 once the subnet is up (tests, demos)");
  CLI11_PARSE(app, argc, argv);

  try {
    // The file's values, then the flags that were given on top.
    if (!config_file.empty()) cfg = daemon::load_config_file(config_file);
    flags.apply();
    if (transport_opt->count() != 0)
      cfg.transport.kind = transport == "sim" ? daemon::TransportKind::kSim : daemon::TransportKind::kUmad;
    // The journal lives beside the GUID-to-LID map unless named.
    if (journal_opt->count() != 0)
      cfg.sa.journal = sa_journal;
    else if (guid2lid_opt->count() != 0 && !cfg.sm.guid2lid.empty() && !cfg.given.contains("sa.journal"))
      cfg.sa.journal = (std::filesystem::path(cfg.sm.guid2lid).parent_path() / "sa-state.journal").string();
    // So are the ports' M_Keys.
    const bool mkeys_beside = guid2mkey_opt->count() == 0 && guid2lid_opt->count() != 0 && !cfg.sm.guid2lid.empty() &&
                              !cfg.given.contains("sm.guid2mkey");
    if (mkeys_beside) cfg.sm.guid2mkey = (std::filesystem::path(cfg.sm.guid2lid).parent_path() / "guid2mkey").string();
    daemon::apply_state_defaults(cfg, guid2lid_opt->count() != 0, journal_opt->count() != 0,
                                 guid2mkey_opt->count() != 0 || mkeys_beside);
    daemon::validate(cfg);
  } catch (const daemon::ConfigError& e) {
    fmt::print(stderr, "madengine: {}\n", e.what());
    return 2;
  }
  setup_logging(cfg.log);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGHUP, on_hangup);

  try {
    daemon::Daemon d(cfg);
    d.start();
    const auto wall0 = std::chrono::steady_clock::now();
    auto last_status = wall0;
    bool was_up = false;
    while (!g_stop.load()) {
      if (g_reload.exchange(false)) d.reload_config_files();
      if (d.is_sim()) {
        // Pace simulated time to wall time unless asked to run flat out.
        const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall0).count();
        if (sim_speed > 0 && d.fabric()->now_ns() > static_cast<Nanos>(static_cast<double>(wall_ns) * sim_speed)) {
          if (d.pump() == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
          continue;
        }
        d.pump();
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      const bool up = d.sm().status().subnet_up;
      if (up && !was_up && exit_after_up) break;
      was_up = up;
      if (std::chrono::steady_clock::now() - last_status > std::chrono::seconds(30)) {
        log_status(d);
        last_status = std::chrono::steady_clock::now();
      }
    }
    log_status(d);
    d.stop();
  } catch (const daemon::ConfigError& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  spdlog::shutdown();
  return 0;
}
