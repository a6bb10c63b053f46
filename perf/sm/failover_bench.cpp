// Failover and handover times of two madengine SubnetManagers on the sim
// transport (simulated time: 1 us per SMA answer, 100 ns per hop; LIDs,
// routing and path database are wall time added on top, as in bring-up).
//   failover_bench ft2:36 100 3      (648 hosts, polls every 100 ms, 3 retries)
//   failover_bench ft3:36:36 100 3   (11,664 hosts)
//   failover_bench ft3:36:36 100 3 2 (routing and path database on 2 threads)
// failover: the master's node dies -> the standby publishes its first
//   snapshot as master (from then its SA answers; the SA reads the snapshot);
//   then until the fabric is reprogrammed with the new SM LID.
// handover: a higher-priority SM starts on a managed fabric -> it publishes
//   as master and the old master is STANDBY.
// Prints a table and one JSON line per run. Results: docs/perf/ha.md.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "madengine/engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"

namespace {

using namespace madengine;

struct SmNode {
  std::unique_ptr<sim::SimTransport> transport;
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  std::unique_ptr<sm::SubnetManager> sm;
  ~SmNode() {
    sm.reset();
    if (engine) engine->quiesce();
  }
};

struct Rig {
  sim::Fabric fabric;
  std::vector<std::unique_ptr<SmNode>> sms;
  std::uint32_t poll_ms, retries;
  unsigned threads;
  Rig(const sim::Topology& t, std::uint32_t poll, std::uint32_t r, unsigned th)
      : fabric(t, sim::FabricConfig{.seed = 1}), poll_ms(poll), retries(r), threads(th) {}
  ~Rig() { sms.clear(); }
  sm::SubnetManager& add(std::uint32_t node, std::uint8_t prio) {
    auto n = std::make_unique<SmNode>();
    n->transport = std::make_unique<sim::SimTransport>(fabric, node, 1);
    if (!n->transport->open(AgentSpec{.smi = true, .is_sm = true})) throw std::runtime_error("sim transport did not open");
    n->engine = std::make_unique<Engine>(EngineConfig{.cores = 1, .pin = false, .clock = &fabric.clock()});
    n->engine->add_transport(*n->transport, 0);
    sm::SmConfig cfg;
    cfg.priority = prio;
    cfg.sm_key = 1;
    cfg.ha_poll_interval_ms = poll_ms;
    cfg.ha_poll_retries = static_cast<std::uint8_t>(retries);
    cfg.light_sweep_interval_ms = 10'000;
    cfg.routing_threads = threads;
    cfg.path_db_threads = threads;
    n->sm = std::make_unique<sm::SubnetManager>(*n->engine, *n->transport, cfg, n->store);
    sms.push_back(std::move(n));
    return *sms.back()->sm;
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& s : sms) work += s->engine->poll_all_once();
      if (work == 0) fabric.advance(kNanosPerMilli / 10);
    }
    return pred();
  }
};

sim::Topology make(const std::string& spec, std::string& err) {
  unsigned k = 0, pods = 0;
  if (std::sscanf(spec.c_str(), "ft3:%u:%u", &k, &pods) == 2) return sim::make_fat_tree_3level({.k = k, .pods = pods});
  if (std::sscanf(spec.c_str(), "ft2:%u", &k) == 1) return sim::make_fat_tree_2level({.k = k});
  err = "fabric spec must be ft2:K or ft3:K:PODS";
  return {};
}

std::pair<std::uint32_t, std::uint32_t> two_hosts(const sim::Fabric& f) {
  std::uint32_t first = 0, last = f.node_count() - 1;
  while (f.is_switch(first)) ++first;
  while (f.is_switch(last)) --last;
  return {first, last};
}

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ft2:K|ft3:K:PODS POLL_MS RETRIES [THREADS]\n", argv[0]);
    return 2;
  }
  std::string err;
  const std::string spec = argv[1];
  const auto topo = make(spec, err);
  if (!err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 2;
  }
  const auto poll = static_cast<std::uint32_t>(std::atoi(argv[2]));
  const auto retries = static_cast<std::uint32_t>(std::atoi(argv[3]));
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::max(1, std::atoi(argv[4]))) : 1;  // routing and path db
  if (poll == 0 || retries == 0 || retries > 255) {
    std::fprintf(stderr, "POLL_MS and RETRIES must be >= 1 (RETRIES <= 255)\n");
    return 2;
  }
  constexpr Nanos kLimitMs = 3'600'000;  // a bound on simulated time, not a timing check

  // ---- failover ----
  double failover_ms = -1, detect_ms = -1, programmed_ms = -1, sweep_wall_s = 0;
  unsigned hosts = 0;
  {
    Rig rig(topo, poll, retries, threads);
    for (std::uint32_t n = 0; n < rig.fabric.node_count(); ++n) hosts += rig.fabric.is_switch(n) ? 0 : 1;
    const auto [a, b] = two_hosts(rig.fabric);
    sm::SubnetManager& master = rig.add(a, 9);
    sm::SubnetManager& standby = rig.add(b, 2);
    // Steady state: the standby has prepared its snapshot of the master's fabric.
    if (!rig.run_until([&] { return master.status().subnet_up && standby.status().state == wire::SmState::kStandby &&
                                    standby.status().prepared_snapshots != 0; },
                       kLimitMs)) {
      std::fprintf(stderr, "no master/standby pair\n");
      return 1;
    }
    const auto epoch0 = standby.status().epoch;
    rig.fabric.kill_node(a);
    const Nanos t0 = rig.fabric.now_ns();
    if (!rig.run_until([&] { return standby.status().state != wire::SmState::kStandby; }, kLimitMs)) return 1;
    detect_ms = ms(rig.fabric.now_ns() - t0);
    const auto w0 = std::chrono::steady_clock::now();
    if (!rig.run_until([&] { return standby.status().epoch > epoch0; }, kLimitMs)) return 1;
    const Nanos answer_ns = rig.fabric.now_ns() - t0;
    if (!rig.run_until([&] { return standby.status().subnet_up; }, kLimitMs)) return 1;
    sweep_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const auto& h = standby.status().last_heavy;
    // Simulated time plus the CPU phases the simulated clock does not see
    // (they all come before the first publication).
    const double cpu_ms = (h.lids_s + h.routing_s + h.path_db_s) * 1e3;
    // A standby's prepared snapshot is published right after discovery,
    // before the CPU phases; otherwise they come first.
    const bool prepared = standby.status().prepared_publications != 0;
    failover_ms = ms(answer_ns) + (prepared ? 0.0 : cpu_ms);
    std::printf("failover: first publication %s\n", prepared ? "the standby's prepared snapshot" : "after routing");
    programmed_ms = ms(rig.fabric.now_ns() - t0) + cpu_ms;
    std::printf("failover: lids_new %u, nodes %u, smps %llu, published before programming %llu; takeover sweep: "
                "discovery %.3f s (sim), LIDs %.3f s, routing %.3f s, path db %.3f s (CPU), programming %.3f s (sim)\n",
                h.lids_new, h.nodes, static_cast<unsigned long long>(h.smps),
                static_cast<unsigned long long>(standby.status().early_publications), h.discovery_s, h.lids_s, h.routing_s,
                h.path_db_s, h.programming_s);
  }
  // ---- handover ----
  double handover_ms = -1;
  {
    Rig rig(topo, poll, retries, threads);
    const auto [a, b] = two_hosts(rig.fabric);
    sm::SubnetManager& lo = rig.add(a, 2);
    if (!rig.run_until([&] { return lo.status().subnet_up; }, kLimitMs)) return 1;
    const Nanos t0 = rig.fabric.now_ns();
    sm::SubnetManager& hi = rig.add(b, 9);
    if (!rig.run_until([&] { return hi.status().subnet_up && hi.status().state == wire::SmState::kMaster &&
                                    lo.status().state == wire::SmState::kStandby; },
                       kLimitMs))
      return 1;
    const auto& h = hi.status().last_heavy;
    handover_ms = ms(rig.fabric.now_ns() - t0) + (h.lids_s + h.routing_s + h.path_db_s) * 1e3;
  }
  std::printf("| fabric | hosts | polls | detection ms | failover ms (SA answers) | fabric reprogrammed ms | handover ms |\n"
              "|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %u | %u ms x %u | %.1f | %.1f | %.1f | %.1f |\n", spec.c_str(), hosts, poll, retries, detect_ms,
              failover_ms, programmed_ms, handover_ms);
  std::printf("{\"fabric\":\"%s\",\"hosts\":%u,\"poll_ms\":%u,\"retries\":%u,\"detect_ms\":%.3f,\"failover_ms\":%.3f,"
              "\"programmed_ms\":%.3f,\"handover_ms\":%.3f,\"takeover_sweep_wall_s\":%.3f}\n",
              spec.c_str(), hosts, poll, retries, detect_ms, failover_ms, programmed_ms, handover_ms, sweep_wall_s);
  return 0;
}
