// The persisted epoch (sa/state/epoch_file): a decoded epoch answers every
// PathRecord and NodeRecord as the one written did, through the SA server
// itself; a damaged, torn or foreign-order file is refused with its reason.
#include "sa/state/epoch_file.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "sa_fixture.hpp"

namespace madengine::sa {
namespace {

using testing::build_snapshot;
using testing::SaHarness;

constexpr FabricIdentity kFabric{.sm_port_guid = 0x0002c90300000101ull, .subnet_prefix = 0xfe80000000000000ull};

std::shared_ptr<Snapshot> richer_snapshot() {
  auto s = build_snapshot(::madengine::testing::fat_tree3(2, 2, 2, 1, 3), 7).snap;
  // Tables, partitions, a QoS policy and MFTs travel too.
  PortTableView::Rows rows(s->fabric.nodes.size());
  for (fabric::NodeId n = 0; n < s->fabric.nodes.size(); ++n) {
    rows[n].resize(s->fabric.nodes[n].ports.size());
    for (PortTables& t : rows[n]) t.pkeys = {0xffff, static_cast<std::uint16_t>(0x8000 | (n % 3 + 1))};
  }
  s->port_tables = std::make_shared<PortTableView>(std::move(rows));
  s->partitions = {{.pkey = 0x7fff, .sl = 0}, {.pkey = 0x0001, .sl = 2}};
  auto q = std::make_shared<QosPolicyView>();
  q->groups = {{1, 2, 3}};
  q->levels.push_back(QosLevelView{.name = "fast", .sl_set = true, .sl = 3, .pkeys = {{1, 2}}});
  q->rules.push_back(QosRuleView{.source = {0}, .service_id = {{10, 20}}, .level = 0});
  s->qos = true;
  s->qos_policy = q;
  std::vector<SwitchMft> mfts(1);
  mfts[0].node = 0;
  mfts[0].masks = {{0x0003}, {0x0101, 0x0002}};
  s->mfts->store(mfts);
  s->index();
  return s;
}

std::vector<std::uint8_t> answer_bytes(SaHarness& h, const MadBuf& req) {
  const auto a = h.ask(req);
  if (!a) return {};
  const auto& m = a->first.as<wire::SaMad>();
  std::vector<std::uint8_t> out(m.data.begin(), m.data.end());
  out.push_back(static_cast<std::uint8_t>(a->status() >> 8));
  out.push_back(static_cast<std::uint8_t>(a->status()));
  return out;
}

TEST(EpochFile, DecodedEpochAnswersAsTheWrittenOne) {
  const auto before = richer_snapshot();
  const auto bytes = encode_epoch(*before, kFabric);
  auto after = std::make_shared<Snapshot>();
  FabricIdentity id;
  std::string err;
  ASSERT_TRUE(decode_epoch(bytes, *after, id, err)) << err;
  EXPECT_EQ(id, kFabric);
  EXPECT_EQ(after->epoch, 7u);
  EXPECT_EQ(after->top_lid, before->top_lid);
  EXPECT_EQ(after->sm.lid, before->sm.lid);
  EXPECT_EQ(after->sm.sm_key, before->sm.sm_key);
  ASSERT_EQ(after->fabric.nodes.size(), before->fabric.nodes.size());
  for (std::size_t n = 0; n < before->fabric.nodes.size(); ++n) {
    EXPECT_EQ(after->fabric.nodes[n].description, before->fabric.nodes[n].description);
    EXPECT_EQ(after->fabric.nodes[n].port_lids, before->fabric.nodes[n].port_lids);
    EXPECT_EQ(after->port_tables->load()->at(n).at(0).pkeys, before->port_tables->load()->at(n).at(0).pkeys);
  }
  ASSERT_EQ(after->lfts.size(), before->lfts.size());
  for (std::size_t i = 0; i < before->lfts.size(); ++i) EXPECT_EQ(after->lfts[i].ports, before->lfts[i].ports);
  ASSERT_NE(after->qos_policy, nullptr);
  EXPECT_EQ(after->qos_policy->levels[0].name, "fast");
  EXPECT_EQ(after->qos_policy->rules[0].service_id[0].hi, 20u);
  EXPECT_EQ(after->mfts->load()->at(0).masks, before->mfts->load()->at(0).masks);
  EXPECT_EQ(after->partitions.size(), 2u);
  EXPECT_TRUE(after->lid_paths_current());

  // The SA server answers from each: every PathRecord and NodeRecord the same.
  SaHarness h1(before), h2(after);
  const auto lids = testing::ca_lids(*before);
  std::uint64_t tid = 1;
  for (const std::uint16_t s : lids) {
    wire::NodeRecord nr{};
    nr.lid = wire::be16::from(s);
    const MadBuf nreq = testing::sa_request(wire::method::kGet, wire::sa_attr::kNodeRecord, wire::node_record_cm::kLid, nr,
                                            ++tid, s);
    const auto n1 = answer_bytes(h1, nreq);
    ASSERT_FALSE(n1.empty());
    EXPECT_EQ(n1, answer_bytes(h2, nreq)) << "NodeRecord of LID " << s;
    for (const std::uint16_t d : lids) {
      wire::PathRecord pr{};
      pr.slid = wire::be16::from(s);
      pr.dlid = wire::be16::from(d);
      namespace cm = wire::path_record_cm;
      const MadBuf preq = testing::sa_request(wire::method::kGet, wire::sa_attr::kPathRecord, cm::kSLid | cm::kDLid, pr,
                                              ++tid, s);
      const auto p1 = answer_bytes(h1, preq);
      ASSERT_FALSE(p1.empty());
      ASSERT_EQ(p1, answer_bytes(h2, preq)) << "PathRecord " << s << " -> " << d;
    }
  }
}

TEST(EpochFile, DamagedTornOrForeignFilesAreRefused) {
  const auto snap = richer_snapshot();
  const auto good = encode_epoch(*snap, kFabric);
  const auto refused = [](std::vector<std::uint8_t> bytes) {
    Snapshot s;
    FabricIdentity id;
    std::string err;
    EXPECT_FALSE(decode_epoch(bytes, s, id, err));
    return err;
  };
  auto flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  EXPECT_NE(refused(flipped).find("checksum mismatch"), std::string::npos);
  ASSERT_GT(good.size(), 100u);
  auto torn = good;
  torn.erase(torn.end() - 100, torn.end());
  EXPECT_NE(refused(torn).find("torn or truncated"), std::string::npos);
  auto magic = good;
  magic[0] = 'X';
  EXPECT_NE(refused(magic).find("bad magic"), std::string::npos);
  auto order = good;
  std::swap(order[8], order[9]);  // the byte-order mark, as a machine of the other order wrote it
  EXPECT_NE(refused(order).find("other byte order"), std::string::npos);
  auto version = good;
  version[6] = 9;
  EXPECT_NE(refused(version).find("version 9"), std::string::npos);
  EXPECT_NE(refused({good.begin(), good.begin() + 10}).find("too short"), std::string::npos);
}

TEST(EpochFile, WrittenAtomicallyAndReadBack) {
  const std::string dir = ::testing::TempDir() + "/epoch-file-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const auto snap = richer_snapshot();
  std::string err;
  ASSERT_TRUE(write_epoch_file(dir + "/sa-epoch", *snap, kFabric, err)) << err;
  Snapshot back;
  FabricIdentity id;
  bool found = false;
  ASSERT_TRUE(read_epoch_file(dir + "/sa-epoch", back, id, found, err)) << err;
  EXPECT_TRUE(found);
  EXPECT_EQ(back.epoch, snap->epoch);
  Snapshot none;
  EXPECT_TRUE(read_epoch_file(dir + "/missing", none, id, found, err));
  EXPECT_FALSE(found);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace madengine::sa
