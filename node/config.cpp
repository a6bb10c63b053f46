// TOML -> NodeConfig with errors that name the line (see madengine/node/config.hpp).
#include "madengine/node/config.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <toml++/toml.h>

#include "node/perfmgr_keys.hpp"
#include "node/port_keys.hpp"
#include "node/qos_keys.hpp"
#include "node/routing_keys.hpp"
#include "node/toml_section.hpp"
#include "sm/qos/qos_options.hpp"
#include "sm/routing/routing.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::node {

std::vector<sm::RoutingAlgo> routing_chain(const SmSection& c) {
  std::vector<sm::RoutingAlgo> chain;
  std::string why;
  if (!sm::parse_routing_chain(c.routing, chain, &why))
    throw ConfigError("sm.routing must be an engine or a chain of them, tried in order (e.g. \"dfsssp,updn,minhop\"): " + why);
  return chain;
}

std::string routing_engine_names(std::string_view sep) { return sm::routing_engine_names(sep); }

const char* to_string(TransportKind k) noexcept { return k == TransportKind::kUmad ? "umad" : "sim"; }

bool parse_subnet_prefix(const std::string& text, std::uint64_t& out) noexcept {
  if (text.starts_with("0x") || text.starts_with("0X")) {
    try {
      std::size_t used = 0;
      const unsigned long long v = std::stoull(text, &used, 16);
      if (used != text.size()) return false;
      out = v;
      return true;
    } catch (...) {
      return false;
    }
  }
  std::string addr = text;
  if (const auto slash = text.find('/'); slash != std::string::npos) {
    if (text.substr(slash + 1) != "64") return false;  // a subnet prefix is the GID's upper 64 bits
    addr = text.substr(0, slash);
  }
  in6_addr a{};
  if (::inet_pton(AF_INET6, addr.c_str(), &a) != 1) return false;
  std::uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; ++i) hi = hi << 8 | a.s6_addr[i];
  for (int i = 8; i < 16; ++i) lo = lo << 8 | a.s6_addr[i];
  if (lo != 0) return false;  // an interface id is not part of a prefix
  out = hi;
  return true;
}

NodeConfig parse_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}: {}", name, e.source().begin.line, e.description()));
  }
  NodeConfig c;
  const toml::table empty;
  auto table = [&](const char* key) -> const toml::table& {
    const toml::node* n = root.get(key);
    if (!n) return empty;
    if (!n->is_table()) toml_fail(name, *n, fmt::format("[{}] must be a table", key));
    return *n->as_table();
  };
  {
    TomlSection s(name, table("engine"), "engine.", &c.given);
    s.get("cores", c.engine.cores, 1, 256);
    s.get("pin", c.engine.pin);
    s.get("idle", c.engine.idle);
    if (c.engine.idle != "block" && c.engine.idle != "spin")
      toml_fail(name, *root["engine"]["idle"].node(), "engine.idle must be block or spin");
    s.get("idle_spin_loops", c.engine.idle_spin_loops, 0, 1'000'000);
    s.get("idle_spin_loops_min", c.engine.idle_spin_loops_min, 0, 1'000'000);
    s.reject_unknown();
  }
  {
    TomlSection s(name, table("transport"), "transport.", &c.given);
    std::string kind = to_string(c.transport.kind);
    s.get("kind", kind);
    if (kind == "umad") c.transport.kind = TransportKind::kUmad;
    else if (kind == "sim") c.transport.kind = TransportKind::kSim;
    else toml_fail(name, *root["transport"]["kind"].node(), "transport.kind must be \"umad\" or \"sim\"");
    s.get("ca", c.transport.ca);
    s.get("port", c.transport.port, 0, 254);
    s.get("topology", c.transport.topology);
    s.get("generate", c.transport.generate);
    s.get("seed", c.transport.seed, 0);
    s.get("sim_node", c.transport.sim_node);
    s.get("sim_speed", c.transport.sim_speed, 0, 1'000'000);
    s.reject_unknown();
  }
  {
    TomlSection s(name, table("sm"), "sm.", &c.given);
    s.get("priority", c.sm.priority, 0, 15);
    s.u64("sm_key", c.sm.sm_key);
    // Given, it replaces NodeConfig's default (kept there alone).
    std::string prefix;
    s.get("subnet_prefix", prefix);
    if (const toml::node* n = root["sm"]["subnet_prefix"].node(); n != nullptr && !parse_subnet_prefix(prefix, c.sm.ports.subnet_prefix))
      toml_fail(name, *n,
                fmt::format("sm.subnet_prefix = \"{}\" is not a /64 prefix (\"fe80::/64\" or \"0xfe80000000000000\")", prefix));
    s.get("guid2lid", c.sm.guid2lid);
    s.get("lmc", c.sm.lmc, 0, 7);
    s.get("routing", c.sm.routing);
    std::vector<sm::RoutingAlgo> chain;
    try {
      chain = routing_chain(c.sm);
    } catch (const ConfigError& e) {
      toml_fail(name, *root["sm"]["routing"].node(), e.what());
    }
    s.guids("roots", c.sm.roots);
    s.get("sweep_interval_ms", c.sm.sweep_interval_ms, 100, 3'600'000);
    s.get("local_port_check_ms", c.sm.local_port_check_ms, 10, 60'000);
    s.get("standby_refresh_ms", c.sm.standby_refresh_ms, 1000, 86'400'000);
    s.get("smps_in_flight_max", c.sm.smps_in_flight_max, 1, 65536);
    s.get("smps_per_node_max", c.sm.smps_per_node_max, 1, 256);
    s.get("transaction_timeout_ms", c.sm.transaction_timeout_ms, 1, 60'000);
    s.get("transaction_retries", c.sm.transaction_retries, 0, 100);
    s.get("subnet_timeout", c.sm.ports.subnet_timeout, 0, 31);
    s.get("routing_threads", c.sm.routing_threads, 0, 256);
    s.get("ha_poll_interval_ms", c.sm.ha_poll_interval_ms, 100, 3'600'000);
    s.get("ha_poll_retries", c.sm.ha_poll_retries, 1, 100);
    s.get("ha_replica_interval_ms", c.sm.ha_replica_interval_ms, 10, 3'600'000);
    s.get("ha_replica_max_age_ms", c.sm.ha_replica_max_age_ms, 0, 86'400'000);
    s.get("partition_config", c.sm.partition_config);
    s.get("part_enforce", c.sm.part_enforce);
    if (c.sm.part_enforce != "both" && c.sm.part_enforce != "in" && c.sm.part_enforce != "out" && c.sm.part_enforce != "off")
      toml_fail(name, *root["sm"]["part_enforce"].node(), "sm.part_enforce must be both, in, out or off");
    s.get("allow_both_pkeys", c.sm.allow_both_pkeys);
    s.get("qos", c.sm.qos);
    s.get("qos_policy_file", c.sm.qos_policy_file);
    // OpenSM's names: qos_max_vls, qos_ca_max_vls, ... (keys must outlive the Section).
    static constexpr const char* kQosKeys[5][5] = {
        {"qos_max_vls", "qos_high_limit", "qos_vlarb_high", "qos_vlarb_low", "qos_sl2vl"},
        {"qos_ca_max_vls", "qos_ca_high_limit", "qos_ca_vlarb_high", "qos_ca_vlarb_low", "qos_ca_sl2vl"},
        {"qos_sw0_max_vls", "qos_sw0_high_limit", "qos_sw0_vlarb_high", "qos_sw0_vlarb_low", "qos_sw0_sl2vl"},
        {"qos_swe_max_vls", "qos_swe_high_limit", "qos_swe_vlarb_high", "qos_swe_vlarb_low", "qos_swe_sl2vl"},
        {"qos_rtr_max_vls", "qos_rtr_high_limit", "qos_rtr_vlarb_high", "qos_rtr_vlarb_low", "qos_rtr_sl2vl"}};
    QosClassSection* classes[5] = {&c.sm.qos_all, &c.sm.qos_ca, &c.sm.qos_sw0, &c.sm.qos_swe, &c.sm.qos_rtr};
    for (int i = 0; i < 5; ++i) {
      s.get(kQosKeys[i][0], classes[i]->max_vls, 0, 15);
      s.get(kQosKeys[i][1], classes[i]->high_limit, -1, 255);
      s.get(kQosKeys[i][2], classes[i]->vlarb_high);
      s.get(kQosKeys[i][3], classes[i]->vlarb_low);
      s.get(kQosKeys[i][4], classes[i]->sl2vl);
    }
    // The lists' syntax, checked here so an error names the line.
    std::string qos_error;
    const std::optional<sm::QosConfig> qos_tables = sm::build_qos_config(qos_options(c.sm), qos_error);
    if (!qos_tables) {
      const std::string key = qos_error.substr(0, qos_error.find(':'));
      const toml::node* n = root["sm"][key].node();
      if (n != nullptr) toml_fail(name, *n, "sm." + qos_error);
      throw ConfigError(fmt::format("{}: sm.{}", name, qos_error));
    }
    s.u64("m_key", c.sm.m_key);
    s.get("m_key_lease_period", c.sm.m_key_lease_period, 0, 65535);
    s.get("m_key_protection_level", c.sm.m_key_protection_level, 0, 3);
    s.get("guid2mkey", c.sm.guid2mkey);
    s.get("consolidate_ipv6_snm_req", c.sm.consolidate_ipv6_snm_req);
    sm::PortSettings& ps = c.sm.ports;
    for (const PortKey& k : kPortKeys) s.get(k.name, ps.*k.member, k.lo, k.hi);
    if (ps.force_link_width > 31 && ps.force_link_width != 255)
      toml_fail(name, *root["sm"]["force_link_width"].node(), "sm.force_link_width must be 0, a width mask 1..31, or 255");
    if (ps.force_link_speed > 7 && ps.force_link_speed != 15)
      toml_fail(name, *root["sm"]["force_link_speed"].node(), "sm.force_link_speed must be 0, a speed mask 1..7, or 15");
    if (ps.force_link_speed_ext > 15 && ps.force_link_speed_ext < 30)
      toml_fail(name, *root["sm"]["force_link_speed_ext"].node(),
           "sm.force_link_speed_ext must be 0, an extended speed mask 1..15, 30 or 31");
    // A layered routing's SLs must stay on distinct VLs under QoS's SL2VL.
    std::string why;
    if (c.sm.qos && std::any_of(chain.begin(), chain.end(), sm::may_layer) &&
        !sm::sl2vl_keeps_layers(*qos_tables, sm::data_vls_of_cap(ps.max_op_vls), why))
      throw ConfigError(fmt::format("{}: sm.{} (sm.routing = \"{}\")", name, why, c.sm.routing));
    s.reject_unknown();
  }
  {
    TomlSection s(name, table("sa"), "sa.", &c.given);
    s.get("queue_depth", c.sa.queue_depth, 1, 1 << 20);
    s.get("requester_share_max", c.sa.requester_share_max, 1, 1 << 20);
    s.get("journal", c.sa.journal);
    s.get("journal_interval_ms", c.sa.journal_interval_ms, 10, 3'600'000);
    s.get("journal_fresh_ms", c.sa.journal_fresh_ms, 0, 86'400'000);
    s.get("epoch_restore", c.sa.epoch_restore);
    s.get("epoch_fresh_ms", c.sa.epoch_fresh_ms, 0, 86'400'000);
    s.reject_unknown();
  }
  {
    TomlSection s(name, table("log"), "log.", &c.given);
    s.get("level", c.log.level);
    if (c.log.level != "trace" && c.log.level != "debug" && c.log.level != "info" && c.log.level != "warn" &&
        c.log.level != "error")
      toml_fail(name, *root["log"]["level"].node(), "log.level must be trace, debug, info, warn or error");
    s.get("file", c.log.file);
    s.reject_unknown();
  }
  for (auto&& [k, v] : root) {
    const std::string key(k.str());
    // [metrics] and [admin] are the daemon's (tools/madengine/service reads
    // and checks them): one file serves the daemon and an embedder alike.
    // [perfmgr] is read beside NodeConfig (parse_perfmgr_config).
    if (key != "engine" && key != "transport" && key != "sm" && key != "sa" && key != "log" && key != "metrics" &&
        key != "admin" && key != "perfmgr")
      toml_fail(name, v, fmt::format("unknown section [{}]", key));
  }
  return c;
}

perfmgr::PerfMgrConfig parse_perfmgr_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw ConfigError(fmt::format("{}:{}: {}", name, e.source().begin.line, e.description()));
  }
  perfmgr::PerfMgrConfig c;
  const toml::node* n = root.get("perfmgr");
  if (n == nullptr) return c;
  if (!n->is_table()) toml_fail(name, *n, "[perfmgr] must be a table");
  const toml::table& t = *n->as_table();
  TomlSection s(name, t, "perfmgr.");
  s.get("enabled", c.enabled);
  s.get("interval_ms", c.interval_ms, 100, 86'400'000);
  s.get("outstanding_max", c.outstanding_max, 1, 4096);
  s.get("timeout_ms", c.timeout_ms, 1, 60'000);
  s.get("retries", c.retries, 0, 10);
  s.get("sa_busy_qps", c.sa_busy_qps, 0, 100'000'000);
  s.get("node_name_map", c.node_name_map);
  s.get("metrics_ports_max", c.metrics_ports_max, 0, 1'000'000);
  s.known("thresholds");  // a sub-table, read below
  if (const toml::node* th = t.get("thresholds")) {
    if (!th->is_table()) toml_fail(name, *th, "perfmgr.thresholds must be a table (symbol_errors = 10, ...)");
    TomlSection ts(name, *th->as_table(), "perfmgr.thresholds.");
    perfmgr::ErrorThresholds& e = c.thresholds;
    ts.get("symbol_errors", e.symbol_errors, 0, 0xffff);
    ts.get("link_error_recovery", e.link_error_recovery, 0, 0xff);
    ts.get("link_downed", e.link_downed, 0, 0xff);
    ts.get("rcv_errors", e.rcv_errors, 0, 0xffff);
    ts.get("xmit_discards", e.xmit_discards, 0, 0xffff);
    ts.get("xmit_wait", e.xmit_wait, 0, 0xffffffffll);
    ts.reject_unknown();
  }
  s.reject_unknown();
  return c;
}

perfmgr::PerfMgrConfig load_perfmgr_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_perfmgr_config(ss.str(), path);
}

NodeConfig load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config(ss.str(), path);
}

sm::QosOptions qos_options(const SmSection& sm) {
  sm::QosOptions o;
  o.enabled = sm.qos;
  auto copy = [](const QosClassSection& from, sm::QosClassOptions& to) {
    to.max_vls = from.max_vls;
    to.high_limit = from.high_limit;
    to.vlarb_high = from.vlarb_high;
    to.vlarb_low = from.vlarb_low;
    to.sl2vl = from.sl2vl;
  };
  copy(sm.qos_all, o.all);
  copy(sm.qos_ca, o.ca);
  copy(sm.qos_sw0, o.sw0);
  copy(sm.qos_swe, o.swe);
  copy(sm.qos_rtr, o.rtr);
  return o;
}

void apply_state_defaults(NodeConfig& c, bool guid2lid_given, bool journal_given, bool guid2mkey_given) {
  if (c.transport.kind != TransportKind::kUmad) return;
  const std::string dir = kStateDir;
  if (!guid2lid_given && !c.given.contains("sm.guid2lid")) c.sm.guid2lid = dir + "/guid2lid";
  if (!journal_given && !c.given.contains("sa.journal")) c.sa.journal = dir + "/sa-state.journal";
  if (!guid2mkey_given && !c.given.contains("sm.guid2mkey")) c.sm.guid2mkey = dir + "/guid2mkey";
}

void validate(const NodeConfig& c) {
  if (c.transport.kind == TransportKind::kSim && c.transport.topology.empty() && c.transport.generate.empty())
    throw ConfigError("transport.kind = \"sim\" needs transport.topology or transport.generate");
  if (c.sm.smps_per_node_max > c.sm.smps_in_flight_max)
    throw ConfigError("sm.smps_per_node_max cannot exceed sm.smps_in_flight_max");
  if (c.sm.m_key == 0 && c.sm.m_key_protection_level != 0)
    throw ConfigError("sm.m_key_protection_level needs a non-zero sm.m_key (0 disables M_Key protection)");
}

}  // namespace madengine::node
