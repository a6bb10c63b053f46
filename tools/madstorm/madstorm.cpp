// madstorm: floods an SA (madengine or OpenSM, on a fabric or ibsim through
// umad, or through a verbs UD QP) with query storms and reports throughput,
// latency percentiles, BUSY, timeouts and wrong answers; --embedded hands
// the command line to madstorm-embedded (embedded.cpp); `madstorm merge`
// combines the results of several hosts. The storm itself lives in lib/
// (Storm), the options in lib/options.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include <infiniband/umad.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "engine/umad/umad_transport.hpp"
#include "lib/command.hpp"
#include "lib/hosts.hpp"
#include "lib/merge.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/runner.hpp"
#include "lib/storm.hpp"
#include "lib/verbs_client.hpp"
#include "lib/workload.hpp"

namespace {

using namespace madstorm;
using madengine::Nanos;

extern "C" void on_signal(int) { stop_running_storm(); }

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
  const auto a = run_reported(req, t, clock, idle);
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
  const auto b = run_reported(req_b, t, clock, idle);
  if (!b) return 2;
  fmt::print(stdout, "side by side:\n");
  print_compare(stdout, a->json, b->json);
  write_json(o.json_path, nlohmann::json{{"schema", "madstorm-compare/2"}, {"a", a->json}, {"b", b->json}});
  return verdict(o, {&*a, &*b}, {});
}

// --embedded runs madengine in this process: madstorm-embedded, built and
// installed beside madstorm, does that with the same command line, so the
// load tool itself links no SM, SA, node or service. Returns only on failure.
int exec_embedded(char** argv) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path dir = ec ? std::filesystem::path(argv[0]).parent_path() : self.parent_path();
  const std::string path = (dir / "madstorm-embedded").string();
  std::fflush(stdout);
  ::execv(path.c_str(), argv);
  fmt::print(stderr, "madstorm: --embedded runs {}: {}\n", path, std::strerror(errno));
  return 2;
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
  if (!o.embedded.empty()) return exec_embedded(argv);
  finish_options(o, [](const char* name) -> const char* { return std::getenv(name); }, wall_now_ns());
  if (o.shard_source != "default" && o.shard_source != "--shard")
    fmt::print(stdout, "madstorm: shard {}/{} from {}\n", o.workload.shard_index, o.workload.shard_count, o.shard_source);

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
