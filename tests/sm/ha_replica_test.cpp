// State handed on: a standby's replication round against a real SaServer
// (in-process, loopback transport, RMPP reassembled by the engine's
// RmppReceiver) turns the master's services, groups and subscriptions into
// stores that answer the same records; errors fail the round with a reason.
#include "sm/ha/sa_replica.hpp"

#include <gtest/gtest.h>

#include "sa_fixture.hpp"

namespace madengine::sm::ha {
namespace {

using namespace madengine::sa::testing;
namespace a = wire::sa_attr;
namespace m = wire::method;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

wire::ServiceRecord service(std::uint64_t id, const wire::Gid& g, std::uint32_t lease_s) {
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(id);
  r.service_gid = g;
  r.service_pkey = wire::be16::from(0xffff);
  r.service_lease = wire::be32::from(lease_s);
  r.set_name("ha.replica");
  return r;
}

wire::McMemberRecord join(const wire::Gid& mgid, const wire::Gid& port, std::uint8_t state) {
  wire::McMemberRecord r{};
  r.mgid = mgid;
  r.port_gid = port;
  r.qkey = wire::be32::from(0x0b1b);
  r.pkey = wire::be16::from(0xffff);
  r.set_join_state(state);
  return r;
}

wire::InformInfo subscribe(std::uint16_t trap) {
  wire::InformInfo i{};
  i.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  i.is_generic = 1;
  i.subscribe = 1;
  i.type = wire::be16::from(wire::inform_type::kAll);
  i.set_trap_number(trap);
  i.set_producer_type(wire::kInformAllProducers);
  return i;
}

class HaReplica : public ::testing::Test {
 protected:
  HaReplica() : built_(build_snapshot(madengine::testing::fat_tree2(2, 1, 3))), h_(built_.snap) {
    lids_ = ca_lids(*built_.snap);
  }
  template <typename Rec>
  std::optional<Answer> ask(std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const Rec& r,
                            std::uint16_t from) {
    return h_.ask(sa_request(method, attr, mask, r, ++tid_, from));
  }
  wire::Gid gid(std::uint16_t lid) const { return gid_of(port_guid_of_lid(*built_.snap, lid)); }
  // One round as a standby at lids_[5] runs it.
  ReplicaRound run_round(std::uint64_t tid_base) {
    ReplicaRound round(tid_base, kTestSmKey, SaTarget{.lid = 1});
    for (MadBuf q : round.queries()) {
      q.addr.lid = lids_[5];  // the loopback's "from"
      const auto ans = h_.ask(q);
      EXPECT_TRUE(ans.has_value());
      if (!ans) continue;
      if (ans->rmpp) {
        EXPECT_TRUE(round.on_answer(ans->first, ans->payload));
      } else {
        EXPECT_TRUE(round.on_answer(ans->first, {}));
      }
    }
    return round;
  }
  LidOfGid lid_of() const {
    return [this](const wire::Gid& g) -> std::uint16_t {
      for (const std::uint16_t l : lids_)
        if (gid(l) == g) return l;
      return 0;
    };
  }

  Built built_;
  SaHarness h_;
  std::vector<std::uint16_t> lids_;
  std::uint64_t tid_ = 0x900;
};

TEST_F(HaReplica, EmptyMasterGivesEmptyImage) {
  ReplicaRound round = run_round(0x7000);
  ASSERT_TRUE(round.complete()) << round.error();
  const sa::SaStateImage img = round.image(lid_of(), 0);
  EXPECT_TRUE(img.services.empty());
  EXPECT_TRUE(img.groups.empty());
  EXPECT_TRUE(img.subscriptions.empty());
}

TEST_F(HaReplica, RoundKeepsServicesGroupsAndSubscriptions) {
  constexpr std::uint64_t kKey = scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease;
  ASSERT_EQ(ask(m::kSet, a::kServiceRecord, kKey, service(0x11, gid(lids_[0]), wire::kServiceLeaseInfinite), lids_[0])
                ->status(),
            0);
  ASSERT_EQ(ask(m::kSet, a::kServiceRecord, kKey, service(0x22, gid(lids_[1]), 60), lids_[1])->status(), 0);
  // Two groups: one created with a zero MGID (the SA picks MGID and MLID), one named.
  const wire::Gid named = {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0xffffffffull)};
  constexpr std::uint64_t kJoin = mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey | mcm::kPKey | mcm::kSl |
                                  mcm::kFlowLabel | mcm::kTClass;
  ASSERT_EQ(ask(m::kSet, a::kMcMemberRecord, kJoin, join(named, gid(lids_[0]), 1), lids_[0])->status(), 0);
  ASSERT_EQ(ask(m::kSet, a::kMcMemberRecord, kJoin, join(named, gid(lids_[2]), 2), lids_[2])->status(), 0);
  const auto created = ask(m::kSet, a::kMcMemberRecord, kJoin, join(wire::Gid{}, gid(lids_[3]), 1), lids_[3]);
  ASSERT_EQ(created->status(), 0);
  ASSERT_EQ(ask(m::kSet, a::kInformInfo, 0, subscribe(wire::trap::kGidInService), lids_[1])->status(), 0);
  ASSERT_EQ(ask(m::kSet, a::kInformInfo, 0, subscribe(wire::trap::kGidOutOfService), lids_[4])->status(), 0);

  ReplicaRound round = run_round(0x7100);
  ASSERT_TRUE(round.complete()) << round.error();
  const Nanos now = 5 * kNanosPerSecond;
  sa::ServiceStore services;
  sa::McastStore groups;
  sa::InformStore subs;
  EXPECT_EQ(sa::apply(round.image(lid_of(), now), services, groups, subs), 0u);

  // The standby's stores give the records the master gives.
  const auto master_sr = ask(m::kGetTable, a::kServiceRecord, 0, wire::ServiceRecord{}, lids_[5]);
  const auto want_sr = master_sr->records<wire::ServiceRecord>();
  ASSERT_EQ(services.size(), want_sr.size());
  for (std::size_t i = 0; i < want_sr.size(); ++i)
    EXPECT_EQ(std::memcmp(&(*services.view())[i].rec, &want_sr[i], sizeof(wire::ServiceRecord)), 0) << i;
  EXPECT_EQ((*services.view())[0].expires_ns, -1);
  EXPECT_EQ((*services.view())[1].expires_ns, now + 60 * kNanosPerSecond);
  EXPECT_EQ((*services.view())[1].owner, gid(lids_[1]));

  // With the SM_Key, as the replica asks: every member (untrusted requesters see one record per group).
  MadBuf mc_query = sa_request(m::kGetTable, a::kMcMemberRecord, 0, wire::McMemberRecord{}, ++tid_, lids_[5]);
  mc_query.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);
  const auto want_mc = h_.ask(mc_query)->records<wire::McMemberRecord>();
  ASSERT_EQ(want_mc.size(), 3u);
  ASSERT_EQ(groups.groups(), 2u);
  std::vector<wire::McMemberRecord> got_mc;
  for (const auto& g : *groups.view())
    for (const auto& mem : g.members) got_mc.push_back(sa::member_record(g, mem));
  ASSERT_EQ(got_mc.size(), want_mc.size());
  for (std::size_t i = 0; i < want_mc.size(); ++i)
    EXPECT_EQ(std::memcmp(&got_mc[i], &want_mc[i], sizeof(wire::McMemberRecord)), 0) << i;
  // MLIDs survive: the created group keeps the one the master allocated.
  const std::uint16_t created_mlid = created->record<wire::McMemberRecord>().mlid.get();
  bool found = false;
  for (const auto& g : *groups.view()) found = found || g.params.mlid.get() == created_mlid;
  EXPECT_TRUE(found);

  const auto want_ir = ask(m::kGetTable, a::kInformInfoRecord, 0, wire::InformInfoRecord{}, lids_[5])
                           ->records<wire::InformInfoRecord>();
  ASSERT_EQ(subs.size(), want_ir.size());
  ASSERT_EQ(want_ir.size(), 2u);
  for (std::size_t i = 0; i < want_ir.size(); ++i) {
    const auto got = sa::inform_record((*subs.view())[i]);
    EXPECT_EQ(std::memcmp(&got, &want_ir[i], sizeof(wire::InformInfoRecord)), 0) << i;
  }
  // Reports can be sent: the subscriber's LID is resolved.
  EXPECT_EQ((*subs.view())[0].addr.lid, lids_[1]);
  EXPECT_EQ((*subs.view())[1].addr.lid, lids_[4]);
}

TEST_F(HaReplica, ForeignTidsAndBadAnswersAreReported) {
  ReplicaRound round(0x500, 1, SaTarget{.lid = 1});
  MadBuf other{};
  other.as<wire::SaMad>().hdr.tid = wire::be64::from(0x999);
  EXPECT_FALSE(round.on_answer(other, {}));
  MadBuf bad{};
  bad.as<wire::SaMad>().hdr.tid = wire::be64::from(0xabcd'0000'0000'0501ull);  // high bits rewritten
  bad.as<wire::SaMad>().hdr.status = wire::be16::from(wire::sa_status::kReqInvalid);
  EXPECT_TRUE(round.on_answer(bad, {}));
  EXPECT_TRUE(round.failed());
  EXPECT_NE(round.error().find("MCMemberRecord"), std::string::npos);
  // A table whose AttributeOffset is shorter than the record.
  ReplicaRound r2(0x600, 1, SaTarget{.lid = 1});
  MadBuf shortr{};
  shortr.as<wire::SaMad>().hdr.tid = wire::be64::from(0x600);
  shortr.as<wire::SaMad>().attr_offset = wire::be16::from(2);  // 16 bytes < 176
  std::vector<std::uint8_t> payload(64, 0);
  EXPECT_TRUE(r2.on_answer(shortr, payload));
  EXPECT_TRUE(r2.failed());
  // Queries carry the SM_Key and ask for whole tables.
  const auto q = ReplicaRound(0x700, 0x77, SaTarget{.lid = 9, .sl = 1}).queries();
  EXPECT_EQ(q[0].as<wire::SaMad>().hdr.attr_id.get(), a::kServiceRecord);
  EXPECT_EQ(q[1].as<wire::SaMad>().hdr.attr_id.get(), a::kMcMemberRecord);
  EXPECT_EQ(q[2].as<wire::SaMad>().hdr.attr_id.get(), a::kInformInfoRecord);
  EXPECT_EQ(q[2].as<wire::SaMad>().hdr.tid.get(), 0x702u);
  EXPECT_EQ(q[0].as<wire::SaMad>().sm_key.get(), 0x77u);
  EXPECT_EQ(q[0].as<wire::SaMad>().hdr.method, m::kGetTable);
  EXPECT_EQ(q[0].addr.lid, 9);
  EXPECT_EQ(q[0].addr.sl, 1);
}

TEST(HaReregister, OnlyWhenStateCannotBeVouchedFor) {
  EXPECT_TRUE(must_ask_clients_to_reregister(false, 0, kNanosPerSecond));
  EXPECT_FALSE(must_ask_clients_to_reregister(true, kNanosPerSecond / 2, kNanosPerSecond));
  EXPECT_TRUE(must_ask_clients_to_reregister(true, 2 * kNanosPerSecond, kNanosPerSecond));
  EXPECT_TRUE(must_ask_clients_to_reregister(true, -1, kNanosPerSecond));
}

}  // namespace
}  // namespace madengine::sm::ha
