// SA server, read-only records: every record type's Get and GetTable with
// several component masks, answers over RMPP reassembled by the engine's
// RmppReceiver equal to the expected set, PathRecord values equal to the
// path database and the routed walk, the PortInfoRecord capability-mask
// match (AttributeModifier bit 31), and the status codes of bad requests.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "sa_fixture.hpp"
#include "sa/server/components.hpp"

namespace madengine::sa {
namespace {

using namespace testing;
namespace a = wire::sa_attr;
namespace m = wire::method;
namespace st = wire::sa_status;

struct Empty {
  std::array<std::uint8_t, 8> b{};
};

class SaRecords : public ::testing::Test {
 protected:
  SaRecords() : built_(build_snapshot(madengine::testing::fat_tree2(4, 2, 3))), h_(built_.snap) {
    lids_ = ca_lids(*built_.snap);
    me_ = lids_.front();
  }
  template <typename Rec>
  std::optional<Answer> ask(std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const Rec& r) {
    return h_.ask(sa_request(method, attr, mask, r, ++tid_, me_));
  }
  const Snapshot& snap() const { return *built_.snap; }

  Built built_;
  SaHarness h_;
  std::vector<std::uint16_t> lids_;
  std::uint16_t me_ = 0;
  std::uint64_t tid_ = 0x100;
};

TEST_F(SaRecords, ClassPortInfo) {
  const auto r = ask(m::kGet, a::kClassPortInfo, 0, Empty{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
  EXPECT_EQ(r->first.hdr().method, m::kGetResp);
  const auto cpi = r->record<wire::ClassPortInfo>();
  EXPECT_EQ(cpi.base_version, 1);
  EXPECT_EQ(cpi.class_version, 2);
  EXPECT_EQ(cpi.resp_time_value(), 16);
  EXPECT_EQ(cpi.redirect_qkey.get(), kGsiQkey);
  EXPECT_NE(cpi.capability_mask.get() & wire::cpi_cap::kSaMultiPath, 0);
}

TEST_F(SaRecords, NodeRecordGetTableIsEveryEndPort) {
  const auto r = ask(m::kGetTable, a::kNodeRecord, 0, wire::NodeRecord{});
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->rmpp);
  EXPECT_EQ(r->status(), 0);
  EXPECT_EQ(r->first.hdr().method, m::kGetTableResp);
  EXPECT_EQ(r->attr_offset(), wire::attr_offset_for(sizeof(wire::NodeRecord)));
  const auto recs = r->records<wire::NodeRecord>();
  // fat_tree2(4, 2, 3): 6 switches (one record each) and 12 CAs.
  ASSERT_EQ(recs.size(), 18u);
  EXPECT_EQ(r->payload.size(), 18u * 112u);  // > 200 bytes: several segments
  std::set<std::uint16_t> seen;
  for (const auto& n : recs) {
    seen.insert(n.lid.get());
    const auto* e = snap().end_port_by_lid(n.lid.get());
    ASSERT_NE(e, nullptr);
    const auto& node = snap().fabric.nodes[e->node];
    EXPECT_EQ(n.node_info.node_guid.get(), node.node_guid);
    EXPECT_EQ(n.node_info.local_port_num, e->port);
    EXPECT_EQ(n.node_description.text(), node.description);
  }
  EXPECT_EQ(seen.size(), 18u);
}

TEST_F(SaRecords, NodeRecordByLidAndByGuid) {
  wire::NodeRecord q{};
  q.lid = wire::be16::from(lids_[3]);
  auto r = ask(m::kGet, a::kNodeRecord, wire::node_record_cm::kLid, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  const auto n = r->record<wire::NodeRecord>();
  EXPECT_EQ(n.lid.get(), lids_[3]);
  EXPECT_EQ(n.node_info.type(), wire::NodeType::kCa);

  // By NodeGUID with GetTable: the same one record.
  wire::NodeRecord g{};
  g.node_info.node_guid = n.node_info.node_guid;
  r = ask(m::kGetTable, a::kNodeRecord, wire::node_record_cm::kNodeGuid, g);
  ASSERT_TRUE(r);
  const auto recs = r->records<wire::NodeRecord>();
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0].lid.get(), lids_[3]);

  // By NodeType = switch: the 6 switches.
  wire::NodeRecord t{};
  t.node_info.set_type(wire::NodeType::kSwitch);
  r = ask(m::kGetTable, a::kNodeRecord, wire::node_record_cm::kNodeType, t);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->records<wire::NodeRecord>().size(), 6u);

  // Get that matches several: too many records; none: no records.
  r = ask(m::kGet, a::kNodeRecord, wire::node_record_cm::kNodeType, t);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kTooManyRecords);
  q.lid = wire::be16::from(0xbff0);
  r = ask(m::kGet, a::kNodeRecord, wire::node_record_cm::kLid, q);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kNoRecords);
}

TEST_F(SaRecords, PortInfoRecords) {
  // A switch: ports 0..N under its LID.
  const std::uint16_t sw = snap().fabric.nodes[0].base_lid;
  wire::PortInfoRecord q{};
  q.endport_lid = wire::be16::from(sw);
  auto r = ask(m::kGetTable, a::kPortInfoRecord, wire::port_info_record_cm::kEndportLid, q);
  ASSERT_TRUE(r);
  const auto recs = r->records<wire::PortInfoRecord>();
  EXPECT_EQ(recs.size(), snap().fabric.nodes[0].num_ports() + 1u);
  // One port of it, by LID and port number.
  q.port_num = 2;
  r = ask(m::kGet, a::kPortInfoRecord, wire::port_info_record_cm::kEndportLid | wire::port_info_record_cm::kPortNum, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PortInfoRecord>().port_num, 2);
  // A sub-byte component: every port whose state is ACTIVE (all linked ones).
  wire::PortInfoRecord act{};
  act.port_info.set_port_state(4);
  r = ask(m::kGetTable, a::kPortInfoRecord, wire::port_info_record_cm::kPortState, act);
  ASSERT_TRUE(r);
  for (const auto& p : r->records<wire::PortInfoRecord>()) EXPECT_EQ(p.port_info.port_state(), 4);
  EXPECT_GT(r->records<wire::PortInfoRecord>().size(), 12u);
}

// AttributeModifier bit 31 (saquery -s): CapabilityMask and CapabilityMask2
// select the ports that have every bit the query sets; without it they must
// be equal. Other records ignore the bit.
TEST(SaRecordsCapMaskMatch, PortInfoRecordCapabilityBitsAsMasks) {
  namespace pir = wire::port_info_record_cm;
  namespace cap = wire::port_cap;
  const Built b = build_snapshot(madengine::testing::fat_tree2(4, 2, 3));
  const std::vector<std::uint16_t> lids = ca_lids(*b.snap);
  ASSERT_GE(lids.size(), 3u);
  auto info_of = [&](std::uint16_t lid) -> wire::PortInfo& {
    const fabric::EndPort e = *b.snap->end_port_by_lid(lid);
    return b.snap->fabric.nodes[e.node].ports[e.port].info;
  };
  constexpr std::uint32_t kCaCaps = cap::kIsTrapSupported | cap::kIsClientReregistrationSupported;
  for (const auto lid : lids) info_of(lid).capability_mask = wire::be32::from(kCaCaps);
  const std::uint16_t sm = b.snap->sm.lid, disabled = lids[1], cap2 = lids[2];
  ASSERT_EQ(sm, lids[0]);
  info_of(sm).capability_mask = wire::be32::from(kCaCaps | cap::kIsSM);
  info_of(disabled).capability_mask = wire::be32::from(kCaCaps | cap::kIsSMdisabled);
  info_of(cap2).capability_mask2 =
      wire::be16::from(wire::port_cap2::kIsSetNodeDescriptionSupported | wire::port_cap2::kIsLinkWidth2xSupported);
  SaHarness h(b.snap);
  std::uint64_t tid = 0x400;
  auto ask = [&](std::uint8_t method, std::uint64_t mask, const wire::PortInfoRecord& q, bool match_bits) {
    MadBuf req = sa_request(method, a::kPortInfoRecord, mask, q, ++tid, lids.back());
    if (match_bits) req.as<wire::SaMad>().hdr.attr_mod = wire::be32::from(wire::kPortInfoRecordCapMaskMatch);
    return h.ask(req);
  };
  auto lids_of = [](const std::vector<wire::PortInfoRecord>& recs) {
    std::set<std::uint16_t> out;
    for (const auto& r : recs) out.insert(r.endport_lid.get());
    return out;
  };

  // saquery -s: the IsSM ports, then the IsSMdisabled ones.
  wire::PortInfoRecord q{};
  q.port_info.capability_mask = wire::be32::from(cap::kIsSM);
  auto r = ask(m::kGetTable, pir::kCapabilityMask, q, true);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(lids_of(r->records<wire::PortInfoRecord>()), std::set<std::uint16_t>{sm});
  q.port_info.capability_mask = wire::be32::from(cap::kIsSMdisabled);
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask, q, true)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{disabled});
  // Every bit asked must be set: IsSM and IsTrapSupported still finds the
  // SM; IsSM and a bit no port has finds none.
  q.port_info.capability_mask = wire::be32::from(cap::kIsSM | cap::kIsTrapSupported);
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask, q, true)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{sm});
  q.port_info.capability_mask = wire::be32::from(cap::kIsSM | cap::kIsCableInfoSupported);
  EXPECT_TRUE(ask(m::kGetTable, pir::kCapabilityMask, q, true)->records<wire::PortInfoRecord>().empty());
  // A Get by mask: the one port.
  q.port_info.capability_mask = wire::be32::from(cap::kIsSM);
  r = ask(m::kGet, pir::kCapabilityMask, q, true);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PortInfoRecord>().endport_lid.get(), sm);
  // Without the bit the mask is a value: no port's is IsSM alone; the SM's
  // whole mask finds it.
  EXPECT_TRUE(ask(m::kGetTable, pir::kCapabilityMask, q, false)->records<wire::PortInfoRecord>().empty());
  EXPECT_EQ(ask(m::kGet, pir::kCapabilityMask, q, false)->status(), st::kNoRecords);
  q.port_info.capability_mask = wire::be32::from(kCaCaps | cap::kIsSM);
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask, q, false)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{sm});
  // With the bit, that whole mask still finds only the SM, and no bits at all every port.
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask, q, true)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{sm});
  q.port_info.capability_mask = wire::be32::from(0);
  const std::size_t all = ask(m::kGetTable, 0, q, false)->records<wire::PortInfoRecord>().size();
  EXPECT_EQ(ask(m::kGetTable, pir::kCapabilityMask, q, true)->records<wire::PortInfoRecord>().size(), all);

  // CapabilityMask2 likewise.
  wire::PortInfoRecord q2{};
  q2.port_info.capability_mask2 = wire::be16::from(wire::port_cap2::kIsLinkWidth2xSupported);
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask2, q2, true)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{cap2});
  EXPECT_TRUE(ask(m::kGetTable, pir::kCapabilityMask2, q2, false)->records<wire::PortInfoRecord>().empty());
  // Other components stay values under the bit: CapabilityMask and the LID together.
  q.port_info.capability_mask = wire::be32::from(cap::kIsTrapSupported);
  q.endport_lid = wire::be16::from(disabled);
  EXPECT_EQ(lids_of(ask(m::kGetTable, pir::kCapabilityMask | pir::kEndportLid, q, true)->records<wire::PortInfoRecord>()),
            std::set<std::uint16_t>{disabled});

  // Only PortInfoRecord has the mode; the SA says it has it (both masks).
  EXPECT_EQ(bit_mask_components(a::kPortInfoRecord, wire::kPortInfoRecordCapMaskMatch),
            pir::kCapabilityMask | pir::kCapabilityMask2);
  EXPECT_EQ(bit_mask_components(a::kPortInfoRecord, 0), 0u);
  EXPECT_EQ(bit_mask_components(a::kNodeRecord, wire::kPortInfoRecordCapMaskMatch), 0u);
  const auto cpi = h.ask(sa_request(m::kGet, a::kClassPortInfo, 0, Empty{}, ++tid, sm))->record<wire::ClassPortInfo>();
  EXPECT_NE(cpi.capability_mask.get() & wire::cpi_cap::kSaPortInfoCapMaskMatch, 0);
  EXPECT_NE(cpi.cap_mask2() & wire::cpi_cap2::kSaPortInfoCapMask2Match, 0u);
}

TEST_F(SaRecords, SwitchInfoLinkLftSmInfoGuidPkey) {
  auto r = ask(m::kGetTable, a::kSwitchInfoRecord, 0, wire::SwitchInfoRecord{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->records<wire::SwitchInfoRecord>().size(), 6u);

  // Links: both directions of every link: 4 leaves x (3 hosts + 2 spines) x 2.
  r = ask(m::kGetTable, a::kLinkRecord, 0, wire::LinkRecord{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->attr_offset(), 1);
  EXPECT_EQ(r->records<wire::LinkRecord>().size(), 40u);
  wire::LinkRecord lq{};
  lq.from_lid = wire::be16::from(me_);
  r = ask(m::kGet, a::kLinkRecord, wire::link_record_cm::kFromLid, lq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::LinkRecord>().from_port, 1);

  // LFT blocks: every switch, blocks up to the top LID.
  r = ask(m::kGetTable, a::kLinearFwdTableRecord, 0, wire::LftRecord{});
  ASSERT_TRUE(r);
  const auto lfts = r->records<wire::LftRecord>();
  EXPECT_EQ(lfts.size(), 6u * (snap().top_lid / 64 + 1));
  for (const auto& b : lfts) {
    const auto* e = snap().end_port_by_lid(b.lid.get());
    ASSERT_NE(e, nullptr);
    const auto& lft = *std::find_if(snap().lfts.begin(), snap().lfts.end(), [&](const auto& l) { return l.node == e->node; });
    for (std::size_t i = 0; i < 64; ++i) {
      const std::size_t lid = b.block_num.get() * 64u + i;
      if (lid < lft.ports.size()) {
        EXPECT_EQ(b.lft.port(i), lft.ports[lid]);
      }
    }
  }

  r = ask(m::kGet, a::kSmInfoRecord, 0, wire::SmInfoRecord{});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::SmInfoRecord>().sm_info.guid.get(), snap().sm.port_guid);
  EXPECT_EQ(r->record<wire::SmInfoRecord>().sm_info.sm_key.get(), 0u);

  wire::GuidInfoRecord gq{};
  gq.lid = wire::be16::from(me_);
  r = ask(m::kGet, a::kGuidInfoRecord, wire::guid_info_record_cm::kLid, gq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::GuidInfoRecord>().guid_info.guid(0), port_guid_of_lid(snap(), me_));

  wire::PKeyTableRecord pq{};
  pq.lid = wire::be16::from(me_);
  // Untrusted (no SM_Key): refused (IBA 15.2.5.11).
  r = ask(m::kGet, a::kPKeyTableRecord, wire::pkey_table_record_cm::kLid, pq);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  MadBuf trusted = sa_request(m::kGet, a::kPKeyTableRecord, wire::pkey_table_record_cm::kLid, pq, ++tid_, me_);
  trusted.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);
  r = h_.ask(trusted);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PKeyTableRecord>().pkey_table.pkey(0), 0xffff);
}

TEST_F(SaRecords, TablesFromSnapshotTables) {
  // SL2VL, VLArb, P_Key and GUIDInfo tables the SM put in the snapshot.
  auto s = std::make_shared<Snapshot>(*built_.snap);
  s->epoch = 2;
  const auto* e = s->end_port_by_lid(me_);
  PortTableView::Rows rows(s->fabric.nodes.size());
  auto& pt = rows[e->node];
  pt.resize(2);
  std::vector<std::uint16_t> keys(40, 0);
  keys[0] = 0xffff;
  keys[33] = 0x8001;
  pt[1].pkeys = keys;
  wire::Sl2VlTable t{};
  t.set_vl(1, 1);
  pt[1].sl2vl = {t};
  pt[1].vl_arb.resize(4);
  pt[1].vl_arb[1].entries[0].weight = 7;
  pt[1].guids = {0x1, 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9};
  s->port_tables = std::make_shared<PortTableView>(std::move(rows));
  h_.publish(s);

  wire::PKeyTableRecord pq{};
  pq.lid = wire::be16::from(me_);
  MadBuf preq = sa_request(m::kGetTable, a::kPKeyTableRecord, wire::pkey_table_record_cm::kLid, pq, ++tid_, me_);
  preq.as<wire::SaMad>().sm_key = wire::be64::from(kTestSmKey);
  auto r = h_.ask(preq);
  ASSERT_TRUE(r);
  auto pk = r->records<wire::PKeyTableRecord>();
  ASSERT_EQ(pk.size(), 2u);
  EXPECT_EQ(pk[1].block_num.get(), 1);
  EXPECT_EQ(pk[1].pkey_table.pkey(1), 0x8001);

  wire::Sl2VlTableRecord sq{};
  sq.lid = wire::be16::from(me_);
  r = ask(m::kGet, a::kSl2VlTableRecord, wire::sl2vl_record_cm::kLid, sq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::Sl2VlTableRecord>().table.get_vl(1), 1);

  wire::VlArbTableRecord vq{};
  vq.lid = wire::be16::from(me_);
  vq.block_num = 2;
  r = ask(m::kGet, a::kVlArbTableRecord, wire::vl_arb_record_cm::kLid | wire::vl_arb_record_cm::kBlockNum, vq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::VlArbTableRecord>().vl_arb_table.entries[0].weight, 7);
  // A CA's records answer for the LID's port whatever port numbers are asked
  // (osmtest asks port 0), as OpenSM's; the record keeps the real number.
  vq.output_port_num = 0;
  r = ask(m::kGet, a::kVlArbTableRecord,
          wire::vl_arb_record_cm::kLid | wire::vl_arb_record_cm::kOutputPortNum | wire::vl_arb_record_cm::kBlockNum, vq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::VlArbTableRecord>().output_port_num, 1);
  sq.input_port_num = 3;
  sq.output_port_num = 0;
  r = ask(m::kGet, a::kSl2VlTableRecord,
          wire::sl2vl_record_cm::kLid | wire::sl2vl_record_cm::kInputPortNum | wire::sl2vl_record_cm::kOutputPortNum, sq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);

  wire::GuidInfoRecord gq{};
  gq.lid = wire::be16::from(me_);
  r = ask(m::kGetTable, a::kGuidInfoRecord, wire::guid_info_record_cm::kLid, gq);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->records<wire::GuidInfoRecord>().size(), 2u);
  EXPECT_EQ(r->records<wire::GuidInfoRecord>()[1].guid_info.guid(0), 0x9u);

  // An MFT the SM programmed.
  SwitchMft mft;
  mft.node = 0;
  mft.masks.assign(2, std::vector<std::uint16_t>(1, 0));
  mft.masks[1][0] = 0x0006;
  s->mfts->store({mft});
  s->epoch = 3;
  h_.publish(s);
  r = ask(m::kGetTable, a::kMulticastFwdTableRecord, 0, wire::MftRecord{});
  ASSERT_TRUE(r);
  const auto mf = r->records<wire::MftRecord>();
  ASSERT_EQ(mf.size(), 1u);
  EXPECT_EQ(mf[0].mft.port_masks[1].get(), 0x0006);
}

TEST_F(SaRecords, SwitchPortZeroHasFourVlArbBlocksUnread) {
  // No tables read at all: a switch's port 0 still answers its four blocks,
  // zeros, as OpenSM does; its other ports and the CAs answer none.
  const std::uint16_t sw = snap().fabric.nodes[0].base_lid;
  wire::VlArbTableRecord q{};
  q.lid = wire::be16::from(sw);
  auto r = ask(m::kGetTable, a::kVlArbTableRecord, wire::vl_arb_record_cm::kLid, q);
  ASSERT_TRUE(r);
  const auto recs = r->records<wire::VlArbTableRecord>();
  ASSERT_EQ(recs.size(), 4u);
  for (std::size_t b = 0; b < recs.size(); ++b) {
    EXPECT_EQ(recs[b].output_port_num, 0);
    EXPECT_EQ(recs[b].block_num, b + 1);
    EXPECT_EQ(recs[b].vl_arb_table.entries[0].weight, 0);
  }
  q.lid = wire::be16::from(me_);
  r = ask(m::kGetTable, a::kVlArbTableRecord, wire::vl_arb_record_cm::kLid, q);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->records<wire::VlArbTableRecord>().empty());
}

TEST_F(SaRecords, SwitchPortZeroHasAnSl2VlRecordPerInputPortUnread) {
  // Likewise its SLtoVL tables: one record per input port (0 included), zeros.
  const auto& sw = snap().fabric.nodes[0];
  wire::Sl2VlTableRecord q{};
  q.lid = wire::be16::from(sw.base_lid);
  auto r = ask(m::kGetTable, a::kSl2VlTableRecord, wire::sl2vl_record_cm::kLid, q);
  ASSERT_TRUE(r);
  const auto recs = r->records<wire::Sl2VlTableRecord>();
  ASSERT_EQ(recs.size(), std::size_t{sw.num_ports()} + 1);
  for (std::size_t in = 0; in < recs.size(); ++in) {
    EXPECT_EQ(recs[in].output_port_num, 0);
    EXPECT_EQ(recs[in].input_port_num, in);
    EXPECT_EQ(recs[in].table.get_vl(0), 0);
  }
  // osmtest's shape: LID, input 0, output 0 — one record.
  r = ask(m::kGet, a::kSl2VlTableRecord,
          wire::sl2vl_record_cm::kLid | wire::sl2vl_record_cm::kInputPortNum | wire::sl2vl_record_cm::kOutputPortNum, q);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), 0);
  q.lid = wire::be16::from(me_);
  r = ask(m::kGetTable, a::kSl2VlTableRecord, wire::sl2vl_record_cm::kLid, q);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->records<wire::Sl2VlTableRecord>().empty());
}

TEST_F(SaRecords, PathRecordsEqualThePathDatabase) {
  for (const std::uint16_t s : lids_)
    for (const std::uint16_t d : lids_) {
      wire::PathRecord q{};
      q.slid = wire::be16::from(s);
      q.dlid = wire::be16::from(d);
      const auto r = ask(m::kGet, a::kPathRecord, wire::path_record_cm::kSLid | wire::path_record_cm::kDLid, q);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status(), 0) << s << "->" << d;
      const auto p = r->record<wire::PathRecord>();
      const auto db = snap().paths.path(s, d);
      EXPECT_EQ(p.slid.get(), s);
      EXPECT_EQ(p.dlid.get(), d);
      EXPECT_EQ(p.mtu(), db.mtu);
      EXPECT_EQ(p.rate(), db.rate);
      EXPECT_EQ(p.mtu_selector(), wire::selector::kExactly);
      EXPECT_EQ(p.pkey.get(), 0xffff);
      EXPECT_EQ(p.hop_limit(), 0);
      EXPECT_EQ(p.packet_life_time(), s == d ? 0 : 18);
      EXPECT_TRUE(p.reversible());
      EXPECT_EQ(p.sgid.guid.get(), port_guid_of_lid(snap(), s));
      EXPECT_EQ(p.dgid.guid.get(), port_guid_of_lid(snap(), d));
      EXPECT_GE(sm::trace_route(snap().fabric, built_.routes, s, d), 0);
    }
}

// A GetTable naming no source is answered from every end port (a component
// left out matches any, IBA 15.4; OpenSM's "world"), one path a pair with no
// end named at all, every path to the destination with one named.
TEST_F(SaRecords, PathRecordGetTableWithoutSourceIsEverySource) {
  std::vector<std::uint16_t> ends;  // every end port: CAs and switch ports 0
  for (std::uint16_t lid = 1; lid <= snap().top_lid; ++lid)
    if (snap().end_port_by_lid(lid) != nullptr) ends.push_back(lid);
  ASSERT_EQ(ends.size(), 18u);  // fat_tree2(4, 2, 3): 12 CAs, 6 switches
  auto r = ask(m::kGetTable, a::kPathRecord, 0, wire::PathRecord{});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  std::set<std::pair<std::uint16_t, std::uint16_t>> pairs;
  for (const auto& p : r->records<wire::PathRecord>()) {
    EXPECT_TRUE(pairs.emplace(p.slid.get(), p.dlid.get()).second) << p.slid.get() << "->" << p.dlid.get();
    EXPECT_EQ(p.sgid.guid.get(), port_guid_of_lid(snap(), p.slid.get()));
  }
  EXPECT_EQ(pairs.size(), ends.size() * ends.size());

  namespace cm = wire::path_record_cm;
  wire::PathRecord q{};
  q.dlid = wire::be16::from(lids_.back());
  r = ask(m::kGetTable, a::kPathRecord, cm::kDLid, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  std::set<std::uint16_t> sources;
  for (const auto& p : r->records<wire::PathRecord>()) {
    EXPECT_EQ(p.dlid.get(), lids_.back());
    sources.insert(p.slid.get());
  }
  EXPECT_EQ(sources, std::set<std::uint16_t>(ends.begin(), ends.end()));
  // A Get naming no source still takes the requester's port.
  r = ask(m::kGet, a::kPathRecord, cm::kDLid, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().slid.get(), me_);
}

TEST_F(SaRecords, PathRecordByGidAndSelectors) {
  const std::uint16_t d = lids_.back();
  wire::PathRecord q{};
  q.dgid = gid_of(port_guid_of_lid(snap(), d));
  q.sgid = gid_of(port_guid_of_lid(snap(), me_));
  namespace cm = wire::path_record_cm;
  auto r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kSGid, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().dlid.get(), d);
  EXPECT_EQ(r->record<wire::PathRecord>().slid.get(), me_);

  // No source: the requester's own port.
  r = ask(m::kGet, a::kPathRecord, cm::kDGid, q);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().slid.get(), me_);

  // MTU greater than 4096: none; less than 4096: 2048; exactly 2048: 2048; largest: 4096.
  q.set_mtu(5);
  q.set_mtu_selector(wire::selector::kGreaterThan);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kMtu | cm::kMtuSelector, q);
  EXPECT_EQ(r->status(), st::kNoRecords);
  q.set_mtu_selector(wire::selector::kLessThan);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kMtu | cm::kMtuSelector, q);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().mtu(), 4);
  q.set_mtu(4);
  q.set_mtu_selector(wire::selector::kExactly);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kMtu | cm::kMtuSelector, q);
  EXPECT_EQ(r->record<wire::PathRecord>().mtu(), 4);
  q.set_mtu_selector(wire::selector::kLargest);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kMtu | cm::kMtuSelector, q);
  EXPECT_EQ(r->record<wire::PathRecord>().mtu(), 5);
  // Rate greater than 40 Gb/s: none (4x QDR links); less than: 30 Gb/s.
  q.set_rate(wire::rate_code::k40Gbps);
  q.set_rate_selector(wire::selector::kGreaterThan);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kRate | cm::kRateSelector, q);
  EXPECT_EQ(r->status(), st::kNoRecords);
  q.set_rate_selector(wire::selector::kLessThan);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kRate | cm::kRateSelector, q);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().rate(), wire::rate_code::k30Gbps);
  // Packet lifetime less than 18: none; exactly 20: 20.
  q.set_packet_life_time(18);
  q.set_packet_life_time_selector(wire::selector::kLessThan);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kPacketLifeTime | cm::kPacketLifeTimeSelector, q);
  EXPECT_EQ(r->status(), st::kNoRecords);
  // SL and a P_Key nobody has.
  q.set_sl(3);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kSl, q);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().sl(), 3);
  q.pkey = wire::be16::from(0x8002);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid | cm::kPKey, q);
  EXPECT_EQ(r->status(), st::kNoRecords);
  // An unknown DGID.
  q.dgid = gid_of(0x1234);
  r = ask(m::kGet, a::kPathRecord, cm::kDGid, q);
  EXPECT_EQ(r->status(), st::kReqInvalidGid);
}

// The shape rdma_cm and IPoIB send (SGID|DGID|P_Key|NumbPath|Reversible)
// answers what the LID shape answers, through the GUID index.
TEST_F(SaRecords, ClientShapedGidQueriesEqualLidQueries) {
  namespace cm = wire::path_record_cm;
  std::vector<std::uint16_t> ends = lids_;
  ends.push_back(snap().fabric.lid_of(snap().fabric.end_ports().front()));  // a switch's port 0 too
  for (const std::uint16_t s : ends)
    for (const std::uint16_t d : ends) {
      wire::PathRecord byl{};
      byl.slid = wire::be16::from(s);
      byl.dlid = wire::be16::from(d);
      const auto want = ask(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid, byl);
      wire::PathRecord byg{};
      byg.sgid = gid_of(port_guid_of_lid(snap(), s));
      byg.dgid = gid_of(port_guid_of_lid(snap(), d));
      if (byg.sgid.guid.get() == 0) byg.sgid = gid_of(snap().lid_info[s].port_guid);
      if (byg.dgid.guid.get() == 0) byg.dgid = gid_of(snap().lid_info[d].port_guid);
      byg.pkey = wire::be16::from(0xffff);
      byg.set_numb_path(1);
      byg.set_reversible(true);
      const auto got = ask(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid | cm::kPKey | cm::kNumbPath | cm::kReversible, byg);
      ASSERT_TRUE(want && got);
      ASSERT_EQ(got->status(), want->status()) << s << "->" << d;
      const auto w = want->record<wire::PathRecord>(), g = got->record<wire::PathRecord>();
      EXPECT_EQ(std::memcmp(&w, &g, sizeof(w)), 0) << s << "->" << d;
    }
  // A GID that names another port than the LID beside it: nothing.
  wire::PathRecord q{};
  q.slid = wire::be16::from(lids_[0]);
  q.sgid = gid_of(port_guid_of_lid(snap(), lids_[1]));
  q.dlid = wire::be16::from(lids_[2]);
  EXPECT_EQ(ask(m::kGet, a::kPathRecord, cm::kSLid | cm::kSGid | cm::kDLid, q)->status(), st::kNoRecords);
  q.sgid = gid_of(port_guid_of_lid(snap(), lids_[0]));
  q.dgid = gid_of(port_guid_of_lid(snap(), lids_[3]));
  EXPECT_EQ(ask(m::kGet, a::kPathRecord, cm::kSLid | cm::kSGid | cm::kDLid | cm::kDGid, q)->status(), st::kNoRecords);
  q.dgid = gid_of(port_guid_of_lid(snap(), lids_[2]));
  EXPECT_EQ(ask(m::kGet, a::kPathRecord, cm::kSLid | cm::kSGid | cm::kDLid | cm::kDGid, q)->status(), 0);
  // An unknown SGID, and a GID outside the subnet's prefix.
  q.sgid = gid_of(0x4321);
  EXPECT_EQ(ask(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid, q)->status(), st::kReqInvalidGid);
  q.sgid = gid_of(port_guid_of_lid(snap(), lids_[0]));
  q.sgid.prefix = wire::be64::from(0xfec0000000001234ull);
  EXPECT_EQ(ask(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid, q)->status(), st::kReqInvalidGid);
}

// With LMC 1 a GID names both LIDs of its port: a Get answers the base
// LIDs, a GetTable both pairs (index by index, as OpenSM).
TEST(SaRecordsLmc, GidQueriesCoverThePortsLids) {
  const Built b = build_snapshot(madengine::testing::fat_tree2(4, 2, 3), 1, 2, 1);
  SaHarness h(b.snap);
  const std::vector<std::uint16_t> lids = ca_lids(*b.snap);
  namespace cm = wire::path_record_cm;
  wire::PathRecord q{};
  q.sgid = gid_of(port_guid_of_lid(*b.snap, lids[0]));
  q.dgid = gid_of(port_guid_of_lid(*b.snap, lids.back()));
  auto r = h.ask(sa_request(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid, q, 1, lids[0]));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().slid.get(), lids[0]);
  EXPECT_EQ(r->record<wire::PathRecord>().dlid.get(), lids.back());
  r = h.ask(sa_request(m::kGetTable, a::kPathRecord, cm::kSGid | cm::kDGid, q, 2, lids[0]));
  ASSERT_TRUE(r);
  const auto recs = r->records<wire::PathRecord>();
  ASSERT_EQ(recs.size(), 2u);
  for (std::uint16_t i = 0; i < 2; ++i) {
    EXPECT_EQ(recs[i].slid.get(), lids[0] + i);
    EXPECT_EQ(recs[i].dlid.get(), lids.back() + i);
  }
}

TEST_F(SaRecords, PathRecordGetTableFromOneSource) {
  wire::PathRecord q{};
  q.slid = wire::be16::from(me_);
  const auto r = ask(m::kGetTable, a::kPathRecord, wire::path_record_cm::kSLid, q);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->rmpp);
  const auto recs = r->records<wire::PathRecord>();
  EXPECT_EQ(recs.size(), snap().by_port_guid.size());  // every end port, switches included
  std::set<std::uint16_t> dl;
  for (const auto& p : recs) {
    EXPECT_EQ(p.slid.get(), me_);
    EXPECT_EQ(p.mtu(), snap().paths.path(me_, p.dlid.get()).mtu);
    dl.insert(p.dlid.get());
  }
  EXPECT_EQ(dl.size(), recs.size());
}

TEST_F(SaRecords, PartitionsLimitPaths) {
  // Two hosts in partition 0x0002, one full and one limited member; a third limited only.
  auto s = std::make_shared<Snapshot>(*built_.snap);
  s->epoch = 5;
  PortTableView::Rows rows(s->fabric.nodes.size());
  auto set_keys = [&](std::uint16_t lid, std::vector<std::uint16_t> k) {
    const auto* e = s->end_port_by_lid(lid);
    rows[e->node].resize(e->port + 1u);
    rows[e->node][e->port].pkeys = std::move(k);
  };
  set_keys(lids_[0], {0x8002});
  set_keys(lids_[1], {0x0002});
  set_keys(lids_[2], {0x0002});
  s->port_tables = std::make_shared<PortTableView>(std::move(rows));
  s->index();  // the partition sets are derived from the tables
  h_.publish(s);
  namespace cm = wire::path_record_cm;
  auto path = [&](std::uint16_t a_, std::uint16_t b_) {
    wire::PathRecord q{};
    q.slid = wire::be16::from(a_);
    q.dlid = wire::be16::from(b_);
    return ask(m::kGet, a::kPathRecord, cm::kSLid | cm::kDLid, q);
  };
  auto r = path(lids_[0], lids_[1]);
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().pkey.get() & 0x7fff, 2);
  EXPECT_EQ(path(lids_[1], lids_[2])->status(), st::kNoRecords);  // both limited
  EXPECT_EQ(path(lids_[0], lids_[3])->status(), st::kNoRecords);  // 0x8002 vs the default 0xffff
  // The same by GIDs with the P_Key as the source holds it (rdma_cm's shape).
  auto by_gid = [&](std::uint16_t a_, std::uint16_t b_, std::uint16_t pkey) {
    wire::PathRecord q{};
    q.sgid = gid_of(port_guid_of_lid(*s, a_));
    q.dgid = gid_of(port_guid_of_lid(*s, b_));
    q.pkey = wire::be16::from(pkey);
    q.set_numb_path(1);
    q.set_reversible(true);
    return ask(m::kGet, a::kPathRecord, cm::kSGid | cm::kDGid | cm::kPKey | cm::kNumbPath | cm::kReversible, q);
  };
  r = by_gid(lids_[1], lids_[0], 0x0002);  // limited to full
  ASSERT_EQ(r->status(), 0);
  EXPECT_EQ(r->record<wire::PathRecord>().pkey.get(), 0x0002);
  EXPECT_EQ(r->record<wire::PathRecord>().slid.get(), lids_[1]);
  EXPECT_EQ(by_gid(lids_[0], lids_[1], 0x8002)->status(), 0);
  EXPECT_EQ(by_gid(lids_[1], lids_[2], 0x0002)->status(), st::kNoRecords);  // both limited
  EXPECT_EQ(by_gid(lids_[0], lids_[3], 0x8002)->status(), st::kNoRecords);  // not a member
  EXPECT_EQ(by_gid(lids_[0], lids_[3], 0xffff)->status(), st::kNoRecords);  // the default: lids_[0] is not in it
  EXPECT_EQ(by_gid(lids_[3], lids_[4], 0xffff)->status(), 0);
}

TEST_F(SaRecords, MultiPathRecord) {
  wire::MultiPathRecord q{};
  q.set_numb_path(10);
  std::array<wire::Gid, 2> sg{gid_of(port_guid_of_lid(snap(), lids_[0])), gid_of(port_guid_of_lid(snap(), lids_[1]))};
  std::array<wire::Gid, 3> dg{gid_of(port_guid_of_lid(snap(), lids_[4])), gid_of(port_guid_of_lid(snap(), lids_[5])),
                              gid_of(port_guid_of_lid(snap(), lids_[6]))};
  std::array<std::uint8_t, wire::kSaDataSize> data{};
  ASSERT_TRUE(wire::encode_multipath(q, sg, dg, data));
  MadBuf req = sa_request(m::kGetMulti, a::kMultiPathRecord,
                          wire::multi_path_record_cm::kNumbPath | wire::multi_path_record_cm::kSGidCount |
                              wire::multi_path_record_cm::kDGidCount,
                          data, ++tid_, me_);
  // Sent as a kernel sends it: a one-segment RMPP transfer, which the SA
  // acknowledges (segment 1, window 1) before it answers.
  auto& rm = req.as<wire::SaMad>().rmpp;
  rm.version = 1;
  rm.type = static_cast<std::uint8_t>(wire::RmppType::kData);
  rm.set_flags(0, wire::rmpp_flag::kActive | wire::rmpp_flag::kFirst | wire::rmpp_flag::kLast);
  rm.data1 = wire::be32::from(1);
  rm.data2 = wire::be32::from(wire::kSaDataSize + 20);
  h_.acks().clear();
  const auto r = h_.ask(req);
  ASSERT_EQ(h_.acks().size(), 1u);
  const auto& ack = h_.acks()[0].as<wire::SaMad>();
  EXPECT_EQ(ack.hdr.tid.get(), req.hdr().tid.get());
  EXPECT_EQ(ack.hdr.method, m::kGetMultiResp);
  EXPECT_EQ(ack.rmpp.data1.get(), 1u);
  EXPECT_EQ(ack.rmpp.data2.get(), 1u);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->rmpp);
  EXPECT_EQ(r->first.hdr().method, m::kGetMultiResp);
  const auto recs = r->records<wire::PathRecord>();
  ASSERT_EQ(recs.size(), 6u);
  EXPECT_EQ(recs[0].slid.get(), lids_[0]);
  EXPECT_EQ(recs[5].dlid.get(), lids_[6]);
}

TEST_F(SaRecords, BadRequests) {
  // Invalid component mask: a bit beyond LinkRecord's four components.
  auto r = ask(m::kGetTable, a::kLinkRecord, 1ull << 10, wire::LinkRecord{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), st::kReqInvalid);
  // Unknown attribute; an unsupported method; a record that has no Set.
  r = ask(m::kGet, 0x0099, 0, Empty{});
  EXPECT_EQ(r->status(), wire::status::kMethodAttrUnsupported);
  r = ask(m::kGetTraceTable, a::kPathRecord, 0, Empty{});
  EXPECT_EQ(r->status(), wire::status::kMethodUnsupported);
  r = ask(m::kSet, a::kNodeRecord, 0, wire::NodeRecord{});
  EXPECT_EQ(r->status(), wire::status::kMethodAttrUnsupported);
  // PathRecord Get without destination: insufficient components.
  r = ask(m::kGet, a::kPathRecord, 0, wire::PathRecord{});
  EXPECT_EQ(r->status(), st::kReqInsufficientComponents);
  // Wrong class version.
  MadBuf b = sa_request(m::kGet, a::kNodeRecord, 0, wire::NodeRecord{}, ++tid_, me_);
  b.hdr().class_version = 1;
  r = h_.ask(b);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status(), wire::status::kBadVersion);

  const auto c = h_.server().counters();
  EXPECT_EQ(c.total().dropped, 0u);
  EXPECT_EQ(c.total().received, c.total().answered + c.total().busy + c.total().duplicates);
  EXPECT_EQ(c[SaRecordKind::kLink].errors[st::kReqInvalid >> 8], 1u);
}

TEST(SaComponents, TablesCoverEachRecord) {
  // The last component of each table ends exactly at the record's end.
  for (const std::uint16_t attr : {a::kNodeRecord, a::kPortInfoRecord, a::kSl2VlTableRecord, a::kSwitchInfoRecord,
                                   a::kLinearFwdTableRecord, a::kMulticastFwdTableRecord, a::kSmInfoRecord,
                                   a::kLinkRecord, a::kGuidInfoRecord, a::kServiceRecord, a::kPKeyTableRecord,
                                   a::kPathRecord, a::kVlArbTableRecord, a::kMcMemberRecord, a::kInformInfoRecord}) {
    const auto* l = record_layout(attr);
    ASSERT_NE(l, nullptr);
    unsigned end = 0;
    for (const auto& c : l->components) {
      EXPECT_EQ(c.bit_offset, end) << "attr " << attr;  // contiguous, in wire order
      end = c.bit_offset + c.width_bits;
    }
    // InformInfoRecord's last 4 bytes are padding, not a component.
    EXPECT_EQ(end, attr == a::kInformInfoRecord ? 480u : l->size * 8u) << "attr " << attr;
  }
  // Spot checks against the wire structs' own accessors.
  wire::PortInfoRecord p{};
  p.port_info.set_lmc(5);
  p.port_info.set_link_speed_ext_enabled(17);
  const auto* l = record_layout(a::kPortInfoRecord);
  EXPECT_EQ(component_value(*l, 20, reinterpret_cast<const std::uint8_t*>(&p)), 5u);
  EXPECT_EQ(component_value(*l, 57, reinterpret_cast<const std::uint8_t*>(&p)), 17u);
  wire::McMemberRecord mc{};
  mc.set_join_state(0x3);
  mc.set_flow_label(0x12345);
  const auto* lm = record_layout(a::kMcMemberRecord);
  EXPECT_EQ(component_value(*lm, 16, reinterpret_cast<const std::uint8_t*>(&mc)), 3u);
  EXPECT_EQ(component_value(*lm, 13, reinterpret_cast<const std::uint8_t*>(&mc)), 0x12345u);
}

}  // namespace
}  // namespace madengine::sa
