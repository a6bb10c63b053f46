// Partitions end to end on the sim (label sim): the SM programs what a
// partitions.conf says (CA ports, switch ports toward them, enforcement),
// the SA answers PathRecords and MCMember joins by it, an unchanged re-sweep
// writes nothing and a reload writes only the blocks that change.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sim/generators.hpp"
#include "sim_sa_rig.hpp"
#include "sm/partitions/partition_config.hpp"

namespace madengine {
namespace {

namespace a = wire::sa_attr;
namespace m = wire::method;
namespace cm = wire::path_record_cm;
namespace mcm = wire::mc_member_record_cm;
namespace st = wire::sa_status;
using testing::bytes;
using testing::records;

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::shared_ptr<const sm::PartitionConfig> parse(const std::string& text) {
  sm::FileIssue err;
  auto c = sm::parse_partition_config(text, "partitions.conf", err);
  EXPECT_TRUE(c.has_value()) << err.text();
  return c ? std::make_shared<const sm::PartitionConfig>(std::move(*c)) : nullptr;
}

struct Fixture {
  testing::SimSaRig rig{sim::make_fat_tree_2level({.k = 4}), 3};
  std::uint32_t a = rig.fabric.find_node("host-0-0");  // the SM, full member of storage (SELF)
  std::uint32_t b = rig.fabric.find_node("host-1-0");  // full member
  std::uint32_t c = rig.fabric.find_node("host-2-1");  // limited member
  std::uint32_t d = rig.fabric.find_node("host-3-0");  // not a member
  std::uint32_t e = rig.fabric.find_node("host-3-1");  // limited member
  node::InternalNode* sm = nullptr;

  sim::PortIdx port(std::uint32_t n) const { return rig.fabric.port(n, 1); }
  std::uint64_t guid(std::uint32_t n) const { return rig.fabric.port_guid(port(n)); }
  std::uint16_t lid(std::uint32_t n) const { return rig.fabric.lid(port(n)); }
  std::string storage(bool with_c) const {
    return "Default=0x7fff, ipoib : ALL=full ;\n"
           "storage=0x8001, ipoib, mtu=4 : SELF=full, " + hex(guid(b)) + "=full,\n   " +
           (with_c ? hex(guid(c)) + ", " : std::string()) + hex(guid(e)) + " ;\n";
  }
  void start() {
    node::NodeConfig cfg = testing::sim_node_config();
    cfg.sm.sweep_interval_ms = 200;
    sm = &rig.add(a, [p = parse(storage(true))](sm::SmConfig& s) { s.partitions = p; }, false, cfg);
    ASSERT_TRUE(rig.run_until([&] { return sm->sm().status().subnet_up; }, 30'000));
  }
  std::vector<std::uint16_t> table(sim::PortIdx p, std::size_t n = 4) const {
    const auto t = rig.fabric.pkey_table(p);  // the default alone until an SM wrote one
    std::vector<std::uint16_t> v(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(std::min(n, t.size())));
    v.resize(n, wire::kInvalidPKey);
    return v;
  }
  // A PathRecord Get from `host`; the answer's P_Key, or 0 with the status in `status`.
  std::uint16_t path(sim::Host& host, std::uint32_t from, std::uint32_t to, std::uint16_t pkey, std::uint16_t& status) {
    wire::PathRecord q{};
    q.slid = wire::be16::from(lid(from));
    q.dlid = wire::be16::from(lid(to));
    q.pkey = wire::be16::from(pkey);
    const auto r = rig.ask(host, m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid | (pkey != 0 ? cm::kPKey : 0), bytes(q));
    status = r ? r->hdr().status.get() : 0xffff;
    if (!r || status != 0) return 0;
    wire::PathRecord got;
    std::memcpy(&got, r->as<wire::SaMad>().data.data(), sizeof got);
    return got.pkey.get();
  }
};

using T = std::vector<std::uint16_t>;

TEST(PartitionsSim, TablesEnforcementPathsAndJoinsFollowTheFile) {
  Fixture fx;
  fx.start();
  const auto& f = fx.rig.fabric;
  const auto first = fx.sm->sm().status().last_heavy;
  EXPECT_EQ(first.bringup.errors, 0u);
  EXPECT_GT(first.bringup.pkey_sets, 0u);
  // CA ports: the default partition at index 0, storage after it.
  EXPECT_EQ(fx.table(fx.port(fx.a)), (T{0xffff, 0x8001, 0, 0}));
  EXPECT_EQ(fx.table(fx.port(fx.b)), (T{0xffff, 0x8001, 0, 0}));
  EXPECT_EQ(fx.table(fx.port(fx.c)), (T{0xffff, 0x0001, 0, 0}));
  EXPECT_EQ(fx.table(fx.port(fx.d)), (T{0xffff, 0, 0, 0}));
  // Switch ports toward them hold the same keys and enforce; ports between switches do not.
  EXPECT_EQ(fx.table(f.peer(fx.port(fx.c))), (T{0xffff, 0x0001, 0, 0}));
  EXPECT_EQ(f.link_state(f.peer(fx.port(fx.c))).part_enforce, 3);
  const std::uint32_t leaf = f.node_of(f.peer(fx.port(fx.c)));
  for (std::uint8_t p = 1; p <= f.num_ports(leaf); ++p) {
    const sim::PortIdx sp = f.port(leaf, p);
    if (f.peer(sp) == sim::kNoPortIdx) continue;
    EXPECT_EQ(f.link_state(sp).part_enforce, f.is_switch(f.node_of(f.peer(sp))) ? 0 : 3) << int(p);
  }

  // PathRecords (OpenSM's choice: the first shared partition in its order, as the source holds it).
  sim::Host hc(fx.rig.fabric, fx.c), hd(fx.rig.fabric, fx.d);
  std::uint16_t status = 0;
  EXPECT_EQ(fx.path(hd, fx.b, fx.c, 0, status), 0x8001);
  EXPECT_EQ(fx.path(hd, fx.c, fx.b, 0, status), 0x0001);
  EXPECT_EQ(fx.path(hd, fx.c, fx.e, 0, status), 0xffff) << "two limited members share only the default partition";
  EXPECT_EQ(fx.path(hd, fx.c, fx.e, 0x8001, status), 0);
  EXPECT_EQ(status, st::kNoRecords);
  EXPECT_EQ(fx.path(hd, fx.b, fx.d, 0x8001, status), 0) << "a member and a non-member";
  EXPECT_EQ(status, st::kNoRecords);
  EXPECT_EQ(fx.path(hd, fx.b, fx.d, 0, status), 0xffff);
  EXPECT_EQ(fx.path(hd, fx.b, fx.c, 0x0001, status), 0x0001) << "the requested P_Key, as asked";

  // Groups: both broadcast groups exist before anyone joins; a port sees
  // only its partitions' groups.
  EXPECT_EQ(fx.sm->sa().groups().groups(), 2u);
  const auto seen_by_c = fx.rig.ask(hc, m::kGetTable, a::kMcMemberRecord, 0, bytes(wire::McMemberRecord{}));
  ASSERT_TRUE(seen_by_c);
  EXPECT_EQ(records<wire::McMemberRecord>(*seen_by_c).size(), 2u);
  const auto seen_by_d = fx.rig.ask(hd, m::kGetTable, a::kMcMemberRecord, 0, bytes(wire::McMemberRecord{}));
  ASSERT_TRUE(seen_by_d);
  const auto groups_d = records<wire::McMemberRecord>(*seen_by_d);
  ASSERT_EQ(groups_d.size(), 1u);
  EXPECT_EQ(groups_d[0].pkey.get(), 0xffff);
  // Joins: the storage broadcast group takes C (limited) and refuses D.
  auto join = [&](sim::Host& h, std::uint32_t node) {
    wire::McMemberRecord j{};
    j.mgid = {wire::be64::from(0xff12401b80010000ull), wire::be64::from(0xffffffffull)};
    j.port_gid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(fx.guid(node))};
    j.set_join_state(wire::join_state::kFullMember);
    const auto r = fx.rig.ask(h, m::kSet, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, bytes(j));
    return r ? r->hdr().status.get() : 0xffff;
  };
  EXPECT_EQ(join(hc, fx.c), 0);
  EXPECT_EQ(join(hd, fx.d), st::kReqInvalid);

  // An unchanged fabric: a heavy sweep writes no P_Key block.
  fx.sm->sm().request_heavy_sweep();
  ASSERT_TRUE(fx.rig.run_until([&] { return fx.sm->sm().status().heavy_sweeps >= 2; }, 10'000));
  EXPECT_EQ(fx.sm->sm().status().last_heavy.bringup.pkey_sets, 0u);
  EXPECT_EQ(fx.sm->sm().status().last_heavy.bringup.pkey_reads, 0u);

  // A reload without C in storage: C's block 0 and its switch port's, nothing else.
  fx.sm->sm().set_partitions(parse(fx.storage(false)));
  ASSERT_TRUE(fx.rig.run_until([&] { return fx.sm->sm().status().heavy_sweeps >= 3; }, 10'000));
  const auto reload = fx.sm->sm().status().last_heavy;
  EXPECT_EQ(reload.bringup.errors, 0u);
  EXPECT_EQ(reload.bringup.pkey_sets, 2u);
  EXPECT_EQ(fx.table(fx.port(fx.c)), (T{0xffff, 0, 0, 0}));
  EXPECT_EQ(fx.table(f.peer(fx.port(fx.c))), (T{0xffff, 0, 0, 0}));
  EXPECT_EQ(fx.table(fx.port(fx.e)), (T{0xffff, 0x0001, 0, 0})) << "other ports keep their indexes";
  EXPECT_EQ(fx.path(hd, fx.c, fx.b, 0x8001, status), 0);
  EXPECT_EQ(status, st::kNoRecords);
}

// A host that reset (its tables back to the default partition alone) and a
// switch that rebooted get their P_Key tables again: the SM's copy of what it
// wrote once hid both, and the host stayed out of its partition.
TEST(PartitionsSim, ANodeThatResetGetsItsTablesAgain) {
  Fixture fx;
  fx.start();
  auto& f = fx.rig.fabric;
  const sim::PortIdx leaf_port = f.peer(fx.port(fx.c));
  const std::uint32_t leaf = f.node_of(leaf_port);
  const auto sweeps = fx.sm->sm().status().heavy_sweeps;
  f.reset_node(fx.b);
  f.reset_node(leaf);
  ASSERT_EQ(fx.table(fx.port(fx.b)), (T{0xffff, 0, 0, 0})) << "a reset SMA holds the default partition";
  ASSERT_TRUE(fx.rig.run_until([&] {
    return fx.sm->sm().status().heavy_sweeps > sweeps && fx.table(fx.port(fx.b)) == T{0xffff, 0x8001, 0, 0} &&
           fx.table(leaf_port) == T{0xffff, 0x0001, 0, 0};
  }, 10'000)) << "host " << std::hex << fx.table(fx.port(fx.b))[1] << ", switch port " << fx.table(leaf_port)[1];
  EXPECT_EQ(f.link_state(leaf_port).part_enforce, 3);
}

TEST(PartitionsSim, EnforcementOffLeavesSwitchTablesAndBits) {
  Fixture fx;
  node::NodeConfig cfg = testing::sim_node_config();
  cfg.sm.part_enforce = "off";
  fx.sm = &fx.rig.add(fx.a, [p = parse(fx.storage(true))](sm::SmConfig& s) { s.partitions = p; }, false, cfg);
  ASSERT_TRUE(fx.rig.run_until([&] { return fx.sm->sm().status().subnet_up; }, 30'000));
  const auto& f = fx.rig.fabric;
  EXPECT_EQ(fx.table(fx.port(fx.c)), (T{0xffff, 0x0001, 0, 0}));
  EXPECT_EQ(fx.table(f.peer(fx.port(fx.c))), (T{0xffff, 0, 0, 0}));
  EXPECT_EQ(f.link_state(f.peer(fx.port(fx.c))).part_enforce, 0);
}

}  // namespace
}  // namespace madengine
