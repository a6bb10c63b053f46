// SA state handed on at failover, with full SubnetManagers and
// SaServers on one sim fabric (label sim, deterministic): a host registers a
// ServiceRecord with a lease and joins a multicast group at the master; the
// standby replicates; the master's node dies; the standby takes over and its
// SA answers the same service and the same group (MGID, MLID, members); its
// mastership does not ask clients to reregister. Control: a standby without
// replication takes over asking them to.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"
#include "sim_sa_rig.hpp"

namespace madengine {
namespace {

namespace a = wire::sa_attr;
namespace m = wire::method;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

using Node = node::InternalNode;
using testing::bytes;
using testing::records;

struct Rig : testing::SimSaRig {
  explicit Rig(const sim::Topology& t) : SimSaRig(t, 11) {}
  Node& add(std::uint32_t node, std::uint8_t prio, bool replicate) {
    node::NodeConfig cfg = testing::sim_node_config();
    cfg.sm.priority = prio;
    cfg.sm.sm_key = 1;
    cfg.sm.ha_poll_interval_ms = 100;
    cfg.sm.ha_poll_retries = 3;
    cfg.sm.sweep_interval_ms = 200;
    cfg.sm.ha_replica_interval_ms = 200;
    return SimSaRig::add(node, {}, replicate, cfg);
  }
};

wire::Gid port_gid(const sim::Fabric& f, std::uint32_t node) {
  return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(f.port_guid(f.port(node, 1)))};
}

const wire::Gid kMgid = {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0x0000000000000abcull)};

bool is(const sm::SubnetManager& s, wire::SmState st) { return s.status().state == st; }

struct Registered {
  wire::ServiceRecord service{};
  wire::McMemberRecord member{};
};

// The master is up, the standby STANDBY; the host registers a service (lease
// 600 s) and joins kMgid.
Registered register_at_master(Rig& rig, sim::Host& host, std::uint32_t host_node) {
  Registered out;
  wire::ServiceRecord sr{};
  sr.service_id = wire::be64::from(0x1000'0000'0000'0042ull);
  sr.service_gid = port_gid(rig.fabric, host_node);
  sr.service_pkey = wire::be16::from(0xffff);
  sr.service_lease = wire::be32::from(600);
  sr.set_name("ha.state.sim");
  const auto set = rig.ask(host, m::kSet, a::kServiceRecord,
                           scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease | scm::kServiceName,
                           bytes(sr));
  EXPECT_TRUE(set.has_value());
  if (!set) return out;
  EXPECT_EQ(set->hdr().status.get(), 0);
  std::memcpy(&out.service, set->as<wire::SaMad>().data.data(), sizeof(out.service));
  wire::McMemberRecord j{};
  j.mgid = kMgid;
  j.port_gid = port_gid(rig.fabric, host_node);
  j.qkey = wire::be32::from(0x0b1b);
  j.pkey = wire::be16::from(0xffff);
  j.set_join_state(1);
  const auto joined = rig.ask(host, m::kSet, a::kMcMemberRecord,
                              mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey | mcm::kPKey | mcm::kSl |
                                  mcm::kFlowLabel | mcm::kTClass,
                              bytes(j));
  EXPECT_TRUE(joined.has_value());
  if (!joined) return out;
  EXPECT_EQ(joined->hdr().status.get(), 0);
  std::memcpy(&out.member, joined->as<wire::SaMad>().data.data(), sizeof(out.member));
  return out;
}

TEST(HaStateSim, TakeoverKeepsServicesAndGroupsWithoutReregistration) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}));
  const std::uint32_t master_node = rig.fabric.find_node("host-0-0");
  const std::uint32_t host_node = rig.fabric.find_node("host-5-1");
  Node& hi = rig.add(master_node, 9, true);
  Node& lo = rig.add(rig.fabric.find_node("host-3-1"), 2, true);
  ASSERT_TRUE(rig.run_until(
      [&] { return hi.sm().status().subnet_up && is(lo.sm(), wire::SmState::kStandby); }, 30'000));
  sim::Host host(rig.fabric, host_node);
  const Registered reg = register_at_master(rig, host, host_node);
  ASSERT_NE(reg.member.mlid.get(), 0);
  // A round that started after the registration has completed (the one in
  // flight at that moment may not have it).
  const std::uint64_t complete = lo.sm().status().replica.complete;
  ASSERT_TRUE(rig.run_until([&] { return lo.sm().status().replica.complete >= complete + 2; }, 5'000))
      << "rounds " << lo.sm().status().replica.rounds << " failed " << lo.sm().status().replica.failed << " timed out "
      << lo.sm().status().replica.timed_out;
  EXPECT_EQ(lo.sm().status().replica.failed, 0u);
  EXPECT_EQ(hi.sm().status().reregister_masterships, 1u);  // a fresh subnet: clients register anyway

  rig.fabric.kill_node(master_node);
  ASSERT_TRUE(rig.run_until([&] { return is(lo.sm(), wire::SmState::kMaster) && lo.sm().status().subnet_up; }, 30'000));
  EXPECT_EQ(lo.sm().status().sa_state_handed_on, 1u);
  EXPECT_EQ(lo.sm().status().vouched_masterships, 1u);
  EXPECT_EQ(lo.sm().status().reregister_masterships, 0u);
  EXPECT_EQ(lo.sm().status().last_heavy.bringup.client_reregisters, 0u);
  EXPECT_EQ(lo.sm().status().last_heavy.lids_new, 0u);

  // The new master's SA (the host's SM LID now points at it) answers the same records.
  const std::uint16_t lo_lid = rig.fabric.lid(rig.fabric.port(rig.fabric.find_node("host-3-1"), 1));
  ASSERT_TRUE(rig.run_until([&] { return rig.fabric.local_port(host.endpoint()).sm_lid == lo_lid; }, 5'000, &host));
  const auto srs = rig.ask(host, m::kGetTable, a::kServiceRecord, 0, bytes(wire::ServiceRecord{}));
  ASSERT_TRUE(srs.has_value());
  ASSERT_EQ(srs->hdr().status.get(), 0);
  const auto got_sr = records<wire::ServiceRecord>(*srs);
  ASSERT_EQ(got_sr.size(), 1u);
  EXPECT_EQ(got_sr[0].service_id.get(), reg.service.service_id.get());
  EXPECT_EQ(got_sr[0].service_gid, reg.service.service_gid);
  EXPECT_EQ(std::memcmp(got_sr[0].service_name.data(), "ha.state.sim", 13), 0);
  EXPECT_GT(got_sr[0].service_lease.get(), 0u);  // the lease runs on
  EXPECT_LE(got_sr[0].service_lease.get(), 600u);

  wire::McMemberRecord q{};
  q.mgid = kMgid;
  // With the SM_Key: an untrusted requester would not see who the members are.
  const auto mcs = rig.ask(host, m::kGetTable, a::kMcMemberRecord, mcm::kMGid, bytes(q), 1000, 1);
  ASSERT_TRUE(mcs.has_value());
  ASSERT_EQ(mcs->hdr().status.get(), 0);
  const auto got_mc = records<wire::McMemberRecord>(*mcs);
  ASSERT_EQ(got_mc.size(), 1u);
  EXPECT_EQ(got_mc[0].mgid, kMgid);
  EXPECT_EQ(got_mc[0].mlid.get(), reg.member.mlid.get());
  EXPECT_EQ(got_mc[0].port_gid, port_gid(rig.fabric, host_node));
  EXPECT_EQ(got_mc[0].join_state(), 1);
  // The new master programmed the group's multicast tree from the restored group.
  // Beside it, the default partition's IPoIB broadcast group, which every
  // master creates (no partitions file: "Default=0x7fff,ipoib : ALL=full").
  EXPECT_EQ(lo.sa().groups().groups(), 2u);
  EXPECT_GT(lo.sm().status().last_heavy.mft_blocks_written, 0u);
}

TEST(HaStateSim, StandbyWithoutReplicaAsksClientsToReregister) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}));
  const std::uint32_t master_node = rig.fabric.find_node("host-0-0");
  Node& hi = rig.add(master_node, 9, true);
  Node& lo = rig.add(rig.fabric.find_node("host-3-1"), 2, false);
  ASSERT_TRUE(rig.run_until(
      [&] { return hi.sm().status().subnet_up && is(lo.sm(), wire::SmState::kStandby); }, 30'000));
  const std::uint32_t host_node = rig.fabric.find_node("host-5-1");
  sim::Host host(rig.fabric, host_node);
  register_at_master(rig, host, host_node);
  rig.run_until([] { return false; }, 500);
  EXPECT_EQ(lo.sm().status().replica.rounds, 0u);
  rig.fabric.kill_node(master_node);
  ASSERT_TRUE(rig.run_until([&] { return is(lo.sm(), wire::SmState::kMaster) && lo.sm().status().subnet_up; }, 30'000));
  EXPECT_EQ(lo.sm().status().sa_state_handed_on, 0u);
  EXPECT_EQ(lo.sm().status().reregister_masterships, 1u);
  EXPECT_EQ(lo.sm().status().vouched_masterships, 0u);
  EXPECT_EQ(lo.sa().services().size(), 0u);  // nothing was handed on: clients must register again
}

}  // namespace
}  // namespace madengine
