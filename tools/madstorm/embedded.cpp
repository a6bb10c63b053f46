// madstorm-embedded: `madstorm --embedded FABRIC` (madstorm hands it the
// command line): madengine's daemon, a node on an in-process simulated
// fabric, stormed from every host port of that fabric, every PathRecord
// checked against it. Kept apart so madstorm itself links only the client.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/command_line.hpp"
#include "lib/command.hpp"
#include "lib/fabric_hosts.hpp"
#include "lib/fabric_oracle.hpp"
#include "lib/options.hpp"
#include "lib/runner.hpp"
#include "madengine/node/node.hpp"
#include "node/control.hpp"
#include "service/metrics.hpp"
#include "sim/fabric.hpp"

namespace {

using namespace madstorm;
using madengine::Nanos;

// madengine's daemon (SM + SA) on an in-process simulated fabric, brought
// up, then stormed from every host port of the same fabric, with the hosts
// taken from the fabric and every PathRecord checked against it.
// Everything runs on this thread: the storm's idle time drives the daemon and
// the fabric. Latency and rate are wall time, so they include the whole
// in-process system's work (SA, SM, simulated forwarding, the oracle).
int run_embedded(const Options& o) {
  namespace md = madengine::node;
  md::NodeConfig cfg;
  cfg.transport.kind = md::TransportKind::kSim;
  cfg.transport.generate = o.embedded;
  cfg.engine.cores = o.embedded_cores;
  cfg.engine.pin = false;
  cfg.sm.guid2lid.clear();  // a demo fabric: nothing to keep across runs
  cfg.sa.journal.clear();
  if (o.embedded_sa_share != 0) cfg.sa.requester_share_max = o.embedded_sa_share;
  cfg.log.level = "warn";
  md::ControlledNode owned(cfg);
  md::Node& d = owned.node();
  const md::NodeControl control = owned.control();
  // The daemon's metrics endpoint, read by its own thread while the storm pumps the node.
  madengine::service::MetricsRenderer renderer(control);
  std::unique_ptr<madengine::service::MetricsServer> metrics;
  if (!o.embedded_metrics.empty()) {
    try {
      metrics = std::make_unique<madengine::service::MetricsServer>(o.embedded_metrics, [&renderer] { return renderer.render(); });
    } catch (const std::exception& e) {
      fmt::print(stderr, "madstorm: {}\n", e.what());
      return 2;
    }
    fmt::print(stdout, "madengine (embedded) metrics: http://{}/metrics (port {})\n", o.embedded_metrics, metrics->port());
    std::fflush(stdout);  // whoever scrapes learns the port now, not at exit
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!d.wait_subnet_up(std::chrono::milliseconds(60'000))) {
    fmt::print(stderr, "madstorm: the embedded madengine did not reach subnet up\n");
    return 2;
  }
  const md::SweepStats up = control.sm_status().last_heavy;
  const double up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stdout,
             "madengine (embedded, sim {}): subnet up in {:.2f} s wall: {} nodes ({} switches, {} CAs), {} links, "
             "{} SMPs; routing {:.3f} s, path db {:.3f} s\n",
             o.embedded, up_s, up.nodes, up.switches, up.cas, up.links, up.smps, up.routing_s, up.path_db_s);
  madengine::sim::Fabric& f = *control.sim_fabric();
  FabricHostsTransport t(f);
  if (o.plant_fault != PlantedFault::kNone) t.plant(o.plant_fault, o.plant_nth);
  if (!t.open(madengine::AgentSpec{.gsi_client = true})) {
    fmt::print(stderr, "madstorm: cannot attach to the simulated fabric\n");
    return 2;
  }
  for (int i = 0; i < 1000 && t.local_port().sm_lid == 0; ++i) {
    d.pump();
    t.poll_events();
  }
  const auto sa_lid = static_cast<std::uint16_t>(o.sa_lid != 0 ? o.sa_lid : t.local_port().sm_lid);
  if (sa_lid == 0) {
    fmt::print(stderr, "madstorm: the simulated port has no SM LID\n");
    return 2;
  }
  FabricOracle oracle(f, FabricOracleConfig{.subnet_prefix = t.local_port().subnet_prefix});
  RunRequest req = base_request(o, t, sa_lid, o.label.empty() ? "madengine (embedded)" : o.label);
  req.hosts = t.hosts();  // from the fabric, not from the SA under test
  req.oracle = o.no_oracle ? nullptr : &oracle;
  req.plot_path = o.plot_path;
  req.html_path = o.html_path;
  madengine::SteadyClock clock;
  auto idle = [&d](Nanos) { d.pump(); };
  const auto a = run_reported(req, t, clock, idle);
  if (!a) return 2;
  const md::SaRecordCounters sa = control.sa_counters().total;
  fmt::print(stdout, "madengine SA counters: received {}  answered {}  BUSY {}  duplicates {}  dropped {}\n",
             sa.received, sa.answered, sa.busy, sa.duplicates, sa.dropped);
  std::vector<std::string> problems;
  if (sa.dropped != 0) problems.push_back(fmt::format("the SA dropped {} admitted queries", sa.dropped));
  if (o.plant_fault != PlantedFault::kNone)
    fmt::print(stdout, "madstorm: planted {} wrong answer(s) ({}): the checks must count them\n", t.planted(),
               to_string(o.plant_fault));
  t.close();
  write_json(o.json_path, a->json);
  return verdict(o, {&*a}, problems);
}

int real_main(int argc, char** argv) {
  Options o;
  CLI::App app{"madstorm-embedded: madstorm --embedded, madengine (SM + SA) on an in-process simulated fabric under "
               "an SA query storm"};
  add_options(app, o);
  madengine::cli::add_version_flag(app, "madstorm");
  if (const auto rc = madengine::cli::parse(app, argc, argv)) return *rc;
  if (o.embedded.empty()) {
    fmt::print(stderr, "madstorm-embedded: --embedded FABRIC is required\n");
    return madengine::cli::kExitUsage;
  }
  finish_options(o, [](const char* name) -> const char* { return std::getenv(name); }, wall_now_ns());
  if (o.shard_source != "default" && o.shard_source != "--shard")
    fmt::print(stdout, "madstorm: shard {}/{} from {}\n", o.workload.shard_index, o.workload.shard_count, o.shard_source);
  return run_embedded(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "madstorm: {}\n", e.what());
    return 2;
  }
}
