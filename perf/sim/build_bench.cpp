// Build time and memory of large simulated fabrics: topology generation,
// Fabric construction, the model's own bytes per node and the process RSS
// growth. Prints a table and writes JSON (argv[1], default sim_build.json).
// Usage: sim_build_bench [out.json] [max_hosts]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "sim/fabric.hpp"
#include "sim/generators.hpp"

namespace {

using namespace madengine::sim;
using Clock = std::chrono::steady_clock;

long rss_bytes() {
  std::ifstream f("/proc/self/statm");
  long pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return pages_rss * sysconf(_SC_PAGESIZE);
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Case {
  const char* name;
  unsigned levels, k, pods;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string out = argc > 1 ? argv[1] : "sim_build.json";
  const unsigned long max_hosts = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : ~0ul;
  const Case cases[] = {
      {"fat-tree-2 k=36", 2, 36, 0},
      {"fat-tree-3 k=36", 3, 36, 0},
      {"fat-tree-3 k=74", 3, 74, 0},  // 101,306 hosts: the 100,000-host case
  };
  std::printf("%-18s %9s %9s %9s %11s %11s %12s %12s %10s\n", "fabric", "hosts", "switches", "ports", "gen_ms",
              "build_ms", "model_B", "B/node", "rss_MB");
  std::string json = "[\n";
  for (const Case& c : cases) {
    const unsigned long hosts = c.levels == 2 ? c.k * c.k / 2ul : c.k * c.k * c.k / 4ul;
    if (hosts > max_hosts) continue;
    const long rss0 = rss_bytes();
    auto t0 = Clock::now();
    const Topology topo = c.levels == 2 ? make_fat_tree_2level({c.k}) : make_fat_tree_3level({c.k, c.pods});
    const double gen_ms = ms_since(t0);
    const long rss1 = rss_bytes();
    t0 = Clock::now();
    Fabric fabric(topo);
    const double build_ms = ms_since(t0);
    const long rss2 = rss_bytes();
    const std::size_t nodes = fabric.node_count();
    const std::size_t model = fabric.memory_bytes();
    std::printf("%-18s %9zu %9zu %9u %11.1f %11.1f %12zu %12.1f %10.1f\n", c.name, topo.ca_count(), topo.switch_count(),
                fabric.port_count(), gen_ms, build_ms, model, double(model) / nodes, double(rss2 - rss1) / 1e6);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "  {\"fabric\": \"%s\", \"hosts\": %zu, \"switches\": %zu, \"ports\": %u, \"generate_ms\": %.2f, "
                  "\"build_ms\": %.2f, \"model_bytes\": %zu, \"bytes_per_node\": %.1f, \"rss_topology_bytes\": %ld, "
                  "\"rss_fabric_bytes\": %ld},\n",
                  c.name, topo.ca_count(), topo.switch_count(), fabric.port_count(), gen_ms, build_ms, model,
                  double(model) / nodes, rss1 - rss0, rss2 - rss1);
    json += buf;
  }
  if (json.size() > 2) json.erase(json.size() - 2, 1);
  json += "]\n";
  std::ofstream(out) << json;
  std::printf("wrote %s\n", out.c_str());
  return 0;
}
