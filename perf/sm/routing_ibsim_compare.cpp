// OpenSM 3.3.23's dfsssp and madengine's engines side by side on the same
// fabric: the topology goes to ibsim, OpenSM routes it once (`opensm --once
// -R dfsssp`), its LFTs are read back with ibroute and checked by the route
// checker (delivery, routes per link); the VLs it needed come from its log.
// madengine's engine then routes the same fabric with OpenSM's LIDs.
//
//   routing_ibsim_compare SPEC [ENGINE...]
//   routing_ibsim_compare --write SPEC FILE   (only write SPEC's ibsim topology file)
//     SPEC: torus:X:Y[:Z] | mesh:X:Y[:Z] | dragonfly:GROUPS:ROUTERS:HOSTS:GLOBALS | ft3:K:PODS[:CUT%]
//     ENGINE: madengine chains to run on the same fabric (default dfsssp)
// Times: OpenSM's routing phase from its log timestamps (wall, in its own
// process) and start-to-exit; ours in process (wall and CPU).

#include <chrono>
#include <cstdio>
#include <ctime>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ibsim_harness.hpp"
#include "routing_ibsim.hpp"
#include "sim/generators.hpp"
#include "sim/topology.hpp"
#include "sm/routing/routing.hpp"
#include "sm/routing/verify.hpp"

using namespace madengine;

namespace {

struct Spec {
  sim::Topology topo;
  std::string host;  // a CA to run OpenSM and the diags on
};

bool parse_spec(const std::string& s, Spec& out) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  char kind[16] = {};
  const int n = std::sscanf(s.c_str(), "%15[a-z0-9]:%u:%u:%u:%u", kind, &a, &b, &c, &d);
  if (n < 3) return false;
  if (n < 4) c = kind[0] == 'f' ? 0 : 1;  // fat tree: no cut; torus/mesh: z = 1
  const std::string k = kind;
  if (k == "torus" || k == "mesh") {
    const bool wrap = k == "torus";
    out.topo = sim::make_torus({.dims = {a, b, c}, .wrap = {wrap, wrap, wrap}, .hosts_per_switch = 2}).topo;
    out.host = "host-0-0-0-0";
  } else if (k == "dragonfly") {
    out.topo = sim::make_dragonfly({.groups = a, .routers = b, .hosts = c, .globals = d});
    out.host = "host-0-0-0";
  } else if (k == "ft3") {
    out.topo = sim::make_fat_tree_3level({.k = a, .pods = b});
    if (c > 0) sim::fail_links(out.topo, {.fraction = c / 100.0, .seed = 1});
    out.host = "host-0-0-0";
  } else {
    return false;
  }
  return true;
}

// "Dec 01 14:20:04 123456 [...]": seconds of the day with microseconds.
double log_time(const std::string& line) {
  unsigned h = 0, m = 0, sec = 0, us = 0;
  if (line.size() < 22 || std::sscanf(line.c_str() + 7, "%u:%u:%u %u", &h, &m, &sec, &us) != 4) return -1;
  return h * 3600.0 + m * 60.0 + sec + us / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s SPEC [ENGINE...]\n", argv[0]);
    return 2;
  }
  Spec spec;
  if (std::string(argv[1]) == "--write") {
    if (argc != 4 || !parse_spec(argv[2], spec)) {
      std::fprintf(stderr, "usage: %s --write SPEC FILE\n", argv[0]);
      return 2;
    }
    sim::save_topology(spec.topo, argv[3]);
    return 0;
  }
  if (!parse_spec(argv[1], spec)) {
    std::fprintf(stderr, "bad SPEC %s\n", argv[1]);
    return 2;
  }
  const auto started = testing::start_ibsim(spec.topo, "routing-compare");
  const ibsim::IbsimFabric& fabric = *started;
  if (!fabric.ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric.error().c_str());
    return 1;
  }
  const auto r = fabric.run("OSM_TMP_DIR=. OSM_CACHE_DIR=. /usr/bin/time -f 'TIME %e %M' opensm --once -R dfsssp -f osm.log "
                            "-s 0 -d 2; grep -q 'SUBNET UP' osm.log && echo OPENSM_SUBNET_UP",
                            spec.host, std::chrono::minutes(30));
  double wall = 0;
  long rss_kb = 0;
  if (const auto pos = r.err.rfind("TIME "); pos != std::string::npos) std::sscanf(r.err.c_str() + pos, "TIME %lf %ld", &wall, &rss_kb);
  const bool up = r.out.find("OPENSM_SUBNET_UP") != std::string::npos;
  // VLs and the routing phase from OpenSM's log.
  const auto log = fabric.run("cat osm.log", spec.host).out;
  int vls_needed = -1, vls_available = -1;
  double t_first = -1, t_last = -1;
  bool fallback = false;
  std::string first_error;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (const auto p = line.find("Virtual Lanes available: "); p != std::string::npos) vls_available = std::stoi(line.substr(p + 25));
    if (const auto p = line.find("Virtual Lanes needed: "); p != std::string::npos) vls_needed = std::stoi(line.substr(p + 22));
    if (line.find("dfsssp") != std::string::npos || line.find("Virtual Lanes") != std::string::npos ||
        line.find("ucast_mgr_route") != std::string::npos) {
      const double t = log_time(line);
      if (t >= 0 && t_first < 0) t_first = t;
      if (t >= 0) t_last = t;
    }
    if (line.find("Falling back") != std::string::npos || line.find("fallback") != std::string::npos) fallback = true;
    if (line.find("ERR ") != std::string::npos && first_error.empty()) first_error = line.substr(line.find("ERR "));
  }
  testing::ReadBack rb = testing::read_back_routes(fabric, spec.host);
  if (!rb.error.empty()) {
    std::fprintf(stderr, "read back: %s\n", rb.error.c_str());
    return 1;
  }
  const sm::RouteCheck osm = sm::check_routes(rb.fabric, rb.routes, {.cycles = false});

  std::printf("fabric %s: %zu switches, %zu CAs, %zu links\n", argv[1], spec.topo.switch_count(), spec.topo.ca_count(),
              spec.topo.link_count());
  std::printf("opensm dfsssp: %s%s, VLs needed %d (available %d), routing log span %.3f s, start to exit %.2f s, peak RSS %.1f MB; "
              "pairs %llu unrouted %llu, routes per link max %llu mean %.1f (links used %u of %u)\n",
              up ? "SUBNET UP" : "NO SUBNET UP", fallback ? " (fell back)" : "", vls_needed, vls_available,
              t_first >= 0 ? t_last - t_first : -1.0, wall, rss_kb / 1024.0, static_cast<unsigned long long>(osm.pairs),
              static_cast<unsigned long long>(osm.unrouted), static_cast<unsigned long long>(osm.max_routes), osm.mean_routes,
              osm.links_used, osm.links);
  if (!first_error.empty()) std::printf("opensm log: %s\n", first_error.c_str());
  if (osm.unrouted != 0) std::printf("opensm routes: %s\n", osm.first_problem.c_str());
  bool all_ok = up;
  std::vector<std::string> engines;
  for (int i = 2; i < argc; ++i) engines.emplace_back(argv[i]);
  if (engines.empty()) engines.emplace_back("dfsssp");
  for (const std::string& engine : engines) {
    sm::RoutingOptions o;
    if (!sm::parse_routing_chain(engine, o.chain)) return 2;
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const sm::RoutingResult ours = sm::compute_routes(rb.fabric, o);
    const double our_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double our_cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    if (!ours.ok()) {
      std::printf("madengine %s: %s\n", engine.c_str(), ours.error.c_str());
      all_ok = false;
      continue;
    }
    const sm::RouteCheck mine = sm::check_routes(rb.fabric, ours);
    std::printf("madengine %s: %s, engine %s, VLs %u, %.4f s wall %.4f s CPU; pairs %llu unrouted %llu, acyclic per VL %s, "
                "routes per link max %llu mean %.1f (links used %u of %u)\n",
                engine.c_str(), ours.ok() ? "ok" : ours.error.c_str(), sm::to_string(ours.engine), mine.vls_used, our_s, our_cpu,
                static_cast<unsigned long long>(mine.pairs), static_cast<unsigned long long>(mine.unrouted),
                mine.acyclic ? "yes" : "NO", static_cast<unsigned long long>(mine.max_routes), mine.mean_routes, mine.links_used,
                mine.links);
  }
  return all_ok ? 0 : 1;
}
