// Resolving a qos-policy's port groups (see policy_view.hpp).
#include "sm/qos/policy_view.hpp"

#include <algorithm>

namespace madengine::sm {

namespace {

std::vector<sa::ValueRange> to_ranges(const std::vector<QosRange>& r) {
  std::vector<sa::ValueRange> out;
  for (const QosRange& x : r) out.push_back({x.lo, x.hi});
  return out;
}

std::uint32_t index_of(const QosPolicy& p, const std::string& group) {
  for (std::uint32_t i = 0; i < p.groups.size(); ++i)
    if (p.groups[i].name == group) return i;
  return ~0u;  // checked by the parser: cannot happen
}

}  // namespace

std::shared_ptr<const sa::QosPolicyView> resolve_qos_policy(const QosPolicy& policy, const fabric::Fabric& f,
                                                            const PartitionPlan& partitions, std::uint64_t sm_port_guid) {
  auto v = std::make_shared<sa::QosPolicyView>();
  struct End {
    std::uint64_t guid;
    fabric::NodeKind kind;
  };
  std::vector<End> ends;
  for (const fabric::EndPort e : f.end_ports()) {
    const fabric::Node& n = f.nodes[e.node];
    ends.push_back({n.ports[e.port].guid != 0 ? n.ports[e.port].guid : n.node_guid, n.kind});
  }
  for (const QosPortGroupDef& g : policy.groups) {
    std::vector<std::uint64_t> guids;
    for (const End& e : ends) {
      bool in = in_ranges(g.port_guids, e.guid);
      const std::uint8_t t = g.node_types;
      in = in || (t & qos_node_type::kAll) != 0 || ((t & qos_node_type::kSelf) != 0 && e.guid == sm_port_guid) ||
           ((t & qos_node_type::kCa) != 0 && e.kind == fabric::NodeKind::kCa) ||
           ((t & qos_node_type::kSwitch) != 0 && e.kind == fabric::NodeKind::kSwitch) ||
           ((t & qos_node_type::kRouter) != 0 && e.kind == fabric::NodeKind::kRouter);
      for (const Partition& p : partitions.partitions) {
        if (in) break;
        const bool named = in_ranges(g.pkeys, p.pkey) ||
                           std::find(g.partitions.begin(), g.partitions.end(), p.name) != g.partitions.end();
        in = named && p.members.contains(e.guid);
      }
      if (in) guids.push_back(e.guid);
    }
    std::sort(guids.begin(), guids.end());
    v->groups.push_back(std::move(guids));
  }
  for (const QosLevelDef& l : policy.levels) {
    sa::QosLevelView x;
    x.name = l.name;
    x.sl_set = l.sl.has_value();
    x.sl = l.sl.value_or(0);
    x.mtu_set = l.mtu_limit.has_value();
    x.mtu_limit = l.mtu_limit.value_or(0);
    x.rate_set = l.rate_limit.has_value();
    x.rate_limit = l.rate_limit.value_or(0);
    x.life_set = l.packet_life.has_value();
    x.packet_life = l.packet_life.value_or(0);
    x.pkeys = to_ranges(l.pkeys);
    v->levels.push_back(std::move(x));
  }
  for (const QosMatchRuleDef& r : policy.rules) {
    sa::QosRuleView x;
    for (const auto& g : r.source) x.source.push_back(index_of(policy, g));
    for (const auto& g : r.destination) x.destination.push_back(index_of(policy, g));
    x.qos_class = to_ranges(r.qos_class);
    x.service_id = to_ranges(r.service_id);
    x.pkey = to_ranges(r.pkey);
    for (std::uint32_t i = 0; i < policy.levels.size(); ++i)
      if (policy.levels[i].name == r.level) x.level = i;
    v->rules.push_back(std::move(x));
  }
  v->default_level = static_cast<std::uint32_t>(policy.default_level);
  return v;
}

}  // namespace madengine::sm
