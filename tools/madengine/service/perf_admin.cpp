// The admin socket's fabric health commands (see admin.hpp): portstatus,
// errors, querylid, switchbalance, lidbalance. They read the current epoch
// and the performance manager's last round; none runs on a MAD core.
#include <fmt/format.h>

#include <map>

#include "madengine/wire/link_rate.hpp"
#include "perfmgr/perf_manager.hpp"
#include "service/admin.hpp"
#include "service/balance.hpp"
#include "service/port_states.hpp"

namespace madengine::service {

using nlohmann::json;

namespace {

json error(const std::string& what) { return json{{"ok", false}, {"error", what}}; }
std::string hex(std::uint64_t g) { return fmt::format("0x{:016x}", g); }

// The widest width in both masks (IBA LinkWidth codes).
std::uint8_t best_common_width(std::uint8_t a, std::uint8_t b) noexcept {
  const std::uint8_t both = a & b;
  for (const std::uint8_t w : {std::uint8_t{8}, std::uint8_t{4}, std::uint8_t{2}, std::uint8_t{16}, std::uint8_t{1}})
    if (both & w) return w;
  return 0;
}

const char* width_name(std::uint8_t w) noexcept {
  switch (w) {
    case 1: return "1x";
    case 2: return "4x";
    case 4: return "8x";
    case 8: return "12x";
    case 16: return "2x";
  }
  return "?";
}

json counters_json(const perfmgr::CounterSet& c, bool errors_only) {
  json j = json::object();
  for (std::size_t i = errors_only ? perfmgr::kFirstError : 0; i < perfmgr::kCounters; ++i)
    if (!errors_only || c[i] != 0) j[perfmgr::iba_name(static_cast<perfmgr::Counter>(i))] = c[i];
  return j;
}

bool guid_arg(const json& r, std::uint64_t& out, std::string& why) {
  out = 0;
  const auto it = r.find("guid");
  if (it == r.end()) return true;
  if (!it->is_string()) {
    why = "\"guid\" must be a string like \"0x0002c90200401234\"";
    return false;
  }
  try {
    std::size_t used = 0;
    const std::string s = it->get<std::string>();
    out = std::stoull(s, &used, 0);
    if (used == s.size()) return true;
  } catch (...) {
  }
  why = "\"guid\" is not a GUID";
  return false;
}

}  // namespace

json AdminCommands::portstatus() {
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  const perfmgr::NodeNameMap& names = node_.node_names();
  const PortStates pc = count_ports(epoch);
  json states = json::object();
  for (std::size_t i = 1; i < pc.by_state.size(); ++i) states[kPortStateNames[i]] = pc.by_state[i];
  std::map<std::string, std::uint64_t> by_rate;
  json reduced = json::array();
  for (node::NodeId n = 0; n < epoch.node_count(); ++n) {
    const node::FabricNode node = epoch.node(n);
    for (std::uint8_t p = 1; p <= node.num_ports; ++p) {
      const node::FabricPort port = epoch.port(n, p);
      if (!port.linked() || port.state < static_cast<std::uint8_t>(wire::PortState::kInit)) continue;
      const node::PortLink link = epoch.port_link(n, p);
      ++by_rate[fmt::format("{} {} Gb/s", width_name(link.width), link.data_mbps / 1000.0)];
      // A link trains to the widest width both ends enable (IBA 6.x): anything
      // narrower is a bad cable or lane, what portstatus exists to show.
      const std::uint8_t best = best_common_width(link.width_enabled, epoch.port_link(port.peer, port.peer_port).width_enabled);
      if (best != 0 && wire::width_lanes(link.width) < wire::width_lanes(best)) {
        const node::FabricNode peer = epoch.node(port.peer);
        reduced.push_back(json{{"guid", hex(node.node_guid)}, {"name", std::string(names.name(node.node_guid, node.description))},
                               {"port", p}, {"width", width_name(link.width)}, {"could_be", width_name(best)},
                               {"peer", std::string(names.name(peer.node_guid, peer.description))},
                               {"peer_port", port.peer_port}});
      }
    }
  }
  json rates = json::object();
  for (const auto& [k, v] : by_rate) rates[k] = v;
  return json{{"ok", true}, {"epoch", epoch.epoch()}, {"nodes", pc.nodes},  {"switches", pc.switches},
              {"linked", pc.linked}, {"states", states}, {"rates", rates}, {"reduced_width", reduced}};
}

json AdminCommands::errors() {
  perfmgr::PerfManager* pm = node_.perfmgr();
  if (pm == nullptr) return error("the performance manager is off ([perfmgr] enabled = true)");
  const auto table = pm->table();
  if (!table) return error("the performance manager has not completed a round yet");
  const perfmgr::NodeNameMap& names = node_.node_names();
  json ports = json::array();
  for (const perfmgr::PortPerf& p : table->ports) {
    if (!p.has_errors()) continue;
    json c = counters_json(p.raw, true);
    c.erase(perfmgr::iba_name(perfmgr::Counter::kXmitWait));  // congestion, not an error (ibqueryerrors leaves it out too)
    ports.push_back(json{{"guid", hex(p.node_guid)}, {"name", std::string(names.name(p.node_guid, p.description))},
                         {"port", p.port_num}, {"lid", p.lid}, {"counters", c},
                         {"peer", hex(p.peer_guid)}, {"peer_port", p.peer_port}});
  }
  return json{{"ok", true}, {"round", table->round}, {"ports_read", table->ports.size()}, {"ports", ports}};
}

json AdminCommands::querylid(const json& r) {
  const auto it = r.find("lid");
  if (it == r.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > wire::kUnicastLidMax)
    return error("querylid needs \"lid\": a unicast LID 1..0xbfff");
  const auto lid = static_cast<std::uint16_t>(it->get<std::int64_t>());
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  const std::optional<node::EndPort> e = epoch.end_port_by_lid(lid);
  if (!e) return error(fmt::format("LID {} is not assigned in epoch {}", lid, epoch.epoch()));
  const node::FabricNode n = epoch.node(e->node);
  const perfmgr::NodeNameMap& names = node_.node_names();
  const node::FabricPort port = epoch.port(e->node, e->port);
  const char* kinds[] = {"?", "CA", "switch", "router"};
  json reply{{"ok", true},
             {"epoch", epoch.epoch()},
             {"lid", lid},
             {"guid", hex(n.node_guid)},
             {"port_guid", hex(port.guid != 0 ? port.guid : n.node_guid)},
             {"name", std::string(names.name(n.node_guid, n.description))},
             {"description", n.description},
             {"type", kinds[static_cast<int>(n.kind) < 4 ? static_cast<int>(n.kind) : 0]},
             {"port", e->port},
             {"state", kPortStateNames[port.state < 5 ? port.state : 0]},
             {"lmc", n.lmc}};
  if (port.linked()) {
    const node::FabricNode peer = epoch.node(port.peer);
    reply["peer"] = json{{"guid", hex(peer.node_guid)}, {"name", std::string(names.name(peer.node_guid, peer.description))},
                         {"port", port.peer_port}};
  }
  // The counters of the port (a CA's) or of every port of the switch.
  if (perfmgr::PerfManager* pm = node_.perfmgr(); pm != nullptr)
    if (const auto table = pm->table()) {
      json ports = json::array();
      for (const perfmgr::PortPerf& p : table->ports)
        if (p.node_guid == n.node_guid && (n.is_switch() || p.port_num == e->port))
          ports.push_back(json{{"port", p.port_num}, {"extended", p.extended}, {"counters", counters_json(p.raw, false)},
                               {"xmit_bytes_per_s", p.xmit_bytes_per_s()}, {"rcv_bytes_per_s", p.rcv_bytes_per_s()}});
      reply["counters"] = ports;
    }
  return reply;
}

json AdminCommands::switchbalance(const json& r) {
  std::uint64_t guid = 0;
  std::string why;
  if (!guid_arg(r, guid, why)) return error(why);
  const bool verbose = r.value("verbose", false);
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  return json{{"ok", true}, {"epoch", epoch.epoch()}, {"switches", switch_balance(epoch, node_.node_names(), verbose, guid)}};
}

json AdminCommands::lidbalance(const json& r) {
  std::uint64_t guid = 0;
  std::string why;
  if (!guid_arg(r, guid, why)) return error(why);
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  return json{{"ok", true}, {"epoch", epoch.epoch()}, {"findings", lid_balance(epoch, node_.node_names(), guid)}};
}

}  // namespace madengine::service
