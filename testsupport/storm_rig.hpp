// The storm benchmarks' rig on ibsim: a generated fat tree as an ibsim
// topology, the madengine daemon under test started on one of its hosts as
// a process (its own session, killed at the end), and madstorm's JSON
// results read back. Header-only; a user links madengine_sim and
// madengine_ibsim_harness and nlohmann_json.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ibsim_harness.hpp"
#include "sim/generators.hpp"
#include "sim/topology.hpp"

namespace madengine::testing {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `ft2:K` or `ft3:K:PODS`; the SM on the first host, the storm from the
// last (far across the tree), and a host in the middle.
struct StormFabric {
  sim::Topology topo;
  std::string sm_host, storm_host, middle_host;
};

inline bool parse_storm_fabric(const std::string& s, StormFabric& out) {
  unsigned k = 0, pods = 0;
  if (std::sscanf(s.c_str(), "ft3:%u:%u", &k, &pods) == 2) {
    out.topo = sim::make_fat_tree_3level({.k = k, .pods = pods});
  } else if (std::sscanf(s.c_str(), "ft2:%u", &k) == 1) {
    out.topo = sim::make_fat_tree_2level({.k = k});
  } else {
    return false;
  }
  std::vector<std::string> cas;
  for (const auto& n : out.topo.nodes)
    if (!n.is_switch()) cas.push_back(n.id);
  if (cas.size() < 3) return false;
  out.sm_host = cas.front();
  out.storm_host = cas.back();
  out.middle_host = cas[cas.size() / 2];
  return true;
}

// One madstorm run's figures (its --json file), latencies in ms.
struct StormResult {
  double p50_ms = 0, p99_ms = 0, p999_ms = 0, max_ms = 0;
  std::uint64_t issued = 0, answered = 0, timeouts = 0, busy = 0, errors = 0;
};

inline StormResult read_storm(const std::string& path) {
  StormResult r;
  const auto j = nlohmann::json::parse(slurp(path), nullptr, false);
  if (j.is_discarded()) return r;
  const auto& lat = j["latency"];
  r.p50_ms = lat.value("p50_us", 0.0) / 1000;
  r.p99_ms = lat.value("p99_us", 0.0) / 1000;
  r.p999_ms = lat.value("p999_us", 0.0) / 1000;
  r.max_ms = lat.value("max_us", 0.0) / 1000;
  const auto& c = j["counts"];
  r.issued = c.value("issued", 0ull);
  r.answered = c.value("answered", 0ull);
  r.timeouts = c.value("timeouts", 0ull);
  r.busy = c.value("busy", 0ull);
  r.errors = c.value("errors", 0ull);
  return r;
}

// Several madstorm processes' storm, summed: wall time from the common
// start to the last process's last answer, the worst process's latencies.
struct ShardedStorm {
  double wall_s = 0;
  StormResult sum;
  double p99_ms = 0, max_ms = 0;
  bool ok = false;  // every process ran and every query it issued was answered
};

// One madstorm process (`madstorm`, the binary) on each host of `at`, each
// the requester for its share of `hosts` (a --save-hosts file), all
// starting at one instant with `pattern`, one query in flight a host (as a
// host's IPoIB and SA client ask), 64 a process. Each writes
// `json_base`.N.json; one still running after `limit` is killed (not ok).
inline ShardedStorm run_sharded_storm(const ibsim::IbsimFabric& fabric, const std::string& madstorm,
                                      const std::vector<std::string>& at, const std::string& hosts,
                                      const std::string& pattern, const std::string& json_base,
                                      std::chrono::seconds limit = std::chrono::seconds(600)) {
  const auto start_unix =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count() + 3;
  std::vector<std::thread> shards;
  std::vector<int> rc(at.size(), -1);
  for (std::size_t i = 0; i < at.size(); ++i) {
    shards.emplace_back([&, i] {
      const std::string cmd = madstorm + " -p " + pattern +
                              " --window 64 --window-per-host 1 --timeout 1000 --retries 3 --no-progress --hosts-file " +
                              hosts + " --shard " + std::to_string(i) + "/" + std::to_string(at.size()) +
                              " --start-at @" + std::to_string(start_unix) + " --json " + json_base + "." +
                              std::to_string(i) + ".json";
      const auto r = fabric.run(cmd, at[i], limit);
      rc[i] = r.exit_code;
      if (r.exit_code != 0)
        std::fprintf(stderr, "%s shard %zu: exit %d\n%s%s", pattern.c_str(), i, r.exit_code, r.out.c_str(), r.err.c_str());
    });
  }
  for (auto& t : shards) t.join();
  ShardedStorm s;
  s.ok = true;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const std::string path = json_base + "." + std::to_string(i) + ".json";
    const auto j = nlohmann::json::parse(slurp(path), nullptr, false);
    if (j.is_discarded() || rc[i] != 0) {
      s.ok = false;
      continue;
    }
    const StormResult r = read_storm(path);
    s.sum.issued += r.issued;
    s.sum.answered += r.answered;
    s.sum.timeouts += r.timeouts;
    s.sum.busy += r.busy;
    s.sum.errors += r.errors;
    s.p99_ms = std::max(s.p99_ms, r.p99_ms);
    s.max_ms = std::max(s.max_ms, r.max_ms);
    s.wall_s = std::max(s.wall_s, j["timing"].value("end_ns", 0.0) / 1e9);
  }
  s.ok = s.ok && s.sum.issued != 0 && s.sum.answered == s.sum.issued;
  return s;
}

// Every sample of the daemon's /metrics at `listen` ("HOST:PORT"), by its
// series ("madengine_x" or "madengine_x{core=\"0\"}"); empty if none answered.
inline std::map<std::string, double> scrape_metrics(const std::string& listen) {
  std::map<std::string, double> out;
  FILE* p = ::popen(("curl -s --max-time 5 http://" + listen + "/metrics").c_str(), "r");
  if (p == nullptr) return out;
  char line[1024];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    if (line[0] == '#') continue;
    const std::string s(line);
    const auto sp = s.rfind(' ');
    if (sp != std::string::npos) out[s.substr(0, sp)] = std::atof(s.c_str() + sp + 1);
  }
  ::pclose(p);
  return out;
}

inline double metric(const std::map<std::string, double>& m, const std::string& series) {
  const auto it = m.find(series);
  return it == m.end() ? 0 : it->second;
}

// The daemon as a process on `host` of `fabric` (the harness's background
// client: its own session, killed when this goes), reading `config` and
// logging to `log` (both the caller's), its output in `dir`/madengine.out.
class DaemonOnIbsim {
 public:
  DaemonOnIbsim(const ibsim::IbsimFabric& fabric, const std::string& bin, const std::string& dir,
                const std::string& config, const std::string& log, const std::string& host)
      : log_(log), out_(dir + "/madengine.out"), bg_(fabric.start_background("\"" + bin + "\" -c " + config, out_, host)) {}

  bool ok() const noexcept { return bg_.pid() > 0; }
  std::string error() const { return "see " + out_; }
  pid_t pid() const noexcept { return bg_.pid(); }
  std::string log() const { return slurp(log_); }
  bool reload() const { return ok() && ::kill(bg_.pid(), SIGHUP) == 0; }
  // Waits until the log holds `needle` at least `times` times.
  bool wait_log(const std::string& needle, std::size_t times, std::chrono::milliseconds timeout) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (count_of(log(), needle) < times) {
      if (std::chrono::steady_clock::now() > end) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return true;
  }

 private:
  std::string log_, out_;
  ibsim::IbsimFabric::Background bg_;
};

}  // namespace madengine::testing
