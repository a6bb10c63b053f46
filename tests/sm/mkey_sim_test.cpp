// M_Keys on the simulator, which checks them (ibsim does not: its check is
// commented out), label sim: the SM keys every port and keeps working with
// the key; a host or a second SM without it cannot change a protected
// port, the owning SM can; a restarted SM with another key reaches and
// re-keys the ports through guid2mkey; without the file it recovers them
// once their lease runs out; the guid2mkey file is OpenSM's format.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "sim/generators.hpp"
#include "sim/smp_client.hpp"
#include "sim_sa_rig.hpp"
#include "sm/mkeys/mkey_book.hpp"

namespace madengine {
namespace {

constexpr std::uint64_t kKey = 0x00c0ffee00000001ull;
constexpr std::uint64_t kOtherKey = 0x00badbad00000002ull;

// The daemon's keys (sm.m_key, m_key_protection_level, m_key_lease_period, guid2mkey).
node::NodeConfig keyed(std::uint64_t key, unsigned protect, unsigned lease_s, const std::string& file = {}) {
  node::NodeConfig c = testing::sim_node_config();
  c.sm.sweep_interval_ms = 500;
  c.sm.m_key = key;
  c.sm.m_key_protection_level = protect;
  c.sm.m_key_lease_period = lease_s;
  c.sm.guid2mkey = file;
  return c;
}

// Every end port (CA ports, switch port 0) holds `key` at `protect`.
::testing::AssertionResult all_keyed(const sim::Fabric& f, std::uint64_t key, std::uint8_t protect) {
  for (std::uint32_t n = 0; n < f.node_count(); ++n) {
    const sim::PortIdx p = f.port(n, f.is_switch(n) ? 0 : 1);
    const auto l = f.link_state(p);
    if (l.m_key != key || l.m_key_protect != protect)
      return ::testing::AssertionFailure() << "node " << n << " holds 0x" << std::hex << l.m_key << " at level "
                                           << int(l.m_key_protect);
  }
  return ::testing::AssertionSuccess();
}

struct TempDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("madengine-mkey-" + std::to_string(::getpid()) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
};

TEST(MKeyBook, FileInOpenSmsFormat) {
  TempDir t;
  const std::string path = (t.dir / "guid2mkey").string();
  sm::Guid2Mkey keys{{0x0002c90300000003ull, kKey}, {0x10ull, 0}};
  std::string err;
  ASSERT_TRUE(sm::save_guid2mkey(path, keys, err)) << err;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "0x0000000000000010 0x0000000000000000");
  sm::Guid2Mkey back;
  sm::FileIssue ferr;
  ASSERT_TRUE(sm::load_guid2mkey(path, back, ferr)) << ferr.text();
  EXPECT_EQ(back, keys);
  std::ofstream(path) << "0x10 0x1\n\n0x11 nope\n";
  EXPECT_FALSE(sm::load_guid2mkey(path, back, ferr));
  EXPECT_EQ(ferr.line, 3u);
  EXPECT_TRUE(sm::load_guid2mkey((t.dir / "absent").string(), back, ferr)) << "a first start";
  EXPECT_TRUE(back.empty());
}

TEST(MKeySim, KeyedPortsRefuseOthersAndObeyTheirSm) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 9);
  auto& sm1 = rig.add(rig.fabric.find_node("host-0-0"), {}, false, keyed(kKey, 2, 0));
  ASSERT_TRUE(rig.run_until([&] { return sm1.sm().status().subnet_up; }, 30'000));
  auto& f = rig.fabric;
  EXPECT_TRUE(all_keyed(f, kKey, 2));
  EXPECT_EQ(sm1.sm().status().last_heavy.bringup.errors, 0u);
  EXPECT_GT(sm1.sm().status().last_heavy.bringup.rekeyed, 0u);
  // A forced re-sweep of keyed ports: everything still answers the SM.
  sm1.sm().request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([&] { return sm1.sm().status().heavy_sweeps >= 2; }, 10'000));
  EXPECT_EQ(sm1.sm().status().last_heavy.discovery_errors, 0u);
  EXPECT_EQ(sm1.sm().status().last_heavy.bringup.errors + sm1.sm().status().last_heavy.bringup.rekeyed, 0u);

  // A host without the key: its Get finds nothing at level 2, its Set changes nothing.
  const std::uint32_t victim = f.find_node("host-3-1");
  const sim::PortIdx vp = f.port(victim, 1);
  const std::uint16_t lid = f.lid(vp);
  // LID-routed from another host, through the LFTs the SM wrote.
  sim::SmpClient host(f, f.attach(f.find_node("host-2-0"), 1, AgentSpec{.smi = true}));
  const std::uint16_t route = lid;
  wire::PortInfo bad{};
  bad.lid = wire::be16::from(0x77);
  EXPECT_FALSE(host.lid(wire::method::kGet, wire::smp_attr::kPortInfo, 0, route, {}, 0).has_value());
  EXPECT_FALSE(host.lid(wire::method::kSet, wire::smp_attr::kPortInfo, 0, route, wire::as_bytes(bad), kOtherKey).has_value());
  EXPECT_EQ(f.lid(vp), lid);
  EXPECT_GT(f.link_state(vp).m_key_violations, 0u);
  // With the key, the same Get answers.
  EXPECT_TRUE(host.lid(wire::method::kGet, wire::smp_attr::kPortInfo, 0, route, {}, kKey).has_value());

  // A second SM of higher priority without the key cannot take the ports.
  node::NodeConfig other = keyed(kOtherKey, 2, 0);
  other.sm.priority = 15;
  auto& sm2 = rig.add(f.find_node("host-1-1"), {}, false, other);
  rig.run_until([&] { return sm2.sm().status().heavy_sweeps >= 1; }, 10'000);
  rig.run_until([] { return false; }, 3'000);
  EXPECT_TRUE(all_keyed(f, kKey, 2)) << "the ports still hold the first SM's key";
  EXPECT_EQ(f.lid(vp), lid);
}

TEST(MKeySim, RestartWithAnotherKeyReKeysThroughGuid2mkey) {
  TempDir t;
  const std::string file = (t.dir / "guid2mkey").string();
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 9);
  const std::uint32_t node = rig.fabric.find_node("host-0-0");
  {
    auto& sm1 = rig.add(node, {}, false, keyed(kKey, 2, 0, file));
    ASSERT_TRUE(rig.run_until([&] { return sm1.sm().status().subnet_up; }, 30'000));
    rig.nodes.clear();  // the SM stops; the I/O pool wrote the file
  }
  sm::Guid2Mkey saved;
  sm::FileIssue err;
  ASSERT_TRUE(sm::load_guid2mkey(file, saved, err)) << err.text();
  EXPECT_EQ(saved.size(), rig.fabric.node_count()) << "every end port's key (hosts and switches)";
  // The next SM has a new key: it reaches the ports with the old one the file names and re-keys them.
  auto& sm2 = rig.add(node, {}, false, keyed(kOtherKey, 2, 0, file));
  ASSERT_TRUE(rig.run_until([&] { return sm2.sm().status().subnet_up; }, 60'000));
  EXPECT_TRUE(all_keyed(rig.fabric, kOtherKey, 2));
  EXPECT_EQ(sm2.sm().status().last_heavy.bringup.rekeyed, rig.fabric.node_count());
  rig.nodes.clear();
  ASSERT_TRUE(sm::load_guid2mkey(file, saved, err)) << err.text();
  for (const auto& [guid, key] : saved) EXPECT_EQ(key, kOtherKey) << std::hex << guid;
}

// A standby that first swept the fabric before the master keyed it took
// every port to hold no key; at level 1 its later Gets (with no key) read
// the keys as 0 and it kept believing them. Taking over, it sent its Sets
// with no key and every one was refused (a third SM's sweeps kept the
// leases from running out: the subnet was never programmed again). A key
// hidden behind protection now tells the SM its key was wrong: it uses the
// configured one, which the master gave.
TEST(MKeySim, StandbyThatSawPortsBeforeTheyWereKeyedTakesOverWithTheKey) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 9);
  node::NodeConfig master_cfg = keyed(kKey, 1, 60), standby_cfg = keyed(kKey, 1, 60);
  master_cfg.sm.priority = 15;
  standby_cfg.sm.priority = 1;
  standby_cfg.sm.ha_poll_interval_ms = 100;
  standby_cfg.sm.ha_poll_retries = 3;
  auto& standby = rig.add(rig.fabric.find_node("host-1-1"), {}, false, standby_cfg);
  rig.add(rig.fabric.find_node("host-0-0"), {}, false, master_cfg);
  auto& master = *rig.nodes.back();
  ASSERT_TRUE(rig.run_until([&] { return master.sm().status().subnet_up && all_keyed(rig.fabric, kKey, 1); }, 30'000));
  ASSERT_TRUE(rig.run_until([&] { return standby.sm().status().state == wire::SmState::kStandby; }, 10'000));
  rig.run_until([] { return false; }, 2'000);  // the standby's refresh sweeps read the keyed ports
  rig.fabric.kill_node(rig.fabric.find_node("host-0-0"));
  rig.nodes.back()->crash();
  rig.nodes.pop_back();
  const Nanos t0 = rig.fabric.now_ns();
  ASSERT_TRUE(rig.run_until([&] {
    const auto st = standby.sm().status();
    return st.state == wire::SmState::kMaster && st.subnet_up && st.heavy_sweeps > 0 && st.last_heavy.bringup.errors == 0 &&
           st.sm_lid == rig.fabric.lid(rig.fabric.port(rig.fabric.find_node("host-1-1"), 1));
  }, 20'000)) << "the ports' leases (60 s) never ran out: the new master must use the key";
  EXPECT_TRUE(all_keyed(rig.fabric, kKey, 1));
  EXPECT_LT(rig.fabric.now_ns() - t0, 10 * kNanosPerSecond);
}

// Our own SMs never send a port a wrong key: a standby that first found the
// ports keyless used to send them no key after the master keyed them, each
// such SMP a violation that started the port's lease; a 1 s lease then ran
// out whenever the master did not reach the port within it, and the port's
// protection was gone for good. A keyless port takes any key, so ours is sent.
TEST(MKeySim, StandbysSendNoWrongKeysAndProtectionHolds) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 9);
  node::NodeConfig master_cfg = keyed(kKey, 3, 1), standby_cfg = keyed(kKey, 3, 1);
  master_cfg.sm.priority = 15;
  standby_cfg.sm.priority = 1;
  rig.add(rig.fabric.find_node("host-1-1"), {}, false, standby_cfg);
  auto& master = rig.add(rig.fabric.find_node("host-0-0"), {}, false, master_cfg);
  ASSERT_TRUE(rig.run_until([&] { return master.sm().status().subnet_up && all_keyed(rig.fabric, kKey, 3); }, 30'000));
  rig.run_until([] { return false; }, 10'000);  // the standby's refresh sweeps, the master's light sweeps
  EXPECT_TRUE(all_keyed(rig.fabric, kKey, 3));
  unsigned violations = 0;
  for (std::uint32_t n = 0; n < rig.fabric.node_count(); ++n)
    violations += rig.fabric.link_state(rig.fabric.port(n, rig.fabric.is_switch(n) ? 0 : 1)).m_key_violations;
  EXPECT_EQ(violations, 0u) << "SMPs of ours with a wrong key";
}

TEST(MKeySim, WithoutTheKeyPortsAreRecoveredWhenTheirLeaseRunsOut) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 9);
  const std::uint32_t node = rig.fabric.find_node("host-0-0");
  {
    auto& sm1 = rig.add(node, {}, false, keyed(kKey, 2, 2));  // a 2 s lease
    ASSERT_TRUE(rig.run_until([&] { return sm1.sm().status().subnet_up; }, 30'000));
    rig.nodes.clear();
  }
  // A new SM knows nothing of the old key: no port answers it at first; each
  // refused SMP starts a port's lease, and the ports hop by hop drop their
  // protection and take the new key.
  auto& sm2 = rig.add(node, {}, false, keyed(kOtherKey, 1, 60));
  const Nanos t0 = rig.fabric.now_ns();
  ASSERT_TRUE(rig.run_until([&] { return sm2.sm().status().subnet_up && all_keyed(rig.fabric, kOtherKey, 1); }, 120'000));
  const double took_s = static_cast<double>(rig.fabric.now_ns() - t0) / 1e9;
  EXPECT_GE(took_s, 2.0) << "not before a lease ran out";
  std::printf("recovered all %u ports in %.1f s of simulated time (lease 2 s, 3 switch levels)\n", rig.fabric.node_count(),
              took_s);
}

}  // namespace
}  // namespace madengine
