// Routing benchmark: LID assignment and each routing engine's two phases on
// fat trees of 36-port switches (648 .. 11,664 hosts), 1 and N threads.
//   routing_bench [max_hosts] [threads]
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>

#include "fabric_builders.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

using namespace madengine;

namespace {

struct Case {
  const char* name;
  unsigned hosts;
  fabric::Fabric (*build)();
};

long peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned max_hosts = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 11664;
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 2;
  const Case cases[] = {
      {"ft2 k36", 648, [] { return testing::fat_tree2(36, 18, 18); }},
      {"ft3 k36 4 pods", 1296, [] { return testing::fat_tree3(4, 18, 18, 18, 18); }},
      {"ft3 k36 8 pods", 2592, [] { return testing::fat_tree3(8, 18, 18, 18, 18); }},
      {"ft3 k36 16 pods", 5184, [] { return testing::fat_tree3(16, 18, 18, 18, 18); }},
      {"ft3 k36 36 pods", 11664, [] { return testing::fat_tree3(36, 18, 18, 18, 18); }},
      {"ft3 k48 48 pods", 27648, [] { return testing::fat_tree3(48, 24, 24, 24, 24); }},
      {"ft3 k56 56 pods", 43904, [] { return testing::fat_tree3(56, 28, 28, 28, 28); }},
  };
  fmt::print("{:<17} {:>6} {:>6} {:>7} {:>7} {:>9} {:>10} {:>10} {:>8} {:>8}\n", "fabric", "hosts", "sw", "engine",
             "threads", "lids_ms", "hops_ms", "lfts_ms", "maxhop", "rss_MB");
  for (const Case& c : cases) {
    if (c.hosts > max_hosts) continue;
    for (auto algo : {sm::RoutingAlgo::kMinHop, sm::RoutingAlgo::kUpDown, sm::RoutingAlgo::kFatTree}) {
      for (unsigned th : {1u, threads}) {
        auto f = c.build();
        sm::Guid2Lid map;
        auto t0 = std::chrono::steady_clock::now();
        sm::assign_lids(f, map, 0);
        const double lids_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        sm::RoutingOptions o;
        o.algo = algo;
        o.threads = th;
        const auto r = sm::compute_routes(f, o);
        if (!r.ok() || r.unreachable) {
          fmt::print(stderr, "{}: routing failed: {} unreachable {}\n", c.name, r.error, r.unreachable);
          return 1;
        }
        fmt::print("{:<17} {:>6} {:>6} {:>7} {:>7} {:>9.1f} {:>10.1f} {:>10.1f} {:>8} {:>8}\n", c.name, c.hosts,
                   f.switch_count(), sm::to_string(algo), th, lids_ms, r.hop_tables_s * 1e3, r.lfts_s * 1e3,
                   r.max_hops, peak_rss_mb());
        if (th == threads) break;
      }
    }
  }
  return 0;
}
