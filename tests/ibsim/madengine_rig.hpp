// madengine's SM and SA in the test process on an ibsim host (attach_self
// first): a node (madengine/node/node.hpp, the daemon's assembly) on the
// umad transport with one engine core. The SA conformance and trap tests
// compare what saquery and subscribers get from it with what they get from
// OpenSM.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "ibsim_harness.hpp"
#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"

namespace madengine::ibsim {

struct MadengineRig {
  std::unique_ptr<node::InternalNode> node;
  std::string error;  // why start() failed

  // The daemon's configuration on umad with one unpinned core and the SM's
  // own defaults where the daemon's differ (priority 0), keeping nothing
  // across runs.
  static node::NodeConfig config(std::uint64_t sm_key) {
    node::NodeConfig c;
    c.transport.kind = node::TransportKind::kUmad;
    c.engine.cores = 1;
    c.engine.pin = false;
    c.sm.priority = 0;
    c.sm.sm_key = sm_key;
    c.sm.guid2lid.clear();
    c.sa.journal.clear();
    return c;
  }
  // The SM_Key OpenSM and our daemon use by default (1): `saquery --smkey 1`
  // is then a trusted request to either SM.
  static node::NodeConfig opensm_keyed() { return config(1); }

  // `tweak` adjusts the SM's configuration last (knobs the TOML lacks).
  bool start(const node::NodeConfig& cfg = opensm_keyed(), std::function<void(sm::SmConfig&)> tweak = {}) {
    try {
      node = std::make_unique<node::InternalNode>(cfg, node::NodeHooks{}, node::InternalOptions{.sm = std::move(tweak)});
      node->start();
      return true;
    } catch (const std::exception& e) {
      error = e.what();
      node.reset();
      return false;
    }
  }
  // The conformance method's second half: madengine on `fabric` (fresh from
  // bare ibsim), attached at `host`, starting from OpenSM's guid2lid text,
  // up within a minute (its first sweep ended, port tables read) and with
  // every port on the LID OpenSM gave it.
  bool start_from_opensm_lids(IbsimFabric& fabric, const char* host, const std::string& guid2lid,
                              node::NodeConfig cfg = opensm_keyed(), std::function<void(sm::SmConfig&)> tweak = {}) {
    const std::string g2l = fabric.work_dir() + "/guid2lid";
    std::ofstream(g2l) << guid2lid;
    fabric.attach_self(host);
    cfg.sm.guid2lid = g2l;
    if (!start(cfg, std::move(tweak))) return false;
    // The first sweep's end: the port tables follow subnet up.
    if (!sm().wait_for([](const sm::SmStatus& s) { return s.subnet_up && s.port_table_sweeps >= 1; },
                       std::chrono::seconds(60))) {
      error = "no subnet up within 60 s: " + sm().status().last_heavy.error;
      return false;
    }
    if (sm().status().last_heavy.lids_new != 0) {
      error = "a port got a LID OpenSM did not give it";
      return false;
    }
    return true;
  }
  sm::SubnetManager& sm() { return node->sm(); }
  sa::SaServer& sa() { return node->sa(); }
  const sa::SnapshotStore& store() const { return node->store(); }
};

}  // namespace madengine::ibsim
