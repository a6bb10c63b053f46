// HA peer helpers: IsSM ports found in a fabric, the SMInfo Get/Set and trap
// 144 SMPs as built on the wire, and SMInfo responses decoded with the SM_Key
// rule OpenSM uses.
#include "sm/ha/sm_peers.hpp"

#include <gtest/gtest.h>

#include "fabric_builders.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm::ha {
namespace {

using namespace madengine::testing;

void set_cap(fabric::Port& p, std::uint32_t caps) { p.info.capability_mask = wire::be32::from(caps); }

TEST(HaPeers, FindsIsSmPortsButNotOursOrDisabled) {
  Fabric f = fat_tree2(2, 1, 3);
  std::vector<NodeId> cas;
  for (NodeId i = 0; i < f.nodes.size(); ++i)
    if (!f.nodes[i].is_switch()) cas.push_back(i);
  ASSERT_GE(cas.size(), 4u);
  set_cap(f.nodes[cas[0]].ports[1], wire::port_cap::kIsSM);  // us
  set_cap(f.nodes[cas[1]].ports[1], wire::port_cap::kIsSM);  // a peer
  set_cap(f.nodes[cas[2]].ports[1], wire::port_cap::kIsSM | wire::port_cap::kIsSMdisabled);
  f.nodes[cas[1]].dr_path = wire::DrPath{}.extended(1).extended(2);
  f.nodes[cas[1]].port_lids = {0, 7};
  // A switch-resident SM on management port 0.
  NodeId sw = 0;
  while (!f.nodes[sw].is_switch()) ++sw;
  set_cap(f.nodes[sw].ports[0], wire::port_cap::kIsSM);
  const auto found = find_sm_ports(f, f.nodes[cas[0]].ports[1].guid);
  ASSERT_EQ(found.size(), 2u);
  bool saw_ca = false, saw_sw = false;
  for (const SmPort& p : found) {
    if (p.node == cas[1]) {
      saw_ca = true;
      EXPECT_EQ(p.port, 1);
      EXPECT_EQ(p.lid, 7);
      EXPECT_EQ(p.port_guid, f.nodes[cas[1]].ports[1].guid);
      EXPECT_EQ(p.path.hops, 2);
      EXPECT_EQ(p.path.ports[2], 2);
    }
    if (p.node == sw) {
      saw_sw = true;
      EXPECT_EQ(p.port, 0);
    }
  }
  EXPECT_TRUE(saw_ca);
  EXPECT_TRUE(saw_sw);
}

TEST(HaPeers, SmInfoGetAndSetOnTheWire) {
  const wire::DrPath path = wire::DrPath{}.extended(3);
  const MadBuf g = make_sminfo_get(path, 1, 0x1234, 0x55);
  const auto& gs = g.as<wire::DrSmp>();
  EXPECT_EQ(gs.hdr.klass(), wire::MgmtClass::kSubnDirected);
  EXPECT_EQ(gs.hdr.method, wire::method::kGet);
  EXPECT_EQ(gs.hdr.attr_id.get(), wire::smp_attr::kSmInfo);
  EXPECT_EQ(gs.m_key.get(), 0x55u);
  EXPECT_EQ(gs.hop_count(), 1);
  EXPECT_EQ(gs.initial_path[1], 3);
  const auto gi = wire::decode<wire::SmInfo>(std::span<const std::uint8_t>(gs.data));
  ASSERT_TRUE(gi);
  EXPECT_EQ(gi->sm_key.get(), 0x1234u);

  wire::SmInfo ours{};
  ours.guid = wire::be64::from(0xabc);
  ours.sm_key = wire::be64::from(1);
  ours.set_priority(9);
  ours.set_state(wire::SmState::kMaster);
  const MadBuf s = make_sminfo_set(wire::sm_info_mod::kHandover, path, 1, ours, 0);
  const auto& ss = s.as<wire::DrSmp>();
  EXPECT_EQ(ss.hdr.method, wire::method::kSet);
  EXPECT_EQ(ss.hdr.attr_mod.get(), wire::sm_info_mod::kHandover);
  const auto si = wire::decode<wire::SmInfo>(std::span<const std::uint8_t>(ss.data));
  ASSERT_TRUE(si);
  EXPECT_EQ(si->guid.get(), 0xabcu);
  EXPECT_EQ(si->priority(), 9);
  EXPECT_EQ(si->state(), wire::SmState::kMaster);
  // PriState byte as OpenSM reads it: state | priority << 4.
  EXPECT_EQ(ss.data[20], 0x93);
}

TEST(HaPeers, Trap144IsLidRoutedWithSmPriorityFlag) {
  const MadBuf t = make_trap144(12, 1, 1, wire::port_cap::kIsSM);
  EXPECT_EQ(t.addr.lid, 1);
  const auto& smp = t.as<wire::Smp>();
  EXPECT_EQ(smp.hdr.klass(), wire::MgmtClass::kSubnLid);
  EXPECT_EQ(smp.hdr.method, wire::method::kTrap);
  EXPECT_EQ(smp.hdr.attr_id.get(), wire::smp_attr::kNotice);
  const auto n = wire::decode_smp_notice(std::span<const std::uint8_t>(smp.data));
  ASSERT_TRUE(n);
  EXPECT_TRUE(n->is_generic());
  EXPECT_EQ(n->trap_number.get(), wire::trap::kLocalChanges);
  EXPECT_EQ(n->issuer_lid.get(), 12);
  const auto d = n->details<wire::NoticeDetails144>();
  EXPECT_EQ(d.lid.get(), 12);
  EXPECT_EQ(d.change_flags.get(), wire::trap144_change::kSmPriority);
  EXPECT_EQ(d.capability_mask.get(), wire::port_cap::kIsSM);
}

TxnResult reply_with(const wire::SmInfo& si, std::uint16_t status = 0x8000) {
  TxnResult r;
  r.status = TxnStatus::kOk;
  auto& smp = r.response.as<wire::DrSmp>();
  smp.hdr = wire::make_smp_header(wire::MgmtClass::kSubnDirected, wire::method::kGetResp, wire::smp_attr::kSmInfo, 0, 0);
  smp.hdr.status = wire::be16::from(status);
  wire::encode(si, std::span<std::uint8_t>(smp.data));
  r.response.len = wire::kMadSize;
  return r;
}

TEST(HaPeers, DecodesRepliesWithOpenSmKeyRule) {
  wire::SmInfo si{};
  si.guid = wire::be64::from(0x77);
  si.sm_key = wire::be64::from(1);
  si.act_count = wire::be32::from(5);
  si.set_priority(3);
  si.set_state(wire::SmState::kStandby);
  const auto p = decode_sminfo_reply(reply_with(si), 1);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->guid, 0x77u);
  EXPECT_EQ(p->priority, 3);
  EXPECT_EQ(p->state, wire::SmState::kStandby);
  EXPECT_EQ(p->act_count, 5u);
  EXPECT_TRUE(p->key_ok);
  EXPECT_FALSE(decode_sminfo_reply(reply_with(si), 2)->key_ok);
  EXPECT_TRUE(decode_sminfo_reply(reply_with(si), 0)->key_ok);  // no key of ours: all match
  // Error status, a timeout, or a zero GUID: no peer.
  EXPECT_FALSE(decode_sminfo_reply(reply_with(si, 0x801c), 1));
  TxnResult to;
  to.status = TxnStatus::kTimeout;
  EXPECT_FALSE(decode_sminfo_reply(to, 1));
  si.guid = wire::be64::from(0);
  EXPECT_FALSE(decode_sminfo_reply(reply_with(si), 1));
}

TEST(HaPeers, KeyShownToKnowersOrWithoutMKey) {
  EXPECT_TRUE(sminfo_shows_key(1, 1, 0, 0x99));
  EXPECT_TRUE(sminfo_shows_key(0, 1, 0, 0));        // OpenSM's default: no M_Key, key shown
  EXPECT_FALSE(sminfo_shows_key(0, 1, 0, 0x99));    // protected and the requester knows neither
  EXPECT_TRUE(sminfo_shows_key(0, 1, 0x99, 0x99));
}

}  // namespace
}  // namespace madengine::sm::ha
