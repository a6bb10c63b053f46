// SA server, mutable state: ServiceRecord Set/Get/Delete with lease expiry
// on a ManualClock and the ownership rule; MCMemberRecord create (MGID and
// MLID allocation), join, leave and the IPoIB broadcast group; InformInfo
// subscribe and Reports (traps 64/65 of the store's epoch changes, each
// once; forwarded traps)
// re-sent until the ReportResp; the multicast provider for the SM.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "sa_fixture.hpp"

namespace madengine::sa {
namespace {

using namespace testing;
namespace a = wire::sa_attr;
namespace m = wire::method;
namespace st = wire::sa_status;
namespace scm = wire::service_record_cm;
namespace mcm = wire::mc_member_record_cm;

class SaState : public ::testing::Test {
 protected:
  SaState() : built_(build_snapshot(madengine::testing::fat_tree2(2, 1, 3))), h_(built_.snap) {
    lids_ = ca_lids(*built_.snap);
  }
  template <typename Rec>
  std::optional<Answer> ask(std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const Rec& r,
                            std::uint16_t from) {
    return h_.ask(sa_request(method, attr, mask, r, ++tid_, from));
  }
  wire::Gid gid(std::uint16_t lid) const { return gid_of(port_guid_of_lid(*built_.snap, lid)); }

  Built built_;
  SaHarness h_;
  std::vector<std::uint16_t> lids_;
  std::uint64_t tid_ = 0x200;
};

wire::ServiceRecord service(std::uint64_t id, const wire::Gid& g, std::uint32_t lease_s, std::string_view name) {
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(id);
  r.service_gid = g;
  r.service_pkey = wire::be16::from(0xffff);
  r.service_lease = wire::be32::from(lease_s);
  r.set_name(name);
  return r;
}

constexpr std::uint64_t kSrKey = scm::kServiceId | scm::kServiceGid | scm::kServicePKey;

// osmtest's registrations: without a ServiceP_Key the record's P_Key stands
// (zero), without a ServiceLease the lease is infinite (as OpenSM); a
// ServiceID and ServiceGID are needed.
TEST_F(SaState, ServiceRecordSetWithoutPKeyOrLease) {
  auto r1 = service(0x3000, gid(lids_[0]), 5, "no.pkey");
  r1.service_pkey = wire::be16::from(0);
  auto r = ask(m::kSet, a::kServiceRecord, scm::kServiceId | scm::kServiceGid | scm::kServiceName, r1, lids_[0]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::ServiceRecord>().service_lease.get(), wire::kServiceLeaseInfinite);
  EXPECT_EQ(r->record<wire::ServiceRecord>().service_pkey.get(), 0);
  EXPECT_EQ(ask(m::kSet, a::kServiceRecord, scm::kServiceId | scm::kServiceName, r1, lids_[0])->status(),
            st::kReqInsufficientComponents);
}

// C15-0.1.5: a request with an SM_Key that is neither zero nor the SM's is
// discarded unanswered (osmtest's "wrong SM_Key ignored"); zero and the SM's
// key are answered.
TEST_F(SaState, WrongSmKeyIsDiscarded) {
  wire::PortInfoRecord q{};
  MadBuf req = sa_request(m::kGetTable, a::kPortInfoRecord, 0, q, ++tid_, lids_[0]);
  EXPECT_TRUE(h_.ask(req));
  req = sa_request(m::kGetTable, a::kPortInfoRecord, 0, q, ++tid_, lids_[0]);
  req.as<wire::SaMad>().sm_key = wire::be64::from(9999);
  EXPECT_FALSE(h_.ask(req));
  req.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);  // the same TID retried with the right key
  EXPECT_TRUE(h_.ask(req));
}

TEST_F(SaState, ServiceRecordRegisterFindExpire) {
  const auto r1 = service(0x1000, gid(lids_[0]), 10, "madengine.test");
  auto r = ask(m::kSet, a::kServiceRecord, kSrKey | scm::kServiceLease | scm::kServiceName, r1, lids_[0]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->first.hdr().method, m::kGetResp);
  const auto r2 = service(0x2000, gid(lids_[1]), wire::kServiceLeaseInfinite, "forever");
  ASSERT_EQ(ask(m::kSet, a::kServiceRecord, kSrKey, r2, lids_[1])->status(), 0);

  // Another client finds it by ID and by name.
  wire::ServiceRecord q{};
  q.service_id = wire::be64::from(0x1000);
  r = ask(m::kGet, a::kServiceRecord, scm::kServiceId, q, lids_[2]);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::ServiceRecord>().name(), "madengine.test");
  q.set_name("forever");
  r = ask(m::kGetTable, a::kServiceRecord, scm::kServiceName, q, lids_[2]);
  ASSERT_EQ(r->records<wire::ServiceRecord>().size(), 1u);
  r = ask(m::kGetTable, a::kServiceRecord, 0, q, lids_[2]);
  EXPECT_EQ(r->records<wire::ServiceRecord>().size(), 2u);

  // Another requester may not replace or delete it.
  auto evil = r1;
  evil.set_name("hijack");
  EXPECT_EQ(ask(m::kSet, a::kServiceRecord, kSrKey, evil, lids_[2])->status(), st::kReqDenied);
  EXPECT_EQ(ask(m::kDelete, a::kServiceRecord, scm::kServiceId, r1, lids_[2])->status(), st::kReqDenied);

  // The lease runs out 10 s later: the timer removes it, the other stays.
  h_.clock().advance_ns(9 * kNanosPerSecond);
  h_.pump();
  EXPECT_EQ(h_.server().services().size(), 2u);
  h_.clock().advance_ns(2 * kNanosPerSecond);
  h_.pump();
  EXPECT_EQ(h_.server().services().size(), 1u);
  EXPECT_EQ(h_.server().counters().lease_expired, 1u);
  q.service_id = wire::be64::from(0x1000);
  EXPECT_EQ(ask(m::kGet, a::kServiceRecord, scm::kServiceId, q, lids_[2])->status(), st::kNoRecords);

  // The owner deletes its own.
  r = ask(m::kDelete, a::kServiceRecord, scm::kServiceId, r2, lids_[1]);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->first.hdr().method, m::kDeleteResp);
  EXPECT_EQ(h_.server().services().size(), 0u);
  // A registration without its key components.
  EXPECT_EQ(ask(m::kSet, a::kServiceRecord, scm::kServiceId, r2, lids_[1])->status(), st::kReqInsufficientComponents);
}

// A ServiceKey goes only to trusted requesters (IBA 15.2.5.14, as OpenSM):
// with the SM_Key the record comes back whole, without it the key is zero.
TEST_F(SaState, ServiceKeyOnlyWithTheSmKey) {
  auto r1 = service(0x3000, gid(lids_[0]), wire::kServiceLeaseInfinite, "keyed");
  r1.service_key.fill(0x5c);
  // The SetResp hides it too (osmtest's service flow checks it reads zero).
  const auto set = ask(m::kSet, a::kServiceRecord, kSrKey | scm::kServiceName | scm::kServiceKey, r1, lids_[0]);
  ASSERT_EQ(set->status(), 0);
  const auto set_key = set->record<wire::ServiceRecord>().service_key;
  EXPECT_TRUE(std::all_of(set_key.begin(), set_key.end(), [](std::uint8_t b) { return b == 0; }));
  wire::ServiceRecord q{};
  q.service_id = wire::be64::from(0x3000);
  const auto plain = ask(m::kGetTable, a::kServiceRecord, scm::kServiceId, q, lids_[1]);
  ASSERT_TRUE(plain);
  ASSERT_EQ(plain->records<wire::ServiceRecord>().size(), 1u);
  const auto hidden = plain->records<wire::ServiceRecord>()[0].service_key;  // a copy: records() is a temporary
  EXPECT_TRUE(std::all_of(hidden.begin(), hidden.end(), [](std::uint8_t b) { return b == 0; }));
  EXPECT_EQ(plain->records<wire::ServiceRecord>()[0].name(), "keyed") << "the rest of the record is there";
  MadBuf req = sa_request(m::kGetTable, a::kServiceRecord, scm::kServiceId, q, ++tid_, lids_[1]);
  req.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);
  const auto trusted = h_.ask(req);
  ASSERT_TRUE(trusted);
  ASSERT_EQ(trusted->records<wire::ServiceRecord>().size(), 1u);
  EXPECT_EQ(trusted->records<wire::ServiceRecord>()[0].service_key, r1.service_key);
}

wire::McMemberRecord ipoib_join(const wire::Gid& port) {
  // What IPoIB sends for the IPv4 broadcast group of the default partition.
  wire::McMemberRecord r{};
  r.mgid = {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0x00000000ffffffffull)};
  r.port_gid = port;
  r.qkey = wire::be32::from(0x0b1b);
  r.pkey = wire::be16::from(0xffff);
  r.set_mtu_selector(wire::selector::kLessThan);
  r.set_mtu(5);  // < 4096: 2048
  r.set_rate_selector(wire::selector::kExactly);
  r.set_rate(wire::rate_code::k10Gbps);
  r.set_sl(0);
  r.set_flow_label(0);
  r.set_join_state(wire::join_state::kFullMember);
  return r;
}

constexpr std::uint64_t kIpoibMask = mcm::kMGid | mcm::kPortGid | mcm::kQKey | mcm::kMtuSelector | mcm::kMtu |
                                     mcm::kTClass | mcm::kPKey | mcm::kRateSelector | mcm::kRate | mcm::kSl |
                                     mcm::kFlowLabel | mcm::kJoinState;

// IPoIB's send-only joins (IBA 1.3 SendOnlyFullMember) may create a group,
// as OpenSM lets them; a non-member may not. ClassPortInfo says so.
TEST_F(SaState, SendOnlyFullMemberCreatesAGroup) {
  auto r = ask(m::kGet, a::kClassPortInfo, 0, wire::ClassPortInfo{}, lids_[0]);
  ASSERT_TRUE(r);
  EXPECT_NE(r->record<wire::ClassPortInfo>().cap_mask2() & wire::cpi_cap2::kSaSendOnlyFullMember, 0u);
  auto join = ipoib_join(gid(lids_[0]));
  join.mgid = {wire::be64::from(0xff12601bffff0000ull), wire::be64::from(0x0000000000000001ull)};
  join.set_join_state(wire::join_state::kNonMember);
  r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask, join, lids_[0]);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid) << "a non-member creates no group";
  join.set_join_state(wire::join_state::kSendOnlyFullMember);
  r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask, join, lids_[0]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::McMemberRecord>().join_state(), wire::join_state::kSendOnlyFullMember);
  EXPECT_GE(r->record<wire::McMemberRecord>().mlid.get(), 0xc000);
}

TEST_F(SaState, IpoibBroadcastGroupCreateJoinLeave) {
  int changes = 0;
  h_.server().mcast_provider().set_listener([](void* arg) noexcept { ++*static_cast<int*>(arg); }, &changes);
  auto r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask, ipoib_join(gid(lids_[0])), lids_[0]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  const auto g = r->record<wire::McMemberRecord>();
  EXPECT_EQ(g.mgid.prefix.get(), 0xff12401bffff0000ull);
  EXPECT_EQ(g.mlid.get(), 0xc000);
  EXPECT_EQ(g.qkey.get(), 0x0b1bu);
  EXPECT_EQ(g.mtu(), 4);
  EXPECT_EQ(g.rate(), wire::rate_code::k10Gbps);
  EXPECT_EQ(g.join_state(), wire::join_state::kFullMember);

  // A second host joins with only what it must name; a third as a non-member.
  wire::McMemberRecord j{};
  j.mgid = g.mgid;
  j.port_gid = gid(lids_[1]);
  j.set_join_state(wire::join_state::kFullMember);
  r = ask(m::kSet, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, j, lids_[1]);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::McMemberRecord>().mlid.get(), 0xc000);
  j.port_gid = gid(lids_[2]);
  j.set_join_state(wire::join_state::kNonMember);
  ASSERT_EQ(ask(m::kSet, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, j, lids_[2])->status(), 0);
  // A wrong Q_Key is refused.
  j.qkey = wire::be32::from(0x1234);
  EXPECT_EQ(ask(m::kSet, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey, j, lids_[2])->status(),
            st::kReqInvalid);
  // Joining for another port is a proxy join, told from the requester's
  // port as OpenSM does (osmtest joins so without the ProxyJoin bit); the
  // proxy may leave it again.
  const std::uint64_t jmask = mcm::kMGid | mcm::kPortGid | mcm::kJoinState;
  j.port_gid = gid(lids_[3]);
  r = ask(m::kSet, a::kMcMemberRecord, jmask, j, lids_[2]);
  ASSERT_EQ(r->status(), 0);
  EXPECT_TRUE(r->record<wire::McMemberRecord>().proxy_join());
  EXPECT_EQ(ask(m::kDelete, a::kMcMemberRecord, jmask, j, lids_[2])->status(), 0);
  // A membership a port made itself is not another port's to change or leave.
  j.port_gid = gid(lids_[1]);
  EXPECT_EQ(ask(m::kSet, a::kMcMemberRecord, jmask, j, lids_[2])->status(), st::kReqInvalid);
  j.set_join_state(wire::join_state::kFullMember);
  EXPECT_EQ(ask(m::kDelete, a::kMcMemberRecord, jmask, j, lids_[2])->status(), st::kReqInvalid);
  // Leaving a bit the member never joined with is refused (o15-0.1.14).
  j.set_join_state(wire::join_state::kFullMember | wire::join_state::kNonMember);
  EXPECT_EQ(ask(m::kDelete, a::kMcMemberRecord, jmask, j, lids_[1])->status(), st::kReqInvalid);

  // With the SM_Key (saquery -m --smkey, the HA replica): one record per
  // member. Without (saquery -g / -m): one per group, members hidden (IBA
  // 15.2.5.17); a PortGID component still finds the groups it is in.
  MadBuf trusted = sa_request(m::kGetTable, a::kMcMemberRecord, mcm::kMGid, g, ++tid_, lids_[4]);
  trusted.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);
  r = h_.ask(trusted);
  const auto members = r->records<wire::McMemberRecord>();
  ASSERT_EQ(members.size(), 3u);
  std::set<std::uint64_t> member_guids;
  for (const auto& mem : members) member_guids.insert(mem.port_gid.guid.get());
  EXPECT_EQ(member_guids.size(), 3u);
  r = ask(m::kGetTable, a::kMcMemberRecord, mcm::kMGid, g, lids_[4]);
  const auto shown = r->records<wire::McMemberRecord>();
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].mlid.get(), 0xc000);
  EXPECT_EQ(shown[0].port_gid, wire::Gid{});
  EXPECT_EQ(shown[0].join_state(), 0);
  EXPECT_FALSE(shown[0].proxy_join());
  wire::McMemberRecord by_port{};
  by_port.port_gid = gid(lids_[1]);
  EXPECT_EQ(ask(m::kGetTable, a::kMcMemberRecord, mcm::kPortGid, by_port, lids_[4])->records<wire::McMemberRecord>().size(), 1u);
  by_port.port_gid = gid(lids_[4]);  // in no group
  EXPECT_EQ(ask(m::kGetTable, a::kMcMemberRecord, mcm::kPortGid, by_port, lids_[4])->records<wire::McMemberRecord>().size(), 0u);
  h_.pump();
  auto groups = h_.server().mcast_provider().groups();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].mlid, 0xc000);
  EXPECT_EQ(groups[0].member_port_guids.size(), 3u);
  EXPECT_GE(changes, 3);

  // Leave: the members go, then the group.
  for (int i = 0; i < 3; ++i) {
    wire::McMemberRecord l{};
    l.mgid = g.mgid;
    l.port_gid = gid(lids_[i]);
    l.set_join_state(i == 2 ? wire::join_state::kNonMember : wire::join_state::kFullMember);
    r = ask(m::kDelete, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, l, lids_[i]);
    ASSERT_EQ(r->status(), 0) << i;
    EXPECT_EQ(r->first.hdr().method, m::kDeleteResp);
  }
  EXPECT_EQ(h_.server().groups().groups(), 0u);
  EXPECT_TRUE(h_.server().mcast_provider().groups().empty());
}

// A leave by a port that is not a member, or of a group that does not
// exist, is an invalid delete (IBA o15-0.1.14): ERR_REQ_INVALID in a
// DeleteResp carrying the request's record, and nothing changes. OpenSM
// 3.3.23 answers both the same (mcmr_rcv_leave_mgrp).
TEST_F(SaState, McLeaveByNonMemberIsRefusedAsOpenSmDoes) {
  auto r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask, ipoib_join(gid(lids_[0])), lids_[0]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  const wire::Gid mgid = r->record<wire::McMemberRecord>().mgid;
  const std::uint64_t generation = h_.server().state_generation();
  constexpr std::uint64_t kLeaveMask = mcm::kMGid | mcm::kPortGid | mcm::kJoinState;

  wire::McMemberRecord l{};
  l.mgid = mgid;
  l.port_gid = gid(lids_[1]);
  l.set_join_state(wire::join_state::kFullMember);
  r = ask(m::kDelete, a::kMcMemberRecord, kLeaveMask, l, lids_[1]);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  EXPECT_EQ(r->first.hdr().method, m::kDeleteResp);
  const auto echoed = r->record<wire::McMemberRecord>();
  EXPECT_EQ(std::memcmp(&echoed, &l, sizeof l), 0);
  // A group nobody created.
  wire::McMemberRecord unknown = l;
  unknown.mgid = {wire::be64::from(0xff12'5a5a'0000'0000ull), wire::be64::from(0x5a5a'0002ull)};
  r = ask(m::kDelete, a::kMcMemberRecord, kLeaveMask, unknown, lids_[1]);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  EXPECT_EQ(r->first.hdr().method, m::kDeleteResp);
  EXPECT_EQ(h_.server().state_generation(), generation);
  EXPECT_EQ(h_.server().groups().groups(), 1u);

  // The member's own leave is unchanged: its record with JoinState 0, the group gone.
  l.port_gid = gid(lids_[0]);
  r = ask(m::kDelete, a::kMcMemberRecord, kLeaveMask, l, lids_[0]);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::McMemberRecord>().port_gid, gid(lids_[0]));
  EXPECT_EQ(r->record<wire::McMemberRecord>().join_state(), 0);
  EXPECT_EQ(h_.server().groups().groups(), 0u);
}

TEST_F(SaState, McGroupWithZeroMgidGetsOneAllocated) {
  auto req = ipoib_join(gid(lids_[0]));
  req.mgid = {};
  req.set_scope(5);
  auto r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask | mcm::kScope, req, lids_[0]);
  ASSERT_EQ(r->status(), 0);
  const auto g1 = r->record<wire::McMemberRecord>();
  // ff15:a01b:ffff:... (IBA 15.2.5.17.1: flags, scope, the SA signature, the P_Key).
  EXPECT_EQ(g1.mgid.prefix.get() >> 32, 0xff15a01bu);
  EXPECT_EQ((g1.mgid.prefix.get() >> 16) & 0xffff, 0xffffu);
  r = ask(m::kSet, a::kMcMemberRecord, kIpoibMask | mcm::kScope, req, lids_[0]);
  ASSERT_EQ(r->status(), 0);
  const auto g2 = r->record<wire::McMemberRecord>();
  EXPECT_NE(g1.mgid, g2.mgid);
  EXPECT_EQ(g2.mlid.get(), 0xc001);
  // Creation without the group's parameters: insufficient components.
  req.mgid = {};
  EXPECT_EQ(ask(m::kSet, a::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, req, lids_[0])->status(),
            st::kReqInsufficientComponents);
}

wire::InformInfo subscribe_all(std::uint16_t trap) {
  wire::InformInfo i{};
  i.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  i.is_generic = 1;
  i.subscribe = 1;
  i.type = wire::be16::from(wire::inform_type::kAll);
  i.set_trap_number(trap);
  i.set_producer_type(wire::kInformAllProducers);
  return i;
}

TEST_F(SaState, InformInfoReportsRetriedUntilAcknowledged) {
  auto r = ask(m::kSet, a::kInformInfo, 0, subscribe_all(wire::trap::kGidInService), lids_[1]);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  r = ask(m::kGetTable, a::kInformInfoRecord, 0, wire::InformInfoRecord{}, lids_[2]);
  ASSERT_EQ(r->records<wire::InformInfoRecord>().size(), 1u);
  EXPECT_EQ(r->records<wire::InformInfoRecord>()[0].subscriber_gid, gid(lids_[1]));

  // A new epoch with one more host: trap 64 for its port GID.
  auto f = built_.snap->fabric;
  const auto leaf = f.nodes[f.end_ports().front().node].is_switch() ? f.end_ports().front().node : 0;
  auto& lnode = f.nodes[leaf];
  const std::uint8_t free_port = static_cast<std::uint8_t>(lnode.ports.size());
  lnode.ports.resize(free_port + 1u);
  const auto host = madengine::testing::add_ca(f, 0xabc000);
  f.link(leaf, free_port, host, 1);
  auto next = build_snapshot(std::move(f), 2);
  h_.publish(next.snap);
  h_.pump();
  ASSERT_EQ(h_.others().size(), 1u);
  const auto& rep = h_.others()[0].as<wire::SaMad>();
  EXPECT_EQ(rep.hdr.method, m::kReport);
  EXPECT_EQ(rep.hdr.attr_id.get(), a::kNotice);
  EXPECT_EQ(h_.others()[0].addr.lid, lids_[1]);
  wire::Notice n;
  std::memcpy(&n, rep.data.data(), sizeof(n));
  EXPECT_EQ(n.trap_number.get(), wire::trap::kGidInService);
  EXPECT_EQ(n.details<wire::NoticeDetailsGid>().gid.guid.get(), 0xabc001u);

  // No ReportResp: re-sent after the timeout, same TID.
  h_.clock().advance_ns(250 * kNanosPerMilli);
  h_.pump();
  ASSERT_EQ(h_.others().size(), 2u);
  EXPECT_EQ(h_.others()[1].hdr().tid, h_.others()[0].hdr().tid);
  // The subscriber answers: no more re-sends.
  MadBuf resp = h_.others()[1];
  resp.hdr().method = m::kReportResp;
  ASSERT_TRUE(h_.inject(resp));
  h_.pump();
  h_.clock().advance_ns(kNanosPerSecond);
  h_.pump();
  EXPECT_EQ(h_.others().size(), 2u);
  EXPECT_EQ(h_.server().counters().reports_acked, 1u);

  // A trap the SM forwards (128), to a subscriber of all traps.
  ASSERT_EQ(ask(m::kSet, a::kInformInfo, 0, subscribe_all(wire::kInformAllTraps), lids_[2])->status(), 0);
  h_.server().forward_notice(wire::make_generic_notice(wire::notice_type::kUrgent, wire::notice_producer::kSwitch,
                                                       wire::trap::kLinkStateChange, 1));
  h_.pump();
  ASSERT_EQ(h_.others().size(), 3u);
  EXPECT_EQ(h_.others()[2].addr.lid, lids_[2]);
  // Unsubscribe.
  auto un = subscribe_all(wire::kInformAllTraps);
  un.subscribe = 0;
  EXPECT_EQ(ask(m::kSet, a::kInformInfo, 0, un, lids_[2])->status(), 0);
  EXPECT_EQ(h_.server().subscriptions().size(), 1u);
}

// An SA without our SM (an embedder publishing snapshots itself): the
// store derives each publication's traps 64/65, and each reaches the
// subscriber once, even when two epochs are published between the state
// core's polls (a host gained in one and lost in the next: both reported,
// not merged into "no change").
TEST_F(SaState, EpochChangesReportedOnceEach) {
  ASSERT_EQ(ask(m::kSet, a::kInformInfo, 0, subscribe_all(wire::kInformAllTraps), lids_[1])->status(), 0);
  const auto feed = h_.store().subscribe();
  auto f = built_.snap->fabric;
  const auto leaf = f.nodes[f.end_ports().front().node].is_switch() ? f.end_ports().front().node : 0;
  const std::uint8_t free_port = static_cast<std::uint8_t>(f.nodes[leaf].ports.size());
  f.nodes[leaf].ports.resize(free_port + 1u);
  const auto host = madengine::testing::add_ca(f, 0xabc000);
  f.link(leaf, free_port, host, 1);
  auto gained = build_snapshot(f, 2);
  f.nodes[leaf].ports[free_port].peer = fabric::kNoNode;
  f.nodes[host].ports[1].peer = fabric::kNoNode;
  auto lost = build_snapshot(f, 3);
  h_.publish(gained.snap);
  h_.publish(lost.snap);
  h_.pump();
  std::vector<std::uint16_t> traps;
  for (const MadBuf& b : h_.others()) {
    const auto& rep = b.as<wire::SaMad>();
    ASSERT_EQ(rep.hdr.method, m::kReport);
    wire::Notice n;
    std::memcpy(&n, rep.data.data(), sizeof(n));
    EXPECT_EQ(n.details<wire::NoticeDetailsGid>().gid.guid.get(), 0xabc001u);
    EXPECT_EQ(n.issuer_gid.guid.get(), lost.snap->sm.port_guid);
    traps.push_back(n.trap_number.get());
  }
  EXPECT_EQ(traps, (std::vector<std::uint16_t>{wire::trap::kGidInService, wire::trap::kGidOutOfService}));
  // The store's feed to any other reader (the node's events) holds the same two changes.
  const auto changes = feed->take();
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0]->epoch, 2u);
  EXPECT_EQ(changes[0]->gained, std::vector<std::uint64_t>{0xabc001u});
  EXPECT_TRUE(changes[0]->lost.empty());
  EXPECT_EQ(changes[1]->from_epoch, 2u);
  EXPECT_EQ(changes[1]->lost, std::vector<std::uint64_t>{0xabc001u});
  // The same fabric published again: no change, no Report.
  auto again = build_snapshot(f, 4);
  h_.publish(again.snap);
  h_.pump();
  EXPECT_EQ(h_.others().size(), 2u);
  ASSERT_EQ(feed->take().size(), 1u);
}

// A Set from a LID the subnet does not give (its port missed by the last
// sweep) is refused, as OpenSM refuses it: stored, it would belong to no
// port and the client would believe it registered.
TEST_F(SaState, SetFromAnUnknownLidIsRefused) {
  constexpr std::uint16_t kUnknownLid = 0x3ff;
  auto r = ask(m::kSet, a::kInformInfo, 0, subscribe_all(wire::trap::kGidInService), kUnknownLid);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  EXPECT_EQ(h_.server().subscriptions().size(), 0u);
  const auto sr = service(0x3100, gid(lids_[0]), wire::kServiceLeaseInfinite, "stray");
  r = ask(m::kSet, a::kServiceRecord, kSrKey | scm::kServiceName, sr, kUnknownLid);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  EXPECT_EQ(h_.server().services().size(), 0u);
}

}  // namespace
}  // namespace madengine::sa
