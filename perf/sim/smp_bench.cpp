// SMPs answered per second on one core: directed-route SubnGet(NodeInfo)
// along paths of 1..6 hops in a 3-level fat tree (k = 8), 64 in flight per
// batch. Each SMP crosses 2 x hops links, runs the SMA once and comes back;
// the figure includes the event queue and the endpoint rings.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include "madengine/wire/smp.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"

namespace {

using namespace madengine;
using namespace madengine::sim;

constexpr std::size_t kInFlight = 64;

// host-0-0-0 port 1 -> edge-0-0 -> agg-0-0 -> core-0 -> agg-1-0 -> edge-1-0 -> host-1-0-0.
wire::DrPath path_of(int hops) {
  // edge: up port k/2+1 = 5; agg: up port 5 (to core 0); core: port 2 (pod 1);
  // agg-1-0: down port 1 (edge 0); edge-1-0: port 1 (host 0).
  static const std::uint8_t ports[] = {1, 5, 5, 2, 1, 1};
  wire::DrPath p;
  for (int i = 0; i < hops; ++i) p.push(ports[i]);
  return p;
}

void BM_DrNodeInfo(benchmark::State& state) {
  const int hops = static_cast<int>(state.range(0));
  const Topology topo = make_fat_tree_3level({8});
  Fabric fabric(topo);
  AgentSpec spec;
  spec.smi = true;
  const EndpointId ep = fabric.attach(fabric.find_node("host-0-0-0"), 1, spec);
  std::vector<MadBuf> reqs(kInFlight);
  const wire::DrPath path = path_of(hops);
  for (std::size_t i = 0; i < kInFlight; ++i)
    reqs[i].as<wire::DrSmp>() = wire::make_dr_smp(wire::method::kGet, wire::smp_attr::kNodeInfo, 0, i + 1, path);
  std::vector<MadBuf> in(kInFlight);
  std::vector<MadBuf*> inp(kInFlight);
  for (std::size_t i = 0; i < kInFlight; ++i) inp[i] = &in[i];
  std::uint64_t answered = 0;
  for (auto _ : state) {
    for (const MadBuf& r : reqs) fabric.send(ep, r);
    while (!fabric.idle()) fabric.run_until(fabric.next_event_ns());
    answered += fabric.receive(ep, inp);
  }
  if (answered != state.iterations() * kInFlight) state.SkipWithError("SMPs were lost");
  state.SetItemsProcessed(static_cast<std::int64_t>(answered));
  state.counters["hops"] = hops;
}
BENCHMARK(BM_DrNodeInfo)->DenseRange(1, 6);

}  // namespace
