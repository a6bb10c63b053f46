// Builds the routing engines' switch graph and up/down ranks from a Fabric.
#include "sm/routing/switch_graph.hpp"

#include <algorithm>
#include <deque>

namespace madengine::sm {

using fabric::NodeId;

std::uint8_t data_vls_of_cap(std::uint8_t vl_cap) noexcept {
  switch (vl_cap) {
    case 1: return 1;
    case 2: return 2;
    case 3: return 4;
    case 4: return 8;
    case 5: return 15;
    default: return 0;
  }
}

SwitchGraph SwitchGraph::build(const fabric::Fabric& fabric) {
  SwitchGraph g;
  g.sw_of.assign(fabric.nodes.size(), kNoSwitch);
  for (NodeId n = 0; n < fabric.nodes.size(); ++n) {
    if (!fabric.nodes[n].is_switch()) continue;
    g.sw_of[n] = static_cast<SwIdx>(g.node_of.size());
    g.node_of.push_back(n);
  }
  const std::size_t n = g.size();
  g.link_begin.assign(n + 1, 0);
  g.has_ca.assign(n, false);
  g.ca_lids.assign(n, 0);
  g.guid.resize(n);
  std::uint8_t vls = 0xff;
  for (SwIdx s = 0; s < n; ++s) {
    const fabric::Node& node = fabric.nodes[g.node_of[s]];
    g.guid[s] = node.node_guid;
    g.max_ports = std::max(g.max_ports, node.num_ports());
    if (node.base_lid != 0) g.targets.push_back({node.base_lid, 1, s, 0, true});
    for (std::uint8_t p = 1; p <= node.num_ports(); ++p) {
      const fabric::Port& port = node.ports[p];
      if (!port.linked()) continue;
      if (const std::uint8_t v = data_vls_of_cap(port.vl_cap); v != 0) vls = std::min(vls, v);
      const fabric::Node& peer = fabric.nodes[port.peer];
      if (peer.is_switch()) {
        g.link.push_back({p, port.peer_port, g.sw_of[port.peer], kNoChannel});
        g.channel_from.push_back(s);
      } else {
        g.has_ca[s] = true;
        if (port.peer_port < peer.ports.size())
          if (const std::uint8_t v = data_vls_of_cap(peer.ports[port.peer_port].vl_cap); v != 0) vls = std::min(vls, v);
        const std::uint16_t lid = port.peer_port < peer.port_lids.size() ? peer.port_lids[port.peer_port] : 0;
        if (lid != 0) {
          const auto count = static_cast<std::uint8_t>(1u << peer.lmc);
          g.targets.push_back({lid, count, s, p, false});
          g.ca_lids[s] += count;
        }
      }
    }
    g.link_begin[s + 1] = static_cast<ChannelId>(g.link.size());
  }
  g.vls_min = vls == 0xff ? 0 : vls;
  // The reverse of each channel: the peer's link whose port is our peer_port.
  for (ChannelId c = 0; c < g.link.size(); ++c) {
    SwitchLink& l = g.link[c];
    for (ChannelId r = g.link_begin[l.peer]; r < g.link_begin[l.peer + 1]; ++r)
      if (g.link[r].port == l.peer_port) l.reverse = r;
  }
  g.port_channel.assign(n * (g.max_ports + 1u), kNoChannel);
  for (ChannelId c = 0; c < g.link.size(); ++c)
    g.port_channel[std::size_t{g.channel_from[c]} * (g.max_ports + 1u) + g.link[c].port] = c;
  std::sort(g.targets.begin(), g.targets.end(),
            [](const LidTarget& a, const LidTarget& b) { return a.base_lid < b.base_lid; });
  g.target_begin.assign(n + 1, 0);
  for (const LidTarget& t : g.targets) ++g.target_begin[t.sw + 1];
  for (std::size_t s = 0; s < n; ++s) g.target_begin[s + 1] += g.target_begin[s];
  g.targets_by_switch.resize(g.targets.size());
  std::vector<std::uint32_t> fill(g.target_begin.begin(), g.target_begin.end() - 1);
  for (std::uint32_t i = 0; i < g.targets.size(); ++i) g.targets_by_switch[fill[g.targets[i].sw]++] = i;
  std::vector<std::uint8_t> listed(n, 0);
  for (const LidTarget& t : g.targets)
    if (!listed[t.sw]) listed[t.sw] = 1, g.by_lid.push_back(t.sw);
  g.by_guid.resize(n);
  for (SwIdx s = 0; s < n; ++s) g.by_guid[s] = s;
  std::sort(g.by_guid.begin(), g.by_guid.end(), [&](SwIdx a, SwIdx b) { return g.guid[a] < g.guid[b]; });
  return g;
}

std::vector<std::uint32_t> switch_distances_from(const SwitchGraph& g, const std::vector<SwIdx>& sources) {
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
    for (const SwitchLink& l : g.links(s))
      if (dist[l.peer] == kInf) {
        dist[l.peer] = dist[s] + 1;
        q.push_back(l.peer);
      }
  }
  return dist;
}

Ranking rank_switches(const fabric::Fabric& fabric, const SwitchGraph& g,
                      const std::vector<std::uint64_t>& root_guids) {
  (void)fabric;
  Ranking r;
  r.guid = g.guid;
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
      const auto from_leaves = switch_distances_from(g, leaves);
      std::uint32_t far = 0;
      for (auto d : from_leaves)
        if (d != ~std::uint32_t{0}) far = std::max(far, d);
      for (SwIdx s = 0; s < g.size(); ++s)
        if (from_leaves[s] == far) r.roots.push_back(s);
    }
    // Roots linked to each other (every switch a leaf: a torus, a
    // dragonfly) would leave ranks that only GUIDs order, and switches
    // with no legal route: take the most central switch alone instead.
    std::vector<std::uint8_t> is_root(g.size(), 0);
    for (const SwIdx s : r.roots) is_root[s] = 1;
    bool adjacent = false;
    for (const SwIdx s : r.roots)
      for (const SwitchLink& l : g.links(s)) adjacent = adjacent || (is_root[l.peer] && l.peer != s);
    if (adjacent) {
      SwIdx best = r.roots.front();
      std::uint32_t best_ecc = ~0u;
      for (const SwIdx s : r.roots) {
        std::uint32_t ecc = 0;
        for (const std::uint32_t d : switch_distances_from(g, {s}))
          if (d != ~0u) ecc = std::max(ecc, d);
        if (ecc < best_ecc || (ecc == best_ecc && r.guid[s] < r.guid[best])) best_ecc = ecc, best = s;
      }
      r.roots.assign(1, best);
    }
  }
  r.rank = switch_distances_from(g, r.roots);
  return r;
}

}  // namespace madengine::sm
