// What a node is made of (Node::Parts): built and wired in node.cpp, read
// by the node's own sources and by InternalNode (internal_node.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "engine/command_mailbox.hpp"
#include "engine/compute_pool.hpp"
#include "engine/engine.hpp"
#include "madengine/node/node.hpp"
#include "node/fabric_model.hpp"
#include "sa/server/response_chain.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "perfmgr/perf_manager.hpp"
#include "sm/sm.hpp"

namespace madengine::node {

class EventHub;
class EpochWriter;
class JournalWriter;
class SimDriver;
class VendorMads;

struct Node::Parts {
  Parts();
  ~Parts();
  NodeConfig cfg;
  // Compute (routing, path database) and I/O (journal, guid2lid) threads
  // beside the cores; inline on the simulator, which is single-threaded by design.
  std::unique_ptr<ComputePool> compute;
  std::unique_ptr<ComputePool> io;
  // sim: ours, or one shared with other nodes (InternalOptions)
  std::unique_ptr<sim::Fabric> own_fabric;
  sim::Fabric* fabric = nullptr;
  // either transport, or the embedder's
  std::unique_ptr<Transport> own_transport;
  Transport* transport = nullptr;
  std::unique_ptr<EventHub> events;
  std::unique_ptr<VendorMads> vendor;
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  mutable ViewCache views;  // the current epoch's FabricView (Node::fabric_view, a const read)
  std::unique_ptr<sa::SaServer> sa;
  std::unique_ptr<sm::SubnetManager> sm;
  perfmgr::NodeNameMap names;  // perfmgr.node_name_map (empty: NodeDescription names nodes)
  std::unique_ptr<perfmgr::PerfManager> perf;
  perfmgr::PerfMgrConfig perf_cfg;  // [perfmgr] in use (the start's, then what reloads applied)
  std::unique_ptr<MadHandler> perf_hook;  // class 0x04 responses, then the SM's
  std::vector<std::unique_ptr<sa::ResponseChain>> chains;
  std::unique_ptr<JournalWriter> journal;
  std::unique_ptr<EpochWriter> epoch_writer;  // the persisted epoch (sa.epoch_restore)
  std::unique_ptr<SimDriver> driver;
  // One per engine core: work another thread runs there (InternalNode::post).
  std::vector<std::unique_ptr<CommandMailbox>> mailboxes;
  std::vector<std::function<std::string(const NodeConfig&)>> reload_hooks;
  // The partitions and qos-policy files as last applied (paths and bytes):
  // a reload that finds them unchanged leaves the fabric alone (logrotate's
  // SIGHUP must not sweep it).
  std::string policy_files_applied;
  std::atomic<bool> started{false};  // read by any thread (Node::started), written by start/stop
  bool engine_running = false;
  // Every thread the node started told to end, each joined if it ended by
  // `deadline` (they stop side by side). False: one is still inside a call;
  // `started` stays true and a later call (Node::stop) joins what is left.
  bool stop_until(StopDeadline deadline) noexcept;
  bool crashed = false;  // InternalNode::crash(): nothing more is written at destruction

  // One turn of every core; when nothing was due, the fabric's clock moves on.
  std::size_t pump(Nanos step_ns) {
    const std::size_t work = engine->poll_all_once();
    if (work == 0) fabric->advance(step_ns);
    return work;
  }
};

}  // namespace madengine::node
