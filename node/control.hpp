// The node's control interface for the project's own tools (the daemon and
// its service, madstorm's embedded run, madsim) and tests: counter snapshots
// across SM, SA, engine and journal, the published epoch, sweeps, the SM's
// priority and handover, work posted to a core, reload. Tools go through it
// instead of reaching the SM, SA or engine. Private: not part of libmadengine.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "madengine/node/node.hpp"
#include "node/views.hpp"
#include "perfmgr/perf_config.hpp"

namespace madengine::sim {
class Fabric;
}
namespace madengine::perfmgr {
class NodeNameMap;
class PerfManager;
}  // namespace madengine::perfmgr

namespace madengine::node {

class InternalNode;

// One read of every part's figures.
struct CountersSnapshot {
  NodeStatus node;
  SmStatus sm;
  SaCounters sa;
  EngineCounters engine;
  JournalCounters journal;
};

// One SM of the subnet as our last heavy sweep found it (ourselves first).
struct SmSeen {
  std::uint64_t guid = 0;
  std::uint16_t lid = 0;
  std::uint8_t priority = 0;
  wire::SmState state = wire::SmState::kNotActive;
  bool self = false;
  bool key_ok = true;  // its SMInfo showed our SM_Key (always true for ourselves)
};

// A command that ran on the SM's core: `error` empty when it did.
template <typename T>
struct SmCommand {
  T value{};
  std::string error;
  bool ok() const noexcept { return error.empty(); }
};

struct PriorityChange {
  unsigned priority = 0, was = 0;
};

struct HandoverStarted {
  std::uint64_t to_guid = 0;  // the standby mastership goes to
  unsigned priority = 0, was = 0;
};

class NodeControl {
 public:
  // Implicit: a service or tool takes the node's control where it took the node.
  NodeControl(InternalNode& node) noexcept : node_(node) {}  // NOLINT(google-explicit-constructor)

  // ---- counters (any thread) ----
  // The SA's per-core atomics, the engine's, the SM's status under its lock.
  CountersSnapshot counters() const;
  SmStatus sm_status() const;
  SaCounters sa_counters() const;
  // The SM's SMP and replica counters are the SM core's: it copies them into
  // its status when asked; waits at most `wait` for that (false: it did not;
  // 0: only asks).
  bool refresh_sm_status(std::chrono::milliseconds wait);
  // The SM's port GUID (set when the node opened its port).
  std::uint64_t sm_guid() const noexcept;

  // The SA's services, groups and subscriptions as its stores last published them.
  SaRegistrations sa_registrations() const;
  // sim: the fabric the node is attached to; else nullptr.
  sim::Fabric* sim_fabric() const noexcept;

  // ---- sweeps (any thread) ----
  void request_heavy_sweep() noexcept;
  // False when this SM is not master (a standby does not sweep).
  bool request_light_sweep() noexcept;
  bool periodic_sweeps() const noexcept;
  // OpenSM's console `sweep on|off`; returns what it was.
  bool set_periodic_sweeps(bool on) noexcept;

  // ---- commands run on the SM's core; the caller waits at most `wait` ----
  SmCommand<std::vector<SmSeen>> sms(std::chrono::milliseconds wait);
  SmCommand<PriorityChange> set_priority(std::uint8_t priority, std::chrono::milliseconds wait);
  // Hands mastership to the best standby that shows our SM_Key (a priority
  // it outranks, then a heavy sweep sends it HANDOVER).
  SmCommand<HandoverStarted> handover(std::chrono::milliseconds wait);

  // ---- liveness (the service's watchdog) ----
  std::uint16_t cores() const noexcept;
  std::uint16_t sm_core() const noexcept;
  // Runs `fn` on engine core `core` between bursts (InternalNode::post).
  bool post(std::uint16_t core, std::function<void()> fn);
  // Not started (pump mode on a fabric another owner drives): one turn of
  // every engine core on the calling thread; the fabric is left alone.
  std::size_t poll_cores_once() noexcept;
  // Turns of the SM's task loop, and when its heavy sweep began (-1: none running).
  std::uint64_t sm_loop_turns() const noexcept;
  Nanos sweep_started_ns() const noexcept;

  // ---- reload, shutdown and crash (InternalNode) ----
  // SIGHUP: what can change while the node runs, from a fresh configuration.
  ReloadResult reload(const NodeConfig& fresh);
  ReloadResult reload_perfmgr(const perfmgr::PerfMgrConfig& fresh);
  // Re-reads the partitions and qos-policy files (false: one was refused).
  bool reload_config_files();
  // The SA journal written now, once (the first step of a shutdown).
  void write_journal_now() noexcept;
  // stop() with a bound (false: a thread is still inside a call; the node stays started).
  bool stop_within(std::chrono::milliseconds bound) noexcept;
  // From now on the node behaves as a process that died: its destruction
  // writes no final SA journal (madsim crashes masters this way).
  void crash() noexcept;

  // ---- the node's own reads (Node, InternalNode) ----
  NodeStatus status() const;
  // The current epoch (empty before the first publication).
  FabricView fabric_view() const;
  PathResult path(std::uint16_t slid, std::uint16_t dlid, PathInfo& out) const;
  const perfmgr::NodeNameMap& node_names() const noexcept;
  perfmgr::PerfManager* perfmgr() noexcept;

 private:
  // Runs fn on the SM's core; the error when it cannot or does not finish in `wait`.
  template <typename T>
  SmCommand<T> on_sm_core(std::function<SmCommand<T>()> fn, std::chrono::milliseconds wait);

  InternalNode& node_;
};

// How a tool attaches its node, beyond the configuration.
struct ControlOptions {
  // Not null: attach to this fabric at node `sim_node` (transport.kind
  // "sim"); it must outlive the node, and whoever owns it drives it.
  sim::Fabric* sim_fabric = nullptr;
  std::uint32_t sim_node = 0;
  // The SM's SMInfo state changes and phases, on the SM's core (after the
  // node's own event for a change).
  std::function<void(wire::SmState from, wire::SmState to)> on_sm_transition;
  std::function<void(SmPhase phase)> on_sm_phase;
  // [perfmgr] (read beside NodeConfig); off unless enabled.
  perfmgr::PerfMgrConfig perfmgr;
};

// A node a tool builds and owns (the daemon, madstorm --embedded, madsim),
// reached through its NodeControl: the node's life (start, pump, stop) is
// Node's, everything else the control's.
class ControlledNode {
 public:
  // What Node(cfg, hooks) builds, with `options`; throws as Node does.
  explicit ControlledNode(const NodeConfig& cfg, NodeHooks hooks = {}, const ControlOptions& options = {});
  ~ControlledNode();
  ControlledNode(const ControlledNode&) = delete;
  ControlledNode& operator=(const ControlledNode&) = delete;

  Node& node() noexcept;
  const Node& node() const noexcept;
  NodeControl control() const noexcept;

 private:
  std::unique_ptr<InternalNode> node_;
};

}  // namespace madengine::node
