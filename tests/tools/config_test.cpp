// The daemon's configuration: defaults, every section parsed, and bad input
// rejected with a message naming the line.
#include "madengine/node/config.hpp"

#include <gtest/gtest.h>

namespace madengine::node {
namespace {

TEST(Config, EmptyFileGivesDefaults) {
  const NodeConfig c = parse_config("", "empty.toml");
  EXPECT_EQ(c.engine.cores, 2u);
  EXPECT_EQ(c.engine.idle, "block");
  EXPECT_EQ(c.transport.kind, TransportKind::kUmad);
  EXPECT_EQ(c.sm.sm_key, 1u);
  EXPECT_EQ(c.sm.subnet_prefix, 0xfe80000000000000u);
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
  expect_error("[sm]\nroots = [\"zz\"]\n", "bad.toml:2: sm.roots: not a GUID");
  expect_error("[sm]\npriority = \"high\"\n", "bad.toml:2: sm.priority must be an integer");
  expect_error("[nonsense]\n", "bad.toml:1: unknown section [nonsense]");
  expect_error("[engine\ncores = 2\n", "bad.toml:1:");
  expect_error("[log]\nlevel = \"loud\"\n", "bad.toml:2: log.level");
}

TEST(Config, SubnetPrefixInEitherForm) {
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"0xfe80000000000001\"\n", "a").sm.subnet_prefix, 0xfe80000000000001u);
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"fec0:0:0:1::/64\"\n", "a").sm.subnet_prefix, 0xfec0000000000001u);
  EXPECT_EQ(parse_config("[sm]\nsubnet_prefix = \"fe80::\"\n", "a").sm.subnet_prefix, 0xfe80000000000000u);
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
  EXPECT_EQ(file.sm.subnet_timeout, defaults.sm.subnet_timeout);
  EXPECT_EQ(file.sm.ha_poll_interval_ms, defaults.sm.ha_poll_interval_ms);
  EXPECT_EQ(file.sm.ha_poll_retries, defaults.sm.ha_poll_retries);
  EXPECT_EQ(file.sa.queue_depth, defaults.sa.queue_depth);
  EXPECT_EQ(file.log.level, defaults.log.level);
}

}  // namespace
}  // namespace madengine::node
