// switchbalance and lidbalance over one epoch (see balance.hpp).
#include "service/balance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

#include "madengine/wire/smp/port_info.hpp"

namespace madengine::service {

using nlohmann::json;
using node::FabricNode;
using node::FabricPort;
using node::FabricView;
using node::NodeId;

namespace {

std::string hex(std::uint64_t g) { return fmt::format("0x{:016x}", g); }

bool healthy_link(const FabricPort& p) noexcept {
  return p.linked() && p.state >= static_cast<std::uint8_t>(wire::PortState::kArmed);
}

std::vector<FabricNode> nodes_of(const FabricView& v) {
  std::vector<FabricNode> out;
  out.reserve(v.node_count());
  for (NodeId n = 0; n < v.node_count(); ++n) out.push_back(v.node(n));
  return out;
}

// A switch's ports 0..N.
std::vector<FabricPort> ports_of(const FabricView& v, NodeId sw, const FabricNode& n) {
  std::vector<FabricPort> out;
  for (std::uint8_t p = 0; p <= n.num_ports; ++p) out.push_back(v.port(sw, p));
  return out;
}

// Every end-port LID (each LID of an LMC range) of a non-switch node.
std::vector<std::pair<NodeId, std::uint16_t>> ca_lids(const FabricView& v, const std::vector<FabricNode>& nodes) {
  std::vector<std::pair<NodeId, std::uint16_t>> out;
  for (const node::EndPort e : v.end_ports()) {
    const FabricNode& n = nodes[e.node];
    const std::uint16_t base = v.lid_of(e);
    if (n.is_switch() || base == 0) continue;
    for (unsigned i = 0; i < (1u << n.lmc); ++i) out.emplace_back(e.node, static_cast<std::uint16_t>(base + i));
  }
  return out;
}

}  // namespace

json switch_balance(const FabricView& v, const perfmgr::NodeNameMap& names, bool verbose, std::uint64_t guid) {
  const std::vector<FabricNode> nodes = nodes_of(v);
  const auto lids = ca_lids(v, nodes);
  json out = json::array();
  for (NodeId s = 0; s < nodes.size(); ++s) {
    const FabricNode& sw = nodes[s];
    if (!sw.is_switch() || (guid != 0 && sw.node_guid != guid)) continue;
    const std::vector<FabricPort> sw_ports = ports_of(v, s, sw);
    std::vector<std::uint32_t> count(sw_ports.size(), 0);
    for (const auto& [ca, lid] : lids) {
      const std::uint8_t port = v.lft_port(s, lid);
      if (port < count.size()) ++count[port];
    }
    json ports = json::array();
    std::uint32_t lo = ~0u, hi = 0;
    for (std::uint8_t p = 1; p <= sw.num_ports; ++p) {
      const FabricPort& port = sw_ports[p];
      // Ports to CAs carry one destination's LIDs: not a balancing choice.
      if (!healthy_link(port) || !nodes[port.peer].is_switch()) continue;
      lo = std::min(lo, count[p]);
      hi = std::max(hi, count[p]);
      ports.push_back(json{{"port", p}, {"lids", count[p]}});
    }
    const bool unbalanced = !ports.empty() && hi - lo > 1;
    if (!verbose && !unbalanced) continue;
    out.push_back(json{{"guid", hex(sw.node_guid)}, {"name", std::string(names.name(sw.node_guid, sw.description))},
                       {"unbalanced", unbalanced}, {"ports", ports}});
  }
  return out;
}

json lid_balance(const FabricView& v, const perfmgr::NodeNameMap& names, std::uint64_t guid) {
  const std::vector<FabricNode> nodes = nodes_of(v);
  json out = json::array();
  // By end node: its LIDs, so an LMC range's spread is judged as a whole.
  std::map<NodeId, std::vector<std::uint16_t>> lids_of;
  for (const auto& [ca, lid] : ca_lids(v, nodes)) lids_of[ca].push_back(lid);
  for (NodeId s = 0; s < nodes.size(); ++s) {
    const FabricNode& sw = nodes[s];
    if (!sw.is_switch() || (guid != 0 && sw.node_guid != guid)) continue;
    const std::vector<FabricPort> sw_ports = ports_of(v, s, sw);
    for (const auto& [ca, lids] : lids_of) {
      std::map<NodeId, std::uint32_t> by_next;
      std::map<std::uint8_t, std::uint32_t> by_port;
      for (const std::uint16_t lid : lids) {
        const std::uint8_t p = v.lft_port(s, lid);
        if (p == 0 || p > sw.num_ports || !healthy_link(sw_ports[p])) continue;
        ++by_next[sw_ports[p].peer];
        ++by_port[p];
      }
      if (by_next.empty()) continue;
      auto spread = [](const auto& m) {
        std::uint32_t lo = ~0u, hi = 0;
        for (const auto& [k, n] : m) {
          lo = std::min(lo, n);
          hi = std::max(hi, n);
        }
        return hi - lo;
      };
      const FabricNode& n = nodes[ca];
      const std::string sw_name(names.name(sw.node_guid, sw.description));
      const std::string ca_name(names.name(n.node_guid, n.description));
      if (spread(by_next) > 1) {
        json dests = json::array();
        for (const auto& [next, c] : by_next)
          dests.push_back(json{{"guid", hex(nodes[next].node_guid)},
                               {"name", std::string(names.name(nodes[next].node_guid, nodes[next].description))},
                               {"lids", c}});
        out.push_back(json{{"kind", "remote"}, {"switch", hex(sw.node_guid)}, {"switch_name", sw_name},
                           {"guid", hex(n.node_guid)}, {"name", ca_name}, {"dests", dests}});
      }
      if (spread(by_port) > 1) {
        json ports = json::array();
        for (const auto& [p, c] : by_port) ports.push_back(json{{"port", p}, {"lids", c}});
        out.push_back(json{{"kind", "port"}, {"switch", hex(sw.node_guid)}, {"switch_name", sw_name},
                           {"guid", hex(n.node_guid)}, {"name", ca_name}, {"ports", ports}});
      }
    }
  }
  return out;
}

}  // namespace madengine::service
