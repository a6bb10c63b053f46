// Re-discovery after link-state changes (see rediscover.hpp). Two rounds of
// reads at most: each changed switch over the path the last sweep used, then
// the ones that did not answer over a path around the links at changed
// switches; then, after the links are taken down and the paths recomputed,
// the far ends that did not report.
#include "sm/discovery/rediscover.hpp"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_set>

#include "madengine/wire/codec.hpp"

namespace madengine::sm {

using fabric::kNoNode;
using fabric::NodeId;

namespace {

constexpr std::size_t kChangedSwitchesMax = 64;  // more changes at once: walk the whole subnet

// A link as (node, port) on one side, packed for sets.
std::uint64_t port_key(NodeId n, std::uint8_t p) noexcept { return (std::uint64_t{n} << 8) | p; }

// Breadth first from the SM's port over the links of `f`, skipping `banned`
// ports; the parent of each node reached and the port it was left by.
struct Tree {
  std::vector<NodeId> parent;
  std::vector<std::uint8_t> out_port;  // the parent's port toward the node
  std::vector<bool> seen;
};

Tree bfs(const fabric::Fabric& f, NodeId local_node, std::uint8_t local_port,
         const std::unordered_set<std::uint64_t>& banned) {
  Tree t{std::vector<NodeId>(f.nodes.size(), kNoNode), std::vector<std::uint8_t>(f.nodes.size(), 0),
         std::vector<bool>(f.nodes.size(), false)};
  std::vector<std::uint8_t> hops(f.nodes.size(), 0);
  std::deque<NodeId> next{local_node};
  t.seen[local_node] = true;
  while (!next.empty()) {
    const NodeId u = next.front();
    next.pop_front();
    const fabric::Node& n = f.nodes[u];
    if (hops[u] >= wire::kDrHopsMax) continue;
    // A CA forwards nothing: only the SM's own port leads on, as discovery explores.
    const std::uint8_t first = n.is_switch() ? 1 : local_port;
    const std::uint8_t last = n.is_switch() ? n.num_ports() : local_port;
    for (std::uint8_t p = first; p <= last && p <= n.num_ports(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || banned.contains(port_key(u, p))) continue;
      const NodeId v = port.peer;
      if (t.seen[v]) continue;
      t.seen[v] = true;
      t.parent[v] = u;
      t.out_port[v] = p;
      hops[v] = static_cast<std::uint8_t>(hops[u] + 1);
      if (f.nodes[v].is_switch()) next.push_back(v);
    }
  }
  return t;
}

wire::DrPath path_to(const Tree& t, NodeId v) {
  std::vector<std::uint8_t> ports;
  for (NodeId at = v; t.parent[at] != kNoNode; at = t.parent[at]) ports.push_back(t.out_port[at]);
  wire::DrPath path;
  for (auto it = ports.rbegin(); it != ports.rend(); ++it) path.push(*it);
  return path;
}

// One switch's reads: SwitchInfo (its PortStateChange bit cleared when set)
// and PortInfo of ports 1..N.
struct SwitchRead {
  NodeId id = kNoNode;
  wire::DrPath path;
  std::vector<std::optional<wire::PortInfo>> ports;
  bool failed = false;
  bool port_state_changed = false;  // its SwitchInfo.PortStateChange was set
};

void submit_reads(SmpQueue& q, std::vector<SwitchRead>& reads, const std::vector<std::size_t>& which,
                  DiscoveryOptions opts, std::uint64_t& smps) {
  for (const std::size_t i : which) {
    SwitchRead* r = &reads[i];
    r->failed = false;
    ++smps;
    q.submit(make_dr_request(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, r->path, opts.port_num, {}, opts.m_key),
             [&q, r, opts, &smps](const TxnResult& res) {
               const auto si = smp_response_ok(res) ? wire::decode<wire::SwitchInfo>(smp_data(res.response)) : std::nullopt;
               if (!si) {
                 r->failed = true;
                 return;
               }
               if (si->port_state_change() == 0) return;
               r->port_state_changed = true;
               if (!opts.clear_port_state_change) return;  // the SM clears it once it acts on the sweep
               wire::SwitchInfo clear = *si;
               clear.prepare_for_set(true);  // write 1 to clear (IBA 14.2.5.4)
               ++smps;
               q.submit(make_dr_request(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, r->path, opts.port_num,
                                        wire::as_bytes(clear), opts.m_key),
                        nullptr);
             });
    for (std::uint8_t p = 1; p < r->ports.size(); ++p) {
      ++smps;
      q.submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, wire::port_info_modifier(p, true), r->path,
                               opts.port_num, {}, opts.m_key),
               [r, p](const TxnResult& res) {
                 const auto pi = smp_response_ok(res) ? wire::decode<wire::PortInfo>(smp_data(res.response)) : std::nullopt;
                 if (pi) r->ports[p] = *pi;
                 else r->failed = true;
               });
    }
  }
}

std::string name_of(const fabric::Node& n) {
  return n.description.empty() ? fmt::format("{:#018x}", n.node_guid) : fmt::format("\"{}\"", n.description);
}

}  // namespace

std::size_t assign_dr_paths(fabric::Fabric& f, NodeId local_node, std::uint8_t local_port,
                            std::vector<std::vector<wire::DrPath>>& ca_port_paths) {
  const Tree t = bfs(f, local_node, local_port, {});
  ca_port_paths.assign(f.nodes.size(), {});
  for (NodeId i = 0; i < f.nodes.size(); ++i) ca_port_paths[i].resize(f.nodes[i].ports.size());
  std::size_t reached = 0;
  for (NodeId i = 0; i < f.nodes.size(); ++i) {
    if (!t.seen[i]) continue;
    ++reached;
    f.nodes[i].dr_path = path_to(t, i);
  }
  if (!f.nodes[local_node].is_switch()) ca_port_paths[local_node][local_port] = wire::DrPath{};
  // Each CA port by the first switch (in BFS order of its paths) that leads to it.
  for (NodeId i = 0; i < f.nodes.size(); ++i) {
    const fabric::Node& n = f.nodes[i];
    if (!t.seen[i] || !n.is_switch()) continue;
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || f.nodes[port.peer].is_switch() || port.peer == local_node) continue;
      wire::DrPath& ca = ca_port_paths[port.peer][port.peer_port];
      const wire::DrPath candidate = n.dr_path.extended(p);
      if (ca.hops == 0 || candidate.hops < ca.hops) ca = candidate;
    }
  }
  return reached;
}

std::unique_ptr<DiscoveryResult> discovery_from(const fabric::Fabric& last) {
  auto d = std::make_unique<DiscoveryResult>();
  d->fabric = last;
  d->by_guid.reserve(last.nodes.size());
  for (NodeId i = 0; i < last.nodes.size(); ++i) d->by_guid.emplace(last.nodes[i].node_guid, i);
  return d;
}

Task<Rediscovery> rediscover(SmpQueue& q, std::unique_ptr<DiscoveryResult> last, NodeId local_node,
                             std::uint8_t local_port, std::vector<std::uint64_t> changed, DiscoveryOptions opts) {
  Rediscovery out;
  std::unique_ptr<DiscoveryResult> d = std::move(last);
  fabric::Fabric& f = d->fabric;
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  if (changed.empty() || changed.size() > kChangedSwitchesMax) {
    out.full_reason = fmt::format("{} switches changed", changed.size());
    co_return out;
  }
  if (local_node >= f.nodes.size()) {
    out.full_reason = "no SM port in the last fabric";
    co_return out;
  }
  auto reads = std::make_unique<std::vector<SwitchRead>>();
  std::unordered_set<NodeId> changed_ids;
  for (const std::uint64_t guid : changed) {
    const auto it = d->by_guid.find(guid);
    if (it == d->by_guid.end() || !f.nodes[it->second].is_switch()) {
      out.full_reason = fmt::format("{:#018x} is not a switch of the last fabric", guid);
      co_return out;
    }
    const fabric::Node& n = f.nodes[it->second];
    changed_ids.insert(it->second);
    reads->push_back(SwitchRead{it->second, n.dr_path, std::vector<std::optional<wire::PortInfo>>(n.ports.size()), false});
  }
  // Both ends of a link that went down report it, so a path through
  // switches that reported nothing, entering the changed switch last, crosses
  // no such link. Without one, the path of the last sweep.
  {
    std::unordered_set<std::uint64_t> around;
    for (const NodeId s : changed_ids) {
      const fabric::Node& n = f.nodes[s];
      for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
        around.insert(port_key(s, p));
        if (n.ports[p].linked()) around.insert(port_key(n.ports[p].peer, n.ports[p].peer_port));
      }
    }
    const Tree t = bfs(f, local_node, local_port, around);
    for (SwitchRead& r : *reads) {
      const fabric::Node& n = f.nodes[r.id];
      std::optional<wire::DrPath> best;
      for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
        const fabric::Port& port = n.ports[p];
        if (!port.linked() || !t.seen[port.peer] || changed_ids.contains(port.peer)) continue;
        if (!f.nodes[port.peer].is_switch() && port.peer != local_node) continue;  // a CA forwards nothing
        const wire::DrPath via = path_to(t, port.peer).extended(port.peer_port);
        if (via.hops <= wire::kDrHopsMax && (!best || via.hops < best->hops)) best = via;
      }
      if (best) r.path = *best;
    }
  }

  // Round 1.
  std::vector<std::size_t> all(reads->size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  submit_reads(q, *reads, all, opts, d->smps);
  co_await q.drained();
  // Round 2: a switch whose path crossed a link that went down, around the
  // links round 1 saw down and every link on its path at a changed switch
  // that round 1 did not see up (one of them is the broken one).
  std::unordered_set<std::uint64_t> seen_down, seen_up;
  for (const SwitchRead& r : *reads) {
    if (r.failed) continue;
    for (std::uint8_t p = 1; p < r.ports.size(); ++p) {
      const fabric::Port& port = f.nodes[r.id].ports[p];
      if (!port.linked()) continue;
      auto& into = has_link(*r.ports[p]) ? seen_up : seen_down;
      into.insert(port_key(r.id, p));
      into.insert(port_key(port.peer, port.peer_port));
    }
  }
  std::vector<std::size_t> retry;
  for (std::size_t i = 0; i < reads->size(); ++i) {
    SwitchRead& r = (*reads)[i];
    if (!r.failed) continue;
    std::unordered_set<std::uint64_t> banned = seen_down;
    NodeId at = local_node;
    for (std::uint8_t h = 1; h <= r.path.hops && at != kNoNode; ++h) {
      const std::uint8_t p = r.path.ports[h];
      if (p >= f.nodes[at].ports.size()) break;
      const fabric::Port& port = f.nodes[at].ports[p];
      if (port.linked() && (changed_ids.contains(at) || changed_ids.contains(port.peer)) &&
          !seen_up.contains(port_key(at, p))) {
        banned.insert(port_key(at, p));
        banned.insert(port_key(port.peer, port.peer_port));
      }
      at = port.peer;
    }
    const Tree t = bfs(f, local_node, local_port, banned);
    if (banned.empty() || !t.seen[r.id]) {
      out.full_reason = fmt::format("switch {} does not answer", name_of(f.nodes[r.id]));
      co_return out;
    }
    r.path = path_to(t, r.id);
    std::fill(r.ports.begin(), r.ports.end(), std::nullopt);
    retry.push_back(i);
  }
  if (!retry.empty()) {
    submit_reads(q, *reads, retry, opts, d->smps);
    co_await q.drained();
    for (const std::size_t i : retry) {
      if ((*reads)[i].failed) {
        out.full_reason = fmt::format("switch {} does not answer", name_of(f.nodes[(*reads)[i].id]));
        co_return out;
      }
    }
  }

  // What the reads say: only links that went down are handled here.
  std::vector<std::pair<NodeId, std::uint8_t>> down;
  for (const SwitchRead& r : *reads) {
    fabric::Node& n = f.nodes[r.id];
    for (std::uint8_t p = 1; p < r.ports.size(); ++p) {
      const wire::PortInfo& pi = *r.ports[p];
      const fabric::Port& port = n.ports[p];
      const bool up = has_link(pi);
      if (port.linked() && !up) {
        if (!f.nodes[port.peer].is_switch()) {
          out.full_reason = fmt::format("the link to a CA at {} port {} went down", name_of(n), p);
          co_return out;
        }
        down.emplace_back(r.id, p);
      } else if (!port.linked() && up) {
        out.full_reason = fmt::format("a link came up at {} port {}", name_of(n), p);
        co_return out;
      } else if (port.linked() && pi.port_state() != port.state) {
        out.full_reason = fmt::format("{} port {} went from state {} to {}", name_of(n), p, port.state, pi.port_state());
        co_return out;
      }
      apply_port_info(n, p, pi);
    }
  }
  // No link down and every port as the last sweep left it: a change already
  // handled (a trap for a port our last sweep activated); the fabric stands.
  std::vector<std::pair<NodeId, std::uint8_t>> far_ends;  // ends of downed links no read covered
  for (const auto& [s, p] : down) {
    fabric::Port& here = f.nodes[s].ports[p];
    if (!here.linked()) continue;  // taken down from its other end already
    const NodeId peer = here.peer;
    const std::uint8_t peer_port = here.peer_port;
    fabric::Port& there = f.nodes[peer].ports[peer_port];
    here.peer = kNoNode;
    here.peer_port = 0;
    there.peer = kNoNode;
    there.peer_port = 0;
    ++out.links_down;
    if (!changed_ids.contains(peer)) far_ends.emplace_back(peer, peer_port);
  }
  const std::size_t reached = assign_dr_paths(f, local_node, local_port, d->ca_port_paths);
  if (reached != f.nodes.size()) {
    out.full_reason = fmt::format("{} nodes no longer reachable", f.nodes.size() - reached);
    co_return out;
  }
  // The far ends that did not report (yet): their PortInfo as it is now.
  auto far = std::make_unique<std::vector<std::optional<wire::PortInfo>>>(far_ends.size());
  for (std::size_t i = 0; i < far_ends.size(); ++i) {
    const auto [n, p] = far_ends[i];
    ++d->smps;
    q.submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, wire::port_info_modifier(p, true),
                             f.nodes[n].dr_path, opts.port_num, {}, opts.m_key),
             [slot = &(*far)[i]](const TxnResult& res) {
               if (smp_response_ok(res)) *slot = wire::decode<wire::PortInfo>(smp_data(res.response));
             });
  }
  co_await q.drained();
  for (std::size_t i = 0; i < far_ends.size(); ++i) {
    const auto [n, p] = far_ends[i];
    const auto& pi = (*far)[i];
    if (!pi || has_link(*pi)) {
      out.full_reason = fmt::format("{} port {} {}", name_of(f.nodes[n]), p, pi ? "still has a link" : "does not answer");
      co_return out;
    }
    apply_port_info(f.nodes[n], p, *pi);
  }
  d->local_node = local_node;
  d->local_port = local_port;
  for (const SwitchRead& r : *reads)
    if (r.port_state_changed) d->port_state_changed.push_back(r.id);
  out.result = std::move(*d);
  co_return out;
}

}  // namespace madengine::sm
