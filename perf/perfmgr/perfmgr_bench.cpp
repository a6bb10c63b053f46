// perfmgr_bench SPEC [INTERVAL_MS]: a node on a generated sim fabric (pump
// mode, one core), first without then with the performance manager; while
// it runs two rounds, a host asks the SA for a PathRecord every simulated
// millisecond. Prints per port the PerfMgt MADs and the manager's CPU time
// (thread CPU, wall), and the SA's answer time (simulated: request sent to
// answer received, as the host sees it) both ways. docs/perf/perfmgr.md.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "node/internal_node.hpp"
#include "perfmgr/perf_manager.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"

using namespace madengine;

namespace {

struct Result {
  std::uint64_t ports = 0, mads = 0, cpu_ns = 0, rounds = 0;
  double sim_s = 0, round_s = 0;
  std::vector<double> sa_us;
};

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

Result run(const std::string& spec, bool perf, std::uint32_t interval_ms) {
  node::NodeConfig c;
  c.transport.kind = node::TransportKind::kSim;
  c.transport.generate = spec;
  c.engine.cores = 1;
  c.engine.pin = false;
  c.log.level = "warn";
  c.sm.sweep_interval_ms = 3'600'000;  // no light sweep in the window: the SA's latency is the manager's doing
  node::InternalOptions o;
  o.perfmgr.enabled = perf;
  o.perfmgr.interval_ms = interval_ms;
  node::InternalNode n(c, {}, o);
  sim::Fabric& f = *n.fabric();
  if (!n.wait_subnet_up(std::chrono::milliseconds(600'000))) throw std::runtime_error("subnet not up");
  // A host far from the SM (the last CA) asks for a path to the first other CA.
  std::uint32_t asker = 0, target = 0;
  for (std::uint32_t i = 0; i < f.node_count(); ++i)
    if (!f.is_switch(i)) asker = i;
  for (std::uint32_t i = 1; i < f.node_count(); ++i)
    if (!f.is_switch(i) && i != asker) {
      target = i;
      break;
    }
  sim::Host host(f, asker);
  wire::PathRecord q{};
  q.slid.set(f.lid(f.port(asker, 1)));
  q.dlid.set(f.lid(f.port(target, 1)));
  namespace cm = wire::path_record_cm;
  Result r;
  const Nanos start = f.now_ns();
  const Nanos end = start + 3 * Nanos{interval_ms} * kNanosPerMilli;
  Nanos next_query = start;
  std::uint64_t tid = 0;  // 0: none in flight
  Nanos sent = 0;
  while (f.now_ns() < end) {
    if (tid == 0 && f.now_ns() >= next_query) {
      tid = host.query(wire::method::kGet, wire::sa_attr::kPathRecord, cm::kSLid | cm::kDLid, wire::as_bytes(q)).value_or(0);
      sent = f.now_ns();
      next_query = sent + kNanosPerMilli;
    }
    n.pump(10 * kNanosPerMicro);
    host.poll();
    if (tid != 0 && host.take_response(tid)) {
      r.sa_us.push_back(static_cast<double>(f.now_ns() - sent) / 1000.0);
      tid = 0;
    }
    if (perf && n.perfmgr()->counters().rounds >= 2) break;
  }
  r.sim_s = static_cast<double>(f.now_ns() - start) / 1e9;
  if (perf) {
    const perfmgr::PerfMgrCounters pc = n.perfmgr()->counters();
    r.ports = pc.last_round_ports;
    r.mads = pc.mads;
    r.cpu_ns = pc.cpu_ns;
    r.rounds = pc.rounds;
    r.round_s = pc.last_round_s;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: perfmgr_bench SPEC [INTERVAL_MS]   (SPEC as transport.generate: ft2:36, ft3:36)\n");
    return 2;
  }
  const std::string spec = argv[1];
  const std::uint32_t interval_ms = argc > 2 ? static_cast<std::uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 10'000;
  const Result off = run(spec, false, interval_ms);
  const Result on = run(spec, true, interval_ms);
  const double per_port_rounds = static_cast<double>(on.ports * std::max<std::uint64_t>(1, on.rounds));
  fmt::print("fabric {}: {} ports read a round, interval {} ms (simulated), {} rounds in {:.2f} s simulated\n", spec,
             on.ports, interval_ms, on.rounds, on.sim_s);
  fmt::print("last round took {:.3f} s simulated\n", on.round_s);
  fmt::print("PerfMgt MADs per port per round  {:.2f} (ClassPortInfo once a node included)\n",
             static_cast<double>(on.mads) / per_port_rounds);
  fmt::print("manager CPU per port per round   {:.2f} us (thread CPU time)\n",
             static_cast<double>(on.cpu_ns) / 1000.0 / per_port_rounds);
  fmt::print("SA PathRecord answer (simulated) without: {} answers, p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n",
             off.sa_us.size(), pct(off.sa_us, 0.5), pct(off.sa_us, 0.99), pct(off.sa_us, 1.0));
  fmt::print("SA PathRecord answer (simulated) with:    {} answers, p50 {:.1f} us, p99 {:.1f} us, max {:.1f} us\n",
             on.sa_us.size(), pct(on.sa_us, 0.5), pct(on.sa_us, 0.99), pct(on.sa_us, 1.0));
  return 0;
}
