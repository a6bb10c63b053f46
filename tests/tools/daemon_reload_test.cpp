// The daemon's partitions file on the sim transport (label sim): read at
// start (a bad one stops the start with file:line), re-read by
// reload_config_files() (what SIGHUP calls): a good file reaches the ports at
// the next heavy sweep, a bad one is refused and the ports keep their tables.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

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
