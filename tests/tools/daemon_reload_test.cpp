// The daemon's partitions file on the sim transport (label sim): read at
// start (a bad one stops the start with file:line), re-read by
// reload_config_files() (what SIGHUP calls): unchanged files sweep nothing;
// a good file reaches the ports at
// the next heavy sweep, a bad one is refused and the ports keep their tables.
// reload() (SIGHUP's configuration) applies the priority and a new
// partitions path, and names every other changed key as needing a restart.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "madengine/node/node.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "node/internal_node.hpp"
#include "sim/fabric.hpp"

namespace madengine::node {
namespace {

class DaemonReload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("madengine-reload-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cfg_.transport.kind = TransportKind::kSim;
    cfg_.transport.generate = "ft2:4";
    cfg_.engine.cores = 1;
    cfg_.engine.pin = false;
    cfg_.sm.partition_config = (dir_ / "partitions.conf").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& text) const { std::ofstream(cfg_.sm.partition_config) << text; }
  static bool pump_until(InternalNode& d, const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = d.fabric()->now_ns() + sim_ms * kNanosPerMilli;
    while (d.fabric()->now_ns() < end) {
      if (pred()) return true;
      d.pump(kNanosPerMilli);
    }
    return pred();
  }
  std::filesystem::path dir_;
  NodeConfig cfg_;
};

// Entry `i` of a port's P_Key table (the sim lists only the default until an SM writes one).
std::uint16_t pkey_at(const sim::Fabric& f, sim::PortIdx p, std::size_t i) {
  const auto t = f.pkey_table(p);
  return i < t.size() ? t[i] : wire::kInvalidPKey;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

TEST_F(DaemonReload, GoodFileAppliesBadFileIsRefused) {
  write("Default=0x7fff, ipoib : ALL=full ;\n");
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::seconds(30)));
  sim::Fabric& f = *d.fabric();
  const sim::PortIdx host = f.port(f.find_node("host-1-0"), 1);
  EXPECT_EQ(pkey_at(f, host, 1), wire::kInvalidPKey);

  write("Default=0x7fff, ipoib : ALL=full ;\nblue=0x0b : " + hex(f.port_guid(host)) + "=full ;\n");
  ASSERT_TRUE(d.reload_config_files());
  const std::uint64_t sweeps = d.sm().status().heavy_sweeps;
  ASSERT_TRUE(pump_until(d, [&] { return d.sm().status().heavy_sweeps > sweeps; }, 10'000));
  EXPECT_EQ(pkey_at(f, host, 1), 0x800b);

  write("Default=0x7fff : ALL=full ;\nbroken=0xzz : ALL ;\n");
  EXPECT_FALSE(d.reload_config_files());
  d.sm().request_heavy_sweep();
  const std::uint64_t again = d.sm().status().heavy_sweeps;
  ASSERT_TRUE(pump_until(d, [&] { return d.sm().status().heavy_sweeps > again; }, 10'000));
  EXPECT_EQ(pkey_at(f, host, 1), 0x800b) << "the refused file changed nothing";
  EXPECT_EQ(d.sm().status().last_heavy.bringup.pkey_sets, 0u);
}

// logrotate's SIGHUP re-reads unchanged files: the fabric is left alone (no
// heavy sweep is asked for), while a changed file still applies.
TEST_F(DaemonReload, UnchangedFilesLeaveTheFabricAlone) {
  write("Default=0x7fff, ipoib : ALL=full ;\n");
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::seconds(30)));
  const std::uint64_t sweeps = d.sm().status().heavy_sweeps;
  ASSERT_TRUE(d.reload_config_files());
  pump_until(d, [] { return false; }, 2'000);
  EXPECT_EQ(d.sm().status().heavy_sweeps, sweeps) << "the same file swept the fabric";
  write("Default=0x7fff, ipoib : ALL=full ;\nblue=0x0b : ALL=full ;\n");
  ASSERT_TRUE(d.reload_config_files());
  ASSERT_TRUE(pump_until(d, [&] { return d.sm().status().heavy_sweeps > sweeps; }, 10'000));
}

bool contains(const std::vector<std::string>& lines, const std::string& line) {
  for (const std::string& l : lines)
    if (l == line) return true;
  return false;
}

TEST_F(DaemonReload, ReloadAppliesWhatItCanAndNamesTheRest) {
  write("Default=0x7fff, ipoib : ALL=full ;\n");
  InternalNode d(cfg_);
  ASSERT_TRUE(d.wait_subnet_up(std::chrono::seconds(30)));
  sim::Fabric& f = *d.fabric();
  const sim::PortIdx host = f.port(f.find_node("host-1-0"), 1);
  NodeConfig fresh = cfg_;
  fresh.sm.priority = 4;
  fresh.sm.routing = "updn";
  fresh.sm.sweep_interval_ms = 5000;
  fresh.sm.partition_config = (dir_ / "other-partitions.conf").string();
  std::ofstream(fresh.sm.partition_config) << "Default=0x7fff, ipoib : ALL=full ;\nblue=0x0b : ALL=full ;\n";
  const std::uint64_t sweeps = d.sm().status().heavy_sweeps;
  const InternalNode::ReloadResult r = d.reload(fresh);
  EXPECT_EQ(r.restart_needed, (std::vector<std::string>{"sm.routing", "sm.sweep_interval_ms"}));
  EXPECT_TRUE(contains(r.applied, "sm.priority 15 -> 4"));
  EXPECT_TRUE(contains(r.applied, "partitions and qos-policy files re-read"));
  ASSERT_TRUE(pump_until(d, [&] { return d.sm().status().heavy_sweeps > sweeps; }, 10'000));
  EXPECT_EQ(d.sm().priority(), 4u);
  EXPECT_EQ(pkey_at(f, host, 1), 0x800b) << "the new path's partitions";

  // Again: the priority is in use now; what needs a restart still does.
  const InternalNode::ReloadResult again = d.reload(fresh);
  EXPECT_EQ(again.restart_needed, r.restart_needed);
  EXPECT_FALSE(contains(again.applied, "sm.priority 15 -> 4"));

  // A path that cannot be read is refused; the partitions in use stay.
  NodeConfig missing = fresh;
  missing.sm.partition_config = (dir_ / "missing.conf").string();
  const InternalNode::ReloadResult refused = d.reload(missing);
  EXPECT_TRUE(contains(refused.applied, "partitions or qos-policy file refused: the ones in use kept"));
  EXPECT_FALSE(contains(refused.restart_needed, "sm.partition_config"));
}

TEST_F(DaemonReload, BadFileAtStartNamesTheLine) {
  write("Default=0x7fff : ALL=full ;\nno colon here ;\n");
  try {
    InternalNode d(cfg_);
    FAIL() << "started with a bad partitions file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("partitions.conf:2: no partition definition found"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace madengine::node
