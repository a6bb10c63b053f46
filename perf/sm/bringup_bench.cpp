// End-to-end SM bring-up: time from start to subnet up, per-phase timings and
// peak RSS, for madengine on ibsim (umad through the shim), OpenSM 3.3.23 on
// the same ibsim fabric, and madengine on the in-process sim transport.
// One fabric and one SM per run (the shim attaches a process to one ibsim).
//
//   bringup_bench ibsim madengine ft2:36      (k = 36: 648 hosts)
//   bringup_bench ibsim opensm ft3:36:4       (k = 36, 4 pods: 1,296 hosts)
//   bringup_bench sim madengine ft3:36:36     (11,664 hosts)
//   bringup_bench sim madengine ft3:56:56 2 minhop [resweep]
//     (routing and path-db threads, routing chain; with "resweep", a second
//     heavy sweep of the unchanged fabric follows subnet up on the sim: it
//     re-routes incrementally and should write no LFT block)
//   bringup_bench ibsim both ft3:36:36 [6]
//     (OpenSM on one ibsim, then madengine on a fresh ibsim of the same
//     fabric, in this one invocation; exits 1 unless OpenSM's time over
//     madengine's is at least the ratio given, 6 by default)
//   bringup_bench sim madengine ft3:56:56 2 minhop resweep 500
//     (the same, and exits 1 when the peak RSS after bring-up or after the
//     re-sweep is above 500 MB; "once" instead of "resweep": no re-sweep)
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sim/topology.hpp"
#include "sm/sm.hpp"

using namespace madengine;

namespace {

struct Spec {
  std::string text;
  sim::Topology topo;
  std::string sm_host;
};

bool parse_spec(const std::string& s, Spec& out) {
  unsigned k = 0, pods = 0;
  if (std::sscanf(s.c_str(), "ft2:%u", &k) == 1) {
    out.topo = sim::make_fat_tree_2level({.k = k});
    out.sm_host = "host-0-0";
  } else if (std::sscanf(s.c_str(), "ft3:%u:%u", &k, &pods) == 2) {
    out.topo = sim::make_fat_tree_3level({.k = k, .pods = pods});
    out.sm_host = "host-0-0-0";
  } else {
    return false;
  }
  out.text = s;
  return true;
}

long peak_rss_kb() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

void print_madengine(const char* where, const Spec& spec, double wall_s, const sm::SmStatus& st, long rss_kb) {
  const auto& h = st.last_heavy;
  std::printf("%-6s %-10s %-10s routing %s on %u SL/VL(s), %u LIDs routed, %u LFT blocks written\n", where, "madengine",
              spec.text.c_str(), h.routing_engine.c_str(), h.routing_vls, h.lids_rerouted, h.bringup.lft_blocks_written);
  std::printf("%-6s %-10s %-10s nodes %u switches %u cas %u | subnet up %.3f s | discovery %.3f lids %.3f routing %.3f "
              "pathdb %.3f programming %.3f (sweep %.3f) s | SMPs %llu | peak RSS %.1f MB | errors %u\n",
              where, "madengine", spec.text.c_str(), h.nodes, h.switches, h.cas, wall_s, h.discovery_s, h.lids_s,
              h.routing_s, h.path_db_s, h.programming_s, h.total_s,
              static_cast<unsigned long long>(h.smps - h.tables_smps), static_cast<double>(rss_kb) / 1024.0,
              h.bringup.errors + h.discovery_errors);
  // After subnet up (OpenSM reads none of them): in the SA an epoch later.
  std::printf("%-6s %-10s %-10s port tables after subnet up: %u ports read, %llu SMPs, %.3f s\n", where, "madengine",
              spec.text.c_str(), h.tables_ports_read, static_cast<unsigned long long>(h.tables_smps), h.tables_s);
}

// A fresh ibsim of the spec's fabric (nullptr, with a message, if it did not start).
std::unique_ptr<ibsim::IbsimFabric> start_fabric(const Spec& spec) {
  const std::string path = std::filesystem::temp_directory_path() / ("bringup-" + std::to_string(::getpid()) + ".topo");
  sim::save_topology(spec.topo, path);
  auto fabric = std::make_unique<ibsim::IbsimFabric>(path, ibsim::IbsimFabric::Options{.start_timeout = std::chrono::seconds(120)});
  std::filesystem::remove(path);
  if (!fabric->ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric->error().c_str());
    return nullptr;
  }
  return fabric;
}

// With MAD_COUNT_OUT set (and libmad_count.so preloaded through
// MADENGINE_IBSIM_PRELOAD), each SM's SMP counts go to MAD_COUNT_OUT.SM.
std::string count_file(const char* sm_name) {
  const char* base = std::getenv("MAD_COUNT_OUT");
  return base != nullptr && *base != 0 ? std::string(base) + "." + sm_name : std::string();
}

// OpenSM --once on a fresh ibsim: one sweep to subnet up, then exit;
// /usr/bin/time reports the wall time and OpenSM's own peak RSS. The wall
// time (start to exit), or a negative value on failure.
double run_opensm(const Spec& spec) {
  const auto fabric = start_fabric(spec);
  if (fabric == nullptr) return -1;
  const std::string counts = count_file("opensm");
  const std::string env = counts.empty() ? std::string() : "MAD_COUNT_OUT=" + counts + " ";
  const auto r = fabric->run(env + "OSM_TMP_DIR=. OSM_CACHE_DIR=. /usr/bin/time -f 'TIME %e %M' opensm --once -f osm.log -s 0; "
                                   "grep -q 'SUBNET UP' osm.log && echo OPENSM_SUBNET_UP",
                             spec.sm_host, std::chrono::minutes(30));
  const auto pos = r.err.rfind("TIME ");
  double wall = 0;
  long rss = 0;
  if (pos == std::string::npos || std::sscanf(r.err.c_str() + pos, "TIME %lf %ld", &wall, &rss) != 2) {
    std::fprintf(stderr, "opensm run failed (exit %d): %s\n", r.exit_code, r.err.c_str());
    return -1;
  }
  const bool up = r.out.find("OPENSM_SUBNET_UP") != std::string::npos;
  std::printf("ibsim  %-10s %-10s | subnet up %.3f s (start to exit, --once) | peak RSS %.1f MB | %s\n", "opensm",
              spec.text.c_str(), wall, static_cast<double>(rss) / 1024.0, up ? "SUBNET UP logged" : "NO SUBNET UP");
  std::fflush(stdout);
  return up ? wall : -1;
}

// madengine in this process on a fresh ibsim: the wall time from opening the
// transport to subnet up, or a negative value on failure. Once per process:
// the shim attaches a process to one ibsim.
double run_madengine_ibsim(const Spec& spec, const sm::SmConfig& cfg) {
  const auto fabric_ptr = start_fabric(spec);
  if (fabric_ptr == nullptr) return -1;
  ibsim::IbsimFabric& fabric = *fabric_ptr;
  if (const std::string counts = count_file("madengine"); !counts.empty()) setenv("MAD_COUNT_OUT", counts.c_str(), 1);
  fabric.attach_self(spec.sm_host);
  const auto t0 = std::chrono::steady_clock::now();
  SteadyClock clock;
  UmadTransport transport({}, clock);
  if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) {
    std::fprintf(stderr, "umad: %s\n", std::string(transport.last_error()).c_str());
    return -1;
  }
  Engine engine(EngineConfig{.cores = 1, .pin = false});
  engine.add_transport(transport, 0);
  sa::SnapshotStore store;
  sm::SubnetManager sm(engine, transport, cfg, store);
  engine.start();
  const bool up = sm.wait_subnet_up(std::chrono::minutes(30));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The sweep's end: the port tables read after subnet up.
  if (up) sm.wait_for([](const sm::SmStatus& s) { return s.port_table_sweeps >= 1; }, std::chrono::minutes(5));
  engine.stop();
  if (!up) {
    std::fprintf(stderr, "madengine: no subnet up: %s\n", sm.status().last_heavy.error.c_str());
    return -1;
  }
  print_madengine("ibsim", spec, wall, sm.status(), peak_rss_kb());
  const auto& h = sm.status().last_heavy;
  if (h.bringup.errors + h.discovery_errors != 0) return -1;
  return wall;
}

// OpenSM, then madengine, each on a fresh ibsim of the same fabric; exits 1
// when OpenSM's time is less than `min_ratio` times madengine's.
int run_both(const Spec& spec, const sm::SmConfig& cfg, double min_ratio) {
  const double osm = run_opensm(spec);
  if (osm < 0) return 1;
  const double me = run_madengine_ibsim(spec, cfg);
  if (me <= 0) return 1;
  const double ratio = osm / me;
  std::printf("ibsim  ratio      %-10s | OpenSM %.3f s / madengine %.3f s = %.2fx (wanted %.1fx) %s\n", spec.text.c_str(),
              osm, me, ratio, min_ratio, ratio >= min_ratio ? "ok" : "MISSED");
  return ratio >= min_ratio ? 0 : 1;
}

// False, with a message, when the peak RSS is above `max_mb` (0: no bound).
bool rss_within(const char* where, long max_mb) {
  const long mb = peak_rss_kb() / 1024;
  if (max_mb == 0 || mb <= max_mb) return true;
  std::printf("%s: peak RSS %ld MB above the bound of %ld MB\n", where, mb, max_mb);
  return false;
}

int run_sim(Spec spec, const sm::SmConfig& cfg, bool resweep, long rss_max_mb) {
  const auto t0 = std::chrono::steady_clock::now();
  sim::Fabric fabric(spec.topo);
  spec.topo = sim::Topology{};  // the sim has its own copy
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sim::SimTransport transport(fabric, fabric.find_node(spec.sm_host), 1);
  if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) return 1;
  Engine engine(EngineConfig{.cores = 1, .pin = false, .clock = &fabric.clock()});
  engine.add_transport(transport, 0);
  sa::SnapshotStore store;
  auto sm = std::make_unique<sm::SubnetManager>(engine, transport, cfg, store);
  const auto t1 = std::chrono::steady_clock::now();
  double wall = -1;  // to subnet up; the sweep's end (port tables) follows
  long up_rss_kb = 0;
  while (sm->status().port_table_sweeps == 0) {
    if (wall < 0 && sm->status().subnet_up) {
      wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      up_rss_kb = peak_rss_kb();
    }
    if (engine.poll_all_once() == 0) fabric.advance(kNanosPerMilli);
  }
  if (wall < 0) wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  const auto st = sm->status();
  std::printf("(sim fabric built in %.3f s, model %.1f MB; phase times: discovery and programming in simulated time, "
              "the rest wall)\n",
              build_s, static_cast<double>(fabric.memory_bytes()) / 1048576.0);
  print_madengine("sim", spec, wall, st, peak_rss_kb());
  std::printf("sim    peak RSS at subnet up %.1f MB (the rest: the port tables read after it)\n",
              static_cast<double>(up_rss_kb) / 1024.0);
  bool within = rss_within("bring-up", rss_max_mb);
  if (st.subnet_up && resweep) {
    // The same fabric again: incremental routing keeps every route.
    sm->request_heavy_sweep();
    const auto t2 = std::chrono::steady_clock::now();
    while (sm->status().port_table_sweeps < 2) {
      if (engine.poll_all_once() == 0) fabric.advance(kNanosPerMilli);
    }
    const double again = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
    print_madengine("resweep", spec, again, sm->status(), peak_rss_kb());
    within = rss_within("re-sweep", rss_max_mb) && within;
  }
  sm.reset();
  engine.quiesce();
  return st.subnet_up && within ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 8) {
    std::fprintf(stderr,
                 "usage: %s ibsim|sim madengine|opensm ft2:K|ft3:K:PODS [threads] [routing chain] [resweep|once] "
                 "[max RSS MB]\n       %s ibsim both ft2:K|ft3:K:PODS [min ratio, 6]\n",
                 argv[0], argv[0]);
    return 2;
  }
  sm::SmConfig cfg;
  const bool both = argc > 2 && std::string(argv[2]) == "both";
  if (argc > 4 && !both) cfg.routing_threads = cfg.path_db_threads = static_cast<unsigned>(std::max(1, std::atoi(argv[4])));
  if (argc > 5 && !sm::parse_routing_chain(argv[5], cfg.routing_chain)) {
    std::fprintf(stderr, "bad routing chain %s\n", argv[5]);
    return 2;
  }
  const std::string mode = argv[1], sm_name = argv[2];
  Spec spec;
  if (!parse_spec(argv[3], spec) || (sm_name != "madengine" && sm_name != "opensm" && sm_name != "both")) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  const bool resweep = argc > 6 && std::string(argv[6]) == "resweep";
  const long rss_max_mb = argc > 7 ? std::atol(argv[7]) : 0;
  if (mode == "sim") return sm_name == "madengine" ? run_sim(std::move(spec), cfg, resweep, rss_max_mb) : 2;
  if (mode != "ibsim") return 2;
  if (sm_name == "opensm") return run_opensm(spec) < 0 ? 1 : 0;
  ibsim::reexec_with_shim(argc, argv);
  if (sm_name == "both") return run_both(spec, cfg, argc > 4 ? std::atof(argv[4]) : 6.0);
  return run_madengine_ibsim(spec, cfg) < 0 ? 1 : 0;
}
