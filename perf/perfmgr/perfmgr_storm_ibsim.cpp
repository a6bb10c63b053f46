// The performance manager during a PathRecord storm, on ibsim, wall clock:
// the daemon brings up a fat tree with the manager on, then madstorm runs
// open-loop storm windows from the far host with the manager paused and
// reading in turn (SIGHUP, perfmgr.enabled), PAIRS times. A window is as
// long as the manager's interval. After the windows the manager reads on
// with no storm until a round ends. Prints each window's latencies and the
// manager's MADs, time on its core and time yielding to the SA (from the
// daemon's /metrics), the ratio of the reading windows' median p99 to the
// paused ones', and the last round's length and ports.
//
//   perfmgr_storm_ibsim [FABRIC=ft3:36:36] [RATE_QPS=10000] [INTERVAL_MS=60000] [PAIRS=3]
//                       [MAX_P99_RATIO=1.10] [SA_BUSY_QPS=daemon's default] [MADENGINE_BIN]
//
// SA_BUSY_QPS=0 makes the manager read at its full pace through the storm.
// Exit 0: every storm query answered, the last round read every linked port
// within four intervals (a round yields to a storm at a quarter pace), and
// the p99 ratio at most MAX_P99_RATIO; 3 when a bound is missed; 1 when the
// rig failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "storm_rig.hpp"

using namespace madengine;
using namespace std::chrono_literals;

namespace {

double value(const std::map<std::string, double>& m, const std::string& name) {
  return testing::metric(m, "madengine_perfmgr_" + name);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::size_t linked_ports(const sim::Topology& t) {
  std::size_t n = 0;
  for (const auto& node : t.nodes)
    for (std::size_t p = 1; p < node.ports.size(); ++p) n += node.ports[p].connected();
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string spec = argc > 1 ? argv[1] : "ft3:36:36";
  const double rate = argc > 2 ? std::atof(argv[2]) : 10000;
  const unsigned interval_ms = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 60000;
  const unsigned pairs = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 3;
  const double max_ratio = argc > 5 ? std::atof(argv[5]) : 1.10;
  const std::string busy_qps = argc > 6 && std::atoi(argv[6]) >= 0 ? argv[6] : "";
  const std::string madengine_bin = argc > 7 ? argv[7] : MADENGINE_BIN;
  testing::StormFabric sf;
  if (!testing::parse_storm_fabric(spec, sf) || interval_ms < 1000 || pairs == 0) {
    std::fprintf(stderr, "perfmgr_storm_ibsim: FABRIC is ft2:K or ft3:K:PODS, INTERVAL_MS >= 1000, PAIRS >= 1\n");
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("perfmgr-storm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string topo_path = dir + "/fabric.topo";
  sim::save_topology(sf.topo, topo_path);
  ibsim::IbsimFabric fabric(topo_path, {});
  if (!fabric.ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric.error().c_str());
    return 1;
  }
  const std::string listen = "127.0.0.1:" + std::to_string(20000 + ::getpid() % 20000);
  const std::string config = dir + "/madengine.toml";
  const auto write_config = [&](bool reading) {
    std::ofstream(config) << "[transport]\nkind = \"umad\"\n[sm]\nguid2lid = \"" << dir
                          << "/guid2lid\"\n[sa]\njournal = \"\"\n[log]\nlevel = \"info\"\nfile = \"" << dir
                          << "/madengine.log\"\n[metrics]\nlisten = \"" << listen
                          << "\"\n[perfmgr]\nenabled = " << (reading ? "true" : "false")
                          << "\ninterval_ms = " << interval_ms << "\n"
                          << (busy_qps.empty() ? "" : "sa_busy_qps = " + busy_qps + "\n");
  };
  write_config(true);
  const testing::DaemonOnIbsim daemon(fabric, madengine_bin, dir, config, dir + "/madengine.log", sf.sm_host);
  if (!daemon.ok()) {
    std::fprintf(stderr, "madengine did not start: %s\n", daemon.error().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!daemon.wait_log("sm: subnet up", 1, 600s)) {
    std::fprintf(stderr, "no subnet up in 600 s; see %s\n", dir.c_str());
    return 1;
  }
  std::printf("fabric %s (%zu linked ports): subnet up after %.1f s wall (load %s)", spec.c_str(),
              linked_ports(sf.topo), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              testing::slurp("/proc/loadavg").c_str());
  // Paused while madstorm learns the hosts (a NodeRecord table through the shim).
  std::size_t reloads = 0;
  const auto set_reading = [&](bool reading) {
    write_config(reading);
    ++reloads;
    return daemon.reload() && daemon.wait_log(reading ? "reloaded: perfmgr: resumed" : "reloaded: perfmgr: paused",
                                              reading ? reloads / 2 : (reloads + 1) / 2, 10s);
  };
  if (!set_reading(false)) {
    std::fprintf(stderr, "the manager did not pause; see %s\n", dir.c_str());
    return 1;
  }
  const std::string madstorm =
      std::string(MADSTORM_BIN) + " -p random --rate " + std::to_string(rate) + " --no-progress --seed 7";
  const auto found = fabric.run(madstorm + " -n 1 --save-hosts " + dir + "/hosts", sf.storm_host, 600s);
  if (!std::filesystem::exists(dir + "/hosts")) {
    std::fprintf(stderr, "madstorm found no hosts (exit %d):\n%s%s", found.exit_code, found.out.c_str(), found.err.c_str());
    return 1;
  }
  const std::string storm = madstorm + " -d " + std::to_string(interval_ms) + " --warmup 1000 --hosts-file " + dir +
                            "/hosts --json ";

  std::printf("open-loop random PathRecord Gets at %.0f q/s from %s, windows of %u ms, manager interval %u ms "
              "(wall-clock latency, ms):\n\n", rate, sf.storm_host.c_str(), interval_ms, interval_ms);
  std::printf("| window | manager | answered/issued | timeouts | BUSY+errors | p50 | p99 | p99.9 | max | "
              "PerfMgt MADs | time on core | yielding |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<double> p99_off, p99_on;
  bool all_answered = true;
  auto before = testing::scrape_metrics(listen);
  for (unsigned w = 0; w < 2 * pairs; ++w) {
    const bool reading = w % 2 == 1;
    if (w > 0 && !set_reading(reading)) {
      std::fprintf(stderr, "the manager did not %s; see %s\n", reading ? "resume" : "pause", dir.c_str());
      return 1;
    }
    const std::string out = dir + "/window" + std::to_string(w) + ".json";
    const auto r = fabric.run(storm + out, sf.storm_host, std::chrono::milliseconds(interval_ms) + 600s);
    const testing::StormResult s = testing::read_storm(out);
    const auto after = testing::scrape_metrics(listen);
    const double mads = value(after, "mads_total") - value(before, "mads_total");
    const double cpu = value(after, "cpu_seconds_total") - value(before, "cpu_seconds_total");
    const double yield = value(after, "yield_seconds_total") - value(before, "yield_seconds_total");
    before = after;
    if (r.exit_code != 0 || s.answered == 0 || s.answered != s.issued || s.timeouts != 0 || s.busy + s.errors != 0)
      all_answered = false;
    (reading ? p99_on : p99_off).push_back(s.p99_ms);
    std::printf("| %u | %s | %llu/%llu | %llu | %llu | %.2f | %.2f | %.2f | %.2f | %.0f | %.3f s | %.1f s |\n", w + 1,
                reading ? "reading" : "paused", static_cast<unsigned long long>(s.answered),
                static_cast<unsigned long long>(s.issued), static_cast<unsigned long long>(s.timeouts),
                static_cast<unsigned long long>(s.busy + s.errors), s.p50_ms, s.p99_ms, s.p999_ms, s.max_ms, mads, cpu, yield);
    std::fflush(stdout);
  }
  // Reading on with no storm until a round ends: its length and ports.
  const double rounds_before = value(testing::scrape_metrics(listen), "rounds_total");
  if (!set_reading(true)) {
    std::fprintf(stderr, "the manager did not resume; see %s\n", dir.c_str());
    return 1;
  }
  for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(5 * interval_ms);
       value(testing::scrape_metrics(listen), "rounds_total") <= rounds_before && std::chrono::steady_clock::now() < end;)
    std::this_thread::sleep_for(1s);
  const auto m = testing::scrape_metrics(listen);
  const double round_s = value(m, "round_seconds");
  const double ports = value(m, "ports");
  const double rounds = value(m, "rounds_total");
  const double cpu = value(m, "cpu_seconds_total");
  const double ratio = median(p99_off) > 0 ? median(p99_on) / median(p99_off) : 0;
  std::printf("\nrounds %.0f; the last read %.0f of %zu linked ports in %.2f s (interval %.1f s); "
              "time on the core %.3f s in all (%.1f us a PerfMgt MAD); the longest hold of the core %.3f ms\n",
              rounds, ports, linked_ports(sf.topo), round_s, interval_ms / 1000.0, cpu,
              value(m, "mads_total") > 0 ? cpu * 1e6 / value(m, "mads_total") : 0.0, value(m, "slice_max_seconds") * 1e3);
  std::printf("median p99 paused %.2f ms, reading %.2f ms: ratio %.3f (bound %.2f)\n", median(p99_off),
              median(p99_on), ratio, max_ratio);
  std::printf("load after: %sresults in %s\n", testing::slurp("/proc/loadavg").c_str(), dir.c_str());
  const bool round_ok = ports == static_cast<double>(linked_ports(sf.topo)) && round_s > 0 &&
                        round_s <= 4 * interval_ms / 1000.0 * 1.05;
  if (!all_answered) std::printf("FAIL: a storm query went unanswered or was refused\n");
  if (!round_ok) std::printf("FAIL: the last round did not read every linked port within four intervals\n");
  if (ratio > max_ratio || ratio == 0) std::printf("FAIL: p99 ratio %.3f over %.2f\n", ratio, max_ratio);
  return all_answered && round_ok && ratio > 0 && ratio <= max_ratio ? 0 : 3;
}
