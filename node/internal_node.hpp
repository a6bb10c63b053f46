// The node as the project's own daemon, tools and tests use it: the parts
// (engine, SM, SA, the simulated fabric) within reach, a simulated fabric
// shared with other nodes and test hosts, and the SM's and SA's own
// configuration as the node derived it, to adjust (knobs the TOML does not
// carry). Private: not part of libmadengine's API.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "madengine/node/node.hpp"
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
};

}  // namespace madengine::node
