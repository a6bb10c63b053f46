// Does the SA stall while the SM re-routes? On ibsim: the madengine daemon
// brings up a fat tree, then madstorm runs an open-loop PathRecord storm
// twice: a control run, and a run during which a switch-to-switch cable is
// pulled (ibsim console Unlink), so the SM discovers, re-routes, rebuilds
// the path database and reprograms while the storm goes on. Prints both
// runs' latency percentiles and worst latency (wall clock, as madstorm
// measures it on its host) and the SM's re-route phase timings from its log.
//
//   reroute_storm_bench [FABRIC=ft3:36:36] [RATE_QPS=10000] [DURATION_MS=20000] [MADENGINE_BIN]
//
// MADENGINE_BIN overrides the daemon under test (e.g. an older build, for a
// before/after figure). Results: stdout and the work dir's *.json. Exit 3:
// no re-route sweep came during the storm; 4: a query went unanswered or
// the re-route's worst answer was more than 10 ms over the control run's.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "storm_rig.hpp"

using namespace madengine;
using testing::count_of;
using testing::StormResult;
using namespace std::chrono_literals;

namespace {

constexpr double kWorstOverControlMs = 10.0;

// A switch-to-switch link away from the storm: the first uplink of the leaf
// of `host` (the middle CA, not the SM's leaf nor the storm's), so the
// storm's own queries never cross it and what it measures is the SA.
std::string uplink_of(const sim::Topology& t, const std::string& host) {
  for (const auto& n : t.nodes) {
    if (n.id != host) continue;
    const auto& leaf = t.nodes[n.ports[1].peer_node];
    for (std::size_t p = 1; p < leaf.ports.size(); ++p) {
      const auto& port = leaf.ports[p];
      if (port.connected() && t.nodes[port.peer_node].is_switch())
        return "\"" + leaf.id + "\"[" + std::to_string(p) + "]";
    }
  }
  return {};
}

// The 100 ms buckets whose worst answer took longer than `over_ms`, as
// wall-clock times of day (UTC, as the daemon's log), so a stall can be laid
// beside the SM's phase lines.
void print_stalls(const std::string& path, double over_ms) {
  const auto j = nlohmann::json::parse(testing::slurp(path), nullptr, false);
  if (j.is_discarded() || !j.contains("series")) return;
  const double bucket_ms = j["series"].value("bucket_ms", 100.0);
  const double start_ms = j["wall"].value("start_unix_ns", 0.0) / 1e6;  // the measurement's start, after the warm-up
  std::size_t i = 0;
  for (const auto& b : j["series"]["buckets"]) {
    if (b.size() == 4 && b[3].get<double>() / 1000 > over_ms) {
      const double t_ms = start_ms + static_cast<double>(i) * bucket_ms;
      const std::time_t secs = static_cast<std::time_t>(t_ms / 1000);
      std::tm tm{};
      ::gmtime_r(&secs, &tm);
      std::printf("  %02d:%02d:%02d.%03d  worst %.1f ms  (%u answered)\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(std::fmod(t_ms, 1000.0)), b[3].get<double>() / 1000, b[1].get<unsigned>());
    }
    ++i;
  }
}

void print_run(const char* label, const StormResult& r) {
  std::printf("| %s | %llu | %llu | %llu | %llu | %.2f | %.2f | %.2f | %.2f |\n", label,
              static_cast<unsigned long long>(r.issued), static_cast<unsigned long long>(r.answered),
              static_cast<unsigned long long>(r.timeouts), static_cast<unsigned long long>(r.busy + r.errors), r.p50_ms,
              r.p99_ms, r.p999_ms, r.max_ms);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string spec = argc > 1 ? argv[1] : "ft3:36:36";
  const double rate = argc > 2 ? std::atof(argv[2]) : 10000;
  const unsigned duration_ms = argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 20000;
  const std::string madengine_bin = argc > 4 ? argv[4] : MADENGINE_BIN;
  testing::StormFabric sf;
  if (!testing::parse_storm_fabric(spec, sf)) {
    std::fprintf(stderr, "reroute_storm_bench: FABRIC is ft2:K or ft3:K:PODS\n");
    return 2;
  }
  const sim::Topology& topo = sf.topo;
  const std::string& storm_host = sf.storm_host;
  const std::string dir = std::filesystem::temp_directory_path() / ("reroute-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string topo_path = dir + "/fabric.topo";
  sim::save_topology(topo, topo_path);
  const std::string cable = uplink_of(topo, sf.middle_host);

  ibsim::IbsimFabric fabric(topo_path, {.console = true});
  if (!fabric.ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric.error().c_str());
    return 1;
  }
  const std::string listen = "127.0.0.1:" + std::to_string(20000 + ::getpid() % 20000);
  std::ofstream(dir + "/madengine.toml") << "[transport]\nkind = \"umad\"\n[sm]\nguid2lid = \"" << dir
                                          << "/guid2lid\"\n[sa]\njournal = \"\"\n[log]\nlevel = \"info\"\nfile = \""
                                          << dir << "/madengine.log\"\n[metrics]\nlisten = \"" << listen << "\"\n";
  const testing::DaemonOnIbsim daemon(fabric, madengine_bin, dir, dir + "/madengine.toml", dir + "/madengine.log",
                                      sf.sm_host);
  if (!daemon.ok()) {
    std::fprintf(stderr, "madengine did not start: %s\n", daemon.error().c_str());
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!daemon.wait_log("sm: subnet up", 1, 600s)) {
    std::fprintf(stderr, "no subnet up in 600 s; see %s\n", dir.c_str());
    return 1;
  }
  std::printf("fabric %s: subnet up after %.1f s wall (load %s)", spec.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
              testing::slurp("/proc/loadavg").c_str());

  const std::string madstorm =
      std::string(MADSTORM_BIN) + " -p random --rate " + std::to_string(rate) + " --no-progress --seed 7";
  // The hosts once (a NodeRecord table through the shim), then both storms from the file.
  const auto found = fabric.run(madstorm + " -n 1 --save-hosts " + dir + "/hosts", storm_host.c_str(), 600s);
  if (!std::filesystem::exists(dir + "/hosts")) {
    std::fprintf(stderr, "madstorm found no hosts (exit %d):\n%s%s", found.exit_code, found.out.c_str(), found.err.c_str());
    return 1;
  }
  const std::string storm = madstorm + " -d " + std::to_string(duration_ms) + " --warmup 2000 --hosts-file " + dir +
                            "/hosts --json ";
  auto r = fabric.run(storm + dir + "/control.json", storm_host.c_str(), 600s);
  if (r.exit_code != 0) std::fprintf(stderr, "control storm: exit %d\n%s", r.exit_code, r.err.c_str());
  const auto cores_control = testing::scrape_metrics(listen);

  const std::size_t ups_before = count_of(daemon.log(), "sm: subnet up");
  std::thread puller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2000 + duration_ms / 3));
    fabric.console("Unlink " + cable);
  });
  r = fabric.run(storm + dir + "/reroute.json", storm_host.c_str(), 600s);
  puller.join();
  if (r.exit_code != 0) std::fprintf(stderr, "re-route storm: exit %d\n%s", r.exit_code, r.err.c_str());
  const auto cores_reroute = testing::scrape_metrics(listen);
  const std::string log = daemon.log();
  const std::size_t ups_after = count_of(log, "sm: subnet up");

  std::printf("open-loop random PathRecord Gets at %.0f q/s for %u ms from %s (wall-clock latency, ms):\n\n", rate,
              duration_ms, storm_host.c_str());
  std::printf("| run | issued | answered | timeouts | BUSY+errors | p50 | p99 | p99.9 | max |\n|---|---|---|---|---|---|---|---|---|\n");
  const StormResult control = testing::read_storm(dir + "/control.json");
  const StormResult reroute = testing::read_storm(dir + "/reroute.json");
  print_run("control", control);
  print_run(("cable " + cable + " pulled").c_str(), reroute);
  std::printf("\nworst latency: %.2f ms more than the control run; heavy sweeps during the storm: %zu\n",
              reroute.max_ms - control.max_ms, ups_after - ups_before);
  // The engine cores' own view: an iteration of work that held a core up.
  for (int core = 0; core < 8; ++core) {
    const std::string label = "{core=\"" + std::to_string(core) + "\"}";
    if (!cores_reroute.count("madengine_engine_iteration_max_seconds" + label)) break;
    const double over = testing::metric(cores_reroute, "madengine_engine_long_iterations_total" + label);
    const double over_control = testing::metric(cores_control, "madengine_engine_long_iterations_total" + label);
    std::printf("engine core %d: longest iteration %.2f ms after the control run, %.2f ms after the re-route run; "
                "iterations over 1 ms: %.0f in the control run and before, %.0f in the re-route run\n", core,
                testing::metric(cores_control, "madengine_engine_iteration_max_seconds" + label) * 1e3,
                testing::metric(cores_reroute, "madengine_engine_iteration_max_seconds" + label) * 1e3, over_control,
                over - over_control);
  }
  std::printf("100 ms buckets of the re-route run with an answer over 10 ms:\n");
  print_stalls(dir + "/reroute.json", 10.0);
  // The last sweep's phases, from the daemon's own line.
  const auto at = log.rfind("sm: subnet up");
  if (at != std::string::npos) std::printf("%s\n", log.substr(at, log.find('\n', at) - at).c_str());
  std::printf("load after: %sresults in %s\n", testing::slurp("/proc/loadavg").c_str(), dir.c_str());
  if (ups_after == ups_before) return 3;  // no re-route happened: nothing was measured
  // The target: every query answered, and the re-route's worst answer within
  // kWorstOverControlMs of the control run's.
  const bool answered = reroute.answered == reroute.issued && control.answered == control.issued;
  const bool within = reroute.max_ms - control.max_ms <= kWorstOverControlMs;
  std::printf("target: every query answered (%s), worst answer within %.0f ms of the control run's (%s)\n",
              answered ? "met" : "MISSED", kWorstOverControlMs, within ? "met" : "MISSED");
  return answered && within ? 0 : 4;
}
