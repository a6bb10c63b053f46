// The node as the project's own daemon, tools and tests use it: the parts
// (engine, SM, SA, the simulated fabric) within reach, a simulated fabric
// shared with other nodes and test hosts, and the SM's and SA's own
// configuration as the node derived it, to adjust (knobs the TOML does not
// carry). Private: not part of libmadengine's API.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "madengine/node/node.hpp"
#include "node/views.hpp"
#include "perfmgr/perf_manager.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sm/sm.hpp"

namespace madengine {
class Engine;
}
namespace madengine::sim {
class Fabric;
}

namespace madengine::node {

struct InternalOptions {
  // Not null: attach to this fabric at node `sim_node` (transport.kind must
  // be "sim"; transport.generate/topology/sim_node are not read). It must
  // outlive the node; whoever owns it drives it (pump() advances it too).
  sim::Fabric* sim_fabric = nullptr;
  std::uint32_t sim_node = 0;
  // Applied last, after the node wired mcast, notices and replica restore.
  std::function<void(sm::SmConfig&)> sm;
  std::function<void(sa::SaServerConfig&)> sa;
  // The performance manager ([perfmgr], node/perfmgr_keys.hpp); off unless
  // enabled. Its threshold reports reach `on_port_alarm` on the event thread.
  perfmgr::PerfMgrConfig perfmgr;
  std::function<void(const perfmgr::PortAlarm&)> on_port_alarm;
};

class InternalNode : public Node {
 public:
  // What Node(cfg, hooks) builds, with `options`.
  explicit InternalNode(const NodeConfig& cfg, NodeHooks hooks = {}, const InternalOptions& options = {});

  sim::Fabric* fabric() noexcept;  // sim only, else nullptr
  Engine& engine() noexcept;
  sm::SubnetManager& sm() noexcept;
  sa::SaServer& sa() noexcept;
  const sa::SnapshotStore& store() const noexcept;
  // From now on the node behaves as a process that died: its destruction
  // writes no final SA journal (a clean shutdown would). The scenario
  // runner (tools/madsim) crashes masters this way.
  void crash() noexcept;
  // The SA journal written now (the first thing the daemon's shutdown does,
  // before anything that waits on a device), from the state the SA last
  // published; any thread. Once: the destructor then writes nothing more.
  void write_journal_now() noexcept;

  JournalCounters journal_counters() const noexcept;
  // The performance manager; null when [perfmgr] is not enabled.
  perfmgr::PerfManager* perfmgr() noexcept;
  // perfmgr.node_name_map as loaded at start (empty without one).
  const perfmgr::NodeNameMap& node_names() const noexcept;

  // stop() with a bound: every thread of the node is told to end and joined
  // if it ends within `bound`. False when one is still inside a call that
  // has not returned (a device, a callback): the node stays started, stop()
  // and the destructor wait for it. The daemon's shutdown and me_node_stop.
  bool stop_within(std::chrono::milliseconds bound) noexcept;

  // Runs `fn` on engine core `core` between MAD bursts (the SM's core:
  // sm_core(); the SM's state is touched only there). Any thread; false when
  // the core's mailbox is full (CommandMailbox::kCommandsMax) or `core` does
  // not exist. Not started (sim, pump mode): runs at the next pump().
  bool post(std::uint16_t core, std::function<void()> fn);
  std::uint16_t sm_core() const noexcept { return 0; }
  // Commands core `core` has run so far (a liveness beat: post, then see it move).
  std::uint64_t commands_ran(std::uint16_t core) const noexcept;

  // SIGHUP: what can change while the node runs, from a freshly read
  // configuration: the log level (log.file: the caller reopens its log),
  // the SM's priority (on the SM's core, as the admin command sets it), the
  // partitions and qos-policy files (re-read, from new paths too), then
  // every reload hook in the order added. `applied`: one line per thing
  // reloaded; `restart_needed`: every other key that changed, by its TOML
  // name ("sm.routing"), which stays as the node started with it until a
  // restart. Hooks run on the calling thread.
  using ReloadResult = node::ReloadResult;
  using ReloadHook = std::function<std::string(const NodeConfig&)>;
  void add_reload_hook(ReloadHook hook);
  ReloadResult reload(const NodeConfig& fresh);
  // SIGHUP for [perfmgr] (read beside NodeConfig): the interval, timeout,
  // retries and thresholds are applied on the manager's core
  // (PerfManager::retune); a changed enabled, outstanding_max,
  // node_name_map or metrics_ports_max is named in restart_needed.
  ReloadResult reload_perfmgr(const perfmgr::PerfMgrConfig& fresh);
  // Re-reads the files an operator edits while the SM runs (the partitions
  // file; the qos-policy file with QoS on): SIGHUP, and the admin command.
  // Good files are applied by the next heavy sweep, which is requested; a
  // bad one is logged with file:line and what is in use stays. Any thread.
  // False when a file was refused.
  bool reload_config_files();
};

}  // namespace madengine::node
