// Cross-check of the SA wire codecs against libibmad's field tables, the
// independent decoder: seeded random values go both ways (ours -> libibmad
// and libibmad -> ours) and any mismatch names the record and field.
//
// libibmad has no field-table entry for these, so they are covered only by
// the round trips and the spec-derived known vectors of sa_records_test.cpp:
//   MadHeader: reserved; SaMad: reserved after AttributeOffset.
//   PathRecord: ServiceID, RawTraffic, FlowLabel, HopLimit, TClass,
//     Reversible, P_Key, QoSClass, MTU/Rate/PacketLifeTime selectors and
//     values, Preference.
//   MultiPathRecord: everything but NumbPath, SGIDCount, DGIDCount and the
//     first GID (RawTraffic, FlowLabel, HopLimit, TClass, Reversible, P_Key,
//     QoSClass, SL, selectors/values, ServiceID, IndependenceSelector).
//   MCMemberRecord: MTU/Rate selectors, PacketLifeTime selector and value,
//     HopLimit, Scope.
//   InformInfo, InformInfoRecord, LinkRecord, P_KeyTableRecord: no entries.
//   PortInfoRecord, SwitchInfoRecord, SMInfoRecord, SLtoVL, VLArb, LFT and
//     MFT records: only their embedded SMP attribute (checked below at the
//     record's offset); the record's own LID/port/block fields have none.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa_records.hpp"

namespace madengine::wire {
namespace {

// SA records sit in the SA data; libibmad's record fields are relative to it.
constexpr int kData = static_cast<int>(kSaHeaderSize);
static_assert(IB_SA_DATA_OFFS == kSaHeaderSize);
static_assert(IB_SA_DATA_SIZE == kSaDataSize);
static_assert(IB_SA_PR_RECSZ == sizeof(PathRecord));
static_assert(IB_SA_NR_RECSZ == sizeof(NodeRecord));
static_assert(IB_SA_GIR_RECSZ == sizeof(GuidInfoRecord));

template <typename R>
struct IntCheck {
  const char* name;
  MAD_FIELDS f;
  unsigned bits;
  std::uint64_t (*get)(const R&);
  void (*set)(R&, std::uint64_t);
};
template <typename R>
struct ArrCheck {
  const char* name;
  MAD_FIELDS f;
  std::size_t offset;  // within R
  std::size_t size;
};

#define XBE(R, m, nbits, F)                                                 \
  IntCheck<R> {                                                             \
    #m, F, nbits, [](const R& r) -> std::uint64_t { return r.m.get(); },    \
        [](R& r, std::uint64_t v) { r.m.set(static_cast<decltype(r.m.get())>(v)); } \
  }
#define XU8(R, m, F)                                                        \
  IntCheck<R> {                                                             \
    #m, F, 8, [](const R& r) -> std::uint64_t { return r.m; },              \
        [](R& r, std::uint64_t v) { r.m = static_cast<std::uint8_t>(v); }   \
  }
#define XACC(R, m, nbits, F)                                                \
  IntCheck<R> {                                                             \
    #m, F, nbits, [](const R& r) -> std::uint64_t { return r.m(); },        \
        [](R& r, std::uint64_t v) { r.set_##m(static_cast<decltype(r.m())>(v)); } \
  }
#define XARR(R, m, F) \
  ArrCheck<R> { #m, F, offsetof(R, m), sizeof(std::declval<R&>().m) }

constexpr std::uint64_t mask_of(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

using MadBytes = std::array<std::uint8_t, kMadSize>;

std::uint64_t ibmad_get(MadBytes& mad, int base, MAD_FIELDS f, unsigned bits) {
  return bits > 32 ? mad_get_field64(mad.data(), base, f) : mad_get_field(mad.data(), base, f);
}
void ibmad_set(MadBytes& mad, int base, MAD_FIELDS f, unsigned bits, std::uint64_t v) {
  if (bits > 32)
    mad_set_field64(mad.data(), base, f, v);
  else
    mad_set_field(mad.data(), base, f, static_cast<std::uint32_t>(v));
}

template <typename R>
void cross_check(const char* record, int base, const std::vector<IntCheck<R>>& ints,
                 const std::vector<ArrCheck<R>>& arrs, std::uint64_t seed, int iterations = 100) {
  std::mt19937_64 rng(seed);
  auto random_fill = [&](auto&& bytes) {
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  };
  for (int it = 0; it < iterations; ++it) {
    // Ours -> libibmad: set through our setters, read through libibmad.
    {
      MadBytes mad;
      random_fill(mad);
      R rec;
      random_fill(as_writable_bytes(rec));
      std::vector<std::uint64_t> want;
      for (const auto& c : ints) {
        want.push_back(rng() & mask_of(c.bits));
        c.set(rec, want.back());
      }
      ASSERT_TRUE(encode(rec, std::span<std::uint8_t>(mad).subspan(static_cast<std::size_t>(base))));
      for (std::size_t i = 0; i < ints.size(); ++i)
        ASSERT_EQ(ibmad_get(mad, base, ints[i].f, ints[i].bits), want[i])
            << record << "." << ints[i].name << " (ours -> libibmad, seed " << seed << ")";
      for (const auto& a : arrs) {
        std::array<std::uint8_t, kMadSize> got{};
        mad_get_array(mad.data(), base, a.f, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), as_bytes(rec).data() + a.offset, a.size))
            << record << "." << a.name << " (ours -> libibmad, seed " << seed << ")";
      }
    }
    // libibmad -> ours: set through libibmad, read through our getters.
    {
      MadBytes mad;
      random_fill(mad);
      std::vector<std::uint64_t> want;
      for (const auto& c : ints) {
        want.push_back(rng() & mask_of(c.bits));
        ibmad_set(mad, base, c.f, c.bits, want.back());
      }
      std::vector<std::array<std::uint8_t, kMadSize>> arr_want(arrs.size());
      for (std::size_t i = 0; i < arrs.size(); ++i) {
        random_fill(arr_want[i]);
        mad_set_array(mad.data(), base, arrs[i].f, arr_want[i].data());
      }
      const auto rec = decode<R>(std::span<const std::uint8_t>(mad).subspan(static_cast<std::size_t>(base)));
      ASSERT_TRUE(rec);
      for (std::size_t i = 0; i < ints.size(); ++i)
        ASSERT_EQ(ints[i].get(*rec), want[i]) << record << "." << ints[i].name << " (libibmad -> ours, seed " << seed << ")";
      for (std::size_t i = 0; i < arrs.size(); ++i)
        ASSERT_EQ(0, std::memcmp(arr_want[i].data(), as_bytes(*rec).data() + arrs[i].offset, arrs[i].size))
            << record << "." << arrs[i].name << " (libibmad -> ours, seed " << seed << ")";
    }
  }
}

// An SMP attribute embedded in a record: libibmad's view of every field of
// the attribute, read inside our encoded record at the attribute's offset,
// must equal its view of the attribute alone. That pins the embedding offset
// against libibmad; the attribute's own fields are cross-checked by the SMP
// tests. Bytes after the lone attribute are a filler pattern, so a field that
// strayed past the attribute would show up too.
struct FieldRange {
  int first;
  int last;  // exclusive
};

template <typename R>
void check_embedded(const char* record, std::size_t attr_offset, std::size_t attr_size,
                    std::vector<FieldRange> ranges, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int it = 0; it < 50; ++it) {
    for (int dir = 0; dir < 2; ++dir) {
      MadBytes mad;
      for (auto& b : mad) b = static_cast<std::uint8_t>(rng());
      const int base = kData + static_cast<int>(attr_offset);
      if (dir == 1) {
        // libibmad writes the attribute's fields into the record.
        for (const auto& r : ranges)
          for (int f = r.first; f < r.last; ++f)
            mad_set_field(mad.data(), base, static_cast<MAD_FIELDS>(f), static_cast<std::uint32_t>(rng()));
      }
      const auto rec = decode<R>(std::span<const std::uint8_t>(mad).subspan(kData));
      ASSERT_TRUE(rec);
      MadBytes alone;
      alone.fill(0xa5);
      std::memcpy(alone.data(), as_bytes(*rec).data() + attr_offset, attr_size);
      for (const auto& r : ranges)
        for (int f = r.first; f < r.last; ++f) {
          const auto field = static_cast<MAD_FIELDS>(f);
          ASSERT_EQ(mad_get_field(mad.data(), base, field), mad_get_field(alone.data(), 0, field))
              << record << " embedded field " << mad_field_name(field) << " (seed " << seed << ", dir " << dir << ")";
          std::array<std::uint8_t, kMadSize> in_rec{}, in_alone{};
          mad_get_array(mad.data(), base, field, in_rec.data());
          mad_get_array(alone.data(), 0, field, in_alone.data());
          ASSERT_EQ(in_rec, in_alone) << record << " embedded field " << mad_field_name(field) << " as bytes";
        }
    }
  }
}

constexpr std::uint64_t kSeed = 0x1b'3ad0'2026ull;

TEST(SaIbmadCrossCheck, MadHeaderAndSaHeader) {
  using R = SaMad;
  cross_check<R>(
      "SaMad", 0,
      {
          IntCheck<R>{"hdr.method(7 bits)", IB_MAD_METHOD_F, 7,
                      [](const R& r) -> std::uint64_t { return r.hdr.method & 0x7f; },
                      [](R& r, std::uint64_t v) { r.hdr.method = static_cast<std::uint8_t>((r.hdr.method & 0x80) | v); }},
          IntCheck<R>{"hdr.is_response", IB_MAD_RESPONSE_F, 1,
                      [](const R& r) -> std::uint64_t { return r.hdr.is_response(); },
                      [](R& r, std::uint64_t v) { r.hdr.method = static_cast<std::uint8_t>((r.hdr.method & 0x7f) | v << 7); }},
          XU8(R, hdr.class_version, IB_MAD_CLASSVER_F),
          XU8(R, hdr.mgmt_class, IB_MAD_MGMTCLASS_F),
          XU8(R, hdr.base_version, IB_MAD_BASEVER_F),
          XBE(R, hdr.status, 16, IB_MAD_STATUS_F),
          XBE(R, hdr.tid, 64, IB_MAD_TRID_F),
          XBE(R, hdr.attr_id, 16, IB_MAD_ATTRID_F),
          XBE(R, hdr.attr_mod, 32, IB_MAD_ATTRMOD_F),
          XU8(R, rmpp.version, IB_SA_RMPP_VERS_F),
          XU8(R, rmpp.type, IB_SA_RMPP_TYPE_F),
          IntCheck<R>{"rmpp.resp_time", IB_SA_RMPP_RESP_F, 5,
                      [](const R& r) -> std::uint64_t { return r.rmpp.resp_time(); },
                      [](R& r, std::uint64_t v) { r.rmpp.set_flags(static_cast<std::uint8_t>(v), r.rmpp.flags()); }},
          IntCheck<R>{"rmpp.flags", IB_SA_RMPP_FLAGS_F, 3,
                      [](const R& r) -> std::uint64_t { return r.rmpp.flags(); },
                      [](R& r, std::uint64_t v) { r.rmpp.set_flags(r.rmpp.resp_time(), static_cast<std::uint8_t>(v)); }},
          XU8(R, rmpp.status, IB_SA_RMPP_STATUS_F),
          XBE(R, rmpp.data1, 32, IB_SA_RMPP_D1_F),
          XBE(R, rmpp.data2, 32, IB_SA_RMPP_D2_F),
          XBE(R, sm_key, 64, IB_SA_MKEY_F),
          XBE(R, attr_offset, 16, IB_SA_ATTROFFS_F),
          XBE(R, comp_mask, 64, IB_SA_COMPMASK_F),
      },
      {XARR(R, data, IB_SA_DATA_F)}, kSeed);
  // The RMPP DATA/ACK views of data1/data2 are the same words; the DR SMP
  // hop fields are the class-specific word of the common header.
  cross_check<R>("SaMad", 0,
                 {XBE(R, rmpp.data1, 32, IB_SA_RMPP_SEGNUM_F), XBE(R, rmpp.data2, 32, IB_SA_RMPP_LEN_F)}, {},
                 kSeed + 1);
  cross_check<R>("SaMad", 0, {XBE(R, rmpp.data2, 32, IB_SA_RMPP_NEWWIN_F)}, {}, kSeed + 2);
  cross_check<R>("SaMad", 0,
                 {IntCheck<R>{"hdr.class_specific(hop pointer)", IB_DRSMP_HOPPTR_F, 8,
                              [](const R& r) -> std::uint64_t { return r.hdr.class_specific.get() >> 8; },
                              [](R& r, std::uint64_t v) {
                                r.hdr.class_specific.set(static_cast<std::uint16_t>((r.hdr.class_specific.get() & 0xff) | v << 8));
                              }},
                  IntCheck<R>{"hdr.class_specific(hop count)", IB_DRSMP_HOPCNT_F, 8,
                              [](const R& r) -> std::uint64_t { return r.hdr.class_specific.get() & 0xff; },
                              [](R& r, std::uint64_t v) {
                                r.hdr.class_specific.set(static_cast<std::uint16_t>((r.hdr.class_specific.get() & 0xff00) | v));
                              }}},
                 {}, kSeed + 3);
}

TEST(SaIbmadCrossCheck, ClassPortInfo) {
  using R = ClassPortInfo;
  cross_check<R>("ClassPortInfo", kData,
                 {XU8(R, base_version, IB_CPI_BASEVER_F), XU8(R, class_version, IB_CPI_CLASSVER_F),
                  XBE(R, capability_mask, 16, IB_CPI_CAPMASK_F), XACC(R, cap_mask2, 27, IB_CPI_CAPMASK2_F),
                  XACC(R, resp_time_value, 5, IB_CPI_RESP_TIME_VALUE_F), XACC(R, redirect_tc, 8, IB_CPI_REDIRECT_TC_F),
                  XACC(R, redirect_sl, 4, IB_CPI_REDIRECT_SL_F),
                  XACC(R, redirect_flow_label, 20, IB_CPI_REDIRECT_FL_F),
                  XBE(R, redirect_lid, 16, IB_CPI_REDIRECT_LID_F), XBE(R, redirect_pkey, 16, IB_CPI_REDIRECT_PKEY_F),
                  XACC(R, redirect_qpn, 24, IB_CPI_REDIRECT_QP_F), XBE(R, redirect_qkey, 32, IB_CPI_REDIRECT_QKEY_F),
                  XACC(R, trap_tc, 8, IB_CPI_TRAP_TC_F), XACC(R, trap_sl, 4, IB_CPI_TRAP_SL_F),
                  XACC(R, trap_flow_label, 20, IB_CPI_TRAP_FL_F), XBE(R, trap_lid, 16, IB_CPI_TRAP_LID_F),
                  XBE(R, trap_pkey, 16, IB_CPI_TRAP_PKEY_F), XACC(R, trap_hop_limit, 8, IB_CPI_TRAP_HL_F),
                  XACC(R, trap_qpn, 24, IB_CPI_TRAP_QP_F), XBE(R, trap_qkey, 32, IB_CPI_TRAP_QKEY_F)},
                 {XARR(R, redirect_gid, IB_CPI_REDIRECT_GID_F), XARR(R, trap_gid, IB_CPI_TRAP_GID_F)}, kSeed + 10);
}

TEST(SaIbmadCrossCheck, PathRecord) {
  using R = PathRecord;
  cross_check<R>("PathRecord", kData,
                 {XBE(R, dlid, 16, IB_SA_PR_DLID_F), XBE(R, slid, 16, IB_SA_PR_SLID_F),
                  XACC(R, numb_path, 7, IB_SA_PR_NPATH_F), XACC(R, sl, 4, IB_SA_PR_SL_F)},
                 {XARR(R, dgid, IB_SA_PR_DGID_F), XARR(R, sgid, IB_SA_PR_SGID_F)}, kSeed + 20);
}

TEST(SaIbmadCrossCheck, MultiPathRecord) {
  using R = MultiPathRecord;
  cross_check<R>("MultiPathRecord", kData,
                 {XACC(R, numb_path, 7, IB_SA_MP_NPATH_F), XU8(R, sgid_count, IB_SA_MP_NSRC_F),
                  XU8(R, dgid_count, IB_SA_MP_NDEST_F)},
                 {}, kSeed + 30);
  // The first GID of the list, through our list helper.
  std::mt19937_64 rng(kSeed + 31);
  for (int it = 0; it < 100; ++it) {
    MadBytes mad{};
    std::array<std::uint8_t, 16> gid;
    for (auto& b : gid) b = static_cast<std::uint8_t>(rng());
    mad_set_field(mad.data(), kData, IB_SA_MP_NSRC_F, 1);
    mad_set_array(mad.data(), kData, IB_SA_MP_GID0_F, gid.data());
    const auto g = multipath_sgid(std::span<const std::uint8_t>(mad).subspan(kData), 0);
    ASSERT_TRUE(g);
    ASSERT_EQ(0, std::memcmp(&*g, gid.data(), 16)) << "MultiPathRecord.GID0 (libibmad -> ours)";
    MultiPathRecord fixed{};
    const Gid ours = *decode<Gid>(gid);
    std::array<std::uint8_t, kSaDataSize> data{};
    ASSERT_TRUE(encode_multipath(fixed, std::span<const Gid>(&ours, 1), {}, data));
    std::memcpy(mad.data() + kData, data.data(), data.size());
    std::array<std::uint8_t, 16> got{};
    mad_get_array(mad.data(), kData, IB_SA_MP_GID0_F, got.data());
    ASSERT_EQ(got, gid) << "MultiPathRecord.GID0 (ours -> libibmad)";
  }
}

TEST(SaIbmadCrossCheck, McMemberRecord) {
  using R = McMemberRecord;
  cross_check<R>("MCMemberRecord", kData,
                 {XBE(R, qkey, 32, IB_SA_MCM_QKEY_F), XBE(R, mlid, 16, IB_SA_MCM_MLID_F), XACC(R, sl, 4, IB_SA_MCM_SL_F),
                  XACC(R, mtu, 6, IB_SA_MCM_MTU_F), XACC(R, rate, 6, IB_SA_MCM_RATE_F),
                  XU8(R, tclass, IB_SA_MCM_TCLASS_F), XBE(R, pkey, 16, IB_SA_MCM_PKEY_F),
                  XACC(R, flow_label, 20, IB_SA_MCM_FLOW_LABEL_F), XACC(R, join_state, 4, IB_SA_MCM_JOIN_STATE_F),
                  XACC(R, proxy_join, 1, IB_SA_MCM_PROXY_JOIN_F)},
                 {XARR(R, mgid, IB_SA_MCM_MGID_F), XARR(R, port_gid, IB_SA_MCM_PORTGID_F)}, kSeed + 40);
}

TEST(SaIbmadCrossCheck, ServiceRecord) {
  using R = ServiceRecord;
  cross_check<R>("ServiceRecord", kData,
                 {XBE(R, service_id, 64, IB_SA_SR_ID_F), XBE(R, service_pkey, 16, IB_SA_SR_PKEY_F),
                  XBE(R, service_lease, 32, IB_SA_SR_LEASE_F)},
                 {XARR(R, service_gid, IB_SA_SR_GID_F), XARR(R, service_key, IB_SA_SR_KEY_F),
                  XARR(R, service_name, IB_SA_SR_NAME_F),
                  // libibmad has one 64-byte field for ServiceData8/16/32/64.
                  ArrCheck<R>{"service_data8..64", IB_SA_SR_DATA_F, offsetof(R, service_data8), 64}},
                 kSeed + 50);
}

TEST(SaIbmadCrossCheck, GuidInfoRecord) {
  using R = GuidInfoRecord;
  cross_check<R>("GUIDInfoRecord", kData,
                 {XBE(R, lid, 16, IB_SA_GIR_LID_F), XU8(R, block_num, IB_SA_GIR_BLOCKNUM_F),
                  XBE(R, guid_info.guids[0], 64, IB_SA_GIR_GUID0_F), XBE(R, guid_info.guids[1], 64, IB_SA_GIR_GUID1_F),
                  XBE(R, guid_info.guids[2], 64, IB_SA_GIR_GUID2_F), XBE(R, guid_info.guids[3], 64, IB_SA_GIR_GUID3_F),
                  XBE(R, guid_info.guids[4], 64, IB_SA_GIR_GUID4_F), XBE(R, guid_info.guids[5], 64, IB_SA_GIR_GUID5_F),
                  XBE(R, guid_info.guids[6], 64, IB_SA_GIR_GUID6_F), XBE(R, guid_info.guids[7], 64, IB_SA_GIR_GUID7_F)},
                 {}, kSeed + 60);
  check_embedded<R>("GUIDInfoRecord", offsetof(R, guid_info), sizeof(GuidInfoBlock),
                    {{IB_GI_GUID0_F, IB_GI_GUID7_F + 1}}, kSeed + 61);
}

TEST(SaIbmadCrossCheck, NodeRecord) {
  using R = NodeRecord;
  cross_check<R>(
      "NodeRecord", kData,
      {XBE(R, lid, 16, IB_SA_NR_LID_F), XU8(R, node_info.base_version, IB_SA_NR_BASEVER_F),
       XU8(R, node_info.class_version, IB_SA_NR_CLASSVER_F), XU8(R, node_info.node_type, IB_SA_NR_TYPE_F),
       XU8(R, node_info.num_ports, IB_SA_NR_NPORTS_F), XBE(R, node_info.system_image_guid, 64, IB_SA_NR_SYSTEM_GUID_F),
       XBE(R, node_info.node_guid, 64, IB_SA_NR_GUID_F), XBE(R, node_info.port_guid, 64, IB_SA_NR_PORT_GUID_F),
       XBE(R, node_info.partition_cap, 16, IB_SA_NR_PARTITION_CAP_F), XBE(R, node_info.device_id, 16, IB_SA_NR_DEVID_F),
       XBE(R, node_info.revision, 32, IB_SA_NR_REVISION_F), XU8(R, node_info.local_port_num, IB_SA_NR_LOCAL_PORT_F),
       IntCheck<R>{"node_info.vendor_id", IB_SA_NR_VENDORID_F, 24,
                   [](const R& r) -> std::uint64_t { return r.node_info.vendor_id(); },
                   [](R& r, std::uint64_t v) { r.node_info.set_vendor_id(static_cast<std::uint32_t>(v)); }}},
      {XARR(R, node_description, IB_SA_NR_NODEDESC_F)}, kSeed + 70);
  check_embedded<R>("NodeRecord", offsetof(R, node_info), sizeof(NodeInfo), {{IB_NODE_FIRST_F, IB_NODE_LAST_F}},
                    kSeed + 71);
  check_embedded<R>("NodeRecord", offsetof(R, node_description), sizeof(NodeDescription),
                    {{IB_NODE_DESC_F, IB_NODE_DESC_F + 1}}, kSeed + 72);
}

TEST(SaIbmadCrossCheck, RecordsEmbeddingSmpAttributes) {
  check_embedded<PortInfoRecord>("PortInfoRecord", offsetof(PortInfoRecord, port_info), sizeof(PortInfo),
                                 {{IB_PORT_FIRST_F, IB_PORT_LAST_F},
                                  {IB_PORT_CAPMASK2_F, IB_PORT_LINK_SPEED_EXT_LAST_F}},
                                 kSeed + 80);
  check_embedded<SwitchInfoRecord>("SwitchInfoRecord", offsetof(SwitchInfoRecord, switch_info), sizeof(SwitchInfo),
                                   {{IB_SW_FIRST_F, IB_SW_LAST_F}}, kSeed + 81);
  check_embedded<SmInfoRecord>("SMInfoRecord", offsetof(SmInfoRecord, sm_info), sizeof(SmInfo),
                               {{IB_SMINFO_GUID_F, IB_SMINFO_STATE_F + 1}}, kSeed + 82);
  check_embedded<Sl2VlTableRecord>("SLtoVLMappingTableRecord", offsetof(Sl2VlTableRecord, table), sizeof(Sl2VlTable),
                                   {{IB_SLTOVL_MAPPING_TABLE_F, IB_SLTOVL_MAPPING_TABLE_F + 1}}, kSeed + 83);
  check_embedded<VlArbTableRecord>("VLArbitrationTableRecord", offsetof(VlArbTableRecord, vl_arb_table),
                                   sizeof(VlArbTableBlock),
                                   {{IB_VL_ARBITRATION_TABLE_F, IB_VL_ARBITRATION_TABLE_F + 1}}, kSeed + 84);
  check_embedded<LftRecord>("LinearForwardingTableRecord", offsetof(LftRecord, lft), sizeof(LftBlock),
                            {{IB_LINEAR_FORW_TBL_F, IB_LINEAR_FORW_TBL_F + 1}}, kSeed + 85);
  check_embedded<MftRecord>("MulticastForwardingTableRecord", offsetof(MftRecord, mft), sizeof(MftBlock),
                            {{IB_MULTICAST_FORW_TBL_F, IB_MULTICAST_FORW_TBL_F + 1}}, kSeed + 86);
}

}  // namespace
}  // namespace madengine::wire
