// Reregistration storm on ibsim, OpenSM and madengine in one run: every CA
// port of a fat tree does what its IPoIB driver and SA client do on
// ClientReregister (leave each multicast group, join it again, Set its
// InformInfo subscription again), from several requester processes at once.
// Before the storm every host joins its groups and subscribes (madstorm
// -p rereg-join): the state clients hold. Each SA gets a fresh ibsim of the
// same fabric. Prints both storms (wall time from the common start to the
// last answer, queries, errors, madstorm's latency) and the ratio; exits 1
// unless madengine finished the storm sooner than OpenSM with every query
// answered right.
//
//   rereg_storm_bench [FABRIC=ft2:36] [REQUESTERS=4] [MADENGINE_BIN] [ENGINE_CORES]
//
// ENGINE_CORES: the daemon's [engine] cores (default: its own default, 2).
//
// Results: docs/perf/sa-rereg.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "storm_rig.hpp"

using namespace madengine;
using namespace std::chrono_literals;

namespace {

using Storm = testing::ShardedStorm;

Storm run_storm(const ibsim::IbsimFabric& fabric, const std::vector<std::string>& at, const std::string& hosts,
                const std::string& pattern, const std::string& json_base) {
  return testing::run_sharded_storm(fabric, MADSTORM_BIN, at, hosts, pattern, json_base);
}

void print_storm(const char* sa, const char* what, const Storm& s) {
  std::printf("| %s | %s | %.3f | %llu | %llu | %llu | %llu | %.2f | %.2f |%s\n", sa, what, s.wall_s,
              static_cast<unsigned long long>(s.sum.issued), static_cast<unsigned long long>(s.sum.answered),
              static_cast<unsigned long long>(s.sum.timeouts), static_cast<unsigned long long>(s.sum.busy + s.sum.errors),
              s.p99_ms, s.max_ms, s.ok ? "" : " FAILED");
  std::fflush(stdout);
}

// One SA on a fresh ibsim: brought up, hosts found, groups joined, then the storm.
Storm run_sa(const std::string& sa, const testing::StormFabric& sf, const std::string& topo_path,
             const std::string& dir, const std::vector<std::string>& at, const std::string& madengine_bin,
             unsigned engine_cores) {
  ibsim::IbsimFabric fabric(topo_path, {.start_timeout = std::chrono::seconds(60)});
  if (!fabric.ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric.error().c_str());
    return {};
  }
  std::unique_ptr<testing::DaemonOnIbsim> daemon;
  const std::string sa_dir = dir + "/" + sa;
  std::filesystem::create_directories(sa_dir);
  if (sa == "opensm") {
    if (!fabric.start_opensm(0, sf.sm_host) || !fabric.wait_subnet_up(300s)) {
      std::fprintf(stderr, "opensm: no SUBNET UP\n");
      return {};
    }
  } else {
    std::ofstream(sa_dir + "/madengine.toml") << (engine_cores != 0 ? "[engine]\ncores = " + std::to_string(engine_cores) + "\n" : "")
                                               << "[transport]\nkind = \"umad\"\n[sm]\nguid2lid = \"" << sa_dir
                                               << "/guid2lid\"\n[sa]\njournal = \"\"\n[log]\nlevel = \"info\"\nfile = \""
                                               << sa_dir << "/madengine.log\"\n";
    daemon = std::make_unique<testing::DaemonOnIbsim>(fabric, madengine_bin, sa_dir, sa_dir + "/madengine.toml",
                                                      sa_dir + "/madengine.log", sf.sm_host);
    if (!daemon->ok() || !daemon->wait_log("sm: subnet up", 1, 300s)) {
      std::fprintf(stderr, "madengine: no subnet up; see %s\n", sa_dir.c_str());
      return {};
    }
  }
  const std::string hosts = sa_dir + "/hosts";
  const auto found = fabric.run(std::string(MADSTORM_BIN) + " -n 1 --no-progress --save-hosts " + hosts, at[0], 300s);
  if (!std::filesystem::exists(hosts)) {
    std::fprintf(stderr, "%s: madstorm found no hosts (exit %d):\n%s%s", sa.c_str(), found.exit_code,
                 found.out.c_str(), found.err.c_str());
    return {};
  }
  const Storm setup = run_storm(fabric, at, hosts, "rereg-join", sa_dir + "/join");
  print_storm(sa.c_str(), "join (set-up)", setup);
  if (!setup.ok) return {};
  // The SM programs the groups' MFTs after the joins: let it settle first.
  std::this_thread::sleep_for(2s);
  const Storm storm = run_storm(fabric, at, hosts, "rereg", sa_dir + "/rereg");
  print_storm(sa.c_str(), "rereg", storm);
  if (daemon != nullptr) {
    // What the SM wrote for the groups while the storm ran.
    const std::string log = daemon->log();
    unsigned changes = 0, blocks = 0;
    for (std::size_t at_pos = log.find("multicast groups changed: "); at_pos != std::string::npos;
         at_pos = log.find("multicast groups changed: ", at_pos + 1)) {
      ++changes;
      blocks += static_cast<unsigned>(std::atoi(log.c_str() + at_pos + 26));
    }
    std::printf("madengine: %u multicast reprogramming passes, %u MFT blocks written since start\n", changes, blocks);
  }
  return storm;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string spec = argc > 1 ? argv[1] : "ft2:36";
  const unsigned requesters = argc > 2 ? static_cast<unsigned>(std::max(1, std::atoi(argv[2]))) : 4u;
  const std::string madengine_bin = argc > 3 && *argv[3] != 0 ? argv[3] : MADENGINE_BIN;
  const unsigned engine_cores = argc > 4 ? static_cast<unsigned>(std::max(0, std::atoi(argv[4]))) : 0u;
  testing::StormFabric sf;
  if (!testing::parse_storm_fabric(spec, sf) || requesters > 8) {
    std::fprintf(stderr, "usage: rereg_storm_bench [ft2:K|ft3:K:PODS] [requesters, 1-8] [madengine binary]\n");
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("rereg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string topo_path = dir + "/fabric.topo";
  sim::save_topology(sf.topo, topo_path);
  // Requester processes on CA ports spread over the fabric, none on the SM's.
  std::vector<std::string> cas;
  for (const auto& n : sf.topo.nodes)
    if (!n.is_switch() && n.id != sf.sm_host) cas.push_back(n.id);
  std::vector<std::string> at;
  for (unsigned i = 0; i < requesters; ++i) at.push_back(cas[(cas.size() - 1) - i * (cas.size() / requesters)]);

  std::printf("rereg storm on %s, %u requesters, load %s", spec.c_str(), requesters,
              testing::slurp("/proc/loadavg").c_str());
  std::printf("| SA | storm | wall s | issued | answered | timeouts | BUSY+errors | p99 ms | max ms |\n|---|---|---|---|---|---|---|---|---|\n");
  const Storm osm = run_sa("opensm", sf, topo_path, dir, at, madengine_bin, engine_cores);
  const Storm me = run_sa("madengine", sf, topo_path, dir, at, madengine_bin, engine_cores);
  if (!osm.ok || !me.ok || me.wall_s <= 0) {
    std::printf("a storm failed; see %s\n", dir.c_str());
    return 1;
  }
  const double ratio = osm.wall_s / me.wall_s;
  std::printf("OpenSM %.3f s / madengine %.3f s = %.2fx %s (work dir %s)\n", osm.wall_s, me.wall_s, ratio,
              ratio > 1 ? "ok" : "MISSED: madengine not faster", dir.c_str());
  return ratio > 1 ? 0 : 1;
}
