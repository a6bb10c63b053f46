// madengine's SM and SA in the test process on an ibsim host (attach_self
// first): one engine core on the umad transport (SMI + SA server), the SA
// serving the snapshots the SM publishes. The SA conformance tests compare
// what saquery gets from it with what it gets from OpenSM.
#pragma once

#include <memory>

#include "engine/umad/umad_transport.hpp"
#include "madengine/engine/engine.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sm/sm.hpp"

namespace madengine::ibsim {

struct MadengineRig {
  SteadyClock clock;
  UmadTransport transport{{}, clock};
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  std::unique_ptr<sm::SubnetManager> sm;
  std::unique_ptr<sa::SaServer> sa;

  // The SM_Key OpenSM and our daemon use by default (1): `saquery --smkey 1`
  // is then a trusted request to either SM.
  static sm::SmConfig opensm_keyed() {
    sm::SmConfig c;
    c.sm_key = 1;
    return c;
  }

  // `cfg.mcast` is set to the SA's groups, and the partitions' groups go to it. The SM's hook owns core 0's
  // responses: the SA installs none (its ReportResps are not needed here).
  bool start(sm::SmConfig cfg = opensm_keyed(), sa::SaServerConfig sc = {}) {
    if (!transport.open(AgentSpec{.smi = true, .is_sm = true, .sa_server = true})) return false;
    engine = std::make_unique<Engine>(EngineConfig{.cores = 1, .pin = false});
    engine->add_transport(transport, 0);
    sc.install_response_hooks = false;
    sa = std::make_unique<sa::SaServer>(*engine, store, sc);
    cfg.mcast = &sa->mcast_provider();
    cfg.on_partition_groups = [s = sa.get()](std::vector<wire::McMemberRecord> g) { s->set_partition_groups(std::move(g)); };
    sm = std::make_unique<sm::SubnetManager>(*engine, transport, cfg, store);
    engine->start();
    return true;
  }
  ~MadengineRig() {
    if (engine) engine->stop();
    sm.reset();
    sa.reset();
    engine.reset();
    transport.close();
  }
};

}  // namespace madengine::ibsim
