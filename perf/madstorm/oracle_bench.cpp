// The fabric-truth oracle's cost: FabricOracle::check on every PathRecord of
// a job start (each host to every other) on a fabric madengine's SM brought
// up, with the walk cache warm (the steady state of a storm) and cold (the
// first storm: every (switch, LID) walk done once). Records are the right
// answers, so every check runs to the end (Reversible included).
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"
#include "lib/fabric_hosts.hpp"
#include "lib/fabric_oracle.hpp"
#include "sim/fabric.hpp"

namespace {

namespace md = madengine::node;
namespace wire = madengine::wire;
using madstorm::FabricOracle;

struct Fixture {
  std::unique_ptr<md::InternalNode> daemon;
  std::vector<wire::PathRecord> records;
};

Fixture& fabric(const std::string& spec) {
  static std::string built;
  static Fixture f;
  if (built == spec) return f;
  f = Fixture{};
  md::NodeConfig cfg;
  cfg.transport.kind = md::TransportKind::kSim;
  cfg.transport.generate = spec;
  cfg.engine.pin = false;
  cfg.sm.guid2lid.clear();
  cfg.sa.journal.clear();
  cfg.log.level = "warn";
  f.daemon = std::make_unique<md::InternalNode>(cfg);
  if (!f.daemon->wait_subnet_up(std::chrono::milliseconds(600'000))) return f;
  madengine::sim::Fabric& fab = *f.daemon->fabric();
  const madstorm::FabricHostsTransport hosts(fab);  // the hosts, as --embedded takes them
  FabricOracle o(fab);
  const auto& h = hosts.hosts();
  f.records.reserve(h.size() * (h.size() - 1));
  for (std::size_t s = 0; s < h.size(); ++s) {
    for (std::size_t d = 0; d < h.size(); ++d) {
      if (s == d) continue;
      const auto w = o.walk(o.port_of_lid(h[s].lid), h[d].lid);
      wire::PathRecord r{};
      r.slid = wire::be16::from(h[s].lid);
      r.dlid = wire::be16::from(h[d].lid);
      r.sgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(h[s].port_guid)};
      r.dgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(h[d].port_guid)};
      r.pkey = wire::be16::from(0xffff);
      r.set_mtu(w.mtu);
      std::uint8_t code = 2;
      while (code < madengine::wire::rate_code::kMax && madstorm::rate_code_x10(code) != w.rate_x10) ++code;
      r.set_rate(code);
      r.set_reversible(true);
      f.records.push_back(r);
    }
  }
  built = spec;
  return f;
}

void run(benchmark::State& state, const std::string& spec, bool cold) {
  Fixture& f = fabric(spec);
  if (f.records.empty()) {
    state.SkipWithError("the fabric did not come up");
    return;
  }
  FabricOracle oracle(*f.daemon->fabric());
  std::size_t wrong = 0;
  for (auto& r : f.records) wrong += oracle.check(r).verdict != madstorm::PathVerdict::kOk;  // warm it
  if (wrong != 0) state.SkipWithError("the oracle refused a right record");
  for (auto _ : state) {
    if (cold) oracle.clear();
    for (const auto& r : f.records) benchmark::DoNotOptimize(oracle.check(r));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * f.records.size()));
  state.counters["records"] = static_cast<double>(f.records.size());
}

void BM_OracleWarm_ft2_36(benchmark::State& s) { run(s, "ft2:36", false); }
void BM_OracleCold_ft2_36(benchmark::State& s) { run(s, "ft2:36", true); }
BENCHMARK(BM_OracleWarm_ft2_36)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OracleCold_ft2_36)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
