// partitions.conf: the parser (OpenSM's syntax, its man page's examples,
// errors naming file:line) and the plan (memberships, table order, groups)
// on a small fabric, with the tables OpenSM 3.3.23 wrote on ibsim for the
// same file (tests/ibsim/partitions_conformance_test.cpp compares them live).
#include <gtest/gtest.h>

#include <algorithm>

#include "fabric_builders.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sm/partitions/partition_config.hpp"
#include "sm/partitions/partition_plan.hpp"

namespace madengine::sm {
namespace {

PartitionConfig parse_ok(std::string_view text) {
  FileIssue err;
  auto c = parse_partition_config(text, "partitions.conf", err);
  EXPECT_TRUE(c.has_value()) << err.text();
  return c ? *c : PartitionConfig{};
}

std::string parse_error(std::string_view text) {
  FileIssue err;
  const auto c = parse_partition_config(text, "partitions.conf", err);
  EXPECT_FALSE(c.has_value());
  return err.text();
}

TEST(PartitionConfig, HeaderFlagsAndMembers) {
  const auto c = parse_ok(
      "# a comment\n"
      "Default=0x7fff, ipoib : ALL=full ;\n"
      "storage=0x8001, ipoib, mtu=5, rate=7, sl=2, scope=5, Q_Key=0x1234, TClass=3, FlowLabel=0x12 :\n"
      "   0x0000000000100001=full,   # continued on the next line\n"
      "   0x100003 ;\n"
      "compute=2, defmember=full : 0x100005, SELF=limited, ALL_SWITCHES ;  lim=0x0100 : ALL_CAS=limited, ALL_ROUTERS=both;\n");
  ASSERT_EQ(c.defs.size(), 4u);
  EXPECT_EQ(c.defs[0].name, "Default");
  EXPECT_EQ(c.defs[0].pkey, 0x7fff);
  EXPECT_TRUE(c.defs[0].ipoib);
  ASSERT_EQ(c.defs[0].members.size(), 1u);
  EXPECT_EQ(c.defs[0].members[0].kind, MemberKind::kAll);
  EXPECT_EQ(c.defs[0].members[0].membership, Membership::kFull);

  const PartitionDef& s = c.defs[1];
  EXPECT_EQ(s.pkey, 0x0001) << "only the low 15 bits are the partition";
  EXPECT_EQ(s.line, 3u);
  EXPECT_EQ(s.params.mtu, 5);
  EXPECT_EQ(s.params.rate, 7);
  EXPECT_EQ(s.params.sl, 2);
  EXPECT_EQ(s.params.scope_mask, 1u << 5);
  EXPECT_EQ(s.params.qkey, 0x1234u);
  EXPECT_EQ(s.params.tclass, 3);
  EXPECT_EQ(s.params.flow_label, 0x12u);
  ASSERT_EQ(s.members.size(), 2u);
  EXPECT_EQ(s.members[0].guid, 0x100001u);
  EXPECT_EQ(s.members[0].membership, Membership::kFull);
  EXPECT_EQ(s.members[1].guid, 0x100003u);
  EXPECT_EQ(s.members[1].membership, Membership::kLimited);
  EXPECT_EQ(s.members[1].line, 5u);

  const PartitionDef& k = c.defs[2];
  EXPECT_EQ(k.pkey, 2);
  ASSERT_EQ(k.members.size(), 3u);
  EXPECT_EQ(k.members[0].membership, Membership::kFull) << "defmember=full";
  EXPECT_EQ(k.members[1].kind, MemberKind::kSelf);
  EXPECT_EQ(k.members[1].membership, Membership::kLimited);
  EXPECT_EQ(k.members[2].kind, MemberKind::kAllSwitches);
  EXPECT_EQ(k.members[2].membership, Membership::kFull);
  const PartitionDef& l = c.defs[3];
  EXPECT_EQ(l.pkey, 0x0100);
  EXPECT_EQ(l.members[0].kind, MemberKind::kAllCas);
  EXPECT_EQ(l.members[0].membership, Membership::kLimited) << "defmember does not carry over to the next statement";
  EXPECT_EQ(l.members[1].kind, MemberKind::kAllRouters);
  EXPECT_EQ(l.members[1].membership, Membership::kBoth);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front().text();
}

// Every example of OpenSM's man page reads.
TEST(PartitionConfig, OpenSmManPageExamples) {
  const auto c = parse_ok(
      " Default=0x7fff : ALL, SELF=full ;\n"
      " Default=0x7fff : ALL, ALL_SWITCHES=full, SELF=full ;\n"
      " NewPartition , ipoib : 0x123456=full, 0x3456789034=limi, 0x2134af2306 ;\n"
      " YetAnotherOne = 0x300 : SELF=full ;\n"
      " YetAnotherOne = 0x300 : ALL=limited ;\n"
      " ShareIO = 0x80 , defmember=full : 0x123451, 0x123452;\n"
      " # 0x123453, 0x123454 will be limited\n"
      " ShareIO = 0x80 : 0x123453, 0x123454, 0x123455=full;\n"
      " ShareIO = 0x80 , defmember=limited : 0x123456, 0x123457, 0x123458=full;\n"
      " ShareIO = 0x80 , defmember=full : 0x123459, 0x12345a;\n"
      " ShareIO = 0x80 , defmember=full : 0x12345b, 0x12345c=limited, 0x12345d;\n"
      " # multicast groups added to default\n"
      " Default=0x7fff,ipoib:\n"
      "        mgid=ff12:401b::0707,sl=1 # random IPv4 group\n"
      "        mgid=ff12:601b::16    # MLDv2-capable routers\n"
      "        mgid=ff12:401b::16    # IGMP\n"
      "        mgid=ff12:601b::2     # All routers\n"
      "        mgid=ff12::1,sl=1,Q_Key=0xDEADBEEF,rate=3,mtu=2 # random group\n"
      "        ALL=full;\n"
      " Default=0x7fff,ipoib:ALL=full;\n");
  ASSERT_EQ(c.defs.size(), 12u);
  EXPECT_EQ(c.defs[2].name, "NewPartition");
  EXPECT_EQ(c.defs[2].pkey, 0) << "generated when the plan is made";
  EXPECT_EQ(c.defs[2].members[1].membership, Membership::kLimited) << "'limi' abbreviates limited";
  EXPECT_EQ(c.defs[9].members[1].membership, Membership::kLimited);
  EXPECT_EQ(c.defs[9].members[2].membership, Membership::kFull);
  const PartitionDef& d = c.defs[10];
  ASSERT_EQ(d.mgroups.size(), 5u);
  EXPECT_EQ(d.mgroups[0].mgid.prefix.get(), 0xff12401b00000000ull);
  EXPECT_EQ(d.mgroups[0].mgid.guid.get(), 0x707u);
  EXPECT_EQ(d.mgroups[0].params.sl, 1);
  EXPECT_EQ(d.mgroups[4].params.qkey, 0xdeadbeefu);
  EXPECT_EQ(d.mgroups[4].params.mtu, 2);
  ASSERT_EQ(d.members.size(), 1u);
  EXPECT_EQ(d.members[0].line, 19u);
}

TEST(PartitionConfig, ErrorsNameFileAndLine) {
  EXPECT_EQ(parse_error("Default=0x7fff : ALL=full ;\nbroken line without colon ;\n"),
            "partitions.conf:2: no partition definition found (expected 'Name=PKey[,flags] : members')");
  EXPECT_EQ(parse_error("a=0x8001 : ALL ;\nb=0xzz : ALL ;\n"),
            "partitions.conf:2: bad partition definition: P_Key '0xzz' is not a number up to 0xffff");
  EXPECT_EQ(parse_error("a=1 :\n 0x100001,\n not-a-guid ;\n"), "partitions.conf:3: bad PortGUID 'not-a-guid'");
  EXPECT_EQ(parse_error("a=1,,ipoib : ALL ;\n"), "partitions.conf:1: bad partition flags: an empty flag");
  EXPECT_EQ(parse_error("a=0x10000 : ALL ;\n"),
            "partitions.conf:1: bad partition definition: P_Key '0x10000' is not a number up to 0xffff");
  FileIssue err;
  EXPECT_FALSE(load_partition_config("/nonexistent/partitions.conf", err).has_value());
  EXPECT_EQ(err.file, "/nonexistent/partitions.conf");
  EXPECT_EQ(err.line, 0u);
}

TEST(PartitionConfig, WarningsAsOpenSmLogsThem) {
  const auto c = parse_ok("a=1, colour=blue, mtu=0 : 0x10=fullish ;\nb=2 : mgid=fe80::1 ;\nc=3 : ALL");
  ASSERT_EQ(c.warnings.size(), 5u);
  EXPECT_EQ(c.warnings[0].text(), "partitions.conf:1: unknown partition flag 'colour': ignored");
  EXPECT_EQ(c.warnings[1].text(), "partitions.conf:1: flag 'mtu' needs a valid value: skipped");
  EXPECT_EQ(c.warnings[2].text(), "partitions.conf:1: unknown membership 'fullish' for 0x10: limited");
  EXPECT_EQ(c.warnings[3].text(), "partitions.conf:2: mgid \"fe80::1\" is not a multicast GID: no group");
  EXPECT_EQ(c.warnings[4].line, 3u);
  EXPECT_EQ(c.defs[0].params.mtu, 4) << "a skipped value keeps the default";
}

// star3 as ibsim builds it: H1 (port GUID 0x100001), H2 (0x100003), H3
// (0x100005) on switch S1 (0x200000); the SM on H1.
fabric::Fabric star3() {
  fabric::Fabric f;
  const auto sw = testing::add_switch(f, 4, 0x200000);
  for (std::uint64_t g : {0x100000ull, 0x100002ull, 0x100004ull}) {
    const auto h = testing::add_ca(f, g);
    f.link(sw, static_cast<std::uint8_t>(f.nodes.size() - 1), h, 1);
  }
  return f;
}

constexpr std::string_view kIbsimFile =
    "Default=0x7fff, ipoib : ALL=full ;\n"
    "storage=0x8001, ipoib, mtu=5, rate=7, Q_Key=0x1234 :\n"
    "   0x0000000000100001=full,\n"
    "   0x0000000000100003 ;   # limited\n"
    "compute=0x0002, defmember=full : 0x100005, SELF ;\n"
    "lim=0x0100 : ALL_CAS=limited ;\n";

std::vector<std::uint16_t> table(const PartitionPlan& plan, std::uint64_t guid, std::size_t cap = 8) {
  std::size_t dropped = 0;
  return layout_pkey_table(plan.pkeys_of(guid), std::vector<std::uint16_t>{wire::kDefaultPKey}, cap, false, dropped);
}

using T = std::vector<std::uint16_t>;

// What `smpquery pkeys` showed after OpenSM 3.3.23 ran on ibsim with this file.
TEST(PartitionPlan, TablesAsOpenSmWroteThemOnIbsim) {
  const auto f = star3();
  const auto cfg = parse_ok(kIbsimFile);
  const auto plan = plan_partitions(f, &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  EXPECT_EQ(table(plan, 0x100001), (T{0xffff, 0x0100, 0x8001, 0x8002, 0, 0, 0, 0}));
  EXPECT_EQ(table(plan, 0x100003), (T{0xffff, 0x0100, 0x0001, 0, 0, 0, 0, 0}));
  EXPECT_EQ(table(plan, 0x100005), (T{0xffff, 0x0100, 0x8002, 0, 0, 0, 0, 0}));
  EXPECT_EQ(table(plan, 0x200000), (T{0xffff, 0, 0, 0, 0, 0, 0, 0}));
  // OpenSM's partition order: 0x0100, 0x0001, 0x0002, 0x7fff (bytes swapped).
  ASSERT_EQ(plan.partitions.size(), 4u);
  EXPECT_EQ(plan.partitions[0].pkey, 0x0100);
  EXPECT_EQ(plan.partitions[1].pkey, 0x0001);
  EXPECT_EQ(plan.partitions[2].pkey, 0x0002);
  EXPECT_EQ(plan.partitions[3].pkey, 0x7fff);
  // The broadcast groups in the order the file creates them (MLIDs 0xc000, 0xc001 on ibsim).
  ASSERT_EQ(plan.groups.size(), 2u);
  EXPECT_EQ(plan.groups[0].mgid.prefix.get(), 0xff12401bffff0000ull);
  EXPECT_EQ(plan.groups[0].mgid.guid.get(), 0xffffffffu);
  EXPECT_EQ(plan.groups[0].qkey.get(), kIpoibQkey);
  EXPECT_EQ(plan.groups[0].mtu(), 4);
  EXPECT_EQ(plan.groups[0].rate(), 3);
  EXPECT_EQ(plan.groups[1].mgid.prefix.get(), 0xff12401b80010000ull);
  EXPECT_EQ(plan.groups[1].pkey.get(), 0x8001);
  EXPECT_EQ(plan.groups[1].qkey.get(), 0x1234u);
  EXPECT_EQ(plan.groups[1].mtu(), 5);
  EXPECT_EQ(plan.groups[1].rate(), 7);
  EXPECT_EQ(plan.groups[1].scope(), 2);
  EXPECT_EQ(plan.groups[1].hop_limit(), 0);
  // Switch ports toward the CAs: the CA's keys, packed.
  bool fits = false;
  EXPECT_EQ(peer_pkey_table(table(plan, 0x100003), 8, fits), (T{0xffff, 0x0100, 0x0001, 0, 0, 0, 0, 0}));
  EXPECT_TRUE(fits);
}

TEST(PartitionPlan, NoFileIsEveryPortFullInTheDefaultPartition) {
  const auto plan = plan_partitions(star3(), nullptr, PartitionOptions{.sm_port_guid = 0x100001});
  for (std::uint64_t g : {0x100001ull, 0x100003ull, 0x100005ull, 0x200000ull})
    EXPECT_EQ(plan.pkeys_of(g)[0], 0xffff) << std::hex << g;
  ASSERT_EQ(plan.groups.size(), 1u) << "the default partition's IPoIB broadcast group";
  EXPECT_EQ(plan.groups[0].pkey.get(), 0xffff);
}

TEST(PartitionPlan, FileWithoutDefaultRuleLeavesPortsLimitedButTheSm) {
  const auto cfg = parse_ok("a=0x10 : ALL=full ;");
  const auto plan = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  EXPECT_EQ(plan.pkeys_of(0x100001)[0], 0xffff);
  EXPECT_EQ(plan.pkeys_of(0x100003)[0], 0x7fff);
  EXPECT_TRUE(plan.groups.empty()) << "no ipoib flag: no group";
}

TEST(PartitionPlan, LaterEntryOverridesAndBothNeedsAllowBoth) {
  const auto cfg = parse_ok(
      "p=0x20 : 0x100003=full ;\n"
      "p=0x20 : 0x100003=limited, 0x100005=both, 0x1234 ;\n");
  const auto one = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  const Partition* p = one.find(0x8020);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->members.at(0x100003), kMemberLimited);
  EXPECT_EQ(p->members.at(0x100005), kMemberFull) << "both without allow_both_pkeys: full";
  EXPECT_FALSE(p->members.contains(0x1234));
  ASSERT_EQ(one.notes.size(), 1u);
  EXPECT_EQ(one.notes[0].text(), "partitions.conf:2: port 0x1234 is not in the subnet (partition 'p')");
  const auto both = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001, .allow_both_pkeys = true});
  EXPECT_EQ(both.find(0x20)->members.at(0x100005), kMemberFull | kMemberLimited);
  EXPECT_EQ(both.find(0x20)->members.at(0x100003), kMemberLimited) << "limited drops the earlier full";
  const auto keys = both.pkeys_of(0x100005);
  EXPECT_NE(std::find(keys.begin(), keys.end(), 0x0020), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), 0x8020), keys.end());
}

TEST(PartitionPlan, GeneratedKeysNamesAndSl) {
  const auto cfg = parse_ok("a : ALL ;\nb, sl=3 : SELF=full ;\na : 0x100003=full ;\nempty=0x33 : ;\n");
  const auto plan = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  ASSERT_NE(plan.find(1), nullptr);
  EXPECT_EQ(plan.find(1)->name, "a");
  EXPECT_EQ(plan.find(1)->members.at(0x100003), kMemberFull) << "merged by name";
  ASSERT_NE(plan.find(2), nullptr);
  EXPECT_EQ(plan.find(2)->sl, 0) << "without QoS a partition's SL is 0 (OpenSM)";
  EXPECT_EQ(plan.find(0x33), nullptr) << "an empty partition is dropped";
  const auto qos = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001, .qos = true});
  EXPECT_EQ(qos.find(2)->sl, 3);
}

TEST(PartitionPlan, Indx0AndScopes) {
  const auto cfg = parse_ok("x=0x40, indx0, ipoib, scope=2, scope=5 : ALL_CAS=full ;");
  const auto plan = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  EXPECT_EQ(plan.pkeys_of(0x100003)[0], 0x8040) << "indx0: block 0 index 0";
  EXPECT_EQ(plan.pkeys_of(0x100003)[1], 0x7fff);
  EXPECT_EQ(plan.pkeys_of(0x200000)[0], 0x7fff);
  ASSERT_EQ(plan.groups.size(), 2u) << "one broadcast group per scope";
  EXPECT_EQ(plan.groups[0].mgid.prefix.get(), 0xff12401b80400000ull);
  EXPECT_EQ(plan.groups[1].mgid.prefix.get(), 0xff15401b80400000ull);
  EXPECT_EQ(plan.groups[1].hop_limit(), 0xff);
}

TEST(PartitionPlan, IpGroupsTakeThePartitionKey) {
  const auto cfg = parse_ok(
      "v=0x50, ipoib, rate=7 :\n"
      "  mgid=ff12:401b::0707, rate=7\n"
      "  mgid=ff12:401b:1234::16, rate=7\n"
      "  mgid=ff12:401b::17, rate=3\n"
      "  ALL=full ;\n");
  const auto plan = plan_partitions(star3(), &cfg, PartitionOptions{.sm_port_guid = 0x100001});
  ASSERT_EQ(plan.groups.size(), 2u) << "the broadcast group, and one IP group of the right P_Key and rate";
  EXPECT_EQ(plan.groups[1].mgid.prefix.get(), 0xff12401b80500000ull);
  EXPECT_EQ(plan.groups[1].qkey.get(), kIpoibQkey);
  ASSERT_EQ(plan.notes.size(), 2u);
  EXPECT_EQ(plan.notes[0].line, 3u);
  EXPECT_EQ(plan.notes[1].line, 4u);
}

TEST(PkeyLayout, KeepsIndexesFillsAfterTheLastAndReportsOverflow) {
  std::size_t dropped = 0;
  // 0x8003 stays at 5, 0x8001 is new: after the last used index.
  EXPECT_EQ(layout_pkey_table(T{0xffff, 0x8001, 0x8003}, T{0xffff, 0, 0, 0, 0, 0x0003, 0, 0}, 8, false, dropped),
            (T{0xffff, 0, 0, 0, 0, 0x8003, 0x8001, 0}));
  EXPECT_EQ(dropped, 0u);
  // Past the end: the first hole.
  EXPECT_EQ(layout_pkey_table(T{0x7fff, 0x8001, 0x8002}, T{0xffff, 0, 0, 0x8001}, 4, false, dropped),
            (T{0x7fff, 0x8002, 0, 0x8001}));
  EXPECT_EQ(layout_pkey_table(T{0xffff, 1, 2, 3}, T{}, 2, false, dropped), (T{0xffff, 1}));
  EXPECT_EQ(dropped, 2u);
  bool fits = true;
  EXPECT_EQ(peer_pkey_table(T{0xffff, 0x0005, 0x8005, 0x0006}, 2, fits), (T{0xffff, 0x8005}));
  EXPECT_FALSE(fits) << "three keys for two entries: no enforcement";
}

}  // namespace
}  // namespace madengine::sm
