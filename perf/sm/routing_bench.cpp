// Routing benchmark: each engine on fat trees from 648 to 43,904 hosts (the
// cost curve) and on tori, meshes, dragonflies and damaged fat trees: wall
// and CPU time of a full pass and its phases, VLs used, routes per link
// (route checker, small fabrics), and incremental passes after nothing
// changed and after one cable was cut (LIDs routed again, LFT blocks that
// change).
//   routing_bench [max_hosts] [threads] [engines] [min_hosts] [full|incremental] [max_rss_mb]
//     engines: comma list ("all": the default per table); min_hosts: skip
//     smaller fabrics; full: no incremental passes; max_rss_mb: exit 1 when
//     the peak RSS goes above it (printed with the row that crossed it)
//   Each row ends with a digest of the full pass's LFTs and layers.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "fabric_builders.hpp"
#include "routing_fabrics.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"
#include "sm/routing/verify.hpp"

using namespace madengine;

namespace {

struct Case {
  std::string name;
  unsigned hosts;
  std::function<fabric::Fabric()> build;
  std::vector<sm::RoutingAlgo> engines;
};

long peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

double cpu_s() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

fabric::Fabric lids(fabric::Fabric f) {
  sm::Guid2Lid map;
  sm::assign_lids(f, map, 0);
  return f;
}

// LFT blocks (64 LIDs) that differ: what bring-up would write.
std::size_t blocks_changed(const sm::RoutingResult& a, const sm::RoutingResult& b) {
  std::size_t n = 0;
  for (std::size_t s = 0; s < a.lfts.size() && s < b.lfts.size(); ++s)
    for (std::size_t i = 0; i < a.lfts[s].ports.size(); i += 64)
      n += std::equal(a.lfts[s].ports.begin() + static_cast<std::ptrdiff_t>(i),
                      a.lfts[s].ports.begin() + static_cast<std::ptrdiff_t>(std::min(i + 64, a.lfts[s].ports.size())),
                      b.lfts[s].ports.begin() + static_cast<std::ptrdiff_t>(i))
               ? 0
               : 1;
  return n;
}

// FNV-1a over every LFT entry and every (source switch, LID) layer: two
// builds route alike when their digests match (printed in hex).
std::uint64_t routes_digest(const sm::RoutingResult& r) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const sm::Lft& l : r.lfts) {
    mix(l.node);
    for (const std::uint8_t p : l.ports) mix(p);
  }
  for (std::size_t s = 0; s < r.layers.switches(); ++s)
    for (std::uint32_t lid = 0; lid <= r.layers.top_lid(); ++lid) mix(r.layers.at(s, static_cast<std::uint16_t>(lid)));
  return h;
}

// The first switch-to-switch cable, cut on both ends.
fabric::Fabric cut_one_cable(fabric::Fabric f) {
  for (auto& n : f.nodes) {
    if (!n.is_switch()) continue;
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      fabric::Port& a = n.ports[p];
      if (!a.linked() || !f.nodes[a.peer].is_switch()) continue;
      f.nodes[a.peer].ports[a.peer_port].peer = fabric::kNoNode;
      a.peer = fabric::kNoNode;
      return f;
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned max_hosts = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 11664;
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 2;
  std::vector<sm::RoutingAlgo> only;
  const unsigned min_hosts = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 0;
  const bool full_only = argc > 5 && std::string(argv[5]) == "full";
  const long rss_max_mb = argc > 6 ? std::atol(argv[6]) : 0;
  bool rss_within = true;
  if (argc > 3 && std::string(argv[3]) != "all" && !sm::parse_routing_chain(argv[3], only)) {
    fmt::print(stderr, "bad engine list {}\n", argv[3]);
    return 2;
  }
  using A = sm::RoutingAlgo;
  const std::vector<A> tree{A::kMinHop, A::kUpDown, A::kFatTree, A::kDfsssp, A::kNue};
  const std::vector<A> any{A::kDfsssp, A::kNue, A::kUpDown};
  const std::vector<A> grid{A::kDor, A::kDfsssp, A::kNue};
  std::vector<Case> cases = {
      {"ft2 k36", 648, [] { return lids(testing::fat_tree2(36, 18, 18)); }, tree},
      {"ft3 k36 4 pods", 1296, [] { return lids(testing::fat_tree3(4, 18, 18, 18, 18)); }, tree},
      {"ft3 k36 8 pods", 2592, [] { return lids(testing::fat_tree3(8, 18, 18, 18, 18)); }, tree},
      {"ft3 k36 16 pods", 5184, [] { return lids(testing::fat_tree3(16, 18, 18, 18, 18)); }, tree},
      {"ft3 k36 36 pods", 11664, [] { return lids(testing::fat_tree3(36, 18, 18, 18, 18)); }, tree},
      {"ft3 k48 48 pods", 27648, [] { return lids(testing::fat_tree3(48, 24, 24, 24, 24)); }, tree},
      {"ft3 k56 56 pods", 43904, [] { return lids(testing::fat_tree3(56, 28, 28, 28, 28)); }, tree},
      {"torus 8x8", 128, [] { return testing::with_lids(sim::make_torus({.dims = {8, 8, 1}, .wrap = {true, true, false}}).topo); }, grid},
      {"torus 6x6x6", 432, [] { return testing::with_lids(sim::make_torus({.dims = {6, 6, 6}}).topo); }, grid},
      {"mesh 8x8x4", 512, [] { return testing::with_lids(sim::make_torus({.dims = {8, 8, 4}, .wrap = {false, false, false}}).topo); }, grid},
      {"dragonfly 17x8", 544, [] { return testing::with_lids(sim::make_dragonfly({.groups = 17, .routers = 8, .hosts = 4, .globals = 2})); }, any},
      {"ft3 k16 5% cut", 1024,
       [] {
         auto t = sim::make_fat_tree_3level({.k = 16});
         sim::fail_links(t, {.fraction = 0.05, .seed = 1});
         return testing::with_lids(t);
       },
       any},
  };
  fmt::print("{:<17} {:>6} {:>5} {:>7} {:>3} {:>9} {:>9} {:>8} {:>8} {:>8} {:>4} {:>8} {:>8} {:>9} {:>9} {:>8} {:>7} {:>6} {:>16}\n",
             "fabric", "hosts", "sw", "engine", "thr", "wall_ms", "cpu_ms", "hops_ms", "lfts_ms", "layer_ms", "VLs",
             "maxload", "meanload", "same_ms", "cut_ms", "cut_lids", "cut_blk", "rss_MB", "digest");
  for (const Case& c : cases) {
    if (c.hosts > max_hosts || c.hosts < min_hosts) continue;
    const fabric::Fabric f = c.build();
    const fabric::Fabric cut = cut_one_cable(f);
    for (const A algo : c.engines) {
      if (!only.empty() && std::find(only.begin(), only.end(), algo) == only.end()) continue;
      // nue grows with the square of a fat tree (47 s of CPU at 11,664 hosts):
      // above 5,184 hosts only when asked for by name.
      if (only.empty() && algo == A::kNue && c.hosts > 5184 && c.engines == tree) continue;
      sm::RoutingOptions o;
      o.algo = algo;
      o.threads = threads;
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_s();
      const auto r = sm::compute_routes(f, o);
      const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double cpu_ms = (cpu_s() - c0) * 1e3;
      if (!r.ok() || r.unreachable) {
        fmt::print("{:<17} {:>6} {:>5} {:>7} failed: {} (unreachable {})\n", c.name, c.hosts, f.switch_count(),
                   sm::to_string(algo), r.error, r.unreachable);
        continue;
      }
      std::string maxload = "-", meanload = "-";
      if (c.hosts <= 5184) {
        const sm::RouteCheck k = sm::check_routes(f, r, {.cycles = false});
        maxload = std::to_string(k.max_routes);
        meanload = fmt::format("{:.1f}", k.mean_routes);
      }
      // Incremental: the same fabric, then one cable cut.
      sm::RoutingResult same, after;
      double same_ms = 0, cut_ms = 0;
      if (!full_only) {
        auto t1 = std::chrono::steady_clock::now();
        same = sm::compute_routes(f, o, &r, &f);
        same_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
        t1 = std::chrono::steady_clock::now();
        after = sm::compute_routes(cut, o, &r, &f);
        cut_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
      }
      fmt::print("{:<17} {:>6} {:>5} {:>7} {:>3} {:>9.1f} {:>9.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>4} {:>8} {:>8} {:>9.1f} {:>9.1f} "
                 "{:>8} {:>7} {:>6} {:016x}\n",
                 c.name, c.hosts, f.switch_count(), sm::to_string(algo), threads, wall_ms, cpu_ms, r.hop_tables_s * 1e3,
                 r.lfts_s * 1e3, r.layers_s * 1e3, r.layers.count(), maxload, meanload, same_ms, cut_ms,
                 full_only ? "-" : after.ok() ? std::to_string(after.lids_rerouted) : "fail",
                 full_only ? 0 : blocks_changed(r, after), peak_rss_mb(), routes_digest(r));
      if (rss_max_mb != 0 && peak_rss_mb() > rss_max_mb) {
        fmt::print("{} {}: peak RSS {} MB above the bound of {} MB\n", c.name, sm::to_string(algo), peak_rss_mb(), rss_max_mb);
        rss_within = false;
      }
      if (same.lids_rerouted != 0 && same.incremental) fmt::print(stderr, "{}: unchanged fabric rerouted LIDs\n", c.name);
      std::fflush(stdout);
    }
  }
  return rss_within ? 0 : 1;
}
