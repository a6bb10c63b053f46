// switchbalance and lidbalance over one epoch (see balance.hpp).
#include "service/balance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

namespace madengine::service {

using nlohmann::json;

namespace {

std::string hex(std::uint64_t g) { return fmt::format("0x{:016x}", g); }

bool healthy_link(const fabric::Port& p) noexcept {
  return p.linked() && p.state >= static_cast<std::uint8_t>(wire::PortState::kArmed);
}

// Every end-port LID (each LID of an LMC range) of a non-switch node.
template <typename Fn>
void for_each_ca_lid(const fabric::Fabric& f, Fn&& fn) {
  for (fabric::NodeId id = 0; id < f.nodes.size(); ++id) {
    const fabric::Node& n = f.nodes[id];
    if (n.is_switch()) continue;
    for (std::uint8_t p = 1; p <= n.num_ports() && p < n.port_lids.size(); ++p) {
      const std::uint16_t base = n.port_lids[p];
      if (base == 0) continue;
      for (unsigned i = 0; i < (1u << n.lmc); ++i) fn(id, p, static_cast<std::uint16_t>(base + i));
    }
  }
}

}  // namespace

json switch_balance(const node::Publication& snap, const LftPortFn& lft, const perfmgr::NodeNameMap& names, bool verbose,
                    std::uint64_t guid) {
  const fabric::Fabric& f = snap.fabric;
  json out = json::array();
  for (fabric::NodeId s = 0; s < f.nodes.size(); ++s) {
    const fabric::Node& sw = f.nodes[s];
    if (!sw.is_switch() || (guid != 0 && sw.node_guid != guid)) continue;
    std::vector<std::uint32_t> count(sw.ports.size(), 0);
    for_each_ca_lid(f, [&](fabric::NodeId, std::uint8_t, std::uint16_t lid) {
      const std::uint8_t port = lft(s, lid);
      if (port < count.size()) ++count[port];
    });
    json ports = json::array();
    std::uint32_t lo = ~0u, hi = 0;
    for (std::uint8_t p = 1; p <= sw.num_ports(); ++p) {
      const fabric::Port& port = sw.ports[p];
      // Ports to CAs carry one destination's LIDs: not a balancing choice.
      if (!healthy_link(port) || !f.nodes[port.peer].is_switch()) continue;
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

json lid_balance(const node::Publication& snap, const LftPortFn& lft, const perfmgr::NodeNameMap& names, std::uint64_t guid) {
  const fabric::Fabric& f = snap.fabric;
  json out = json::array();
  // By end node: its LIDs, so an LMC range's spread is judged as a whole.
  std::map<fabric::NodeId, std::vector<std::uint16_t>> lids_of;
  for_each_ca_lid(f, [&](fabric::NodeId n, std::uint8_t, std::uint16_t lid) { lids_of[n].push_back(lid); });
  for (fabric::NodeId s = 0; s < f.nodes.size(); ++s) {
    const fabric::Node& sw = f.nodes[s];
    if (!sw.is_switch() || (guid != 0 && sw.node_guid != guid)) continue;
    for (const auto& [ca, lids] : lids_of) {
      std::map<fabric::NodeId, std::uint32_t> by_next;
      std::map<std::uint8_t, std::uint32_t> by_port;
      for (const std::uint16_t lid : lids) {
        const std::uint8_t p = lft(s, lid);
        if (p == 0 || p > sw.num_ports() || !healthy_link(sw.ports[p])) continue;
        ++by_next[sw.ports[p].peer];
        ++by_port[p];
      }
      if (by_next.empty()) continue;
      auto spread = [](const auto& m) {
        std::uint32_t lo = ~0u, hi = 0;
        for (const auto& [k, v] : m) {
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        return hi - lo;
      };
      const fabric::Node& n = f.nodes[ca];
      const std::string sw_name(names.name(sw.node_guid, sw.description));
      const std::string ca_name(names.name(n.node_guid, n.description));
      if (spread(by_next) > 1) {
        json dests = json::array();
        for (const auto& [next, c] : by_next)
          dests.push_back(json{{"guid", hex(f.nodes[next].node_guid)},
                               {"name", std::string(names.name(f.nodes[next].node_guid, f.nodes[next].description))},
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
