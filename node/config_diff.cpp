// The keys of NodeConfig by their TOML names, each with its value as text,
// so two configurations compare key by key (see config_diff.hpp). A key
// added to config.hpp belongs here too: tests/tools/config_test.cpp checks
// every key of config/madengine.toml is listed.
#include "node/config_diff.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "node/port_keys.hpp"

namespace madengine::node {

namespace {

using Text = std::string (*)(const NodeConfig&);

struct Key {
  std::string name;
  Text text;
};

template <typename T>
std::string text(const T& v) {
  return fmt::format("{}", v);
}

// OpenSM's QoS options, the general class and each port class.
template <QosClassSection SmSection::*kClass>
void add_qos_class(std::vector<Key>& keys, const std::string& prefix) {
  keys.push_back({prefix + "max_vls", [](const NodeConfig& c) { return text((c.sm.*kClass).max_vls); }});
  keys.push_back({prefix + "high_limit", [](const NodeConfig& c) { return text((c.sm.*kClass).high_limit); }});
  keys.push_back({prefix + "vlarb_high", [](const NodeConfig& c) { return (c.sm.*kClass).vlarb_high; }});
  keys.push_back({prefix + "vlarb_low", [](const NodeConfig& c) { return (c.sm.*kClass).vlarb_low; }});
  keys.push_back({prefix + "sl2vl", [](const NodeConfig& c) { return (c.sm.*kClass).sl2vl; }});
}

// The port settings, from the one list config.cpp reads too.
template <std::size_t I>
std::string port_text(const NodeConfig& c) {
  return text(unsigned{c.sm.ports.*kPortKeys[I].member});
}
template <std::size_t... I>
void add_port_keys(std::vector<Key>& keys, std::index_sequence<I...>) {
  (keys.push_back({std::string("sm.") + kPortKeys[I].name, &port_text<I>}), ...);
}

std::vector<Key> make_keys() {
  std::vector<Key> k = {
      {"engine.cores", [](const NodeConfig& c) { return text(c.engine.cores); }},
      {"engine.pin", [](const NodeConfig& c) { return text(c.engine.pin); }},
      {"engine.idle", [](const NodeConfig& c) { return c.engine.idle; }},
      {"engine.idle_spin_loops", [](const NodeConfig& c) { return text(c.engine.idle_spin_loops); }},
      {"engine.idle_spin_loops_min", [](const NodeConfig& c) { return text(c.engine.idle_spin_loops_min); }},
      {"transport.kind", [](const NodeConfig& c) { return std::string(to_string(c.transport.kind)); }},
      {"transport.ca", [](const NodeConfig& c) { return c.transport.ca; }},
      {"transport.port", [](const NodeConfig& c) { return text(c.transport.port); }},
      {"transport.topology", [](const NodeConfig& c) { return c.transport.topology; }},
      {"transport.generate", [](const NodeConfig& c) { return c.transport.generate; }},
      {"transport.seed", [](const NodeConfig& c) { return text(c.transport.seed); }},
      {"transport.sim_node", [](const NodeConfig& c) { return c.transport.sim_node; }},
      {"transport.sim_speed", [](const NodeConfig& c) { return text(c.transport.sim_speed); }},
      {"sm.priority", [](const NodeConfig& c) { return text(c.sm.priority); }},
      {"sm.sm_key", [](const NodeConfig& c) { return text(c.sm.sm_key); }},
      {"sm.subnet_prefix", [](const NodeConfig& c) { return text(c.sm.ports.subnet_prefix); }},
      {"sm.guid2lid", [](const NodeConfig& c) { return c.sm.guid2lid; }},
      {"sm.lmc", [](const NodeConfig& c) { return text(c.sm.lmc); }},
      {"sm.routing", [](const NodeConfig& c) { return c.sm.routing; }},
      {"sm.roots", [](const NodeConfig& c) { return fmt::format("{}", fmt::join(c.sm.roots, ",")); }},
      {"sm.sweep_interval_ms", [](const NodeConfig& c) { return text(c.sm.sweep_interval_ms); }},
      {"sm.local_port_check_ms", [](const NodeConfig& c) { return text(c.sm.local_port_check_ms); }},
      {"sm.standby_refresh_ms", [](const NodeConfig& c) { return text(c.sm.standby_refresh_ms); }},
      {"sm.smps_in_flight_max", [](const NodeConfig& c) { return text(c.sm.smps_in_flight_max); }},
      {"sm.smps_per_node_max", [](const NodeConfig& c) { return text(c.sm.smps_per_node_max); }},
      {"sm.transaction_timeout_ms", [](const NodeConfig& c) { return text(c.sm.transaction_timeout_ms); }},
      {"sm.transaction_retries", [](const NodeConfig& c) { return text(c.sm.transaction_retries); }},
      {"sm.subnet_timeout", [](const NodeConfig& c) { return text(unsigned{c.sm.ports.subnet_timeout}); }},
      {"sm.routing_threads", [](const NodeConfig& c) { return text(c.sm.routing_threads); }},
      {"sm.ha_poll_interval_ms", [](const NodeConfig& c) { return text(c.sm.ha_poll_interval_ms); }},
      {"sm.ha_poll_retries", [](const NodeConfig& c) { return text(c.sm.ha_poll_retries); }},
      {"sm.ha_replica_interval_ms", [](const NodeConfig& c) { return text(c.sm.ha_replica_interval_ms); }},
      {"sm.ha_replica_max_age_ms", [](const NodeConfig& c) { return text(c.sm.ha_replica_max_age_ms); }},
      {"sm.partition_config", [](const NodeConfig& c) { return c.sm.partition_config; }},
      {"sm.part_enforce", [](const NodeConfig& c) { return c.sm.part_enforce; }},
      {"sm.allow_both_pkeys", [](const NodeConfig& c) { return text(c.sm.allow_both_pkeys); }},
      {"sm.qos", [](const NodeConfig& c) { return text(c.sm.qos); }},
      {"sm.qos_policy_file", [](const NodeConfig& c) { return c.sm.qos_policy_file; }},
  };
  add_qos_class<&SmSection::qos_all>(k, "sm.qos_");
  add_qos_class<&SmSection::qos_ca>(k, "sm.qos_ca_");
  add_qos_class<&SmSection::qos_sw0>(k, "sm.qos_sw0_");
  add_qos_class<&SmSection::qos_swe>(k, "sm.qos_swe_");
  add_qos_class<&SmSection::qos_rtr>(k, "sm.qos_rtr_");
  const std::vector<Key> rest = {
      {"sm.m_key", [](const NodeConfig& c) { return text(c.sm.m_key); }},
      {"sm.m_key_lease_period", [](const NodeConfig& c) { return text(c.sm.m_key_lease_period); }},
      {"sm.m_key_protection_level", [](const NodeConfig& c) { return text(c.sm.m_key_protection_level); }},
      {"sm.guid2mkey", [](const NodeConfig& c) { return c.sm.guid2mkey; }},
      {"sm.consolidate_ipv6_snm_req", [](const NodeConfig& c) { return text(c.sm.consolidate_ipv6_snm_req); }},
      {"sa.queue_depth", [](const NodeConfig& c) { return text(c.sa.queue_depth); }},
      {"sa.requester_share_max", [](const NodeConfig& c) { return text(c.sa.requester_share_max); }},
      {"sa.journal", [](const NodeConfig& c) { return c.sa.journal; }},
      {"sa.journal_interval_ms", [](const NodeConfig& c) { return text(c.sa.journal_interval_ms); }},
      {"sa.journal_fresh_ms", [](const NodeConfig& c) { return text(c.sa.journal_fresh_ms); }},
      {"sa.epoch_restore", [](const NodeConfig& c) { return text(c.sa.epoch_restore); }},
      {"sa.epoch_fresh_ms", [](const NodeConfig& c) { return text(c.sa.epoch_fresh_ms); }},
      {"log.level", [](const NodeConfig& c) { return c.log.level; }},
      {"log.file", [](const NodeConfig& c) { return c.log.file; }},
  };
  k.insert(k.end(), rest.begin(), rest.end());
  add_port_keys(k, std::make_index_sequence<kPortKeys.size()>{});
  return k;
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = make_keys();
  return k;
}

}  // namespace

std::vector<std::string> config_keys() {
  std::vector<std::string> out;
  for (const Key& k : keys()) out.push_back(k.name);
  return out;
}

std::vector<std::string> changed_keys(const NodeConfig& before, const NodeConfig& after) {
  std::vector<std::string> out;
  for (const Key& k : keys())
    if (k.text(before) != k.text(after)) out.push_back(k.name);
  return out;
}

}  // namespace madengine::node
