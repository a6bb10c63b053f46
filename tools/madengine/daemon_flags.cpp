// The daemon's flags and the configuration it runs (see daemon_flags.hpp).
#include "daemon_flags.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cli/command_line.hpp"
#include "node/perfmgr_keys.hpp"
#include "node/routing_keys.hpp"

namespace madengine::daemon_cli {

void add_flags(CLI::App& app, CommandLine& cl, node::NodeConfig& cfg) {
  Overrides& flags = cl.flags;
  app.add_option("-c,--config", cl.config_file, "TOML configuration file (see config/madengine.toml)");
  cl.transport_opt = app.add_option("--transport", cl.transport, "umad (HCA or ibsim; the default) or sim (in-process fabric)")
                         ->check(CLI::IsMember({"umad", "sim"}));
  flags.add(app, "--ca", cfg.transport.ca, "umad: CA name (default: the CA of the first active IB port)");
  flags.add(app, "--port", cfg.transport.port, "umad: port number (default: the first active port)")->check(CLI::Range(0, 254));
  flags.add(app, "--topology", cfg.transport.topology, "sim: ibnetdiscover/ibsim topology file");
  flags.add(app, "--generate", cfg.transport.generate, "sim: ft2:RADIX[:LEAVES[:HOSTS_PER_LEAF]] | ft3:RADIX[:PODS] | random:SWITCHES:DEGREE:HOSTS[:SEED], each with @PROFILE for its links");
  flags.add(app, "--sim-node", cfg.transport.sim_node, "sim: node (topology name) of our SM port");
  flags.add(app, "--seed", cfg.transport.seed, "sim: seed");
  flags.add(app, "--sim-speed", cfg.transport.sim_speed, "sim: simulated seconds per wall second (0 = as fast as possible)");
  flags.add(app, "--cores", cfg.engine.cores, "engine cores")->check(CLI::Range(1, 256));
  flags.add(app, "--priority", cfg.sm.priority, "SM priority 0..15")->check(CLI::Range(0, 15));
  flags.add(app, "--routing", cfg.sm.routing, "engine or chain tried in order: " + node::routing_engine_names(" | ") + ", e.g. dfsssp,updn,minhop");
  cl.guid2lid_opt = flags.add(app, "--guid2lid", cfg.sm.guid2lid,
                              "GUID-to-LID file kept across restarts (OpenSM's format; \"\" = none)");
  cl.journal_opt =
      app.add_option("--sa-journal", cl.sa_journal,
                     "SA state journal kept across restarts (\"\" = none; default: beside --guid2lid when that is given)");
  flags.add(app, "--sweep-interval-ms", cfg.sm.sweep_interval_ms, "light sweep interval")->check(CLI::Range(100, 3'600'000));
  flags.add(app, "--partition-config", cfg.sm.partition_config,
            "OpenSM's partitions.conf (as opensm -P); SIGHUP re-reads it");
  cl.guid2mkey_opt = flags.add(app, "--guid2mkey", cfg.sm.guid2mkey,
                               "ports' M_Keys kept across restarts (OpenSM's guid2mkey format; \"\" = none)");
  flags.add(app, "--log-level", cfg.log.level, "trace | debug | info | warn | error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  flags.add(app, "--log-file", cfg.log.file, "log to this file instead of stderr");
  app.add_flag("--exit-after-subnet-up", cl.exit_after_up, "exit 0 once the subnet is up (tests, demos)");
  app.add_option("--sim-wedge-core-ms", cl.sim_wedge_core_ms, "test fault: wedge the SM's core after subnet up (sim)")
      ->group("");  // hidden: the forced shutdown's test
  cl.metrics_opt =
      app.add_option("--metrics-listen", cl.metrics_listen, "serve Prometheus metrics on HOST:PORT (\"\" = off, the default)");
  cl.admin_opt = app.add_option("--admin-socket", cl.admin_socket,
                                fmt::format("admin socket path (\"\" = none; default {})", service::kDefaultAdminSocket));
  cli::add_version_flag(app, "madengine");
}

void load_configuration(const CommandLine& cl, node::NodeConfig& cfg, service::ServiceConfig& svc) {
  if (!cl.config_file.empty()) {
    cfg = node::load_config_file(cl.config_file);
    svc = service::load_service_config(cl.config_file);
    svc.perfmgr = node::load_perfmgr_config(cl.config_file);
  }
  cl.flags.apply();
  if (cl.metrics_opt->count() != 0) svc.metrics_listen = cl.metrics_listen;
  if (cl.admin_opt->count() != 0) {
    svc.admin_socket = cl.admin_socket;
    svc.admin_socket_given = true;
  }
  std::string host, error;
  unsigned port = 0;
  if (!svc.metrics_listen.empty() && !service::parse_listen(svc.metrics_listen, host, port, error))
    throw node::ConfigError(fmt::format("--metrics-listen \"{}\": {}", svc.metrics_listen, error));
  if (cl.transport_opt->count() != 0)
    cfg.transport.kind = cl.transport == "sim" ? node::TransportKind::kSim : node::TransportKind::kUmad;
  service::apply_service_defaults(svc, cfg.transport.kind == node::TransportKind::kSim);
  // The journal lives beside the GUID-to-LID map unless named.
  const bool guid2lid_flag = cl.guid2lid_opt->count() != 0;
  if (cl.journal_opt->count() != 0)
    cfg.sa.journal = cl.sa_journal;
  else if (guid2lid_flag && !cfg.sm.guid2lid.empty() && !cfg.given.contains("sa.journal"))
    cfg.sa.journal = (std::filesystem::path(cfg.sm.guid2lid).parent_path() / "sa-state.journal").string();
  // So are the ports' M_Keys.
  const bool mkeys_beside = cl.guid2mkey_opt->count() == 0 && guid2lid_flag && !cfg.sm.guid2lid.empty() &&
                            !cfg.given.contains("sm.guid2mkey");
  if (mkeys_beside) cfg.sm.guid2mkey = (std::filesystem::path(cfg.sm.guid2lid).parent_path() / "guid2mkey").string();
  node::apply_state_defaults(cfg, guid2lid_flag, cl.journal_opt->count() != 0,
                             cl.guid2mkey_opt->count() != 0 || mkeys_beside);
  if (cl.sim_wedge_core_ms != 0 && cfg.transport.kind != node::TransportKind::kSim)
    throw node::ConfigError("--sim-wedge-core-ms is a fault of the sim transport (--transport sim)");
  node::validate(cfg);
}

}  // namespace madengine::daemon_cli
