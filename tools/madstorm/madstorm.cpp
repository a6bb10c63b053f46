// madstorm: floods an SA (madengine or OpenSM, on a fabric or ibsim through
// umad, or through a verbs UD QP) with query storms and reports throughput,
// latency percentiles, BUSY, timeouts and wrong answers; --embedded runs
// madengine in process and checks every PathRecord against the fabric;
// `madstorm merge` combines the results of several hosts. The storm itself
// lives in lib/ (Storm), the options in lib/options.
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>

#include <infiniband/umad.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "service/metrics.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"
#include "engine/umad/umad_transport.hpp"
#include "lib/fabric_hosts.hpp"
#include "lib/fabric_oracle.hpp"
#include "lib/hosts.hpp"
#include "lib/merge.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/runner.hpp"
#include "lib/storm.hpp"
#include "lib/verbs_client.hpp"
#include "lib/workload.hpp"
#include "sim/fabric.hpp"

namespace {

using namespace madstorm;
using madengine::Nanos;

std::atomic<madstorm::Storm*> g_storm{nullptr};

extern "C" void on_signal(int) {
  // request_stop() only stores to an atomic: async-signal-safe.
  if (auto* s = g_storm.load(std::memory_order_relaxed)) s->request_stop();
}

constexpr Nanos kSpinSleepNs = 20 * madengine::kNanosPerMicro;

// Waits on the umad fd until `deadline_ns`: poll() for the whole
// milliseconds left (an answer ends it at once; under umad2sim poll() is the
// only wait the shim's fd knows, in whole milliseconds), then short sleeps to
// the deadline itself, so idle time costs no CPU and a scheduled send is at
// most kSpinSleepNs late.
struct UmadIdle {
  const madengine::UmadTransport* t;
  const madengine::Clock* clock;
  void operator()(Nanos deadline_ns) const {
    const Nanos left = deadline_ns - clock->now_ns();
    if (left <= 0) return;
    pollfd p{t->fd(), POLLIN, 0};
    if (left >= madengine::kNanosPerMilli) {
      ::poll(&p, 1, static_cast<int>(left / madengine::kNanosPerMilli));
      return;
    }
    if (::poll(&p, 1, 0) > 0) return;
    timespec ts{0, static_cast<long>(std::min(left, kSpinSleepNs))};
    ::nanosleep(&ts, nullptr);
  }
};

// The verbs transport polls its CQs (no completion channel): short naps.
struct NapIdle {
  const madengine::Clock* clock;
  void operator()(Nanos deadline_ns) const {
    const Nanos left = deadline_ns - clock->now_ns();
    if (left <= 0) return;
    timespec ts{0, static_cast<long>(std::min(left, kSpinSleepNs))};
    ::nanosleep(&ts, nullptr);
  }
};

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

RunRequest base_request(const Options& o, const madengine::Transport& t, std::uint16_t sa_lid, const std::string& label) {
  RunRequest req;
  req.info.label = label;
  req.info.transport = std::string(t.name());
  req.info.storm = o.storm;
  req.info.storm.sa.lid = sa_lid;
  req.info.storm.sa.subnet_prefix = t.local_port().subnet_prefix;
  req.info.workload = o.workload;
  req.info.wall.shard_source = o.shard_source;
  req.hosts_file = o.hosts_file;
  req.save_hosts = o.save_hosts;
  req.discover.method = o.discover == "table" ? DiscoverMethod::kTable
                        : o.discover == "scan" ? DiscoverMethod::kScan
                                               : DiscoverMethod::kAuto;
  req.discover.mads_cut_short = o.mads_cut_short;
  req.start_at_unix_ns = o.start_at_unix_ns;
  req.progress = !o.no_progress && ::isatty(STDOUT_FILENO);
  return req;
}

std::optional<RunOutput> run(const RunRequest& req, madengine::Transport& t, const madengine::Clock& clock,
                             const std::function<void(Nanos)>& idle) {
  std::string err;
  auto out = run_storm(req, t, clock, idle, err, [](Storm* s) { g_storm.store(s, std::memory_order_relaxed); });
  if (!out) fmt::print(stderr, "madstorm: {}\n", err);
  return out;
}

// ibsim's umad2sim names its CA type "simulator" in the sysfs it fakes; it
// hands every received MAD over cut to 224 bytes (its buffer holds the umad
// header and 224 MAD bytes), so RMPP segments lose their last 32 bytes.
bool is_umad2sim(std::string_view ca_name) {
  umad_ca_t ca{};
  const std::string name(ca_name);
  if (umad_get_ca(name.c_str(), &ca) < 0) return false;
  const bool sim = std::string_view(ca.ca_type).starts_with("simulator");
  umad_release_ca(&ca);
  return sim;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

// Exit status: 3 on wrong answers; with --strict, 4 on anything else not as
// planned (each problem on stderr, one line each).
int verdict(const Options& o, const std::vector<const RunOutput*>& runs, std::vector<std::string> problems) {
  std::uint64_t errors = 0;
  for (const RunOutput* r : runs) {
    errors += r->result.counters.errors;
    if (o.strict) {
      auto p = strict_problems(r->result, r->planned);
      problems.insert(problems.end(), p.begin(), p.end());
    }
  }
  if (!o.strict) return errors != 0 ? 3 : 0;
  if (problems.empty()) {
    fmt::print(stdout, "madstorm: strict check passed: every planned query answered, every answer right\n");
    return 0;
  }
  std::fflush(stdout);  // the summary first, then why it failed
  for (const std::string& p : problems) fmt::print(stderr, "madstorm: FAILED: {}\n", p);
  return errors != 0 ? 3 : 4;
}

// --embedded: madengine's daemon (SM + SA) on an in-process simulated fabric,
// brought up, then stormed from every host port of the same fabric, with the
// hosts taken from the fabric and every PathRecord checked against it.
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
  md::InternalNode d(cfg);
  // The daemon's metrics endpoint, read by its own thread while the storm pumps the node.
  madengine::service::MetricsRenderer renderer(d);
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
  const auto up = d.sm().status();
  const double up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stdout,
             "madengine (embedded, sim {}): subnet up in {:.2f} s wall: {} nodes ({} switches, {} CAs), {} links, "
             "{} SMPs; routing {:.3f} s, path db {:.3f} s\n",
             o.embedded, up_s, up.last_heavy.nodes, up.last_heavy.switches, up.last_heavy.cas, up.last_heavy.links,
             up.last_heavy.smps, up.last_heavy.routing_s, up.last_heavy.path_db_s);
  madengine::sim::Fabric& f = *d.fabric();
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
  const auto a = run(req, t, clock, idle);
  if (!a) return 2;
  const auto sa = d.sa().counters().total();
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

// A storm through a port (umad or verbs), twice with --compare.
int run_port(Options& o, madengine::Transport& t, const madengine::Clock& clock, const std::function<void(Nanos)>& idle) {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  auto sa_lid = static_cast<std::uint16_t>(o.sa_lid != 0 ? o.sa_lid : t.local_port().sm_lid);
  if (sa_lid == 0) {
    fmt::print(stderr, "madstorm: the port has no SM LID (no SM yet?): give --sa-lid\n");
    return 2;
  }
  RunRequest req = base_request(o, t, sa_lid, o.label);
  req.plot_path = o.compare && !o.plot_path.empty() ? with_suffix(o.plot_path, "-a") : o.plot_path;
  req.html_path = o.compare && !o.html_path.empty() ? with_suffix(o.html_path, "-a") : o.html_path;
  const auto a = run(req, t, clock, idle);
  if (!a) return 2;
  if (!o.compare) {
    write_json(o.json_path, a->json);
    return verdict(o, {&*a}, {});
  }
  if (!o.between_cmd.empty()) {
    std::fflush(stdout);
    const int rc = std::system(o.between_cmd.c_str());
    if (rc != 0) {
      fmt::print(stderr, "madstorm: --between command failed ({})\n", rc);
      return 2;
    }
  }
  if (o.pause) {
    fmt::print(stdout, "madstorm: switch the SA, then press Enter\n");
    std::fflush(stdout);
    std::string line;
    std::getline(std::cin, line);
  }
  t.poll_events();
  RunRequest req_b = base_request(o, t, static_cast<std::uint16_t>(o.sa_lid2 != 0 ? o.sa_lid2 : t.local_port().sm_lid),
                                  o.label2);
  req_b.start_at_unix_ns = 0;  // the common start was for the first storm
  req_b.plot_path = o.plot_path.empty() ? "" : with_suffix(o.plot_path, "-b");
  req_b.html_path = o.html_path.empty() ? "" : with_suffix(o.html_path, "-b");
  const auto b = run(req_b, t, clock, idle);
  if (!b) return 2;
  fmt::print(stdout, "side by side:\n");
  print_compare(stdout, a->json, b->json);
  write_json(o.json_path, nlohmann::json{{"schema", "madstorm-compare/2"}, {"a", a->json}, {"b", b->json}});
  return verdict(o, {&*a, &*b}, {});
}

struct MergeOptions {
  std::vector<std::string> files;
  std::string json_path, plot_path, html_path;
  bool strict = false;
};

int run_merge(const MergeOptions& m) {
  std::vector<ParsedRun> runs;
  std::vector<nlohmann::json> docs;
  for (const std::string& path : m.files) {
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot read " + path);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f);
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(path + ": not JSON: " + e.what());
    }
    runs.push_back(parse_run(j, path));
    docs.push_back(std::move(j));
  }
  const MergedRun merged = merge_runs(runs);
  fmt::print(stdout, "madstorm merge: {} runs ({})\n", runs.size(), merged.info.wall.host);
  for (const std::string& n : merged.notes) fmt::print(stdout, "  note: {}\n", n);
  print_summary(stdout, merged.info, merged.result);
  write_json(m.json_path, merged_json(merged, runs));
  if (!m.plot_path.empty()) write_svg(m.plot_path, merged.info, merged.result);
  if (!m.html_path.empty()) write_html(m.html_path, merged.info, merged.result, docs);
  if (m.strict) {
    auto problems = strict_problems(merged.result, 0);
    problems.insert(problems.end(), merged.notes.begin(), merged.notes.end());
    std::fflush(stdout);
    for (const std::string& p : problems) fmt::print(stderr, "madstorm merge: FAILED: {}\n", p);
    if (!problems.empty()) return merged.result.counters.errors != 0 ? 3 : 4;
  }
  return merged.result.counters.errors != 0 ? 3 : 0;
}

int real_main(int argc, char** argv) {
  Options o;
  CLI::App app{"madstorm: SA query-load benchmark (job-start, restart, random, hotspot, gettable, noderecord, mcast, "
               "mix storms against any SA)"};
  add_options(app, o);
  MergeOptions m;
  CLI::App* merge = app.add_subcommand("merge", "combine the --json results of several hosts (shards) into one report");
  merge->add_option("files", m.files, "madstorm/2 JSON results")->required()->check(CLI::ExistingFile);
  merge->add_option("--json", m.json_path, "write the merged figures as JSON");
  merge->add_option("--plot", m.plot_path, "write the merged SVG");
  merge->add_option("--html", m.html_path, "write a self-contained HTML report");
  merge->add_flag("--strict", m.strict, "exit 4 on timeouts, BUSY, counts that do not add up or missing shards");
  madengine::cli::add_version_flag(app, "madstorm");
  if (const auto rc = madengine::cli::parse(app, argc, argv)) return *rc;

  if (merge->parsed()) return run_merge(m);
  if (!o.compare_files.empty()) {
    nlohmann::json a, b;
    for (int i = 0; i < 2; ++i) {
      std::ifstream f(o.compare_files[static_cast<std::size_t>(i)]);
      if (!f) throw std::runtime_error("cannot read " + o.compare_files[static_cast<std::size_t>(i)]);
      (i == 0 ? a : b) = nlohmann::json::parse(f);
    }
    print_compare(stdout, a, b);
    return 0;
  }
  finish_options(o, [](const char* name) -> const char* { return std::getenv(name); }, wall_now_ns());
  if (o.shard_source != "default" && o.shard_source != "--shard")
    fmt::print(stdout, "madstorm: shard {}/{} from {}\n", o.workload.shard_index, o.workload.shard_count, o.shard_source);

  if (!o.embedded.empty()) return run_embedded(o);

  madengine::SteadyClock clock;
  if (o.transport_kind == TransportKind::kVerbs) {
    madengine::VerbsUdTransport t(verbs_client_config(o.ca, o.port, o.storm.window_max), clock);
    if (!t.open(madengine::AgentSpec{.gsi_client = true})) {
      fmt::print(stderr, "madstorm: cannot open the verbs device: {} (the verbs transport is untested on hardware)\n",
                 t.last_error());
      return 2;
    }
    fmt::print(stdout, "madstorm: verbs UD QP {} on {} port {} (untested on hardware)\n", t.qp_num(), t.device_name(),
               int{t.local_port().port_num});
    return run_port(o, t, clock, NapIdle{&clock});
  }
  madengine::UmadTransport t(madengine::UmadConfig{.ca_name = o.ca, .port_num = o.port}, clock);
  if (!t.open(madengine::AgentSpec{.gsi_client = true})) {
    fmt::print(stderr, "madstorm: cannot open the umad port: {}\n", t.last_error());
    return 2;
  }
  o.mads_cut_short = is_umad2sim(t.ca_name());
  return run_port(o, t, clock, UmadIdle{&t, &clock});
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
