// What the project's own tests and tools give a node beyond the daemon's
// configuration: a simulated fabric shared with other nodes and test hosts,
// and the SM's and SA's own configuration as the node derived it, to adjust
// (knobs the TOML does not carry). Private: not part of libmadengine's API.
#pragma once

#include <cstdint>
#include <functional>

#include "madengine/node/node.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sm/sm.hpp"

namespace madengine::sim {
class Fabric;
}

namespace madengine::node {

struct NodeInternals {
  // Not null: attach to this fabric at node `sim_node` (transport.kind must
  // be "sim"; transport.generate/topology/sim_node are not read). It must
  // outlive the node; whoever owns it drives it (pump() advances it too).
  sim::Fabric* sim_fabric = nullptr;
  std::uint32_t sim_node = 0;
  // Applied last, after the node wired mcast, notices and replica restore.
  std::function<void(sm::SmConfig&)> sm;
  std::function<void(sa::SaServerConfig&)> sa;
};

}  // namespace madengine::node
