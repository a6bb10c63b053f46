// The difference between two epochs (see epoch_change.hpp).
#include "sa/epoch_change.hpp"

#include "sa/snapshot.hpp"

namespace madengine::sa {

namespace {

std::uint64_t end_port_guid(const fabric::Node& n, std::uint8_t port) noexcept {
  return n.ports[port].guid != 0 ? n.ports[port].guid : n.node_guid;
}

// Port `p` of `n` as a PortDelta side compares it; false: not part of the
// epoch (a CA port nobody reached).
bool port_seen(const fabric::Fabric& f, fabric::NodeId id, std::uint8_t p, std::uint16_t& lid, std::uint8_t& state) {
  const fabric::Node& n = f.nodes[id];
  if (p >= n.ports.size() || p > n.num_ports() || (!n.is_switch() && (p == 0 || !n.ports[p].linked()))) return false;
  lid = n.is_switch() ? (p == 0 ? n.base_lid : std::uint16_t{0}) : f.lid_of({id, p});
  state = n.ports[p].state;
  return true;
}

// Ports of the same node (by GUID) in both epochs whose LID or state
// differ, and those only one epoch has: `before`'s nodes first, then the
// nodes only `after` has, each in fabric order. One hash lookup a node.
void port_deltas(const Snapshot& before, const Snapshot& after, std::vector<PortDelta>& out) {
  const fabric::Fabric& fb = before.fabric;
  const fabric::Fabric& fa = after.fabric;
  for (fabric::NodeId b = 0; b < fb.nodes.size(); ++b) {
    const fabric::Node& nb = fb.nodes[b];
    const auto it = after.by_node_guid.find(nb.node_guid);
    const fabric::NodeId a = it != after.by_node_guid.end() ? it->second : fabric::kNoNode;
    const std::size_t ports = std::max(nb.ports.size(), a != fabric::kNoNode ? fa.nodes[a].ports.size() : 0);
    for (std::size_t p = 0; p < ports && p <= 0xff; ++p) {
      const auto port = static_cast<std::uint8_t>(p);
      PortDelta d{.node_guid = nb.node_guid, .port_num = port, .is_switch = nb.is_switch()};
      const bool was = port_seen(fb, b, port, d.old_lid, d.old_state);
      const bool is = a != fabric::kNoNode && port_seen(fa, a, port, d.new_lid, d.new_state);
      if (!was && !is) continue;
      if (was && is && d.old_lid == d.new_lid && d.old_state == d.new_state) continue;
      const fabric::Node& any = is ? fa.nodes[a] : nb;
      d.is_switch = any.is_switch();
      d.port_guid = any.ports[port].guid;
      out.push_back(d);
    }
  }
  for (fabric::NodeId a = 0; a < fa.nodes.size(); ++a) {
    const fabric::Node& na = fa.nodes[a];
    if (before.by_node_guid.contains(na.node_guid)) continue;
    for (std::size_t p = 0; p < na.ports.size() && p <= 0xff; ++p) {
      const auto port = static_cast<std::uint8_t>(p);
      PortDelta d{.node_guid = na.node_guid, .port_guid = na.ports[p].guid, .port_num = port, .is_switch = na.is_switch()};
      if (port_seen(fa, a, port, d.new_lid, d.new_state)) out.push_back(d);
    }
  }
}

wire::Notice gid_trap(const Snapshot& s, std::uint16_t number, std::uint64_t guid) {
  wire::Notice n = wire::make_generic_notice(wire::notice_type::kSubnetManagement, wire::notice_producer::kClassManager,
                                             number, s.sm.lid);
  wire::NoticeDetailsGid d{};
  d.gid = {wire::be64::from(s.subnet_prefix), wire::be64::from(guid)};
  n.set_details(d);
  n.issuer_gid = {wire::be64::from(s.subnet_prefix), wire::be64::from(s.sm.port_guid)};
  return n;
}

}  // namespace

EpochChange diff_epochs(const Snapshot* before, const Snapshot& after) {
  EpochChange c;
  c.epoch = after.epoch;
  if (before == nullptr) return c;
  c.from_epoch = before->epoch;
  c.compared = true;
  for (const fabric::EndPort e : after.fabric.end_ports()) {
    const std::uint64_t guid = end_port_guid(after.fabric.nodes[e.node], e.port);
    if (!before->by_port_guid.contains(guid)) c.gained.push_back(guid);
  }
  for (const fabric::EndPort e : before->fabric.end_ports()) {
    const std::uint64_t guid = end_port_guid(before->fabric.nodes[e.node], e.port);
    if (!after.by_port_guid.contains(guid)) c.lost.push_back(guid);
  }
  c.gid_traps.reserve(c.gained.size() + c.lost.size());
  for (const std::uint64_t g : c.gained) c.gid_traps.push_back(gid_trap(after, wire::trap::kGidInService, g));
  for (const std::uint64_t g : c.lost) c.gid_traps.push_back(gid_trap(after, wire::trap::kGidOutOfService, g));
  port_deltas(*before, after, c.ports);
  return c;
}

PreparedChange prepare_change(const std::shared_ptr<const Snapshot>& base, const Snapshot& after) {
  PreparedChange p;
  p.base = base;
  p.change = diff_epochs(base.get(), after);
  p.computed = true;
  return p;
}

}  // namespace madengine::sa
