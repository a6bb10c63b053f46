// Re-discovery after link-state changes at known switches (trap 128, or a
// light sweep's PortStateChange): instead of walking the whole subnet again
// (about ten SMPs a node), read the PortInfo of those switches' ports and
// take down, in a copy of the last fabric, the links that went down. Only
// the common case is handled: links between switches went down and every
// node is still reachable (or nothing changed since the last sweep). A link
// that came up, a CA or a switch lost, a switch that does not answer or a
// port in another state returns the reason, and the caller walks the whole
// subnet.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/task.hpp"
#include "sm/discovery/discovery.hpp"

namespace madengine::sm {

struct Rediscovery {
  std::optional<DiscoveryResult> result;  // empty: walk the whole subnet
  std::string full_reason;                // why, when empty
  std::uint32_t links_down = 0;
};

// The fabric of the last publication (as programmed) as a discovery result
// to re-discover from: copied with its GUID index. At 13,000 nodes that
// is milliseconds of copying, which the SM does off its core.
std::unique_ptr<DiscoveryResult> discovery_from(const fabric::Fabric& last);

// `changed`: node GUIDs of the switches that reported a change. `last`
// (from discovery_from) is reached from the SM's port `local_port` of node
// `local_node`. `q` must be idle.
Task<Rediscovery> rediscover(SmpQueue& q, std::unique_ptr<DiscoveryResult> last, fabric::NodeId local_node,
                             std::uint8_t local_port, std::vector<std::uint64_t> changed, DiscoveryOptions opts);

// DR paths from the SM's port to every node it reaches over the links of
// `f` (breadth first, ports in order), as discovery would have found them:
// each node's dr_path, and each CA port's path in `ca_port_paths`. Returns
// the number of nodes reached.
std::size_t assign_dr_paths(fabric::Fabric& f, fabric::NodeId local_node, std::uint8_t local_port,
                            std::vector<std::vector<wire::DrPath>>& ca_port_paths);

}  // namespace madengine::sm
