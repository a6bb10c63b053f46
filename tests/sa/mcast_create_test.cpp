// Creating multicast groups in McastStore: the rate a creator's selector
// picks (bounded by its link, as a joiner's link must carry the group's), the
// scope a requested MGID carries, the reserved flag bits and the SA's own
// signature in a requested MGID, a joiner's selectors against the group. Found comparing with OpenSM on
// ibsim (tests/ibsim/sa_state_conformance_test.cpp); IPv6 solicited-node
// groups on one MLID, and the MLID budget of the switches' MFTs.
#include <gtest/gtest.h>

#include <vector>

#include "madengine/wire/sa_records.hpp"
#include "sa/state/mutable_state.hpp"

namespace madengine::sa {
namespace {

namespace mcm = wire::mc_member_record_cm;
namespace st = wire::sa_status;
namespace rc = wire::rate_code;

constexpr std::uint64_t kCreateMask = mcm::kMGid | mcm::kPortGid | mcm::kQKey | mcm::kTClass | mcm::kPKey | mcm::kSl |
                                      mcm::kFlowLabel | mcm::kJoinState | mcm::kRateSelector | mcm::kRate;

struct Create {
  McastStore store;
  McJoinContext ctx;
  explicit Create(bool consolidate_ipv6_snm = false) : store(16384, consolidate_ipv6_snm) {
    ctx.who.gid = {wire::be64::from(0xfe80'0000'0000'0000ull), wire::be64::from(0x10'0003ull)};
    ctx.who.lid = 3;
    ctx.port_guid = 0x10'0003ull;
    ctx.port_mtu = 5;
    ctx.port_rate = rc::k10Gbps;
  }
  wire::McMemberRecord request(std::uint64_t mgid_hi, std::uint8_t rate_sel, std::uint8_t rate) const {
    wire::McMemberRecord r{};
    r.mgid = {wire::be64::from(mgid_hi), wire::be64::from(1)};
    r.port_gid = ctx.who.gid;
    r.qkey = wire::be32::from(0x5a5a);
    r.pkey = wire::be16::from(0xffff);
    r.set_rate_selector(rate_sel);
    r.set_rate(rate);
    r.set_join_state(wire::join_state::kFullMember);
    return r;
  }
  std::uint16_t create(const wire::McMemberRecord& r, wire::McMemberRecord& out) {
    return store.join(r, kCreateMask, ctx, out);
  }
};

TEST(McastCreate, RateSelectorsStayWithinTheCreatorsLink) {
  Create c;
  wire::McMemberRecord out{};
  // Below 40 Gb/s on a 10 Gb/s link: the link's 10 Gb/s (OpenSM answers the same).
  ASSERT_EQ(c.create(c.request(0xff12'5a5a'0000'0000ull, wire::selector::kLessThan, rc::k40Gbps), out), 0);
  EXPECT_EQ(out.rate(), rc::k10Gbps);
  // Below 10 Gb/s: the fastest rate under it, 5 Gb/s (code 5; codes are not ordered by speed).
  ASSERT_EQ(c.create(c.request(0xff12'5a5a'0000'0001ull, wire::selector::kLessThan, rc::k10Gbps), out), 0);
  EXPECT_EQ(out.rate(), rc::k5Gbps);
  // Exactly 40 Gb/s or more than 10 Gb/s: the creator's link cannot carry it.
  EXPECT_EQ(c.create(c.request(0xff12'5a5a'0000'0002ull, wire::selector::kExactly, rc::k40Gbps), out), st::kReqInvalid);
  EXPECT_EQ(c.create(c.request(0xff12'5a5a'0000'0003ull, wire::selector::kGreaterThan, rc::k10Gbps), out),
            st::kReqInvalid);
  ASSERT_EQ(c.create(c.request(0xff12'5a5a'0000'0004ull, wire::selector::kExactly, rc::k10Gbps), out), 0);
  EXPECT_EQ(out.rate(), rc::k10Gbps);
  EXPECT_EQ(c.store.groups(), 3u);
}

TEST(McastCreate, AJoinerWhoseLinkIsSlowerThanTheGroupIsRefused) {
  Create c;
  wire::McMemberRecord out{};
  c.ctx.port_rate = rc::k40Gbps;
  const auto r = c.request(0xff12'5a5a'0000'0000ull, wire::selector::kExactly, rc::k40Gbps);
  ASSERT_EQ(c.create(r, out), 0);
  // Another port, on a 10 Gb/s link, cannot carry the group's 40 Gb/s.
  auto j = r;
  j.port_gid.guid = wire::be64::from(0x10'0005ull);
  c.ctx.who.gid = j.port_gid;
  c.ctx.port_guid = 0x10'0005ull;
  c.ctx.port_rate = rc::k10Gbps;
  EXPECT_EQ(c.store.join(j, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, c.ctx, out), st::kReqInvalid);
  c.ctx.port_rate = rc::k40Gbps;
  EXPECT_EQ(c.store.join(j, mcm::kMGid | mcm::kPortGid | mcm::kJoinState, c.ctx, out), 0);
}

TEST(McastCreate, ScopeComesFromTheRequestedMgid) {
  Create c;
  wire::McMemberRecord out{};
  ASSERT_EQ(c.create(c.request(0xff15'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), 0);
  EXPECT_EQ(out.scope(), 5);  // site-local, as the MGID says, though no Scope component was given
  // With the component, the component rules.
  auto r = c.request(0xff18'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps);
  r.set_scope(8);
  ASSERT_EQ(c.store.join(r, kCreateMask | mcm::kScope, c.ctx, out), 0);
  EXPECT_EQ(out.scope(), 8);
}

TEST(McastCreate, ReservedMgidFlagsAreRefused) {
  Create c;
  wire::McMemberRecord out{};
  // Flags 0x3: a reserved bit above T (IBA 4.1.1: flags are 000T).
  EXPECT_EQ(c.create(c.request(0xff32'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), st::kReqInvalid);
  EXPECT_EQ(c.store.groups(), 0u);
  ASSERT_EQ(c.create(c.request(0xff02'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), 0);  // permanent
}

TEST(McastCreate, SaAssignedSignatureWithLinkLocalScopeIsRefused) {
  Create c;
  wire::McMemberRecord out{};
  // 0xA01B marks MGIDs the SA assigns; never with link-local scope (o15.0.1.6, as OpenSM).
  EXPECT_EQ(c.create(c.request(0xff12'a01b'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), st::kReqInvalid);
  ASSERT_EQ(c.create(c.request(0xff15'a01b'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), 0);  // site-local
}

TEST(McastCreate, AJoinersSelectorsMustMatchTheExistingGroup) {
  Create c;
  wire::McMemberRecord out{};
  ASSERT_EQ(c.create(c.request(0xff15'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), 0);
  // osmtest's o15.0.1.13 check: a group below 2.5 Gb/s is asked for; this one is 10 Gb/s.
  auto j = c.request(0xff15'5a5a'0000'0000ull, wire::selector::kLessThan, rc::k2_5Gbps);
  EXPECT_EQ(c.store.join(j, kCreateMask, c.ctx, out), st::kReqInvalid);
  j.set_rate_selector(wire::selector::kGreaterThan);
  EXPECT_EQ(c.store.join(j, kCreateMask, c.ctx, out), 0);
  j.set_mtu_selector(wire::selector::kGreaterThan);
  j.set_mtu(5);  // the group's MTU is the port's, 5: not greater
  EXPECT_EQ(c.store.join(j, kCreateMask | mcm::kMtuSelector | mcm::kMtu, c.ctx, out), st::kReqInvalid);
}

// IPv6 solicited-node groups, one per host address: with OpenSM's
// consolidate_ipv6_snm_req they share one MLID per P_Key and scope (each
// keeps its own MGID and members); without it each takes its own.
TEST(McastCreate, SolicitedNodeGroupsShareAnMlidWhenConsolidated) {
  for (const bool consolidate : {false, true}) {
    Create c(consolidate);
    std::vector<std::uint16_t> mlids;
    for (std::uint64_t addr = 1; addr <= 3; ++addr) {
      wire::McMemberRecord r = c.request(0xff12'601b'ffff'0000ull, wire::selector::kExactly, rc::k10Gbps);
      r.mgid.guid = wire::be64::from(0x0000'0001'ff00'0000ull | addr);
      ASSERT_TRUE(ipv6_solicited_node(r.mgid));
      wire::McMemberRecord out{};
      ASSERT_EQ(c.create(r, out), 0);
      mlids.push_back(out.mlid.get());
    }
    // Another P_Key's solicited-node group, and a plain group: MLIDs of their own.
    wire::McMemberRecord other = c.request(0xff12'601b'8001'0000ull, wire::selector::kExactly, rc::k10Gbps);
    other.pkey = wire::be16::from(0x8001);
    other.mgid.guid = wire::be64::from(0x0000'0001'ff00'0001ull);
    c.ctx.port_pkeys = {0xffff, 0x8001};
    wire::McMemberRecord out{};
    ASSERT_EQ(c.create(other, out), 0);
    EXPECT_NE(out.mlid.get(), mlids[0]);
    EXPECT_EQ(c.store.groups(), 4u);
    if (consolidate) {
      EXPECT_EQ(mlids[1], mlids[0]);
      EXPECT_EQ(mlids[2], mlids[0]);
    } else {
      EXPECT_NE(mlids[1], mlids[0]);
      EXPECT_NE(mlids[2], mlids[1]);
    }
  }
  EXPECT_FALSE(ipv6_solicited_node({wire::be64::from(0xff12'401b'ffff'0000ull), wire::be64::from(0xffff'ffffull)}));
}

// MLIDs stop where the least MulticastFDBCap of the switches does.
TEST(McastCreate, MlidsStayWithinTheSwitchesMfts) {
  Create c;
  c.store.set_mlid_last(kMlidFirst + 1);
  wire::McMemberRecord out{};
  ASSERT_EQ(c.create(c.request(0xff12'5a5a'0000'0000ull, wire::selector::kExactly, rc::k10Gbps), out), 0);
  EXPECT_EQ(out.mlid.get(), kMlidFirst);
  ASSERT_EQ(c.create(c.request(0xff12'5a5a'0000'0001ull, wire::selector::kExactly, rc::k10Gbps), out), 0);
  EXPECT_EQ(out.mlid.get(), kMlidFirst + 1);
  EXPECT_EQ(c.create(c.request(0xff12'5a5a'0000'0002ull, wire::selector::kExactly, rc::k10Gbps), out),
            st::kNoResources);
}

}  // namespace
}  // namespace madengine::sa
