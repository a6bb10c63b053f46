// Snapshot indexes (see snapshot.hpp).
#include "sa/snapshot.hpp"

namespace madengine::sa {

void Snapshot::index() {
  by_lid.assign(top_lid + 1u, fabric::EndPort{});
  by_port_guid.clear();
  by_node_guid.clear();
  for (fabric::NodeId n = 0; n < fabric.nodes.size(); ++n) by_node_guid.emplace(fabric.nodes[n].node_guid, n);
  for (const fabric::EndPort e : fabric.end_ports()) {
    const fabric::Node& node = fabric.nodes[e.node];
    const std::uint64_t guid = node.ports[e.port].guid != 0 ? node.ports[e.port].guid : node.node_guid;
    by_port_guid.emplace(guid, e);
    const std::uint16_t base = fabric.lid_of(e);
    const unsigned count = node.is_switch() ? 1u : 1u << node.lmc;
    for (unsigned i = 0; i < count && base != 0 && base + i < by_lid.size(); ++i) by_lid[base + i] = e;
  }
}

}  // namespace madengine::sa
