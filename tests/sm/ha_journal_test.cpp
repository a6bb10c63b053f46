// HA journal of the SA state: a round trip through the file keeps every
// service (lease re-based on the reader's clock), group (MGID, MLID, members)
// and subscription; damaged files are refused with a reason; the stores
// restore what they are given and drop invalid groups.
#include "sa/state/journal.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace madengine::sa {
namespace {

wire::Gid gid(std::uint64_t guid) {
  return wire::Gid{.prefix = wire::be64::from(0xfe80'0000'0000'0000ull), .guid = wire::be64::from(guid)};
}

SaStateImage sample() {
  SaStateImage img;
  ServiceEntry s1;
  s1.rec.service_id = wire::be64::from(0x1234);
  s1.rec.service_gid = gid(0x10);
  s1.owner = gid(0x10);
  s1.expires_ns = -1;
  ServiceEntry s2 = s1;
  s2.rec.service_id = wire::be64::from(0x5678);
  s2.expires_ns = 5'000'000'000;  // 4 s after the writer's "now" of 1 s
  img.services = {s1, s2};
  McGroupEntry g;
  g.params.mgid = gid(0xff12);
  g.params.mlid = wire::be16::from(0xc001);
  g.params.qkey = wire::be32::from(0x0b1b);
  g.members = {McMember{.port_gid = gid(0x10), .join_state = 1, .proxy = false},
               McMember{.port_gid = gid(0x20), .join_state = 2, .proxy = true}};
  img.groups = {g};
  Subscription sub;
  sub.info.trap_number_or_device_id = wire::be16::from(64);
  sub.subscriber = gid(0x20);
  sub.addr.lid = 7;
  sub.addr.remote_qpn = 0x4d;
  sub.addr.qkey = kGsiQkey;
  sub.addr.sl = 2;
  sub.addr.pkey_index = 1;
  sub.addr.port_num = 1;
  sub.enumeration = 9;
  img.subscriptions = {sub};
  return img;
}

TEST(HaJournal, RoundTripRebasesLeases) {
  const SaStateImage img = sample();
  const auto bytes = encode_journal(img, 1'000'000'000);
  SaStateImage back;
  std::string err;
  ASSERT_TRUE(decode_journal(bytes, 100, back, err)) << err;
  ASSERT_EQ(back.services.size(), 2u);
  EXPECT_EQ(back.services[0].expires_ns, -1);
  EXPECT_EQ(back.services[1].expires_ns, 100 + 4'000'000'000);
  EXPECT_EQ(back.services[1].rec.service_id.get(), 0x5678u);
  EXPECT_EQ(back.services[0].owner, gid(0x10));
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].params.mlid.get(), 0xc001);
  EXPECT_EQ(back.groups[0].params.mgid, gid(0xff12));
  ASSERT_EQ(back.groups[0].members.size(), 2u);
  EXPECT_EQ(back.groups[0].members[1].port_gid, gid(0x20));
  EXPECT_EQ(back.groups[0].members[1].join_state, 2);
  EXPECT_TRUE(back.groups[0].members[1].proxy);
  ASSERT_EQ(back.subscriptions.size(), 1u);
  const Subscription& s = back.subscriptions[0];
  EXPECT_EQ(s.info.trap_number_or_device_id.get(), 64);
  EXPECT_EQ(s.addr.lid, 7);
  EXPECT_EQ(s.addr.remote_qpn, 0x4du);
  EXPECT_EQ(s.addr.qkey, kGsiQkey);
  EXPECT_EQ(s.addr.sl, 2);
  EXPECT_EQ(s.addr.pkey_index, 1);
  EXPECT_EQ(s.enumeration, 9);
  // Same clock both sides: byte for byte.
  SaStateImage again;
  ASSERT_TRUE(decode_journal(bytes, 1'000'000'000, again, err));
  EXPECT_EQ(encode_journal(again, 1'000'000'000), bytes);
}

// The journal names the fabric it describes; one of version 1 (before it
// did) still reads, as naming none.
TEST(HaJournal, NamesItsFabric) {
  const FabricIdentity fabric{.sm_port_guid = 0x0002c90300000001ull, .subnet_prefix = 0xfe80000000000000ull};
  const auto bytes = encode_journal(sample(), 0, fabric);
  SaStateImage out;
  FabricIdentity back;
  std::string err;
  ASSERT_TRUE(decode_journal(bytes, 0, out, err, &back)) << err;
  EXPECT_EQ(back, fabric);
  EXPECT_EQ(out.services.size(), sample().services.size());
  // Version 1: the same without the 16 bytes after the version, checksummed again.
  std::vector<std::uint8_t> v1(bytes.begin(), bytes.begin() + 8);
  v1.insert(v1.end(), bytes.begin() + 24, bytes.end() - 8);
  v1[7] = 1;
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, as the journal sums itself
  for (const std::uint8_t c : v1) h = (h ^ c) * 0x100000001b3ull;
  for (int i = 7; i >= 0; --i) v1.push_back(static_cast<std::uint8_t>(h >> (8 * i)));
  ASSERT_TRUE(decode_journal(v1, 0, out, err, &back)) << err;
  EXPECT_FALSE(back.known());
  EXPECT_EQ(out.services.size(), sample().services.size());
}

TEST(HaJournal, RefusesDamage) {
  const auto good = encode_journal(sample(), 0);
  SaStateImage out;
  std::string err;
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, good.size() / 2, good.size() - 1}) {
    EXPECT_FALSE(decode_journal(std::span(good).first(cut), 0, out, err)) << cut;
    EXPECT_FALSE(err.empty());
  }
  // Every single flipped byte is caught (magic, counts, body or checksum).
  for (std::size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0x40;
    err.clear();
    EXPECT_FALSE(decode_journal(bad, 0, out, err)) << "byte " << i;
    EXPECT_FALSE(err.empty());
  }
  EXPECT_TRUE(out.services.empty());
  EXPECT_TRUE(decode_journal(good, 0, out, err));
}

TEST(HaJournal, FileIsWrittenAtomicallyAndMissingIsEmpty) {
  const auto dir = std::filesystem::temp_directory_path() / ("ha_journal_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "sa_state.journal").string();
  SaStateImage out;
  bool found = true;
  std::string err;
  ASSERT_TRUE(read_journal_file(path, 0, out, found, err)) << err;
  EXPECT_FALSE(found);
  ASSERT_TRUE(write_journal_file(path, sample(), 0, err)) << err;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ASSERT_TRUE(read_journal_file(path, 0, out, found, err)) << err;
  EXPECT_TRUE(found);
  EXPECT_EQ(out.services.size(), 2u);
  // Overwrite with less: the reader sees the new one whole.
  SaStateImage small = sample();
  small.services.resize(1);
  ASSERT_TRUE(write_journal_file(path, small, 0, err));
  ASSERT_TRUE(read_journal_file(path, 0, out, found, err));
  EXPECT_EQ(out.services.size(), 1u);
  // A corrupt file is an error with the path in it.
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << "garbage that is long enough to pass the size check";
  }
  EXPECT_FALSE(read_journal_file(path, 0, out, found, err));
  EXPECT_NE(err.find(path), std::string::npos);
  EXPECT_FALSE(write_journal_file((dir / "no" / "such" / "dir").string(), sample(), 0, err));
  std::filesystem::remove_all(dir);
}

TEST(HaJournal, StoresRestoreAndDropInvalidGroups) {
  ServiceStore services;
  McastStore groups(2);
  InformStore subs;
  SaStateImage img = sample();
  McGroupEntry dup = img.groups[0];  // same MLID
  dup.params.mgid = gid(0xff13);
  McGroupEntry empty = img.groups[0];
  empty.params.mlid = wire::be16::from(0xc002);
  empty.members.clear();
  McGroupEntry unicast = img.groups[0];
  unicast.params.mlid = wire::be16::from(0x0010);
  McGroupEntry ok2 = img.groups[0];
  ok2.params.mlid = wire::be16::from(0xc003);
  McGroupEntry over = img.groups[0];
  over.params.mlid = wire::be16::from(0xc004);
  img.groups = {img.groups[0], dup, empty, unicast, ok2, over};
  EXPECT_EQ(apply(img, services, groups, subs), 4u);
  EXPECT_EQ(services.size(), 2u);
  EXPECT_EQ(groups.groups(), 2u);
  EXPECT_EQ(subs.size(), 1u);
  const SaStateImage now = capture(services, groups, subs);
  EXPECT_EQ(now.groups[0].params.mlid.get(), 0xc001);
  EXPECT_EQ(now.groups[1].params.mlid.get(), 0xc003);
  EXPECT_EQ(services.next_expiry_ns(), 5'000'000'000);
  // A new subscriber after a restore gets an enumeration past the restored ones.
  wire::InformInfo info{};
  info.trap_number_or_device_id = wire::be16::from(65);
  info.subscribe = 1;
  EXPECT_EQ(subs.set(info, Requester{.gid = gid(0x30), .lid = 9}, MadAddr{}), 0);
  std::uint16_t max_enum = 0;
  for (const auto& s : *subs.view()) max_enum = std::max(max_enum, s.enumeration);
  EXPECT_EQ(max_enum, 10);
}

}  // namespace
}  // namespace madengine::sa
