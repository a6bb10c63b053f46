// A node (madengine/node/node.hpp, the daemon's assembly) attached to a sim
// fabric the test shares with other nodes and hosts: one engine core on the
// fabric's clock, driven by the test's own loop (engine().poll_all_once()).
// Used by the HA tests and the failover benchmark (header-only, test-side).
#pragma once

#include <memory>
#include <utility>

#include "engine/engine.hpp"
#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sim/fabric.hpp"

namespace madengine::testing {

// The daemon's configuration of a sim node with one core; tests set the SM's keys on it.
inline node::NodeConfig sim_node_config() {
  node::NodeConfig c;
  c.transport.kind = node::TransportKind::kSim;
  c.engine.cores = 1;
  c.engine.pin = false;
  return c;
}

// `replicate`: a standby copies the master's SA state (the daemon always
// does); false leaves SmConfig::restore_sa_state unset. `tweak` adjusts the
// SM's configuration last. Throws if the port does not open.
inline std::unique_ptr<node::InternalNode> make_sm_sa_node(sim::Fabric& fabric, std::uint32_t at, const node::NodeConfig& cfg,
                                                   bool replicate, std::function<void(sm::SmConfig&)> tweak = {}) {
  node::InternalOptions in{.sim_fabric = &fabric, .sim_node = at};
  in.sm = [replicate, tweak = std::move(tweak)](sm::SmConfig& s) {
    if (!replicate) s.restore_sa_state = nullptr;
    if (tweak) tweak(s);
  };
  return std::make_unique<node::InternalNode>(cfg, node::NodeHooks{}, in);
}

}  // namespace madengine::testing
