// SMP attribute helpers: short-input decoding, NodeDescription text, the
// attribute-modifier builders/parsers, P_Key rules, SL2VL nibbles, SM
// election order, Notice in an SMP, and the attribute table.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp_attrs.hpp"

namespace madengine::wire {
namespace {

template <typename T>
void expect_short_input_rejected(const char* name) {
  SCOPED_TRACE(name);
  std::vector<std::uint8_t> buf(sizeof(T), 0xab);
  EXPECT_TRUE(decode<T>(buf).has_value());
  for (std::size_t n = 0; n < sizeof(T); ++n) {
    EXPECT_FALSE(decode<T>(std::span<const std::uint8_t>(buf.data(), n)).has_value()) << n << " bytes";
  }
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  std::vector<std::uint8_t> small(sizeof(T) - 1, 0x5a);
  EXPECT_FALSE(encode(t, std::span<std::uint8_t>(small)));
  for (std::uint8_t b : small) EXPECT_EQ(b, 0x5a) << "encode wrote into a too-small buffer";
}

TEST(SmpHelpers, TooShortInputIsRejected) {
  expect_short_input_rejected<NodeInfo>("NodeInfo");
  expect_short_input_rejected<NodeDescription>("NodeDescription");
  expect_short_input_rejected<PortInfo>("PortInfo");
  expect_short_input_rejected<SwitchInfo>("SwitchInfo");
  expect_short_input_rejected<LftBlock>("LftBlock");
  expect_short_input_rejected<MftBlock>("MftBlock");
  expect_short_input_rejected<PKeyTableBlock>("PKeyTableBlock");
  expect_short_input_rejected<Sl2VlTable>("Sl2VlTable");
  expect_short_input_rejected<VlArbTableBlock>("VlArbTableBlock");
  expect_short_input_rejected<GuidInfoBlock>("GuidInfoBlock");
  expect_short_input_rejected<SmInfo>("SmInfo");
  expect_short_input_rejected<Notice>("Notice");
}

TEST(SmpHelpers, NoticeInSmpDropsIssuerGid) {
  Notice n = make_generic_notice(notice_type::kSubnetManagement, notice_producer::kCa, trap::kLocalChanges, 0x12);
  n.issuer_gid.prefix.set(kDefaultSubnetPrefix);
  n.issuer_gid.guid.set(0x1122334455667788ull);
  NoticeDetails144 d{};
  d.lid.set(0x12);
  d.set_other_local_changes(1);
  d.capability_mask.set(port_cap::kIsSM | port_cap::kIsTrapSupported);
  d.change_flags.set(trap144_change::kSmPriority);
  n.set_details(d);

  std::array<std::uint8_t, kSmpDataSize> data{};
  ASSERT_TRUE(encode_smp_notice(n, data));
  EXPECT_FALSE(encode_smp_notice(n, std::span<std::uint8_t>(data.data(), kSmpDataSize - 1)));
  EXPECT_FALSE(decode_smp_notice(std::span<const std::uint8_t>(data.data(), kSmpDataSize - 1)).has_value());
  const auto back = decode_smp_notice(data);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->is_generic(), 1);
  EXPECT_EQ(back->type(), notice_type::kSubnetManagement);
  EXPECT_EQ(back->producer_type(), notice_producer::kCa);
  EXPECT_EQ(back->trap_number.get(), trap::kLocalChanges);
  EXPECT_EQ(back->issuer_lid.get(), 0x12);
  EXPECT_EQ(back->issuer_gid, Gid{});  // not carried in an SMP
  const auto d2 = back->details<NoticeDetails144>();
  EXPECT_EQ(d2.lid.get(), 0x12);
  EXPECT_EQ(d2.other_local_changes(), 1);
  EXPECT_EQ(d2.capability_mask.get(), port_cap::kIsSM | port_cap::kIsTrapSupported);
  EXPECT_EQ(d2.change_flags.get(), trap144_change::kSmPriority);
  // The 80-byte form (SA Report) keeps the GID.
  EXPECT_EQ(decode<Notice>(as_bytes(n))->issuer_gid, n.issuer_gid);
}

TEST(SmpHelpers, NodeDescriptionText) {
  NodeDescription d{};
  EXPECT_TRUE(d.set_text("switch-17 HCA-1"));
  EXPECT_EQ(d.text(), "switch-17 HCA-1");
  EXPECT_EQ(d.str(), "switch-17 HCA-1");
  for (std::size_t i = 15; i < kNodeDescriptionSize; ++i) EXPECT_EQ(d.bytes[i], 0) << i;

  const std::string longer(100, 'x');
  EXPECT_FALSE(d.set_text(longer));  // truncated
  EXPECT_EQ(d.text(), std::string(64, 'x'));  // no terminator, never read past 64 bytes

  EXPECT_TRUE(d.set_text(""));
  EXPECT_TRUE(d.text().empty());
}

TEST(SmpHelpers, MftModifier) {
  for (std::uint8_t pos = 0; pos < kMftPositionsMax; ++pos) {
    for (std::uint16_t block : {0, 1, 255, 511}) {
      const std::uint32_t m = mft_modifier(pos, block);
      const auto parsed = parse_mft_modifier(m);
      ASSERT_TRUE(parsed.has_value());
      EXPECT_EQ(parsed->position, pos);
      EXPECT_EQ(parsed->block, block);
    }
  }
  EXPECT_EQ(mft_modifier(2, 5), 0x20000005u);
  EXPECT_FALSE(parse_mft_modifier(0x00000200u).has_value());  // block bit 9 is reserved
  EXPECT_FALSE(parse_mft_modifier(0x01000000u).has_value());
  EXPECT_EQ(mft_block_of(0xc000), 0);
  EXPECT_EQ(mft_block_of(0xc020), 1);
  EXPECT_EQ(mft_index_of(0xc021), 1u);
  EXPECT_EQ(mft_block_of(0xffff), kMftBlocksMax - 1);
}

TEST(SmpHelpers, LftHelpers) {
  EXPECT_EQ(kLftBlocksMax, 768u);
  EXPECT_EQ(lft_block_of(0x0041), 1u);
  EXPECT_EQ(lft_index_of(0x0041), 1u);
  EXPECT_TRUE(lft_modifier_valid(767));
  EXPECT_FALSE(lft_modifier_valid(768));
  LftBlock b{};
  b.set_port(5, 7);
  EXPECT_EQ(b.port(5), 7);
  EXPECT_EQ(b.ports[5], 7);
}

TEST(SmpHelpers, PKeyRules) {
  EXPECT_TRUE(pkey_is_full_member(kDefaultPKey));
  EXPECT_FALSE(pkey_is_full_member(0x7fff));
  EXPECT_EQ(pkey_base(0x8001), 0x0001);
  EXPECT_FALSE(pkey_is_valid(0x0000));
  EXPECT_FALSE(pkey_is_valid(0x8000));
  EXPECT_TRUE(pkeys_match(0xffff, 0x7fff));   // full with limited
  EXPECT_FALSE(pkeys_match(0x7fff, 0x7fff));  // two limited members never talk
  EXPECT_FALSE(pkeys_match(0x8001, 0x8002));
  EXPECT_EQ(pkey_table_modifier(3, 9), 0x00090003u);
  EXPECT_EQ(pkey_table_block_of(0x00090003u), 3);
  EXPECT_EQ(pkey_table_port_of(0x00090003u), 9);
  EXPECT_EQ(pkey_blocks_for(64), 2u);
  EXPECT_EQ(pkey_blocks_for(65), 3u);
  PKeyTableBlock b{};
  b.set_pkey(0, kDefaultPKey);
  EXPECT_EQ(b.pkeys[0].bytes()[0], 0xff);
  EXPECT_EQ(b.pkey(0), kDefaultPKey);
}

TEST(SmpHelpers, Sl2VlNibbles) {
  Sl2VlTable t{};
  t.set_vl(0, 0xa);
  t.set_vl(1, 0x5);
  t.set_vl(15, 0x3);
  EXPECT_EQ(t.bytes[0], 0xa5);  // SL0 in the high nibble (bits 0..3 in IBA order)
  EXPECT_EQ(t.bytes[7], 0x03);
  t.set_vl(0, 0x1f);  // only 4 bits stored
  EXPECT_EQ(t.bytes[0], 0xf5);
  EXPECT_EQ(t.get_vl(1), 0x5);
  EXPECT_EQ(sl2vl_modifier(3, 4), 0x0304u);
}

TEST(SmpHelpers, VlArbModifier) {
  EXPECT_EQ(vl_arb_modifier(vl_arb_block::kHighLower, 5), 0x00030005u);
  EXPECT_TRUE(vl_arb_modifier_valid(0x00040000u));
  EXPECT_FALSE(vl_arb_modifier_valid(0x00050000u));
  EXPECT_FALSE(vl_arb_modifier_valid(0x00000001u));
}

TEST(SmpHelpers, SmInfoStateAndElection) {
  SmInfo s{};
  s.set_priority(14);
  s.set_state(SmState::kStandby);
  EXPECT_EQ(s.bits20_, 0xe2);
  EXPECT_EQ(s.state(), SmState::kStandby);
  EXPECT_STREQ(to_string(SmState::kMaster), "MASTER");
  EXPECT_TRUE(sm_outranks(15, 0x20, 14, 0x10));  // priority first
  EXPECT_TRUE(sm_outranks(5, 0x10, 5, 0x20));    // then the lower GUID
  EXPECT_FALSE(sm_outranks(5, 0x20, 5, 0x10));
  EXPECT_EQ(sm_info_mod::kHandover, 1u);
  EXPECT_EQ(sm_info_mod::kDiscover, 5u);
}

TEST(SmpHelpers, PortInfoHelpers) {
  PortInfo p{};
  p.set_state(PortState::kArmed);
  p.set_port_physical_state(static_cast<std::uint8_t>(PortPhysState::kLinkUp));
  p.capability_mask.set(port_cap::kIsSM | port_cap::kIsClientReregistrationSupported);
  EXPECT_EQ(p.state(), PortState::kArmed);
  EXPECT_EQ(p.phys_state(), PortPhysState::kLinkUp);
  EXPECT_TRUE(p.has_cap(port_cap::kIsSM));
  EXPECT_FALSE(p.has_cap(port_cap::kIsSMdisabled));
  EXPECT_EQ(port_cap::kIsSM, 0x2u);
  EXPECT_EQ(mtu_bytes(static_cast<std::uint8_t>(Mtu::k256)), 256u);
  EXPECT_EQ(mtu_bytes(static_cast<std::uint8_t>(Mtu::k4096)), 4096u);
  EXPECT_EQ(mtu_bytes(0), 0u);
  EXPECT_EQ(mtu_bytes(6), 0u);
  EXPECT_EQ(mtu_code(2048), static_cast<std::uint8_t>(Mtu::k2048));
  EXPECT_EQ(mtu_code(1000), 0);
  // A set value wider than the field keeps only the field's bits.
  p.set_lmc(0xff);
  EXPECT_EQ(p.lmc(), 7);
  EXPECT_EQ(p.m_key_protect_bits(), 0);
}

TEST(SmpHelpers, NodeInfoHelpers) {
  NodeInfo n{};
  n.set_type(NodeType::kSwitch);
  n.set_vendor_id(0x02c9);
  EXPECT_TRUE(n.is_switch());
  EXPECT_EQ(n.vendor_id(), 0x02c9u);
  EXPECT_EQ(n.vendor_id_[1], 0x02);
  EXPECT_STREQ(to_string(NodeType::kCa), "CA");
}

TEST(SmpHelpers, SwitchInfoPortStateChangeForSet) {
  SwitchInfo s{};
  s.set_life_time_value(18);
  s.set_port_state_change(1);  // as read in a GetResp
  s.set_optimized_sl_to_vl_mapping_programming(3);
  s.prepare_for_set(false);
  EXPECT_EQ(s.port_state_change(), 0);
  EXPECT_EQ(s.life_time_value(), 18);
  EXPECT_EQ(s.optimized_sl_to_vl_mapping_programming(), 3);
  s.prepare_for_set(true);
  EXPECT_EQ(s.port_state_change(), 1);
  EXPECT_EQ(s.bits11_, 18 << 3 | 1 << 2 | 3);
}

TEST(SmpHelpers, AttrTable) {
  EXPECT_EQ(smp_attr_size(smp_attr::kNodeInfo), 40u);
  EXPECT_EQ(smp_attr_size(smp_attr::kPortInfo), 64u);
  EXPECT_EQ(smp_attr_size(smp_attr::kSwitchInfo), 20u);
  EXPECT_EQ(smp_attr_size(smp_attr::kSmInfo), 21u);
  EXPECT_EQ(smp_attr_size(smp_attr::kSl2VlTable), 8u);
  EXPECT_FALSE(smp_attr_size(0x7777).has_value());
  EXPECT_STREQ(smp_attr_name(smp_attr::kMulticastFwdTable), "MulticastForwardingTable");
  EXPECT_STREQ(smp_attr_name(0x7777), "unknown");
}

}  // namespace
}  // namespace madengine::wire
