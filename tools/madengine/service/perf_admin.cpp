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

// The epoch's own LFTs by switch (what the dump and the SA read).
LftPortFn lfts_of(const node::Publication& s) {
  auto by_node = std::make_shared<std::vector<const fabric::Lft*>>(s.fabric.nodes.size(), nullptr);
  for (const fabric::Lft& l : s.lfts)
    if (l.node < by_node->size()) (*by_node)[l.node] = &l;
  return [by_node](fabric::NodeId n, std::uint16_t lid) -> std::uint8_t {
    const fabric::Lft* l = n < by_node->size() ? (*by_node)[n] : nullptr;
    return l != nullptr && lid < l->ports.size() ? l->ports[lid] : fabric::kLftNoRoute;
  };
}

}  // namespace

json AdminCommands::portstatus() {
  const auto snap = node_.published();
  if (!snap) return error("no epoch published yet (the subnet is not up)");
  const fabric::Fabric& f = snap->fabric;
  const perfmgr::NodeNameMap& names = node_.node_names();
  const PortStates pc = count_ports(*snap);
  json states = json::object();
  for (std::size_t i = 1; i < pc.by_state.size(); ++i) states[kPortStateNames[i]] = pc.by_state[i];
  std::map<std::string, std::uint64_t> by_rate;
  json reduced = json::array();
  for (const fabric::Node& n : f.nodes) {
    const wire::PortInfo& caps = n.is_switch() ? n.ports[0].info : n.ports[n.num_ports() > 0 ? 1 : 0].info;
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || port.state < static_cast<std::uint8_t>(wire::PortState::kInit)) continue;
      const wire::PortInfo& pi = port.info;
      const std::uint32_t mbps = wire::link_mbps(pi.link_width_active, wire::link_speed_of(pi, n.is_switch() ? caps : pi));
      ++by_rate[fmt::format("{} {} Gb/s", width_name(pi.link_width_active), mbps / 1000.0)];
      const fabric::Port& peer = f.nodes[port.peer].ports[port.peer_port];
      // A link trains to the widest width both ends enable (IBA 6.x): anything
      // narrower is a bad cable or lane, what portstatus exists to show.
      const auto enabled = [](const wire::PortInfo& i) -> std::uint8_t {
        return i.link_width_enabled == 0xff ? i.link_width_supported : i.link_width_enabled;
      };
      const std::uint8_t best = best_common_width(enabled(pi), enabled(peer.info));
      if (best != 0 && wire::width_lanes(pi.link_width_active) < wire::width_lanes(best))
        reduced.push_back(json{{"guid", hex(n.node_guid)}, {"name", std::string(names.name(n.node_guid, n.description))},
                               {"port", p}, {"width", width_name(pi.link_width_active)}, {"could_be", width_name(best)},
                               {"peer", std::string(names.name(f.nodes[port.peer].node_guid, f.nodes[port.peer].description))},
                               {"peer_port", port.peer_port}});
    }
  }
  json rates = json::object();
  for (const auto& [k, v] : by_rate) rates[k] = v;
  return json{{"ok", true}, {"epoch", snap->epoch}, {"nodes", pc.nodes},  {"switches", pc.switches},
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
  if (it == r.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > fabric::kLidUnicastMax)
    return error("querylid needs \"lid\": a unicast LID 1..0xbfff");
  const auto lid = static_cast<std::uint16_t>(it->get<std::int64_t>());
  const auto snap = node_.published();
  if (!snap) return error("no epoch published yet (the subnet is not up)");
  const fabric::EndPort* e = snap->end_port_by_lid(lid);
  if (e == nullptr) return error(fmt::format("LID {} is not assigned in epoch {}", lid, snap->epoch));
  const fabric::Fabric& f = snap->fabric;
  const fabric::Node& n = f.nodes[e->node];
  const perfmgr::NodeNameMap& names = node_.node_names();
  const fabric::Port& port = n.ports[e->port];
  const char* kinds[] = {"?", "CA", "switch", "router"};
  json reply{{"ok", true},
             {"epoch", snap->epoch},
             {"lid", lid},
             {"guid", hex(n.node_guid)},
             {"port_guid", hex(port.guid != 0 ? port.guid : n.node_guid)},
             {"name", std::string(names.name(n.node_guid, n.description))},
             {"description", n.description},
             {"type", kinds[static_cast<int>(n.kind) < 4 ? static_cast<int>(n.kind) : 0]},
             {"port", e->port},
             {"state", kPortStateNames[port.state < 5 ? port.state : 0]},
             {"lmc", n.lmc}};
  if (port.linked())
    reply["peer"] = json{{"guid", hex(f.nodes[port.peer].node_guid)},
                         {"name", std::string(names.name(f.nodes[port.peer].node_guid, f.nodes[port.peer].description))},
                         {"port", port.peer_port}};
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
  const auto snap = node_.published();
  if (!snap) return error("no epoch published yet (the subnet is not up)");
  const LftPortFn lft = lfts_of(*snap);
  return json{{"ok", true}, {"epoch", snap->epoch}, {"switches", switch_balance(*snap, lft, node_.node_names(), verbose, guid)}};
}

json AdminCommands::lidbalance(const json& r) {
  std::uint64_t guid = 0;
  std::string why;
  if (!guid_arg(r, guid, why)) return error(why);
  const auto snap = node_.published();
  if (!snap) return error("no epoch published yet (the subnet is not up)");
  const LftPortFn lft = lfts_of(*snap);
  return json{{"ok", true}, {"epoch", snap->epoch}, {"findings", lid_balance(*snap, lft, node_.node_names(), guid)}};
}

}  // namespace madengine::service
