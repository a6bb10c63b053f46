// The SubnetManager on the in-process sim for tests: one engine core on the
// sim transport at `sm_node`, driven on the test's thread with the fabric's
// own clock (deterministic from the seed).
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>

#include "engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"

namespace madengine::testing {

inline constexpr Nanos kStepNs = kNanosPerMilli;

struct SimRig {
  sim::Fabric fabric;
  sim::SimTransport transport;
  Engine engine;
  sa::SnapshotStore store;
  std::unique_ptr<sm::SubnetManager> sm;

  SimRig(const sim::Topology& topo, const char* sm_node, sm::SmConfig cfg, std::uint64_t seed = 1)
      : fabric(topo, sim::FabricConfig{.seed = seed}),
        transport(fabric, fabric.find_node(sm_node), 1),
        engine(EngineConfig{.cores = 1, .pin = false, .clock = &fabric.clock()}) {
    if (!transport.open(AgentSpec{.smi = true, .is_sm = true})) throw std::runtime_error("sim transport did not open");
    engine.add_transport(transport, 0);
    sm = std::make_unique<sm::SubnetManager>(engine, transport, std::move(cfg), store);
  }
  ~SimRig() {
    sm.reset();
    engine.quiesce();
  }
  // Drives engine and fabric until `pred` holds or `sim_ms` of sim time pass.
  bool run_until(const std::function<bool(const sm::SmStatus&)>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred(sm->status())) return true;
      if (engine.poll_all_once() == 0) fabric.advance(kStepNs);
    }
    return pred(sm->status());
  }
};

}  // namespace madengine::testing
