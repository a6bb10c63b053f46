// madstorm: floods an SA (madengine or OpenSM, on a fabric or ibsim through
// umad) with query storms and reports throughput, latency percentiles, BUSY,
// timeouts and wrong answers. The storm itself lives in lib/ (Storm).
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <infiniband/umad.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "daemon.hpp"
#include "engine/umad/umad_transport.hpp"
#include "lib/hosts.hpp"
#include "lib/report.hpp"
#include "lib/runner.hpp"
#include "lib/storm.hpp"
#include "lib/workload.hpp"
#include "sim/fabric.hpp"
#include "sim/sim_transport.hpp"

namespace {

using namespace madstorm;
using madengine::Nanos;

std::atomic<madstorm::Storm*> g_storm{nullptr};

extern "C" void on_signal(int) {
  // request_stop() only stores to an atomic: async-signal-safe.
  if (auto* s = g_storm.load(std::memory_order_relaxed)) s->request_stop();
}

// Waits on the umad fd until `deadline_ns`: poll() for the whole
// milliseconds left (an answer ends it at once; under umad2sim poll() is the
// only wait the shim's fd knows, in whole milliseconds), then short sleeps to
// the deadline itself, so idle time costs no CPU and a scheduled send is at
// most kSpinSleepNs late.
struct UmadIdle {
  const madengine::UmadTransport* t;
  const madengine::Clock* clock;
  static constexpr Nanos kSpinSleepNs = 20 * madengine::kNanosPerMicro;
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

struct Options {
  std::string ca;
  int port = 0;
  int sa_lid = 0, sa_lid2 = 0;
  int sl = 0;
  std::string pattern = "job-start";
  bool by_gid = false;
  std::string hosts_file;
  std::string save_hosts;
  std::string mix = "pr:8,nr:1";
  std::string shard = "0/1";
  StormConfig storm{};
  WorkloadConfig workload{};
  std::string json_path, plot_path, label;
  bool compare = false;
  std::string between_cmd;
  bool pause = false;
  std::string label2 = "B";
  std::vector<std::string> compare_files;
  bool no_progress = false;
  unsigned retries = 3, busy_retries = 3;
  std::string embedded;        // a sim fabric spec: run madengine SM+SA in this process
  unsigned embedded_cores = 1;
  std::string discover = "auto";
  bool mads_cut_short = false;  // the umad port is ibsim's umad2sim (see DiscoverOptions)
};

std::string with_suffix(const std::string& path, const std::string& suffix) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

// One storm through a port; nullopt on a set-up failure (reported).
std::optional<nlohmann::json> run_once(const Options& o, madengine::Transport& t, const madengine::Clock& clock,
                                       const std::function<void(Nanos)>& idle, std::uint16_t sa_lid,
                                       const std::string& label, const std::string& plot_path) {
  RunRequest req;
  req.info.label = label;
  req.info.transport = std::string(t.name());
  req.info.storm = o.storm;
  req.info.storm.sa.lid = sa_lid;
  req.info.storm.sa.subnet_prefix = t.local_port().subnet_prefix;
  req.info.workload = o.workload;
  req.hosts_file = o.hosts_file;
  req.save_hosts = o.save_hosts;
  req.discover.method = o.discover == "table" ? DiscoverMethod::kTable
                        : o.discover == "scan" ? DiscoverMethod::kScan
                                               : DiscoverMethod::kAuto;
  req.discover.mads_cut_short = o.mads_cut_short;
  req.plot_path = plot_path;
  req.progress = !o.no_progress && ::isatty(STDOUT_FILENO);
  std::string err;
  auto j = run_storm(req, t, clock, idle, err,
                     [](Storm* s) { g_storm.store(s, std::memory_order_relaxed); });
  if (!j) fmt::print(stderr, "madstorm: {}\n", err);
  return j;
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

int finish(const Options& o, const nlohmann::json& out) {
  if (!o.json_path.empty()) {
    std::ofstream f(o.json_path);
    f << out.dump(2) << "\n";
    if (!f) throw std::runtime_error("cannot write " + o.json_path);
  }
  const auto errors = o.compare ? out["a"]["counts"]["errors"].get<std::uint64_t>() + out["b"]["counts"]["errors"].get<std::uint64_t>()
                                : out["counts"]["errors"].get<std::uint64_t>();
  return errors != 0 ? 3 : 0;  // wrong answers: a script must notice
}

// --embedded: madengine's daemon (SM + SA) on an in-process simulated fabric,
// brought up, then stormed from a host port of the same fabric. Everything
// runs on this thread: the storm's idle time drives the daemon and the
// fabric. Latency and rate are wall time, so they include the whole
// in-process system's work (SA, SM, simulated forwarding).
int run_embedded(const Options& o) {
  namespace md = madengine::daemon;
  md::Config cfg;
  cfg.transport.kind = md::TransportKind::kSim;
  cfg.transport.generate = o.embedded;
  cfg.engine.cores = o.embedded_cores;
  cfg.engine.pin = false;
  cfg.sm.guid2lid.clear();  // a demo fabric: nothing to keep across runs
  cfg.sa.journal.clear();
  cfg.log.level = "warn";
  md::Daemon d(cfg);
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
  // The storm's port: the last CA of the fabric (the SM sits on the first).
  madengine::sim::Fabric& f = *d.fabric();
  std::uint32_t node = f.node_count();
  while (node-- > 0 && f.is_switch(node)) {
  }
  madengine::sim::SimTransport t(f, node, 1, "sim");
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
  madengine::SteadyClock clock;
  auto idle = [&d](Nanos) { d.pump(); };
  auto a = run_once(o, t, clock, idle, sa_lid, o.label.empty() ? "madengine (embedded)" : o.label, o.plot_path);
  if (!a) return 2;
  const auto sa = d.sa().counters().total();
  fmt::print(stdout, "madengine SA counters: received {}  answered {}  BUSY {}  duplicates {}  dropped {}\n",
             sa.received, sa.answered, sa.busy, sa.duplicates, sa.dropped);
  t.close();
  return finish(o, *a);
}

int real_main(int argc, char** argv) {
  Options o;
  CLI::App app{"madstorm: SA query-load benchmark (job-start, restart, random, hotspot, gettable, noderecord, mcast, "
               "mix storms against any SA)"};
  app.add_option("--ca", o.ca, "HCA name (default: the first)");
  app.add_option("--port", o.port, "HCA port (default: the first)")->check(CLI::Range(0, 254));
  app.add_option("--sa-lid", o.sa_lid, "SA LID (default: the port's SM LID)")->check(CLI::Range(0, 0xbfff));
  app.add_option("--sl", o.sl, "SL to reach the SA")->check(CLI::Range(0, 15));
  app.add_option("--pattern,-p", o.pattern,
                 "job-start | restart | random | hotspot | gettable | noderecord | mcast | mix")
      ->capture_default_str();
  app.add_flag("--by-gid", o.by_gid, "name hosts by GID in PathRecords (default: by LID)");
  app.add_option("--hosts-file", o.hosts_file, "LID PORT_GUID [NODE_GUID] lines instead of asking the SA");
  app.add_option("--save-hosts", o.save_hosts, "write the hosts found to this file (--hosts-file's format)");
  app.add_option("--job-size", o.workload.job_size, "job start: hosts in the job (default: all)");
  app.add_option("--hot-dests", o.workload.hot_dests, "hot spot: destinations")->capture_default_str();
  app.add_option("--mix", o.mix, "mix weights: pr:N,table:N,nr:N,mc:N")->capture_default_str();
  app.add_option("--shard", o.shard, "this process's share of the hosts, i/n")->capture_default_str();
  app.add_option("--seed", o.workload.seed, "random seed")->capture_default_str();
  app.add_option("--window,-w", o.storm.window_max, "queries in flight in all")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  app.add_option("--window-per-host", o.storm.window_per_host_max, "queries in flight per emulated host")
      ->capture_default_str()->check(CLI::Range(1u, 65535u));
  app.add_option("--rate,-r", o.storm.rate_qps, "open loop: queries per second (0 = closed loop)")->check(CLI::Range(0.0, 1e8));
  app.add_option("--count,-n", o.storm.queries_max, "measured queries to issue (0 = pattern or duration)");
  app.add_option("--duration,-d", o.storm.duration_ms, "measured time, ms (0 = count or pattern)");
  app.add_option("--warmup", o.storm.warmup_ms, "warm-up, ms: issued, not counted");
  app.add_option("--timeout", o.storm.retry.timeout_ms, "client timeout per attempt, ms")->capture_default_str()->check(CLI::Range(1u, 600000u));
  app.add_option("--retries", o.retries, "re-sends after a timeout")->capture_default_str()->check(CLI::Range(0u, 255u));
  app.add_option("--busy-backoff", o.storm.retry.busy_backoff_ms, "wait after a BUSY answer, ms")->capture_default_str();
  app.add_option("--busy-retries", o.busy_retries, "asks again after BUSY answers")->capture_default_str()->check(CLI::Range(0u, 255u));
  app.add_flag("--repeat", o.workload.repeat, "finite patterns start over until --count or --duration");
  app.add_option("--discover", o.discover, "how to find the hosts: auto | table | scan")->capture_default_str();
  app.add_option("--json", o.json_path, "write every figure as JSON");
  app.add_option("--plot", o.plot_path, "write an SVG: latency histogram and throughput over time");
  app.add_option("--label", o.label, "name of the SA in reports (e.g. opensm, madengine)");
  app.add_flag("--compare", o.compare, "run the storm twice (two SAs in turn) and print the ratios");
  app.add_option("--sa-lid2", o.sa_lid2, "--compare: the second SA's LID (default: the SM LID then)")->check(CLI::Range(0, 0xbfff));
  app.add_option("--between", o.between_cmd, "--compare: shell command run between the two storms (switch SAs)");
  app.add_flag("--pause", o.pause, "--compare: wait for Enter between the two storms");
  app.add_option("--label2", o.label2, "--compare: name of the second SA")->capture_default_str();
  app.add_option("--compare-files", o.compare_files, "print the ratios of two earlier --json results, run nothing")
      ->expected(2);
  app.add_flag("--no-progress", o.no_progress, "no live progress line even on a terminal");
  app.add_option("--embedded", o.embedded,
                 "run madengine (SM + SA) in this process on a simulated fabric and storm it: ft2:RADIX | "
                 "ft3:RADIX[:PODS] | random:SW:DEGREE:HOSTS");
  app.add_option("--embedded-cores", o.embedded_cores, "--embedded: madengine engine cores")->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  CLI11_PARSE(app, argc, argv);

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

  const auto pattern = pattern_from_string(o.pattern);
  if (!pattern) throw std::invalid_argument("unknown pattern '" + o.pattern + "'");
  o.workload.pattern = *pattern;
  std::string err;
  const auto mix = parse_mix(o.mix, err);
  if (!mix) throw std::invalid_argument(err);
  o.workload.mix = *mix;
  unsigned si = 0, sn = 0;
  char slash = 0;
  std::istringstream ss(o.shard);
  if (!(ss >> si >> slash >> sn) || slash != '/' || sn == 0 || si >= sn)
    throw std::invalid_argument("--shard wants i/n with i < n, got '" + o.shard + "'");
  o.workload.shard_index = si;
  o.workload.shard_count = sn;
  o.storm.by_gid = o.by_gid;
  o.storm.retry.retries = static_cast<std::uint8_t>(o.retries);
  o.storm.retry.busy_retries = static_cast<std::uint8_t>(o.busy_retries);
  if (o.discover != "auto" && o.discover != "table" && o.discover != "scan")
    throw std::invalid_argument("--discover wants auto, table or scan, got '" + o.discover + "'");
  o.storm.sa.sl = static_cast<std::uint8_t>(o.sl);

  if (!o.embedded.empty()) return run_embedded(o);

  madengine::SteadyClock clock;
  madengine::UmadTransport t(madengine::UmadConfig{.ca_name = o.ca, .port_num = o.port}, clock);
  if (!t.open(madengine::AgentSpec{.gsi_client = true})) {
    fmt::print(stderr, "madstorm: cannot open the umad port: {}\n", t.last_error());
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  o.mads_cut_short = is_umad2sim(t.ca_name());
  auto sa_lid = static_cast<std::uint16_t>(o.sa_lid != 0 ? o.sa_lid : t.local_port().sm_lid);
  if (sa_lid == 0) {
    fmt::print(stderr, "madstorm: the port has no SM LID (no SM yet?): give --sa-lid\n");
    return 2;
  }
  const std::string plot_a = o.compare && !o.plot_path.empty() ? with_suffix(o.plot_path, "-a") : o.plot_path;
  const UmadIdle idle{&t, &clock};
  auto a = run_once(o, t, clock, idle, sa_lid, o.label, plot_a);
  if (!a) return 2;
  nlohmann::json out = *a;
  if (o.compare) {
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
    const auto sa_lid_b = static_cast<std::uint16_t>(o.sa_lid2 != 0 ? o.sa_lid2 : t.local_port().sm_lid);
    auto b = run_once(o, t, clock, idle, sa_lid_b, o.label2, o.plot_path.empty() ? "" : with_suffix(o.plot_path, "-b"));
    if (!b) return 2;
    fmt::print(stdout, "side by side:\n");
    print_compare(stdout, *a, *b);
    out = nlohmann::json{{"schema", "madstorm-compare/1"}, {"a", *a}, {"b", *b}};
  }
  return finish(o, out);
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
