// The daemon's configuration: defaults, every section parsed, bad input
// rejected with a message naming the line, OpenSM's options file converted,
// and the key-by-key comparison a reload makes.
#include "madengine/node/config.hpp"
#include "node/perfmgr_keys.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "node/config_diff.hpp"
#include "node/routing_keys.hpp"

namespace madengine::node {
namespace {

TEST(Config, EmptyFileGivesDefaults) {
  const NodeConfig c = parse_config("", "empty.toml");
  EXPECT_EQ(c.engine.cores, 2u);
  EXPECT_EQ(c.engine.idle, "block");
  EXPECT_EQ(c.transport.kind, TransportKind::kUmad);
  EXPECT_EQ(c.sm.sm_key, 1u);
  EXPECT_EQ(c.sm.ports.subnet_prefix, 0xfe80000000000000u);
  EXPECT_EQ(c.sm.routing, "minhop");
  EXPECT_NO_THROW(validate(c));
}

TEST(Config, EverySectionIsRead) {
  const NodeConfig c = parse_config(R"(
[engine]
cores = 4
pin = false
idle = "spin"
[transport]
kind = "umad"
ca = "mlx5_0"
port = 1
[sm]
priority = 3
sm_key = 0x1234
guid2lid = "/tmp/g2l"
lmc = 2
routing = "updn"
roots = ["0x0002c90300001234", "0x10"]
sweep_interval_ms = 100
[sa]
queue_depth = 64
[log]
level = "debug"
)",
                                "full.toml");
  EXPECT_EQ(c.engine.cores, 4u);
  EXPECT_FALSE(c.engine.pin);
  EXPECT_EQ(c.engine.idle, "spin");
  EXPECT_EQ(c.transport.kind, TransportKind::kUmad);
  EXPECT_EQ(c.transport.ca, "mlx5_0");
  EXPECT_EQ(c.sm.priority, 3u);
  EXPECT_EQ(c.sm.sm_key, 0x1234u);
  EXPECT_EQ(c.sm.lmc, 2u);
  EXPECT_EQ(c.sm.routing, "updn");
  ASSERT_EQ(c.sm.roots.size(), 2u);
  EXPECT_EQ(c.sm.roots[0], 0x0002c90300001234u);
  EXPECT_EQ(c.sa.queue_depth, 64u);
  EXPECT_EQ(c.log.level, "debug");
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    parse_config(text, "bad.toml");
    FAIL() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Config, BadInputNamesTheLine) {
  expect_error("[engine]\ncores = 0\n", "bad.toml:2: engine.cores = 0 is outside 1..256");
  expect_error("[engine]\n\ncorez = 2\n", "bad.toml:3: unknown key engine.corez");
  expect_error("[transport]\nkind = \"verbs\"\n", "bad.toml:2: transport.kind must be");
  expect_error("[engine]\nidle = \"nap\"\n", "bad.toml:2: engine.idle must be block or spin");
  expect_error("[sm]\nrouting = \"lash\"\n", "bad.toml:2: sm.routing must be");
  expect_error("[sm]\nrouting = \"dfsssp,,minhop\"\n", "bad.toml:2: sm.routing must be");
  expect_error("[sm]\nrouting = \"updn,lash\"\n", "unknown routing engine \"lash\" (minhop, updn, ftree, dfsssp, nue, dor)");
  expect_error("[sm]\nrouting = \"updn,updn\"\n", "named twice");
  expect_error("[sm]\nroots = [\"zz\"]\n", "bad.toml:2: sm.roots: not a GUID");
  expect_error("[sm]\npriority = \"high\"\n", "bad.toml:2: sm.priority must be an integer");
  expect_error("[nonsense]\n", "bad.toml:1: unknown section [nonsense]");
  expect_error("[engine\ncores = 2\n", "bad.toml:1:");
  expect_error("[log]\nlevel = \"loud\"\n", "bad.toml:2: log.level");
}

TEST(Config, SubnetPrefixInEitherForm) {
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"0xfe80000000000001\"\n", "a").sm.ports.subnet_prefix, 0xfe80000000000001u);
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"fec0:0:0:1::/64\"\n", "a").sm.ports.subnet_prefix, 0xfec0000000000001u);
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"fe80::\"\n", "a").sm.ports.subnet_prefix, 0xfe80000000000000u);
  expect_error("[sm]\nsubnet_prefix = \"fe80::1\"\n", "bad.toml:2: sm.subnet_prefix");
  expect_error("[sm]\nsubnet_prefix = \"fe80::/48\"\n", "bad.toml:2: sm.subnet_prefix");
  expect_error("[sm]\nsubnet_prefix = \"0xfe8g\"\n", "bad.toml:2: sm.subnet_prefix");
}

// A daemon on a real port keeps its state in /var/lib/madengine; on the
// simulator nothing unless asked, and never what the file or a flag named.
TEST(Config, StatePathsDefaultWithTheTransport) {
  NodeConfig umad = parse_config("", "a");
  apply_state_defaults(umad, false, false);
  EXPECT_EQ(umad.sm.guid2lid, "/var/lib/madengine/guid2lid");
  EXPECT_EQ(umad.sa.journal, "/var/lib/madengine/sa-state.journal");
  NodeConfig sim = parse_config("[transport]\nkind = \"sim\"\n", "a");
  apply_state_defaults(sim, false, false);
  EXPECT_EQ(sim.sm.guid2lid, "");
  EXPECT_EQ(sim.sa.journal, "");
  NodeConfig none = parse_config("[sm]\nguid2lid = \"\"\n", "a");
  apply_state_defaults(none, false, false);
  EXPECT_EQ(none.sm.guid2lid, "");
  EXPECT_EQ(none.sa.journal, "/var/lib/madengine/sa-state.journal");
  NodeConfig flag = parse_config("", "a");
  flag.sm.guid2lid = "/tmp/x";
  apply_state_defaults(flag, true, false);
  EXPECT_EQ(flag.sm.guid2lid, "/tmp/x");
}

TEST(Config, RelationsAreChecked) {
  NodeConfig c;
  c.sm.smps_per_node_max = 100;
  c.sm.smps_in_flight_max = 10;
  EXPECT_THROW(validate(c), ConfigError);
  NodeConfig p;
  p.sm.m_key_protection_level = 2;  // protection without a key protects nothing
  EXPECT_THROW(validate(p), ConfigError);
}

// QoS under OpenSM's option names; a bad list names its line.
TEST(Config, QosOptionsInOpenSmTerms) {
  const NodeConfig c = parse_config(R"(
[sm]
qos = true
qos_policy_file = "/etc/opensm/qos-policy.conf"
qos_high_limit = 4
qos_sl2vl = "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7"
qos_ca_vlarb_low = "0:8,1:8"
qos_swe_max_vls = 4
)",
                                "qos.toml");
  EXPECT_TRUE(c.sm.qos);
  EXPECT_EQ(c.sm.qos_policy_file, "/etc/opensm/qos-policy.conf");
  EXPECT_EQ(c.sm.qos_all.high_limit, 4);
  EXPECT_EQ(c.sm.qos_ca.vlarb_low, "0:8,1:8");
  EXPECT_EQ(c.sm.qos_swe.max_vls, 4u);
  EXPECT_EQ(c.sm.qos_sw0.high_limit, -1) << "unset: falls back";
  expect_error("[sm]\nqos = true\n\nqos_ca_sl2vl = \"0,1\"\n", "bad.toml:4: sm.qos_ca_sl2vl: needs 16 VLs (one per SL), has 2");
  expect_error("[sm]\nqos_vlarb_high = \"0:4,15:1\"\n", "bad.toml:2: sm.qos_vlarb_high: entry 2 '15:1' is not VL:weight");
  expect_error("[sm]\nqos_rtr_high_limit = 300\n", "bad.toml:2: sm.qos_rtr_high_limit = 300 is outside -1..255");
}

// Partition and M_Key settings under OpenSM's option names.
TEST(Config, PartitionsAndKeysInOpenSmTerms) {
  const NodeConfig c = parse_config(R"(
[sm]
partition_config = "/etc/opensm/partitions.conf"
part_enforce = "in"
allow_both_pkeys = true
m_key = "0xfedcba9876543210"
m_key_lease_period = 60
m_key_protection_level = 2
guid2mkey = "/tmp/g2m"
)",
                                "keys.toml");
  EXPECT_EQ(c.sm.partition_config, "/etc/opensm/partitions.conf");
  EXPECT_EQ(c.sm.part_enforce, "in");
  EXPECT_TRUE(c.sm.allow_both_pkeys);
  EXPECT_EQ(c.sm.m_key, 0xfedcba9876543210u) << "a key above 2^63 as a hex string";
  EXPECT_EQ(c.sm.m_key_lease_period, 60u);
  EXPECT_EQ(c.sm.m_key_protection_level, 2u);
  EXPECT_EQ(c.sm.guid2mkey, "/tmp/g2m");
  EXPECT_NO_THROW(validate(c));
  EXPECT_EQ(parse_config("[sm]\nm_key = 4660\n", "a").sm.m_key, 4660u);
  expect_error("[sm]\npart_enforce = \"sometimes\"\n", "bad.toml:2: sm.part_enforce must be both, in, out or off");
  expect_error("[sm]\nm_key_protection_level = 4\n", "bad.toml:2: sm.m_key_protection_level = 4 is outside 0..3");
  expect_error("[sm]\nm_key = \"0xzz\"\n", "bad.toml:2: sm.m_key must be an integer or a string");
  expect_error("[sm]\nm_key = -1\n", "bad.toml:2: sm.m_key must not be negative");
  NodeConfig umad = parse_config("", "a");
  apply_state_defaults(umad, false, false);
  EXPECT_EQ(umad.sm.guid2mkey, "/var/lib/madengine/guid2mkey");
}

// scripts/opensm_options_to_toml.awk on an OpenSM options file: the [sm] table it writes.
std::string convert_opensm_options(const std::string& opts) {
  const std::string cmd = "awk -f " MADENGINE_OPENSM_OPTIONS_TO_TOML " " + opts;
  std::string toml = "[sm]\n";
  FILE* out = ::popen(cmd.c_str(), "r");
  if (out == nullptr) return {};
  char buf[512];
  while (std::fgets(buf, sizeof(buf), out) != nullptr) toml += buf;
  if (::pclose(out) != 0) ADD_FAILURE() << cmd;
  return toml;
}

std::filesystem::path temp_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// An OpenSM options file (the keys as `opensm -c` writes them) converts to a
// madengine config with the same settings, units converted; files that do
// not exist and values madengine cannot take are left out; the priority is
// OpenSM's default when the file has none.
TEST(Config, OpenSmOptionsFileConverted) {
  const std::filesystem::path dir = temp_dir("opensm-conv");
  const std::string partitions = (dir / "partitions.conf").string();
  std::ofstream(partitions) << "Default=0x7fff, ipoib : ALL=full ;\n";
  const std::string roots = (dir / "roots").string();
  std::ofstream(roots) << "0x0002c90300000001\n\n0x0002c90300000002\n";
  const std::string opts = (dir / "opensm.conf").string();
  std::ofstream(opts) << "#\n# DEVICE ATTRIBUTES OPTIONS\n#\nguid 0x0000000000000000\n\n"
                         "# M_Key value sent to all ports qualifying all Set(PortInfo)\nm_key 0xfedcba9876543210\n\n"
                         "m_key_lease_period 60\nm_key_protection_level 2\nm_key_lookup TRUE\n"
                         "sm_key 0x0000000000000007\nsa_key 0x0000000000000001\n"
                         "subnet_prefix 0xfec0000000000000\nlmc 2\nsubnet_timeout 17\n"
                         "partition_config_file " << partitions << "\nno_partition_enforcement TRUE\npart_enforce in\n"
                         "allow_both_pkeys TRUE\nkeep_pkey_indexes TRUE\nsweep_interval 5\n"
                         "routing_engine lash,ftree,updn\nroot_guid_file " << roots << "\n"
                         "sminfo_polling_timeout 500\npolling_retry_number 3\nmax_wire_smps 4\n"
                         "transaction_timeout 300\ntransaction_retries 5\nqos TRUE\n"
                         "qos_policy_file " << (dir / "absent-qos-policy.conf").string() << "\n"
                         "qos_max_vls 0\nqos_high_limit -1\nqos_vlarb_high 0:4,1:0\nqos_vlarb_low (null)\n"
                         "qos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7\nqos_ca_high_limit 3\nqos_swe_vlarb_low 0:8,1:8\n";
  const std::string toml = convert_opensm_options(opts);
  std::filesystem::remove_all(dir);
  SCOPED_TRACE(toml);
  const NodeConfig c = parse_config(toml, "converted.toml");
  EXPECT_EQ(c.sm.m_key, 0xfedcba9876543210u);
  EXPECT_EQ(c.sm.m_key_lease_period, 60u);
  EXPECT_EQ(c.sm.m_key_protection_level, 2u);
  EXPECT_EQ(c.sm.sm_key, 7u);
  EXPECT_EQ(c.sm.ports.subnet_prefix, 0xfec0000000000000u);
  EXPECT_EQ(c.sm.lmc, 2u);
  EXPECT_EQ(c.sm.ports.subnet_timeout, 17u);
  EXPECT_EQ(c.sm.partition_config, partitions);
  EXPECT_EQ(c.sm.part_enforce, "off") << "no_partition_enforcement TRUE wins, as in OpenSM";
  EXPECT_TRUE(c.sm.allow_both_pkeys);
  EXPECT_EQ(c.sm.sweep_interval_ms, 5000u) << "OpenSM's seconds";
  EXPECT_EQ(c.sm.routing, "ftree,updn") << "lash is not offered: left out of the chain";
  EXPECT_EQ(c.sm.roots, (std::vector<std::uint64_t>{0x0002c90300000001u, 0x0002c90300000002u}));
  EXPECT_EQ(c.sm.ha_poll_interval_ms, 500u);
  EXPECT_EQ(c.sm.ha_poll_retries, 3u);
  EXPECT_EQ(c.sm.smps_in_flight_max, NodeConfig{}.sm.smps_in_flight_max) << "max_wire_smps is OpenSM's engine's";
  EXPECT_EQ(c.sm.transaction_timeout_ms, 300u);
  EXPECT_EQ(c.sm.transaction_retries, 5u);
  EXPECT_EQ(c.sm.priority, 0u) << "no sm_priority: OpenSM's default 0, not madengine's 15";
  EXPECT_TRUE(c.sm.qos);
  EXPECT_EQ(c.sm.qos_policy_file, "") << "a policy file that does not exist is left out";
  EXPECT_EQ(c.sm.qos_all.high_limit, -1);
  EXPECT_EQ(c.sm.qos_all.vlarb_high, "0:4,1:0");
  EXPECT_EQ(c.sm.qos_all.vlarb_low, "") << "(null): unset";
  EXPECT_EQ(c.sm.qos_all.sl2vl, "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7");
  EXPECT_EQ(c.sm.qos_ca.high_limit, 3);
  EXPECT_EQ(c.sm.qos_swe.vlarb_low, "0:8,1:8");
  EXPECT_NO_THROW(validate(c));
}

// The file OpenSM itself writes (opensm -c), with a site's priority,
// routing and sweep interval edited in, converts to a file madengine takes.
// The converter keeps the engines of an OpenSM chain madengine has: its
// list is sm/routing's, which owns the names.
TEST(OpensmOptions, EnginesAreMadengines) {
  std::ifstream f(MADENGINE_OPENSM_OPTIONS_TO_TOML);
  const std::string awk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::smatch m;
  ASSERT_TRUE(std::regex_search(awk, m, std::regex("engines_known = \"([a-z,]+)\"")));
  EXPECT_EQ(m[1].str(), routing_engine_names(","));
}

TEST(Config, OpenSmWrittenOptionsFileConverted) {
  if (std::system("command -v opensm >/dev/null 2>&1") != 0) {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL() << "no opensm (CI=true: the test command installs it)";
    GTEST_SKIP() << "no opensm to write its options file";
  }
  const std::filesystem::path dir = temp_dir("opensm-written");
  const std::string opts = (dir / "opensm.conf").string();
  ASSERT_EQ(std::system(("opensm -c '" + opts + "' >/dev/null 2>&1").c_str()), 0);
  std::string text;
  {
    std::ifstream in(opts);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto edit = [&text](const std::string& from, const std::string& to) {
    const auto at = text.find("\n" + from + "\n");
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at + 1, from.size(), to);
  };
  edit("sm_priority 0", "sm_priority 11");
  edit("routing_engine (null)", "routing_engine updn,minhop");
  edit("sweep_interval 10", "sweep_interval 30");
  std::ofstream(opts) << text;
  const std::string toml = convert_opensm_options(opts);
  std::filesystem::remove_all(dir);
  SCOPED_TRACE(toml);
  const NodeConfig c = parse_config(toml, "converted.toml");
  EXPECT_EQ(c.sm.priority, 11u);
  EXPECT_EQ(c.sm.routing, "updn,minhop");
  EXPECT_EQ(c.sm.sweep_interval_ms, 30'000u);
  EXPECT_EQ(c.sm.ports.subnet_prefix, 0xfe80000000000000u);
  EXPECT_EQ(c.sm.sm_key, 1u);
  EXPECT_EQ(c.sm.ha_poll_interval_ms, 10'000u);
  EXPECT_EQ(c.sm.ha_poll_retries, 4u);
  EXPECT_EQ(c.sm.partition_config, "") << "/etc/opensm/partitions.conf does not exist here";
  EXPECT_NO_THROW(validate(c));
}

// A reload compares configurations key by key: every key of the shipped
// example (which lists them all) is one the comparison knows.
TEST(ConfigDiff, EveryKeyOfTheShippedExampleIsCompared) {
  const std::vector<std::string> known = config_keys();
  std::ifstream in(MADENGINE_EXAMPLE_CONFIG);
  std::string section;
  std::size_t checked = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, std::regex(R"(^\[(\w+)\].*)"))) section = m[1];
    if (section == "metrics" || section == "admin") continue;  // the daemon's own (tools/madengine/service)
    if (section == "perfmgr") continue;  // read beside NodeConfig (PerfmgrConfig below); a restart applies it
    if (!std::regex_match(line, m, std::regex(R"(^#? ?(\w+) = .*)"))) continue;
    const std::string key = section + "." + m[1].str();
    EXPECT_NE(std::find(known.begin(), known.end(), key), known.end()) << key;
    ++checked;
  }
  EXPECT_GT(checked, 40u);
}

// [perfmgr]: the shipped example holds the defaults; bad keys and values name the line.
TEST(PerfmgrConfig, ExampleDefaultsAndErrors) {
  const perfmgr::PerfMgrConfig file = load_perfmgr_config(MADENGINE_EXAMPLE_CONFIG);
  const perfmgr::PerfMgrConfig d;
  EXPECT_EQ(file.enabled, d.enabled);
  EXPECT_EQ(file.interval_ms, d.interval_ms);
  EXPECT_EQ(file.outstanding_max, d.outstanding_max);
  EXPECT_EQ(file.timeout_ms, d.timeout_ms);
  EXPECT_EQ(file.retries, d.retries);
  EXPECT_EQ(file.metrics_ports_max, d.metrics_ports_max);
  EXPECT_EQ(file.thresholds.symbol_errors, d.thresholds.symbol_errors);
  EXPECT_EQ(file.thresholds.xmit_discards, d.thresholds.xmit_discards);
  EXPECT_EQ(file.thresholds.xmit_wait, d.thresholds.xmit_wait);
  const perfmgr::PerfMgrConfig c =
      parse_perfmgr_config("[perfmgr]\nenabled = true\ninterval_ms = 5000\n[perfmgr.thresholds]\nsymbol_errors = 3\n", "p.toml");
  EXPECT_TRUE(c.enabled);
  EXPECT_EQ(c.interval_ms, 5000u);
  EXPECT_EQ(c.thresholds.symbol_errors, 3u);
  EXPECT_NO_THROW(parse_config("[perfmgr]\nenabled = true\n", "p.toml"));  // the node's parser passes over it
  auto error_of = [](const std::string& text) {
    try {
      parse_perfmgr_config(text, "p.toml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("[perfmgr]\n\ninterval = 5\n"), "p.toml:3: unknown key perfmgr.interval");
  EXPECT_EQ(error_of("[perfmgr]\ninterval_ms = 5\n"), "p.toml:2: perfmgr.interval_ms = 5 is outside 100..86400000");
  EXPECT_EQ(error_of("[perfmgr]\nthresholds = 3\n"),
            "p.toml:2: perfmgr.thresholds must be a table (symbol_errors = 10, ...)");
  EXPECT_EQ(error_of("[perfmgr.thresholds]\nsymbol = 1\n"), "p.toml:2: unknown key perfmgr.thresholds.symbol");
}

TEST(ConfigDiff, NamesTheChangedKeys) {
  const NodeConfig before;
  NodeConfig after;
  EXPECT_TRUE(changed_keys(before, after).empty());
  after.sm.priority = 3;
  after.sm.routing = "ftree";
  after.sm.roots = {0x10};
  after.sm.qos_swe.vlarb_low = "0:8";
  after.log.level = "debug";
  EXPECT_EQ(changed_keys(before, after),
            (std::vector<std::string>{"sm.priority", "sm.routing", "sm.roots", "sm.qos_swe_vlarb_low", "log.level"}));
}

}  // namespace
}  // namespace madengine::node

namespace madengine::node {
namespace {

// The shipped example lists every key with its default value.
TEST(Config, ShippedExampleEqualsTheDefaults) {
  const NodeConfig file = load_config_file(MADENGINE_EXAMPLE_CONFIG);
  const NodeConfig defaults;
  EXPECT_EQ(file.engine.cores, defaults.engine.cores);
  EXPECT_EQ(file.engine.idle, defaults.engine.idle);
  EXPECT_EQ(file.transport.generate, defaults.transport.generate);
  EXPECT_EQ(file.sm.guid2lid, defaults.sm.guid2lid);
  EXPECT_EQ(file.sm.smps_in_flight_max, defaults.sm.smps_in_flight_max);
  EXPECT_EQ(file.sm.ports.subnet_timeout, defaults.sm.ports.subnet_timeout);
  EXPECT_EQ(file.sm.ha_poll_interval_ms, defaults.sm.ha_poll_interval_ms);
  EXPECT_EQ(file.sm.ha_poll_retries, defaults.sm.ha_poll_retries);
  EXPECT_EQ(file.sa.queue_depth, defaults.sa.queue_depth);
  EXPECT_EQ(file.log.level, defaults.log.level);
  EXPECT_EQ(file.sm.partition_config, defaults.sm.partition_config);
  EXPECT_EQ(file.sm.part_enforce, defaults.sm.part_enforce);
  EXPECT_EQ(file.sm.allow_both_pkeys, defaults.sm.allow_both_pkeys);
  EXPECT_EQ(file.sm.m_key, defaults.sm.m_key);
  EXPECT_EQ(file.sm.m_key_lease_period, defaults.sm.m_key_lease_period);
  EXPECT_EQ(file.sm.m_key_protection_level, defaults.sm.m_key_protection_level);
  EXPECT_EQ(file.sm.guid2mkey, defaults.sm.guid2mkey);
  EXPECT_EQ(file.sm.qos, defaults.sm.qos);
  EXPECT_EQ(file.sm.qos_policy_file, defaults.sm.qos_policy_file);
  EXPECT_EQ(file.sm.qos_all.high_limit, defaults.sm.qos_all.high_limit);
  EXPECT_EQ(file.sm.consolidate_ipv6_snm_req, defaults.sm.consolidate_ipv6_snm_req);
  EXPECT_EQ(file.sm.ports.max_op_vls, defaults.sm.ports.max_op_vls);
  EXPECT_EQ(file.sm.ports.packet_life_time, defaults.sm.ports.packet_life_time);
  EXPECT_EQ(file.sm.ports.head_of_queue_lifetime, defaults.sm.ports.head_of_queue_lifetime);
  EXPECT_EQ(file.sm.ports.leaf_head_of_queue_lifetime, defaults.sm.ports.leaf_head_of_queue_lifetime);
  EXPECT_EQ(file.sm.ports.vl_stall_count, defaults.sm.ports.vl_stall_count);
  EXPECT_EQ(file.sm.ports.leaf_vl_stall_count, defaults.sm.ports.leaf_vl_stall_count);
  EXPECT_EQ(file.sm.ports.force_link_width, defaults.sm.ports.force_link_width);
  EXPECT_EQ(file.sm.ports.force_link_speed, defaults.sm.ports.force_link_speed);
  EXPECT_EQ(file.sm.ports.force_link_speed_ext, defaults.sm.ports.force_link_speed_ext);
}

TEST(Config, PortKeysInOpenSmTerms) {
  const NodeConfig c = parse_config(R"([sm]
max_op_vls = 3
force_link_width = 2
force_link_speed = 0
force_link_speed_ext = 30
head_of_queue_lifetime = 20
packet_life_time = 19
)", "ports.toml");
  EXPECT_EQ(c.sm.ports.max_op_vls, 3);
  EXPECT_EQ(c.sm.ports.force_link_width, 2);
  EXPECT_EQ(c.sm.ports.force_link_speed, 0);
  EXPECT_EQ(c.sm.ports.force_link_speed_ext, 30);
  EXPECT_EQ(c.sm.ports.head_of_queue_lifetime, 20);
  EXPECT_EQ(c.sm.ports.packet_life_time, 19);
  expect_error("[sm]\nforce_link_width = 64\n", "bad.toml:2: sm.force_link_width must be 0, a width mask 1..31, or 255");
  expect_error("[sm]\nforce_link_speed = 9\n", "bad.toml:2: sm.force_link_speed must be");
  expect_error("[sm]\nforce_link_speed_ext = 20\n", "bad.toml:2: sm.force_link_speed_ext must be");
  expect_error("[sm]\nmax_op_vls = 6\n", "bad.toml:2: sm.max_op_vls = 6 is outside 1..5");
  // A layered routing under QoS: SL2VL must keep its layers on distinct VLs.
  expect_error("[sm]\nrouting = \"dfsssp\"\nqos = true\nqos_sl2vl = \"0,0,1,2,3,4,5,6,7,0,1,2,3,4,5,6\"\n",
               "qos_ca_sl2vl (or qos_sl2vl) maps SL0 and SL1 to VL0: a layered routing");
  EXPECT_NO_THROW(parse_config("[sm]\nrouting = \"minhop\"\nqos = true\nqos_sl2vl = \"0,0,1,2,3,4,5,6,7,0,1,2,3,4,5,6\"\n",
                               "ok.toml"))
      << "one layer: any SL2VL";
  EXPECT_NO_THROW(parse_config("[sm]\nrouting = \"dfsssp\"\nqos = true\n", "ok.toml")) << "OpenSM's default SL2VL";
}

}  // namespace
}  // namespace madengine::node
