// Multicast spanning trees and MFT blocks (see mcast.hpp).
#include "sm/mcast/mcast.hpp"

#include <deque>
#include <map>
#include <unordered_map>

namespace madengine::sm {

using fabric::kNoNode;
using fabric::NodeId;

namespace {

void add_port(std::map<NodeId, SwitchMft>& out, NodeId sw, std::uint16_t mlid, std::uint8_t port) {
  const MftKey key{wire::mft_block_of(mlid), static_cast<std::uint8_t>(port / wire::kMftPortsPerPosition)};
  wire::MftBlock& blk = out[sw][key];  // value-initialised: all masks 0
  const std::size_t i = wire::mft_index_of(mlid);
  blk.set_mask(i, static_cast<std::uint16_t>(blk.mask(i) | (1u << (port % wire::kMftPortsPerPosition))));
}

}  // namespace

std::map<NodeId, SwitchMft> compute_mfts(const fabric::Fabric& f, const std::vector<sa::McGroup>& groups) {
  std::unordered_map<std::uint64_t, fabric::EndPort> by_guid;
  for (const fabric::EndPort e : f.end_ports()) {
    const fabric::Node& n = f.nodes[e.node];
    by_guid.emplace(n.ports[e.port].guid != 0 ? n.ports[e.port].guid : n.node_guid, e);
  }
  std::map<NodeId, SwitchMft> out;
  std::vector<NodeId> parent(f.nodes.size());
  std::vector<std::uint8_t> parent_port(f.nodes.size()), up_port(f.nodes.size());
  std::vector<char> seen(f.nodes.size()), on_tree(f.nodes.size());
  // One tree per MLID: groups that share one (consolidated solicited-node
  // groups) forward to all their members, and two trees on one MLID could
  // make a loop.
  std::map<std::uint16_t, sa::McGroup> by_mlid;
  for (const sa::McGroup& g : groups) {
    sa::McGroup& m = by_mlid[g.mlid];
    m.mlid = g.mlid;
    m.member_port_guids.insert(m.member_port_guids.end(), g.member_port_guids.begin(), g.member_port_guids.end());
  }
  for (const auto& entry : by_mlid) {
    const sa::McGroup& g = entry.second;
    if (g.mlid < wire::kMulticastLidBase || g.mlid == 0xffff) continue;
    // Members as (switch, port toward the member); a switch member is its port 0.
    std::vector<std::pair<NodeId, std::uint8_t>> attach;
    for (const std::uint64_t guid : g.member_port_guids) {
      const auto it = by_guid.find(guid);
      if (it == by_guid.end()) continue;
      const fabric::Node& n = f.nodes[it->second.node];
      if (n.is_switch()) {
        attach.emplace_back(it->second.node, 0);
      } else {
        const fabric::Port& p = n.ports[it->second.port];
        if (p.linked() && f.nodes[p.peer].is_switch()) attach.emplace_back(p.peer, p.peer_port);
      }
    }
    if (attach.empty()) continue;
    std::fill(seen.begin(), seen.end(), 0);
    std::fill(on_tree.begin(), on_tree.end(), 0);
    const NodeId root = attach.front().first;
    std::deque<NodeId> bfs{root};
    seen[root] = 1;
    parent[root] = kNoNode;
    while (!bfs.empty()) {
      const NodeId s = bfs.front();
      bfs.pop_front();
      const fabric::Node& n = f.nodes[s];
      for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
        const fabric::Port& port = n.ports[p];
        if (!port.linked() || !f.nodes[port.peer].is_switch() || seen[port.peer]) continue;
        seen[port.peer] = 1;
        parent[port.peer] = s;
        parent_port[port.peer] = p;          // parent's port toward the child
        up_port[port.peer] = port.peer_port; // child's port toward the parent
        bfs.push_back(port.peer);
      }
    }
    for (const auto& [sw, port] : attach) {
      if (!seen[sw]) continue;
      add_port(out, sw, g.mlid, port);
      // Walk to the root, adding both ends of each tree edge once.
      for (NodeId s = sw; s != root && !on_tree[s]; s = parent[s]) {
        on_tree[s] = 1;
        add_port(out, s, g.mlid, up_port[s]);
        add_port(out, parent[s], g.mlid, parent_port[s]);
      }
    }
  }
  return out;
}

}  // namespace madengine::sm
