// madengine: the SM + SA daemon.
//   madengine [--config FILE] [--transport umad|sim] [flags...]
// Flags override the config file; `madengine --help` lists them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "daemon.hpp"
#include "sim/fabric.hpp"

using namespace madengine;

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

void setup_logging(const daemon::LogSection& log) {
  if (!log.file.empty()) spdlog::set_default_logger(spdlog::basic_logger_mt("madengine", log.file));
  spdlog::set_level(spdlog::level::from_str(log.level));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
}

void log_status(daemon::Daemon& d) {
  const auto s = d.sm().status();
  const auto sa = d.sa().counters().total();
  spdlog::info("status: {} epoch {} heavy sweeps {} light sweeps {} traps {} | SA received {} answered {} busy {} dropped {}",
               s.subnet_up ? "subnet up" : "subnet not up", s.epoch, s.heavy_sweeps, s.light_sweeps, s.traps,
               sa.received, sa.answered, sa.busy, sa.dropped);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"madengine: InfiniBand subnet manager and subnet administrator"};
  std::string config_file;
  std::string transport, ca, topology, generate, sim_node, routing, guid2lid, sa_journal, log_level, log_file;
  unsigned port = 0, cores = 0, priority = 16, sweep_ms = 0;
  std::uint64_t seed = 0;
  double sim_speed = 1.0;
  bool exit_after_up = false;
  app.add_option("-c,--config", config_file, "TOML configuration file (see config/madengine.toml)");
  app.add_option("--transport", transport, "umad (HCA or ibsim) or sim (in-process fabric)")->check(CLI::IsMember({"umad", "sim"}));
  app.add_option("--ca", ca, "umad: CA name");
  app.add_option("--port", port, "umad: port number");
  app.add_option("--topology", topology, "sim: ibnetdiscover/ibsim topology file");
  app.add_option("--generate", generate, "sim: ft2:RADIX | ft3:RADIX[:PODS] | random:SW:DEGREE:HOSTS[:SEED]");
  app.add_option("--sim-node", sim_node, "sim: node (topology name) of our SM port");
  app.add_option("--seed", seed, "sim: seed");
  app.add_option("--sim-speed", sim_speed, "sim: simulated seconds per wall second (0 = as fast as possible)");
  app.add_option("--cores", cores, "engine cores");
  app.add_option("--priority", priority, "SM priority 0..15")->check(CLI::Range(0, 15));
  app.add_option("--routing", routing, "engine or chain tried in order: minhop | updn | ftree | dfsssp | nue | dor, e.g. dfsssp,updn,minhop");
  app.add_option("--guid2lid", guid2lid, "GUID-to-LID file kept across restarts");
  app.add_option("--sa-journal", sa_journal,
                 "SA state journal kept across restarts (\"\" = none; default: beside --guid2lid when that is given)");
  app.add_option("--sweep-interval-ms", sweep_ms, "light sweep interval");
  app.add_option("--log-level", log_level, "trace | debug | info | warn | error");
  app.add_option("--log-file", log_file, "log to this file instead of stderr");
  app.add_flag("--exit-after-subnet-up", exit_after_up, "exit 0 once the subnet is up (tests, demos)");
  CLI11_PARSE(app, argc, argv);

  daemon::Config cfg;
  try {
    if (!config_file.empty()) cfg = daemon::load_config_file(config_file);
    if (!transport.empty()) cfg.transport.kind = transport == "umad" ? daemon::TransportKind::kUmad : daemon::TransportKind::kSim;
    if (!ca.empty()) cfg.transport.ca = ca;
    if (port) cfg.transport.port = port;
    if (!topology.empty()) cfg.transport.topology = topology;
    if (!generate.empty()) cfg.transport.generate = generate;
    if (!sim_node.empty()) cfg.transport.sim_node = sim_node;
    if (seed) cfg.transport.seed = seed;
    if (cores) cfg.engine.cores = cores;
    if (priority <= 15) cfg.sm.priority = priority;
    if (!routing.empty()) cfg.sm.routing = routing;
    if (!guid2lid.empty()) cfg.sm.guid2lid = guid2lid;
    // The journal lives beside the GUID-to-LID map unless named.
    if (app.count("--sa-journal") != 0)
      cfg.sa.journal = sa_journal;
    else if (!guid2lid.empty())
      cfg.sa.journal = (std::filesystem::path(guid2lid).parent_path() / "sa-state.journal").string();
    if (sweep_ms) cfg.sm.sweep_interval_ms = sweep_ms;
    if (!log_level.empty()) cfg.log.level = log_level;
    if (!log_file.empty()) cfg.log.file = log_file;
    daemon::validate(cfg);
  } catch (const daemon::ConfigError& e) {
    fmt::print(stderr, "madengine: {}\n", e.what());
    return 2;
  }
  setup_logging(cfg.log);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  try {
    daemon::Daemon d(cfg);
    d.start();
    const auto wall0 = std::chrono::steady_clock::now();
    auto last_status = wall0;
    bool was_up = false;
    while (!g_stop.load()) {
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
  return 0;
}
