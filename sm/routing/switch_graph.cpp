// Builds the routing engines' switch graph and up/down ranks from a Fabric.
#include "sm/routing/switch_graph.hpp"

#include <algorithm>
#include <deque>

namespace madengine::sm {

using fabric::NodeId;

SwitchGraph SwitchGraph::build(const fabric::Fabric& fabric) {
  SwitchGraph g;
  g.sw_of.assign(fabric.nodes.size(), kNoSwitch);
  for (NodeId n = 0; n < fabric.nodes.size(); ++n) {
    if (!fabric.nodes[n].is_switch()) continue;
    g.sw_of[n] = static_cast<SwIdx>(g.node_of.size());
    g.node_of.push_back(n);
  }
  g.links.resize(g.size());
  g.has_ca.assign(g.size(), false);
  for (SwIdx s = 0; s < g.size(); ++s) {
    const fabric::Node& node = fabric.nodes[g.node_of[s]];
    if (node.base_lid != 0) g.targets.push_back({node.base_lid, 1, s, 0});
    for (std::uint8_t p = 1; p <= node.num_ports(); ++p) {
      const fabric::Port& port = node.ports[p];
      if (!port.linked()) continue;
      const fabric::Node& peer = fabric.nodes[port.peer];
      if (peer.is_switch()) {
        g.links[s].push_back({p, g.sw_of[port.peer]});
      } else {
        g.has_ca[s] = true;
        const std::uint16_t lid =
            port.peer_port < peer.port_lids.size() ? peer.port_lids[port.peer_port] : 0;
        if (lid != 0)
          g.targets.push_back({lid, static_cast<std::uint8_t>(1u << peer.lmc), s, p});
      }
    }
  }
  std::sort(g.targets.begin(), g.targets.end(),
            [](const LidTarget& a, const LidTarget& b) { return a.base_lid < b.base_lid; });
  return g;
}

namespace {

// BFS distances over the switch graph from a set of sources.
std::vector<std::uint32_t> bfs_from(const SwitchGraph& g, const std::vector<SwIdx>& sources) {
  constexpr auto kInf = ~std::uint32_t{0};
  std::vector<std::uint32_t> dist(g.size(), kInf);
  std::deque<SwIdx> q;
  for (SwIdx s : sources) {
    dist[s] = 0;
    q.push_back(s);
  }
  while (!q.empty()) {
    const SwIdx s = q.front();
    q.pop_front();
    for (const SwitchLink& l : g.links[s])
      if (dist[l.peer] == kInf) {
        dist[l.peer] = dist[s] + 1;
        q.push_back(l.peer);
      }
  }
  return dist;
}

}  // namespace

Ranking rank_switches(const fabric::Fabric& fabric, const SwitchGraph& g,
                      const std::vector<std::uint64_t>& root_guids) {
  Ranking r;
  r.guid.resize(g.size());
  for (SwIdx s = 0; s < g.size(); ++s) r.guid[s] = fabric.nodes[g.node_of[s]].node_guid;
  for (std::uint64_t guid : root_guids)
    for (SwIdx s = 0; s < g.size(); ++s)
      if (r.guid[s] == guid) r.roots.push_back(s);
  if (root_guids.empty() && g.size() > 0) {
    // Roots are the switches farthest from any leaf (the spines of a fat
    // tree); with no leaves at all, the lowest GUID.
    std::vector<SwIdx> leaves;
    for (SwIdx s = 0; s < g.size(); ++s)
      if (g.has_ca[s]) leaves.push_back(s);
    if (leaves.empty()) {
      r.roots.push_back(static_cast<SwIdx>(std::min_element(r.guid.begin(), r.guid.end()) - r.guid.begin()));
    } else {
      const auto from_leaves = bfs_from(g, leaves);
      std::uint32_t far = 0;
      for (auto d : from_leaves)
        if (d != ~std::uint32_t{0}) far = std::max(far, d);
      for (SwIdx s = 0; s < g.size(); ++s)
        if (from_leaves[s] == far) r.roots.push_back(s);
    }
  }
  r.rank = bfs_from(g, r.roots);
  return r;
}

}  // namespace madengine::sm
