// One SM node on the sim fabric as the daemon wires it: a SimTransport on the
// node's port 1, a one-core Engine on the fabric's clock, an SaServer fed by
// a SubnetManager (its multicast groups, and, when asked, the SA state a
// standby replicates restored into it), and the response chain that lets the
// SA's RMPP ACKs and the SM's transactions share core 0's responses. Used by
// the HA tests and the failover benchmark (header-only, test-side).
#pragma once

#include <memory>
#include <stdexcept>
#include <utility>

#include "madengine/engine/engine.hpp"
#include "sa/server/response_chain.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"

namespace madengine::testing {

struct SmSaNode {
  std::unique_ptr<sim::SimTransport> transport;
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  std::unique_ptr<sa::SaServer> sa;
  std::unique_ptr<sm::SubnetManager> sm;
  std::unique_ptr<sa::ResponseChain> chain;
  ~SmSaNode() {
    sm.reset();
    sa.reset();
    if (engine) engine->quiesce();
  }
};

// `cfg` is the SM's own configuration; its `mcast` (and `restore_sa_state`,
// when `restore_replica`) are set here. Throws if the port does not open.
inline std::unique_ptr<SmSaNode> make_sm_sa_node(sim::Fabric& fabric, std::uint32_t node, sm::SmConfig cfg,
                                                 bool restore_replica) {
  auto n = std::make_unique<SmSaNode>();
  n->transport = std::make_unique<sim::SimTransport>(fabric, node, 1);
  if (!n->transport->open(AgentSpec{.smi = true, .is_sm = true, .sa_server = true, .gsi_client = true}))
    throw std::runtime_error("sim transport did not open");
  n->engine = std::make_unique<Engine>(EngineConfig{.cores = 1, .pin = false, .clock = &fabric.clock()});
  n->engine->add_transport(*n->transport, 0);
  n->sa = std::make_unique<sa::SaServer>(*n->engine, n->store, sa::SaServerConfig{.install_response_hooks = false});
  cfg.mcast = &n->sa->mcast_provider();
  cfg.on_partition_groups = [sa = n->sa.get()](std::vector<wire::McMemberRecord> g) { sa->set_partition_groups(std::move(g)); };
  if (restore_replica) {
    sa::SaServer* sa = n->sa.get();
    cfg.restore_sa_state = [sa](sa::SaStateImage img) { sa->restore_state(std::move(img)); };
  }
  n->sm = std::make_unique<sm::SubnetManager>(*n->engine, *n->transport, cfg, n->store);
  n->chain = std::make_unique<sa::ResponseChain>(*n->sa, n->engine->dispatcher().response_hook(0));
  n->engine->set_response_hook(0, *n->chain);
  return n;
}

}  // namespace madengine::testing
