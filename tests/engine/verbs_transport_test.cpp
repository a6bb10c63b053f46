// verbs-ud transport without hardware: config bounds, open() failing cleanly
// when there is no RDMA device, the AH cache (against a reference LRU model),
// send-chain building, receive parsing and re-post chaining checked field by field.
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "engine/verbs/verbs_transport.hpp"

namespace madengine {
namespace {

using verbs::AhCache;
using verbs::AhKey;

int rdma_device_count() {
  int n = 0;
  ibv_device** l = ibv_get_device_list(&n);
  if (l == nullptr) return 0;
  ibv_free_device_list(l);
  return n;
}

ibv_ah* fake_ah(std::uintptr_t v) { return reinterpret_cast<ibv_ah*>(v); }

AhKey key_for_lid(std::uint16_t lid) {
  AhKey k;
  k.dlid = lid;
  return k;
}

// ---- config ----

TEST(VerbsConfig, DefaultsAreValid) { EXPECT_EQ(validate_verbs_config(VerbsConfig{}), nullptr); }

TEST(VerbsConfig, RejectsEachBound) {
  auto bad = [](auto mutate) {
    VerbsConfig c;
    mutate(c);
    return validate_verbs_config(c);
  };
  EXPECT_NE(bad([](VerbsConfig& c) { c.port_num = 0; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.sq_depth = 0; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.sq_depth = kVerbsSqDepthMax + 1; c.ah_cache_max = kVerbsAhCacheMax; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.rq_depth = 0; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.rq_depth = kVerbsRqDepthMax + 1; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.ah_cache_max = 0; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.ah_cache_max = kVerbsAhCacheMax + 1; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.sq_depth = 64; c.ah_cache_max = 64; }), nullptr);
  EXPECT_EQ(bad([](VerbsConfig& c) { c.sq_depth = 64; c.ah_cache_max = 65; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.qkey = 0; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.reopen_interval_ms = kVerbsReopenIntervalMsMax + 1; }), nullptr);
  EXPECT_NE(bad([](VerbsConfig& c) { c.device_name.assign(200, 'x'); }), nullptr);
}

// ---- open() without hardware ----

TEST(VerbsOpen, BadConfigFailsWithReason) {
  ManualClock clock;
  VerbsConfig c;
  c.sq_depth = 0;
  VerbsUdTransport t(c, clock);
  AgentSpec a;
  a.gsi_client = true;
  EXPECT_FALSE(t.open(a));
  EXPECT_FALSE(t.is_open());
  EXPECT_NE(t.last_error().find("sq_depth"), std::string_view::npos) << t.last_error();
}

TEST(VerbsOpen, SmiAndIsSmAreRefused) {
  ManualClock clock;
  VerbsUdTransport t(VerbsConfig{}, clock);
  AgentSpec a;
  a.smi = true;
  EXPECT_FALSE(t.open(a));
  EXPECT_NE(t.last_error().find("umad"), std::string_view::npos) << t.last_error();
  AgentSpec b;
  b.is_sm = true;
  EXPECT_FALSE(t.open(b));
  EXPECT_NE(t.last_error().find("IsSM"), std::string_view::npos) << t.last_error();
}

TEST(VerbsOpen, NoDeviceFailsCleanly) {
  if (rdma_device_count() > 0) GTEST_SKIP() << "an RDMA device is present: covered by verbs_hw_test";
  ManualClock clock;
  VerbsUdTransport t(VerbsConfig{}, clock);
  AgentSpec a;
  a.gsi_client = true;
  EXPECT_FALSE(t.open(a));
  EXPECT_FALSE(t.is_open());
  EXPECT_EQ(t.qp_num(), 0u);
  const std::string_view why = t.last_error();
  EXPECT_TRUE(why.find("no RDMA device") != std::string_view::npos ||
              why.find("ibv_get_device_list") != std::string_view::npos)
      << why;
  // Everything stays safe to call on a transport that never opened.
  MadBuf b;
  MadBuf* rx[1] = {&b};
  EXPECT_EQ(t.rx_burst(rx), 0u);
  MadBuf* const tx[1] = {&b};
  EXPECT_EQ(t.tx_burst(tx), 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);
  clock.advance_ns(10 * kNanosPerSecond);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);  // open() failed: no reopen attempts
  t.close();
  t.close();
}

TEST(VerbsOpen, UnknownDeviceNameFailsWithReason) {
  ManualClock clock;
  VerbsConfig c;
  c.device_name = "no_such_hca9";
  VerbsUdTransport t(c, clock);
  AgentSpec a;
  a.sa_server = true;
  EXPECT_FALSE(t.open(a));
  EXPECT_FALSE(t.last_error().empty());
  if (rdma_device_count() > 0) {
    EXPECT_NE(t.last_error().find("no_such_hca9"), std::string_view::npos) << t.last_error();
  }
}

// ---- address handles ----

TEST(VerbsAhKey, GrhFieldsCountOnlyWithGrh) {
  MadAddr a;
  a.lid = 7;
  a.sl = 3;
  a.hop_limit = 64;
  a.gid.guid = wire::be64::from(0x1234);
  MadAddr b = a;
  b.hop_limit = 1;
  b.gid.guid = wire::be64::from(0x9999);
  EXPECT_EQ(verbs::ah_key_of(a), verbs::ah_key_of(b));
  EXPECT_EQ(verbs::hash_ah_key(verbs::ah_key_of(a)), verbs::hash_ah_key(verbs::ah_key_of(b)));
  a.has_grh = b.has_grh = true;
  EXPECT_NE(verbs::ah_key_of(a), verbs::ah_key_of(b));
  MadAddr c = a;
  c.sl = 4;
  EXPECT_NE(verbs::ah_key_of(a), verbs::ah_key_of(c));
  MadAddr d = a;
  d.path_bits = 1;
  EXPECT_NE(verbs::ah_key_of(a), verbs::ah_key_of(d));
  MadAddr e = a;
  e.flow_label = 0xfff00005;  // only 20 bits are a flow label
  MadAddr f = a;
  f.flow_label = 0x00000005;
  EXPECT_EQ(verbs::ah_key_of(e), verbs::ah_key_of(f));
}

TEST(VerbsAhCache, FindInsertAndLruEviction) {
  AhCache c(3);
  EXPECT_EQ(c.find(key_for_lid(1)), nullptr);
  EXPECT_EQ(c.insert(key_for_lid(1), fake_ah(0x10)), nullptr);
  EXPECT_EQ(c.insert(key_for_lid(2), fake_ah(0x20)), nullptr);
  EXPECT_EQ(c.insert(key_for_lid(3), fake_ah(0x30)), nullptr);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find(key_for_lid(2)), fake_ah(0x20));
  EXPECT_EQ(c.find(key_for_lid(1)), fake_ah(0x10));
  // Most to least recently used: 1, 2, 3.
  EXPECT_EQ(c.insert(key_for_lid(4), fake_ah(0x40)), fake_ah(0x30));
  EXPECT_EQ(c.find(key_for_lid(3)), nullptr);
  EXPECT_EQ(c.insert(key_for_lid(5), fake_ah(0x50)), fake_ah(0x20));
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find(key_for_lid(1)), fake_ah(0x10));
  EXPECT_EQ(c.find(key_for_lid(4)), fake_ah(0x40));
  EXPECT_EQ(c.find(key_for_lid(5)), fake_ah(0x50));

  std::vector<ibv_ah*> destroyed;
  c.drain([&](ibv_ah* ah) { destroyed.push_back(ah); });
  EXPECT_EQ(c.size(), 0u);
  std::sort(destroyed.begin(), destroyed.end());
  EXPECT_EQ(destroyed, (std::vector<ibv_ah*>{fake_ah(0x10), fake_ah(0x40), fake_ah(0x50)}));
  EXPECT_EQ(c.find(key_for_lid(1)), nullptr);
  EXPECT_EQ(c.insert(key_for_lid(1), fake_ah(0x11)), nullptr);  // usable after drain
  EXPECT_EQ(c.find(key_for_lid(1)), fake_ah(0x11));
}

TEST(VerbsAhCache, GrhKeysAreDistinct) {
  AhCache c(4);
  AhKey a = key_for_lid(0);
  a.has_grh = true;
  a.dgid.prefix = wire::be64::from(wire::kDefaultSubnetPrefix);
  a.dgid.guid = wire::be64::from(1);
  AhKey b = a;
  b.dgid.guid = wire::be64::from(2);
  c.insert(a, fake_ah(0xa0));
  c.insert(b, fake_ah(0xb0));
  EXPECT_EQ(c.find(a), fake_ah(0xa0));
  EXPECT_EQ(c.find(b), fake_ah(0xb0));
}

// Random operations against a plain list-based LRU model: lookups, eviction
// order and deletion in the probing table (many keys share home slots).
TEST(VerbsAhCache, MatchesReferenceLruModel) {
  constexpr std::uint32_t kSeed = 20261129;
  for (std::size_t cap : {1u, 2u, 7u, 64u}) {
    std::mt19937 rng(kSeed + static_cast<std::uint32_t>(cap));
    AhCache c(cap);
    std::list<std::pair<std::uint16_t, std::uintptr_t>> model;  // front = MRU
    std::uintptr_t next_handle = 1;
    for (int op = 0; op < 20000; ++op) {
      const auto lid = static_cast<std::uint16_t>(rng() % (cap * 3 + 1));
      auto it = std::find_if(model.begin(), model.end(), [&](auto& p) { return p.first == lid; });
      ibv_ah* got = c.find(key_for_lid(lid));
      if (it == model.end()) {
        ASSERT_EQ(got, nullptr) << "seed " << kSeed << " cap " << cap << " op " << op;
        const std::uintptr_t h = next_handle++;
        ibv_ah* ev = c.insert(key_for_lid(lid), fake_ah(h));
        if (model.size() == cap) {
          ASSERT_EQ(ev, fake_ah(model.back().second)) << "seed " << kSeed << " op " << op;
          model.pop_back();
        } else {
          ASSERT_EQ(ev, nullptr);
        }
        model.emplace_front(lid, h);
      } else {
        ASSERT_EQ(got, fake_ah(it->second)) << "seed " << kSeed << " cap " << cap << " op " << op;
        model.splice(model.begin(), model, it);
      }
      ASSERT_EQ(c.size(), model.size());
    }
  }
}

// ---- send chain ----

struct VerbsChain : ::testing::Test {
  static constexpr std::uint32_t kSlots = 4;
  static constexpr std::uint32_t kQpQkey = 0x12345678;
  alignas(64) std::uint8_t area[kSlots * verbs::kSendSlotStride]{};
  verbs::SendArea send_area{area, 0xabcd, kSlots};
  std::vector<ibv_send_wr> wrs = std::vector<ibv_send_wr>(kSlots);
  std::vector<ibv_sge> sges = std::vector<ibv_sge>(kSlots);
  std::vector<std::uint32_t> wr_buf = std::vector<std::uint32_t>(kSlots);
  std::vector<AhKey> resolved;
  std::vector<MadBuf> bufs = std::vector<MadBuf>(6);
  std::vector<MadBuf*> ptrs;

  void SetUp() override {
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      MadBuf& b = bufs[i];
      for (std::size_t j = 0; j < wire::kMadSize; ++j)
        b.mad.bytes[j] = static_cast<std::uint8_t>(i * 16 + j);
      b.addr.lid = static_cast<std::uint16_t>(100 + i % 2);
      b.addr.remote_qpn = 0x40 + static_cast<std::uint32_t>(i);
      b.addr.qkey = 0;
      ptrs.push_back(&b);
    }
  }
  verbs::ChainResult build(std::size_t n, std::size_t wrs_max, std::uint64_t first_seq) {
    auto resolve = [this](const AhKey& k) -> ibv_ah* {
      resolved.push_back(k);
      return k.dlid == 999 ? nullptr : fake_ah(0x1000 + k.dlid);
    };
    return verbs::build_send_chain(std::span<MadBuf* const>(ptrs.data(), n), wrs_max, send_area,
                                   first_seq, kQpQkey, resolve, wrs, sges, wr_buf);
  }
};

TEST_F(VerbsChain, FillsEveryFieldAndSignalsOnlyTheLast) {
  bufs[1].addr.qkey = 0x00001111;    // an explicit non-controlled Q_Key
  bufs[2].addr.remote_qpn = 1;       // QP1 with the GSI Q_Key, which we own here
  bufs[2].addr.qkey = kGsiQkey;
  bufs[2].len = 100;                 // short MAD: zero-padded on the wire
  const auto r = [&] {
    // Our QP owns the GSI Q_Key for this case.
    auto resolve = [this](const AhKey& k) -> ibv_ah* { resolved.push_back(k); return fake_ah(0x1000 + k.dlid); };
    return verbs::build_send_chain(std::span<MadBuf* const>(ptrs.data(), 3), 8, send_area, 6,
                                   kGsiQkey, resolve, wrs, sges, wr_buf);
  }();
  EXPECT_EQ(r.consumed, 3u);
  EXPECT_EQ(r.wrs, 3u);
  EXPECT_EQ(r.dropped, 0u);
  ASSERT_EQ(resolved.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const std::uint64_t seq = 6 + i;
    const std::uint8_t* slot = area + (seq % kSlots) * verbs::kSendSlotStride;
    const ibv_send_wr& w = wrs[i];
    EXPECT_EQ(w.wr_id, seq);
    EXPECT_EQ(w.next, i + 1 < 3 ? &wrs[i + 1] : nullptr);
    EXPECT_EQ(w.sg_list, &sges[i]);
    EXPECT_EQ(w.num_sge, 1);
    EXPECT_EQ(w.opcode, IBV_WR_SEND);
    EXPECT_EQ(w.send_flags, i == 2 ? unsigned{IBV_SEND_SIGNALED} : 0u);
    EXPECT_EQ(w.wr.ud.ah, fake_ah(0x1000 + bufs[i].addr.lid));
    EXPECT_EQ(w.wr.ud.remote_qpn, bufs[i].addr.remote_qpn);
    EXPECT_EQ(sges[i].addr, reinterpret_cast<std::uintptr_t>(slot));
    EXPECT_EQ(sges[i].length, wire::kMadSize);
    EXPECT_EQ(sges[i].lkey, 0xabcdu);
    EXPECT_EQ(wr_buf[i], i);
    EXPECT_EQ(resolved[i].dlid, bufs[i].addr.lid);
    const std::size_t valid = bufs[i].len;
    EXPECT_TRUE(std::equal(slot, slot + valid, bufs[i].mad.bytes.data()));
    EXPECT_TRUE(std::all_of(slot + valid, slot + wire::kMadSize, [](std::uint8_t v) { return v == 0; }));
  }
  EXPECT_EQ(wrs[0].wr.ud.remote_qkey, kGsiQkey);   // address had none: the QP's
  EXPECT_EQ(wrs[1].wr.ud.remote_qkey, 0x00001111u);
  EXPECT_EQ(wrs[2].wr.ud.remote_qkey, kGsiQkey);
  // seq 6, 7, 8 -> slots 2, 3, 0: the ring wraps.
  EXPECT_EQ(sges[2].addr, reinterpret_cast<std::uintptr_t>(area));
}

TEST_F(VerbsChain, UnsendableMadsAreConsumedAndCounted) {
  bufs[0].addr.remote_qpn = 0;       // QP0: SMI only
  bufs[1].len = 10;                  // shorter than a MAD header
  bufs[2].addr.qkey = kGsiQkey;      // controlled, and not our QP's Q_Key
  bufs[3].addr.lid = 999;            // no AH
  const auto r = build(5, 8, 0);
  EXPECT_EQ(r.consumed, 5u);
  EXPECT_EQ(r.dropped, 4u);
  ASSERT_EQ(r.wrs, 1u);
  EXPECT_EQ(wr_buf[0], 4u);
  EXPECT_EQ(wrs[0].wr.ud.remote_qpn, bufs[4].addr.remote_qpn);
  EXPECT_EQ(wrs[0].wr.ud.remote_qkey, kQpQkey);
  EXPECT_EQ(wrs[0].send_flags, unsigned{IBV_SEND_SIGNALED});
  EXPECT_EQ(wrs[0].next, nullptr);
  EXPECT_EQ(wrs[0].wr_id, 0u);  // dropped MADs take no sequence number
  EXPECT_EQ(resolved.size(), 2u);  // only the two that passed check_send
}

TEST_F(VerbsChain, StopsWhenTheSendQueueIsFull) {
  const auto r = build(6, 2, 0);
  EXPECT_EQ(r.consumed, 2u);
  EXPECT_EQ(r.wrs, 2u);
  EXPECT_EQ(wrs[1].next, nullptr);
  EXPECT_EQ(wrs[1].send_flags, unsigned{IBV_SEND_SIGNALED});
  EXPECT_EQ(wrs[0].send_flags, 0u);
  const auto none = build(6, 0, 2);
  EXPECT_EQ(none.consumed, 0u);
  EXPECT_EQ(none.wrs, 0u);
}

TEST(VerbsCheckSend, Rules) {
  MadBuf b;
  b.addr.remote_qpn = 5;
  EXPECT_EQ(verbs::check_send(b, 0x1000), verbs::SendReject::kNone);
  b.len = wire::kMadSize + 1;
  EXPECT_EQ(verbs::check_send(b, 0x1000), verbs::SendReject::kBadLength);
  b.len = wire::kMadSize;
  b.addr.remote_qpn = 0;
  EXPECT_EQ(verbs::check_send(b, 0x1000), verbs::SendReject::kQp0);
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  EXPECT_EQ(verbs::check_send(b, 0x1000), verbs::SendReject::kControlledQkey);
  EXPECT_EQ(verbs::check_send(b, kGsiQkey), verbs::SendReject::kNone);
}

// ---- receive ----

TEST(VerbsRecv, FillsMadAndAddressWithGrh) {
  std::vector<std::uint8_t> slot(verbs::kRecvSlotStride, 0xee);
  auto& g = *reinterpret_cast<verbs::Grh*>(slot.data());
  verbs::GrhIpVer::set(g.ver_tclass_flow.data(), 6);
  verbs::GrhTClass::set(g.ver_tclass_flow.data(), 0xa5);
  verbs::GrhFlowLabel::set(g.ver_tclass_flow.data(), 0xbcdef);
  g.hop_limit = 17;
  g.sgid.prefix = wire::be64::from(wire::kDefaultSubnetPrefix);
  g.sgid.guid = wire::be64::from(0x0002c90300001234ull);
  for (std::size_t i = 0; i < wire::kMadSize; ++i)
    slot[verbs::kGrhBytes + i] = static_cast<std::uint8_t>(i);
  ibv_wc wc{};
  wc.status = IBV_WC_SUCCESS;
  wc.byte_len = static_cast<std::uint32_t>(verbs::kRecvSlotBytes);
  wc.src_qp = 0x1a2b3c;
  wc.slid = 42;
  wc.sl = 5;
  wc.dlid_path_bits = 2;
  wc.pkey_index = 3;
  wc.wc_flags = IBV_WC_GRH;
  MadBuf b;
  ASSERT_TRUE(verbs::fill_from_recv(wc, slot.data(), 2, 0x7777, b));
  EXPECT_EQ(b.len, wire::kMadSize);
  for (std::size_t i = 0; i < wire::kMadSize; ++i) ASSERT_EQ(b.mad.bytes[i], static_cast<std::uint8_t>(i));
  EXPECT_EQ(b.addr.port_num, 2);
  EXPECT_EQ(b.addr.lid, 42);
  EXPECT_EQ(b.addr.remote_qpn, 0x1a2b3cu);
  EXPECT_EQ(b.addr.qkey, 0x7777u);  // not QP1: our own Q_Key
  EXPECT_EQ(b.addr.sl, 5);
  EXPECT_EQ(b.addr.path_bits, 2);
  EXPECT_EQ(b.addr.pkey_index, 3);
  ASSERT_TRUE(b.addr.has_grh);
  EXPECT_EQ(b.addr.traffic_class, 0xa5);
  EXPECT_EQ(b.addr.flow_label, 0xbcdefu);
  EXPECT_EQ(b.addr.hop_limit, 17);
  EXPECT_EQ(b.addr.gid, g.sgid);
  // The same buffer used without a GRH and from QP1: GRH fields cleared, GSI Q_Key.
  wc.wc_flags = 0;
  wc.src_qp = 1;
  wc.byte_len = static_cast<std::uint32_t>(verbs::kGrhBytes + 64);
  ASSERT_TRUE(verbs::fill_from_recv(wc, slot.data(), 1, 0x7777, b));
  EXPECT_EQ(b.len, 64);
  EXPECT_FALSE(b.addr.has_grh);
  EXPECT_EQ(b.addr.gid, wire::Gid{});
  EXPECT_EQ(b.addr.flow_label, 0u);
  EXPECT_EQ(b.addr.qkey, kGsiQkey);
  EXPECT_EQ(b.mad.bytes[63], 63);
  EXPECT_EQ(b.mad.bytes[64], 0);  // the rest of the MAD is zeroed
}

TEST(VerbsRecv, RejectsLengthsThatAreNotAMad) {
  std::vector<std::uint8_t> slot(verbs::kRecvSlotStride, 0);
  ibv_wc wc{};
  MadBuf b;
  wc.byte_len = static_cast<std::uint32_t>(verbs::kGrhBytes + wire::kMadHeaderSize - 1);
  EXPECT_FALSE(verbs::fill_from_recv(wc, slot.data(), 1, 1, b));
  wc.byte_len = static_cast<std::uint32_t>(verbs::kRecvSlotBytes + 1);
  EXPECT_FALSE(verbs::fill_from_recv(wc, slot.data(), 1, 1, b));
  wc.byte_len = 0;
  EXPECT_FALSE(verbs::fill_from_recv(wc, slot.data(), 1, 1, b));
}

// One poll batch: delivered MADs in order, and every consumed slot (good, bad
// status, bad length) re-linked for one post; flushed slots are not.
TEST(VerbsRecv, BatchRelinksConsumedSlotsInCompletionOrder) {
  constexpr std::size_t kSlots = 6;
  std::vector<std::uint8_t> area(kSlots * verbs::kRecvSlotStride, 0);
  std::vector<ibv_recv_wr> wrs(kSlots);
  for (std::size_t i = 0; i < kSlots; ++i) {
    wrs[i].wr_id = i;
    wrs[i].next = &wrs[0];  // stale links from the initial ring must be overwritten
    area[i * verbs::kRecvSlotStride + verbs::kGrhBytes + 8] = static_cast<std::uint8_t>(0xa0 + i);
  }
  auto wc_for = [](std::uint64_t slot, ibv_wc_status st, std::size_t mad_len) {
    ibv_wc wc{};
    wc.wr_id = slot;
    wc.status = st;
    wc.byte_len = static_cast<std::uint32_t>(verbs::kGrhBytes + mad_len);
    wc.src_qp = 0x99;
    wc.slid = static_cast<std::uint16_t>(10 + slot);
    return wc;
  };
  const std::vector<ibv_wc> wcs = {
      wc_for(4, IBV_WC_SUCCESS, wire::kMadSize),
      wc_for(1, IBV_WC_LOC_LEN_ERR, 0),         // error: re-posted, not delivered
      wc_for(5, IBV_WC_SUCCESS, 10),            // too short: dropped, re-posted
      wc_for(0, IBV_WC_SUCCESS, wire::kMadSize),
  };
  std::vector<MadBuf> bufs(4);
  std::vector<MadBuf*> out;
  for (auto& b : bufs) out.push_back(&b);
  verbs::RepostChain chain;
  const auto r = verbs::take_recv_completions(wcs, area.data(), wrs, 1, 0x42, out, chain);
  EXPECT_EQ(r.delivered, 2u);
  EXPECT_EQ(r.dropped, 1u);
  EXPECT_EQ(r.errors, 1u);
  EXPECT_FALSE(r.qp_failed);
  EXPECT_EQ(bufs[0].addr.lid, 14);
  EXPECT_EQ(bufs[0].mad.bytes[8], 0xa4);
  EXPECT_EQ(bufs[1].addr.lid, 10);
  EXPECT_EQ(bufs[1].mad.bytes[8], 0xa0);
  ASSERT_EQ(chain.count, 4u);
  EXPECT_EQ(chain.head, &wrs[4]);
  EXPECT_EQ(wrs[4].next, &wrs[1]);
  EXPECT_EQ(wrs[1].next, &wrs[5]);
  EXPECT_EQ(wrs[5].next, &wrs[0]);
  EXPECT_EQ(wrs[0].next, nullptr);
  EXPECT_EQ(chain.tail, &wrs[0]);

  // A second batch appends to the same chain; a flush and a foreign wr_id
  // mark the QP failed and are not re-posted (nor indexed).
  const std::vector<ibv_wc> more = {
      wc_for(2, IBV_WC_WR_FLUSH_ERR, 0),
      wc_for(1000, IBV_WC_SUCCESS, wire::kMadSize),
      wc_for(3, IBV_WC_SUCCESS, wire::kMadSize),
  };
  const auto r2 = verbs::take_recv_completions(more, area.data(), wrs, 1, 0x42, out, chain);
  EXPECT_TRUE(r2.qp_failed);
  EXPECT_EQ(r2.errors, 2u);
  EXPECT_EQ(r2.delivered, 1u);
  EXPECT_EQ(chain.count, 5u);
  EXPECT_EQ(wrs[0].next, &wrs[3]);
  EXPECT_EQ(chain.tail, &wrs[3]);
  EXPECT_EQ(wrs[3].next, nullptr);
}

}  // namespace
}  // namespace madengine
