// SMP attribute codecs: seeded random round trips, bit-field isolation, and a
// cross-check in both directions against libibmad's field tables (the
// independent decoder) for every field libibmad defines for these attributes.
//
// Our fields libibmad (this version) has no entry for, so they are checked by
// round trip and isolation only:
//   Notice: IssuerGID; VendorID/DeviceID (same bits as ProducerType and
//     TrapNumber); DataDetails layouts of traps 64-67 (GID), 129-131, 144
//     (OtherLocalChanges, ChangeFlags, CapabilityMask2), 145, 256, 257/258
//     and 259 (libibmad names only the trap 128 LID and the trap 144 LID and
//     CapabilityMask, checked in NoticeTrapFieldsAgainstIbmad).
//   P_KeyTable: every entry (libibmad has no P_KeyTable field).
//   SL2VL and VLArbitration elements: libibmad names each table as one byte
//     array; element order is checked through mad_dump_sltovl/vlarbitration.
//   LFT, MFT, NodeDescription: one libibmad byte array each, compared whole.
// Every libibmad NodeInfo, PortInfo (incl. CapabilityMask2/LinkSpeedExt*),
// SwitchInfo, SMInfo, GUIDInfo and Notice-header field has a codec field;
// check_covers() enforces this.
#include <infiniband/mad.h>

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp_attrs.hpp"

namespace madengine::wire {
namespace {

constexpr int kNoIbmad = -1;
constexpr std::uint64_t kSeed = 0x5eed5a17u;
constexpr int kIterations = 200;

// One field of an attribute: how to set and read it through our codec, its
// width, and the libibmad field that names the same bits (or kNoIbmad).
template <typename T>
struct Field {
  std::string name;
  unsigned width;
  std::function<void(T&, std::uint64_t)> set;
  std::function<std::uint64_t(const T&)> get;
  int ibmad = kNoIbmad;
};

constexpr std::uint64_t mask_of(unsigned width) { return width >= 64 ? ~0ull : (1ull << width) - 1; }

#define BE_FIELD(T, m, W, F)                                                                         \
  Field<T> {                                                                                         \
    #m, W, [](T& t, std::uint64_t val) { t.m.set(static_cast<decltype(t.m.get())>(val)); },            \
        [](const T& t) -> std::uint64_t { return t.m.get(); }, F                                     \
  }
#define BYTE_FIELD(T, m, F)                                                                    \
  Field<T> {                                                                                   \
    #m, 8, [](T& t, std::uint64_t val) { t.m = static_cast<std::uint8_t>(val); },                 \
        [](const T& t) -> std::uint64_t { return t.m; }, F                                     \
  }
#define BITS_FIELD(T, m, W, F)                                                                       \
  Field<T> {                                                                                         \
    #m, W, [](T& t, std::uint64_t val) { t.set_##m(static_cast<decltype(t.m())>(val)); },              \
        [](const T& t) -> std::uint64_t { return t.m(); }, F                                         \
  }

std::vector<std::uint8_t> bytes_of(const auto& t) {
  std::vector<std::uint8_t> out(sizeof(t));
  EXPECT_TRUE(encode(t, std::span<std::uint8_t>(out)));
  return out;
}

template <typename T>
T zeroed() {
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof(T));
  return t;
}

// --- Generic checks over a field table -------------------------------------

template <typename T>
void check_round_trip(const std::vector<Field<T>>& fields) {
  std::mt19937_64 rng(kSeed);
  SCOPED_TRACE("seed " + std::to_string(kSeed));
  for (int it = 0; it < kIterations; ++it) {
    T t = zeroed<T>();
    std::vector<std::uint64_t> want;
    for (const auto& f : fields) {
      want.push_back(rng() & mask_of(f.width));
      f.set(t, want.back());
    }
    const auto bytes = bytes_of(t);
    const auto back = decode<T>(bytes);
    ASSERT_TRUE(back.has_value());
    for (std::size_t i = 0; i < fields.size(); ++i) {
      SCOPED_TRACE("field " + fields[i].name + " iteration " + std::to_string(it));
      EXPECT_EQ(fields[i].get(*back), want[i]);
    }
    EXPECT_EQ(bytes_of(*back), bytes);
  }
}

// Setting one field to all ones must leave every other field 0 and set
// exactly `width` bits of the attribute.
template <typename T>
void check_no_spill(const std::vector<Field<T>>& fields) {
  for (const auto& f : fields) {
    SCOPED_TRACE("all-ones field " + f.name);
    T t = zeroed<T>();
    f.set(t, ~0ull);
    EXPECT_EQ(f.get(t), mask_of(f.width));
    for (const auto& g : fields) {
      if (&g != &f) {
        EXPECT_EQ(g.get(t), 0u) << "spilled into " << g.name;
      }
    }
    unsigned bits = 0;
    for (std::uint8_t b : bytes_of(t)) bits += static_cast<unsigned>(std::popcount(b));
    EXPECT_EQ(bits, f.width);
  }
}

std::uint64_t ibmad_get(std::uint8_t* buf, int field, unsigned width) {
  const auto f = static_cast<MAD_FIELDS>(field);
  return width > 32 ? mad_get_field64(buf, 0, f) : mad_get_field(buf, 0, f);
}
void ibmad_set(std::uint8_t* buf, int field, unsigned width, std::uint64_t v) {
  const auto f = static_cast<MAD_FIELDS>(field);
  if (width > 32)
    mad_set_field64(buf, 0, f, v);
  else
    mad_set_field(buf, 0, f, static_cast<std::uint32_t>(v));
}

// (a) encode with our codec, decode every field with libibmad;
// (b) encode every field with libibmad, decode with ours, and compare bytes.
template <typename T>
void check_against_ibmad(const std::vector<Field<T>>& fields) {
  std::mt19937_64 rng(kSeed ^ 0xa5);
  SCOPED_TRACE("seed " + std::to_string(kSeed ^ 0xa5));
  bool all_in_ibmad = true;
  for (const auto& f : fields) all_in_ibmad = all_in_ibmad && f.ibmad != kNoIbmad;
  for (int it = 0; it < kIterations; ++it) {
    T ours = zeroed<T>();
    std::array<std::uint8_t, 256> theirs{};
    std::vector<std::uint64_t> want;
    for (const auto& f : fields) {
      want.push_back(rng() & mask_of(f.width));
      f.set(ours, want.back());
      if (f.ibmad != kNoIbmad) ibmad_set(theirs.data(), f.ibmad, f.width, want.back());
    }
    std::array<std::uint8_t, 256> buf{};
    ASSERT_TRUE(encode(ours, std::span<std::uint8_t>(buf)));
    const auto decoded = decode<T>(theirs);
    ASSERT_TRUE(decoded.has_value());
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const auto& f = fields[i];
      if (f.ibmad == kNoIbmad) continue;
      SCOPED_TRACE("field " + f.name + " iteration " + std::to_string(it));
      EXPECT_EQ(ibmad_get(buf.data(), f.ibmad, f.width), want[i]) << "(a) ours -> libibmad";
      EXPECT_EQ(f.get(*decoded), want[i]) << "(b) libibmad -> ours";
    }
    // Where libibmad names every field, both encoders must produce the same
    // bytes, reserved bits (zero) included.
    if (all_in_ibmad) {
      EXPECT_EQ(0, std::memcmp(buf.data(), theirs.data(), sizeof(T))) << "encodings differ";
    }
  }
}

// Every libibmad field in [first, last) must appear in `fields`.
template <typename T>
void check_covers(const std::vector<Field<T>>& fields, int first, int last) {
  for (int id = first; id < last; ++id) {
    bool found = false;
    for (const auto& f : fields) found = found || f.ibmad == id;
    EXPECT_TRUE(found) << "libibmad field " << id << " ("
                       << mad_field_name(static_cast<MAD_FIELDS>(id)) << ") has no codec field";
  }
}

template <typename T>
void check_all(const std::vector<Field<T>>& fields) {
  {
    SCOPED_TRACE("round trip");
    check_round_trip(fields);
  }
  {
    SCOPED_TRACE("no spill");
    check_no_spill(fields);
  }
  {
    SCOPED_TRACE("libibmad");
    check_against_ibmad(fields);
  }
}

// --- Field tables -----------------------------------------------------------

std::vector<Field<NodeInfo>> node_info_fields() {
  using T = NodeInfo;
  return {
      BYTE_FIELD(T, base_version, IB_NODE_BASE_VERS_F),
      BYTE_FIELD(T, class_version, IB_NODE_CLASS_VERS_F),
      BYTE_FIELD(T, node_type, IB_NODE_TYPE_F),
      BYTE_FIELD(T, num_ports, IB_NODE_NPORTS_F),
      BE_FIELD(T, system_image_guid, 64, IB_NODE_SYSTEM_GUID_F),
      BE_FIELD(T, node_guid, 64, IB_NODE_GUID_F),
      BE_FIELD(T, port_guid, 64, IB_NODE_PORT_GUID_F),
      BE_FIELD(T, partition_cap, 16, IB_NODE_PARTITION_CAP_F),
      BE_FIELD(T, device_id, 16, IB_NODE_DEVID_F),
      BE_FIELD(T, revision, 32, IB_NODE_REVISION_F),
      BYTE_FIELD(T, local_port_num, IB_NODE_LOCAL_PORT_F),
      BITS_FIELD(T, vendor_id, 24, IB_NODE_VENDORID_F),
  };
}

// Our PortInfo fields with no libibmad entry: none (reserved bits excepted).
std::vector<Field<PortInfo>> port_info_fields() {
  using T = PortInfo;
  return {
      BE_FIELD(T, m_key, 64, IB_PORT_MKEY_F),
      BE_FIELD(T, gid_prefix, 64, IB_PORT_GID_PREFIX_F),
      BE_FIELD(T, lid, 16, IB_PORT_LID_F),
      BE_FIELD(T, master_sm_lid, 16, IB_PORT_SMLID_F),
      BE_FIELD(T, capability_mask, 32, IB_PORT_CAPMASK_F),
      BE_FIELD(T, diag_code, 16, IB_PORT_DIAG_F),
      BE_FIELD(T, m_key_lease_period, 16, IB_PORT_MKEY_LEASE_F),
      BYTE_FIELD(T, local_port_num, IB_PORT_LOCAL_PORT_F),
      BYTE_FIELD(T, link_width_enabled, IB_PORT_LINK_WIDTH_ENABLED_F),
      BYTE_FIELD(T, link_width_supported, IB_PORT_LINK_WIDTH_SUPPORTED_F),
      BYTE_FIELD(T, link_width_active, IB_PORT_LINK_WIDTH_ACTIVE_F),
      BITS_FIELD(T, link_speed_supported, 4, IB_PORT_LINK_SPEED_SUPPORTED_F),
      BITS_FIELD(T, port_state, 4, IB_PORT_STATE_F),
      BITS_FIELD(T, port_physical_state, 4, IB_PORT_PHYS_STATE_F),
      BITS_FIELD(T, link_down_default_state, 4, IB_PORT_LINK_DOWN_DEF_F),
      BITS_FIELD(T, m_key_protect_bits, 2, IB_PORT_MKEY_PROT_BITS_F),
      BITS_FIELD(T, lmc, 3, IB_PORT_LMC_F),
      BITS_FIELD(T, link_speed_active, 4, IB_PORT_LINK_SPEED_ACTIVE_F),
      BITS_FIELD(T, link_speed_enabled, 4, IB_PORT_LINK_SPEED_ENABLED_F),
      BITS_FIELD(T, neighbor_mtu, 4, IB_PORT_NEIGHBOR_MTU_F),
      BITS_FIELD(T, master_sm_sl, 4, IB_PORT_SMSL_F),
      BITS_FIELD(T, vl_cap, 4, IB_PORT_VL_CAP_F),
      BITS_FIELD(T, init_type, 4, IB_PORT_INIT_TYPE_F),
      BYTE_FIELD(T, vl_high_limit, IB_PORT_VL_HIGH_LIMIT_F),
      BYTE_FIELD(T, vl_arbitration_high_cap, IB_PORT_VL_ARBITRATION_HIGH_CAP_F),
      BYTE_FIELD(T, vl_arbitration_low_cap, IB_PORT_VL_ARBITRATION_LOW_CAP_F),
      BITS_FIELD(T, init_type_reply, 4, IB_PORT_INIT_TYPE_REPLY_F),
      BITS_FIELD(T, mtu_cap, 4, IB_PORT_MTU_CAP_F),
      BITS_FIELD(T, vl_stall_count, 3, IB_PORT_VL_STALL_COUNT_F),
      BITS_FIELD(T, hoq_life, 5, IB_PORT_HOQ_LIFE_F),
      BITS_FIELD(T, operational_vls, 4, IB_PORT_OPER_VLS_F),
      BITS_FIELD(T, partition_enforcement_inbound, 1, IB_PORT_PART_EN_INB_F),
      BITS_FIELD(T, partition_enforcement_outbound, 1, IB_PORT_PART_EN_OUTB_F),
      BITS_FIELD(T, filter_raw_inbound, 1, IB_PORT_FILTER_RAW_INB_F),
      BITS_FIELD(T, filter_raw_outbound, 1, IB_PORT_FILTER_RAW_OUTB_F),
      BE_FIELD(T, m_key_violations, 16, IB_PORT_MKEY_VIOL_F),
      BE_FIELD(T, p_key_violations, 16, IB_PORT_PKEY_VIOL_F),
      BE_FIELD(T, q_key_violations, 16, IB_PORT_QKEY_VIOL_F),
      BYTE_FIELD(T, guid_cap, IB_PORT_GUID_CAP_F),
      BITS_FIELD(T, client_reregister, 1, IB_PORT_CLIENT_REREG_F),
      BITS_FIELD(T, multicast_pkey_trap_suppression_enabled, 2, IB_PORT_MCAST_PKEY_SUPR_ENAB_F),
      BITS_FIELD(T, subnet_timeout, 5, IB_PORT_SUBN_TIMEOUT_F),
      BITS_FIELD(T, resp_time_value, 5, IB_PORT_RESP_TIME_VAL_F),
      BITS_FIELD(T, local_phy_errors, 4, IB_PORT_LOCAL_PHYS_ERR_F),
      BITS_FIELD(T, overrun_errors, 4, IB_PORT_OVERRUN_ERR_F),
      BE_FIELD(T, max_credit_hint, 16, IB_PORT_MAX_CREDIT_HINT_F),
      BITS_FIELD(T, link_round_trip_latency, 24, IB_PORT_LINK_ROUND_TRIP_F),
      BE_FIELD(T, capability_mask2, 16, IB_PORT_CAPMASK2_F),
      BITS_FIELD(T, link_speed_ext_active, 4, IB_PORT_LINK_SPEED_EXT_ACTIVE_F),
      BITS_FIELD(T, link_speed_ext_supported, 4, IB_PORT_LINK_SPEED_EXT_SUPPORTED_F),
      BITS_FIELD(T, link_speed_ext_enabled, 5, IB_PORT_LINK_SPEED_EXT_ENABLED_F),
  };
}

std::vector<Field<SwitchInfo>> switch_info_fields() {
  using T = SwitchInfo;
  return {
      BE_FIELD(T, linear_fdb_cap, 16, IB_SW_LINEAR_FDB_CAP_F),
      BE_FIELD(T, random_fdb_cap, 16, IB_SW_RANDOM_FDB_CAP_F),
      BE_FIELD(T, multicast_fdb_cap, 16, IB_SW_MCAST_FDB_CAP_F),
      BE_FIELD(T, linear_fdb_top, 16, IB_SW_LINEAR_FDB_TOP_F),
      BYTE_FIELD(T, default_port, IB_SW_DEF_PORT_F),
      BYTE_FIELD(T, default_multicast_primary_port, IB_SW_DEF_MCAST_PRIM_F),
      BYTE_FIELD(T, default_multicast_not_primary_port, IB_SW_DEF_MCAST_NOT_PRIM_F),
      BITS_FIELD(T, life_time_value, 5, IB_SW_LIFE_TIME_F),
      BITS_FIELD(T, port_state_change, 1, IB_SW_STATE_CHANGE_F),
      BITS_FIELD(T, optimized_sl_to_vl_mapping_programming, 2, IB_SW_OPT_SLTOVL_MAPPING_F),
      BE_FIELD(T, lids_per_port, 16, IB_SW_LIDS_PER_PORT_F),
      BE_FIELD(T, partition_enforcement_cap, 16, IB_SW_PARTITION_ENFORCE_CAP_F),
      BITS_FIELD(T, inbound_enforcement_cap, 1, IB_SW_PARTITION_ENF_INB_F),
      BITS_FIELD(T, outbound_enforcement_cap, 1, IB_SW_PARTITION_ENF_OUTB_F),
      BITS_FIELD(T, filter_raw_inbound_cap, 1, IB_SW_FILTER_RAW_INB_F),
      BITS_FIELD(T, filter_raw_outbound_cap, 1, IB_SW_FILTER_RAW_OUTB_F),
      BITS_FIELD(T, enhanced_port0, 1, IB_SW_ENHANCED_PORT0_F),
      BE_FIELD(T, multicast_fdb_top, 16, IB_SW_MCAST_FDB_TOP_F),
  };
}

std::vector<Field<SmInfo>> sm_info_fields() {
  using T = SmInfo;
  return {
      BE_FIELD(T, guid, 64, IB_SMINFO_GUID_F),
      BE_FIELD(T, sm_key, 64, IB_SMINFO_KEY_F),
      BE_FIELD(T, act_count, 32, IB_SMINFO_ACT_F),
      BITS_FIELD(T, priority, 4, IB_SMINFO_PRIO_F),
      BITS_FIELD(T, sm_state, 4, IB_SMINFO_STATE_F),
  };
}

// libibmad has no IssuerGID field for the Notice; DataDetails is compared
// as a byte array below (IB_NOTICE_DATA_DETAILS_F).
std::vector<Field<Notice>> notice_fields() {
  using T = Notice;
  std::vector<Field<T>> v = {
      BITS_FIELD(T, is_generic, 1, IB_NOTICE_IS_GENERIC_F),
      BITS_FIELD(T, type, 7, IB_NOTICE_TYPE_F),
      BITS_FIELD(T, producer_type, 24, IB_NOTICE_PRODUCER_F),
      BE_FIELD(T, trap_number, 16, IB_NOTICE_TRAP_NUMBER_F),
      BE_FIELD(T, issuer_lid, 16, IB_NOTICE_ISSUER_LID_F),
      BITS_FIELD(T, notice_toggle, 1, IB_NOTICE_TOGGLE_F),
      BITS_FIELD(T, notice_count, 15, IB_NOTICE_COUNT_F),
  };
  for (std::size_t i = 0; i < kNoticeDataDetailsSize; ++i)
    v.push_back({"data_details[" + std::to_string(i) + "]", 8,
                 [i](T& t, std::uint64_t x) { t.data_details[i] = static_cast<std::uint8_t>(x); },
                 [i](const T& t) -> std::uint64_t { return t.data_details[i]; }});
  v.push_back(BE_FIELD(T, issuer_gid.prefix, 64, kNoIbmad));
  v.push_back(BE_FIELD(T, issuer_gid.guid, 64, kNoIbmad));
  return v;
}

// Array attributes: one 8/16/64-bit field per element.
template <typename T, typename Get, typename Set>
std::vector<Field<T>> element_fields(const char* name, std::size_t n, unsigned width, Get get, Set set,
                                     int first_ibmad = kNoIbmad) {
  std::vector<Field<T>> v;
  for (std::size_t i = 0; i < n; ++i)
    v.push_back({std::string(name) + "[" + std::to_string(i) + "]", width,
                 [i, set](T& t, std::uint64_t x) { set(t, i, x); },
                 [i, get](const T& t) -> std::uint64_t { return get(t, i); },
                 first_ibmad == kNoIbmad ? kNoIbmad : first_ibmad + static_cast<int>(i)});
  return v;
}

std::vector<Field<LftBlock>> lft_fields() {
  return element_fields<LftBlock>(
      "port", kLftBlockSize, 8, [](const LftBlock& b, std::size_t i) { return b.port(i); },
      [](LftBlock& b, std::size_t i, std::uint64_t x) { b.set_port(i, static_cast<std::uint8_t>(x)); });
}
std::vector<Field<MftBlock>> mft_fields() {
  return element_fields<MftBlock>(
      "mask", kMftBlockSize, 16, [](const MftBlock& b, std::size_t i) { return b.mask(i); },
      [](MftBlock& b, std::size_t i, std::uint64_t x) { b.set_mask(i, static_cast<std::uint16_t>(x)); });
}
// libibmad has no P_KeyTable field at all.
std::vector<Field<PKeyTableBlock>> pkey_fields() {
  return element_fields<PKeyTableBlock>(
      "pkey", kPKeyBlockSize, 16, [](const PKeyTableBlock& b, std::size_t i) { return b.pkey(i); },
      [](PKeyTableBlock& b, std::size_t i, std::uint64_t x) { b.set_pkey(i, static_cast<std::uint16_t>(x)); });
}
std::vector<Field<GuidInfoBlock>> guid_info_fields() {
  return element_fields<GuidInfoBlock>(
      "guid", kGuidInfoBlockSize, 64, [](const GuidInfoBlock& b, std::size_t i) { return b.guid(i); },
      [](GuidInfoBlock& b, std::size_t i, std::uint64_t x) { b.set_guid(i, x); }, IB_GI_GUID0_F);
}
std::vector<Field<Sl2VlTable>> sl2vl_fields() {
  return element_fields<Sl2VlTable>(
      "vl_of_sl", kSlCount, 4,
      [](const Sl2VlTable& t, std::size_t i) { return t.get_vl(static_cast<std::uint8_t>(i)); },
      [](Sl2VlTable& t, std::size_t i, std::uint64_t x) {
        t.set_vl(static_cast<std::uint8_t>(i), static_cast<std::uint8_t>(x));
      });
}
std::vector<Field<VlArbTableBlock>> vl_arb_fields() {
  auto v = element_fields<VlArbTableBlock>(
      "vl", kVlArbBlockSize, 4, [](const VlArbTableBlock& b, std::size_t i) { return b.entries[i].vl(); },
      [](VlArbTableBlock& b, std::size_t i, std::uint64_t x) {
        b.entries[i].set_vl(static_cast<std::uint8_t>(x));
      });
  auto w = element_fields<VlArbTableBlock>(
      "weight", kVlArbBlockSize, 8, [](const VlArbTableBlock& b, std::size_t i) { return b.entries[i].weight; },
      [](VlArbTableBlock& b, std::size_t i, std::uint64_t x) {
        b.entries[i].weight = static_cast<std::uint8_t>(x);
      });
  v.insert(v.end(), w.begin(), w.end());
  return v;
}
std::vector<Field<NodeDescription>> node_description_fields() {
  return element_fields<NodeDescription>(
      "byte", kNodeDescriptionSize, 8, [](const NodeDescription& d, std::size_t i) { return d.bytes[i]; },
      [](NodeDescription& d, std::size_t i, std::uint64_t x) { d.bytes[i] = static_cast<std::uint8_t>(x); });
}

// --- Tests -------------------------------------------------------------------

TEST(SmpAttrs, NodeInfo) {
  check_all(node_info_fields());
  check_covers(node_info_fields(), IB_NODE_FIRST_F, IB_NODE_LAST_F);
}
TEST(SmpAttrs, PortInfo) {
  check_all(port_info_fields());
  check_covers(port_info_fields(), IB_PORT_FIRST_F, IB_PORT_LAST_F);
  check_covers(port_info_fields(), IB_PORT_CAPMASK2_F, IB_PORT_LINK_SPEED_EXT_LAST_F);
}
TEST(SmpAttrs, SwitchInfo) {
  check_all(switch_info_fields());
  check_covers(switch_info_fields(), IB_SW_FIRST_F, IB_SW_LAST_F);
}
TEST(SmpAttrs, SmInfo) {
  check_all(sm_info_fields());
  check_covers(sm_info_fields(), IB_SMINFO_GUID_F, IB_SMINFO_STATE_F + 1);
}
TEST(SmpAttrs, Notice) {
  check_all(notice_fields());
  check_covers(notice_fields(), IB_NOTICE_IS_GENERIC_F, IB_NOTICE_DATA_DETAILS_F);
}
TEST(SmpAttrs, GuidInfo) {
  check_all(guid_info_fields());
  check_covers(guid_info_fields(), IB_GI_GUID0_F, IB_GI_GUID7_F + 1);
  // The obsolete alias names the same 64 bits as GUID0.
  GuidInfoBlock b = zeroed<GuidInfoBlock>();
  b.set_guid(0, 0x0123456789abcdefull);
  auto buf = bytes_of(b);
  EXPECT_EQ(mad_get_field64(buf.data(), 0, IB_GUID_GUID0_F), 0x0123456789abcdefull);
}
TEST(SmpAttrs, Lft) { check_all(lft_fields()); }
TEST(SmpAttrs, Mft) { check_all(mft_fields()); }
TEST(SmpAttrs, PKeyTable) { check_all(pkey_fields()); }
TEST(SmpAttrs, Sl2Vl) { check_all(sl2vl_fields()); }
TEST(SmpAttrs, VlArb) { check_all(vl_arb_fields()); }
TEST(SmpAttrs, NodeDescription) { check_all(node_description_fields()); }

// Array attributes: libibmad names the whole table as one byte array; check
// offset and length in both directions, then the element order through
// libibmad's own dump functions (an independent reading of nibbles/pairs).
template <typename T>
void check_array_field(int field, const std::vector<Field<T>>& fields) {
  std::mt19937_64 rng(kSeed ^ static_cast<std::uint64_t>(field));
  for (int it = 0; it < 20; ++it) {
    T t = zeroed<T>();
    for (const auto& f : fields) f.set(t, rng());
    std::array<std::uint8_t, 256> buf{};
    ASSERT_TRUE(encode(t, std::span<std::uint8_t>(buf)));
    std::array<std::uint8_t, 256> got{};
    mad_get_array(buf.data(), 0, static_cast<MAD_FIELDS>(field), got.data());
    const auto ours = bytes_of(t);
    EXPECT_EQ(0, std::memcmp(got.data(), ours.data(), ours.size())) << "(a) " << mad_field_name(static_cast<MAD_FIELDS>(field));
    std::array<std::uint8_t, 256> theirs{};
    mad_set_array(theirs.data(), 0, static_cast<MAD_FIELDS>(field), got.data());
    const auto back = decode<T>(theirs);
    ASSERT_TRUE(back.has_value());
    for (const auto& f : fields) EXPECT_EQ(f.get(*back), f.get(t)) << "(b) " << f.name;
  }
}

TEST(SmpAttrs, ArraysAgainstIbmad) {
  {
    SCOPED_TRACE("LFT");
    check_array_field(IB_LINEAR_FORW_TBL_F, lft_fields());
  }
  {
    SCOPED_TRACE("MFT");
    check_array_field(IB_MULTICAST_FORW_TBL_F, mft_fields());
  }
  {
    SCOPED_TRACE("SL2VL");
    check_array_field(IB_SLTOVL_MAPPING_TABLE_F, sl2vl_fields());
  }
  {
    SCOPED_TRACE("VLArb");
    check_array_field(IB_VL_ARBITRATION_TABLE_F, vl_arb_fields());
  }
  {
    SCOPED_TRACE("NodeDescription");
    check_array_field(IB_NODE_DESC_F, node_description_fields());
  }
  // DataDetails sits at bytes 10..63 of the Notice.
  Notice n = zeroed<Notice>();
  for (std::size_t i = 0; i < kNoticeDataDetailsSize; ++i) n.data_details[i] = static_cast<std::uint8_t>(i * 7 + 1);
  auto buf = bytes_of(n);
  std::array<std::uint8_t, kNoticeDataDetailsSize> dd{};
  mad_get_array(buf.data(), 0, IB_NOTICE_DATA_DETAILS_F, dd.data());
  EXPECT_EQ(0, std::memcmp(dd.data(), n.data_details.data(), dd.size()));
}

std::vector<unsigned> parse_numbers(const std::string& s, bool hex) {
  std::vector<unsigned> out;
  std::string tok;
  std::istringstream in(s);
  while (std::getline(in, tok, '|')) {
    const auto p = tok.find_first_of("0123456789ABCDEFabcdef");
    if (p == std::string::npos) continue;
    out.push_back(static_cast<unsigned>(std::stoul(tok.substr(p), nullptr, hex ? 16 : 10)));
  }
  return out;
}

TEST(SmpAttrs, Sl2VlOrderMatchesIbmadDump) {
  std::mt19937_64 rng(kSeed);
  for (int it = 0; it < 20; ++it) {
    Sl2VlTable t = zeroed<Sl2VlTable>();
    for (std::uint8_t sl = 0; sl < kSlCount; ++sl) t.set_vl(sl, static_cast<std::uint8_t>(rng() & 0xf));
    char text[1024] = {};
    mad_dump_sltovl(text, sizeof text, &t, sizeof t);
    const auto vls = parse_numbers(text, false);
    ASSERT_EQ(vls.size(), kSlCount) << text;
    for (std::uint8_t sl = 0; sl < kSlCount; ++sl) EXPECT_EQ(vls[sl], t.get_vl(sl)) << "SL " << int{sl};
  }
}

TEST(SmpAttrs, VlArbOrderMatchesIbmadDump) {
  std::mt19937_64 rng(kSeed);
  VlArbTableBlock b = zeroed<VlArbTableBlock>();
  for (auto& e : b.entries) {
    e.set_vl(static_cast<std::uint8_t>(rng() & 0xf));
    e.weight = static_cast<std::uint8_t>(rng());
  }
  char text[4096] = {};
  mad_dump_vlarbitration(text, sizeof text, &b, sizeof b);
  const std::string s(text);
  const auto vl_at = s.find("VL");
  const auto w_at = s.find("WEIGHT");
  ASSERT_NE(vl_at, std::string::npos);
  ASSERT_NE(w_at, std::string::npos);
  const auto vls = parse_numbers(s.substr(vl_at + 2, w_at - vl_at - 2).substr(s.substr(vl_at + 2).find('|')), true);
  const auto weights = parse_numbers(s.substr(w_at + 6).substr(s.substr(w_at + 6).find('|')), true);
  ASSERT_EQ(vls.size(), kVlArbBlockSize) << s;
  ASSERT_EQ(weights.size(), kVlArbBlockSize) << s;
  for (std::size_t i = 0; i < kVlArbBlockSize; ++i) {
    EXPECT_EQ(vls[i], b.entries[i].vl()) << "entry " << i;
    EXPECT_EQ(weights[i], b.entries[i].weight) << "entry " << i;
  }
}

// Trap-specific libibmad fields, addressed from the start of the Notice.
TEST(SmpAttrs, NoticeTrapFieldsAgainstIbmad) {
  std::mt19937_64 rng(kSeed);
  for (int it = 0; it < kIterations; ++it) {
    const auto lid = static_cast<std::uint16_t>(rng());
    const auto cap = static_cast<std::uint32_t>(rng());
    Notice n = make_generic_notice(notice_type::kUrgent, notice_producer::kSwitch, trap::kLinkStateChange, 7);
    NoticeDetails128 d128 = zeroed<NoticeDetails128>();
    d128.lid.set(lid);
    n.set_details(d128);
    auto buf = bytes_of(n);
    EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_LID_F), lid) << "trap 128 LIDADDR (a)";
    std::array<std::uint8_t, 256> theirs{};
    mad_set_field(theirs.data(), 0, IB_NOTICE_DATA_LID_F, lid);
    EXPECT_EQ(decode<Notice>(theirs)->details<NoticeDetails128>().lid.get(), lid) << "trap 128 LIDADDR (b)";

    NoticeDetails144 d144 = zeroed<NoticeDetails144>();
    d144.lid.set(lid);
    d144.capability_mask.set(cap);
    n.trap_number.set(trap::kLocalChanges);
    n.set_details(d144);
    buf = bytes_of(n);
    EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_144_LID_F), lid) << "trap 144 LIDADDR (a)";
    EXPECT_EQ(mad_get_field(buf.data(), 0, IB_NOTICE_DATA_144_CAPMASK_F), cap) << "trap 144 CapabilityMask (a)";
    theirs = {};
    mad_set_field(theirs.data(), 0, IB_NOTICE_DATA_144_LID_F, lid);
    mad_set_field(theirs.data(), 0, IB_NOTICE_DATA_144_CAPMASK_F, cap);
    const auto d = decode<Notice>(theirs)->details<NoticeDetails144>();
    EXPECT_EQ(d.lid.get(), lid) << "trap 144 LIDADDR (b)";
    EXPECT_EQ(d.capability_mask.get(), cap) << "trap 144 CapabilityMask (b)";
  }
  check_covers(notice_fields(), IB_NOTICE_IS_GENERIC_F, IB_NOTICE_DATA_DETAILS_F);
}

// --- DataDetails layouts: round trip and isolation (no libibmad fields) ----

std::vector<Field<NoticeDetailsGid>> details_gid_fields() {
  using T = NoticeDetailsGid;
  return {BE_FIELD(T, gid.prefix, 64, kNoIbmad), BE_FIELD(T, gid.guid, 64, kNoIbmad)};
}
std::vector<Field<NoticeDetails129>> details_129_fields() {
  using T = NoticeDetails129;
  return {BE_FIELD(T, lid, 16, kNoIbmad), BYTE_FIELD(T, port_num, kNoIbmad)};
}
std::vector<Field<NoticeDetails144>> details_144_fields() {
  using T = NoticeDetails144;
  return {BE_FIELD(T, lid, 16, kNoIbmad), BITS_FIELD(T, other_local_changes, 1, kNoIbmad),
          BE_FIELD(T, capability_mask, 32, kNoIbmad), BE_FIELD(T, change_flags, 16, kNoIbmad),
          BE_FIELD(T, capability_mask2, 16, kNoIbmad)};
}
std::vector<Field<NoticeDetails145>> details_145_fields() {
  using T = NoticeDetails145;
  return {BE_FIELD(T, lid, 16, kNoIbmad), BE_FIELD(T, system_image_guid, 64, kNoIbmad)};
}
std::vector<Field<NoticeDetails256>> details_256_fields() {
  using T = NoticeDetails256;
  auto v = std::vector<Field<T>>{
      BE_FIELD(T, lid, 16, kNoIbmad),       BE_FIELD(T, dr_slid, 16, kNoIbmad),
      BYTE_FIELD(T, method, kNoIbmad),      BE_FIELD(T, attr_id, 16, kNoIbmad),
      BE_FIELD(T, attr_mod, 32, kNoIbmad),  BE_FIELD(T, m_key, 64, kNoIbmad),
      BITS_FIELD(T, dr_notice, 1, kNoIbmad), BITS_FIELD(T, dr_path_truncated, 1, kNoIbmad),
      BITS_FIELD(T, dr_hop_count, 6, kNoIbmad)};
  auto p = element_fields<T>(
      "dr_return_path", 30, 8, [](const T& t, std::size_t i) { return t.dr_return_path[i]; },
      [](T& t, std::size_t i, std::uint64_t x) { t.dr_return_path[i] = static_cast<std::uint8_t>(x); });
  v.insert(v.end(), p.begin(), p.end());
  return v;
}
std::vector<Field<NoticeDetails257>> details_257_fields() {
  using T = NoticeDetails257;
  return {BE_FIELD(T, lid1, 16, kNoIbmad),      BE_FIELD(T, lid2, 16, kNoIbmad),
          BE_FIELD(T, key, 32, kNoIbmad),       BITS_FIELD(T, sl, 4, kNoIbmad),
          BITS_FIELD(T, qp1, 24, kNoIbmad),     BITS_FIELD(T, qp2, 24, kNoIbmad),
          BE_FIELD(T, gid1.prefix, 64, kNoIbmad), BE_FIELD(T, gid1.guid, 64, kNoIbmad),
          BE_FIELD(T, gid2.prefix, 64, kNoIbmad), BE_FIELD(T, gid2.guid, 64, kNoIbmad)};
}
std::vector<Field<NoticeDetails259>> details_259_fields() {
  using T = NoticeDetails259;
  return {BE_FIELD(T, data_valid, 16, kNoIbmad), BE_FIELD(T, lid1, 16, kNoIbmad),
          BE_FIELD(T, lid2, 16, kNoIbmad),       BE_FIELD(T, pkey, 16, kNoIbmad),
          BITS_FIELD(T, sl, 4, kNoIbmad),        BITS_FIELD(T, qp1, 24, kNoIbmad),
          BITS_FIELD(T, qp2, 24, kNoIbmad),      BE_FIELD(T, gid1.prefix, 64, kNoIbmad),
          BE_FIELD(T, gid1.guid, 64, kNoIbmad),  BE_FIELD(T, gid2.prefix, 64, kNoIbmad),
          BE_FIELD(T, gid2.guid, 64, kNoIbmad),  BE_FIELD(T, sw_lid, 16, kNoIbmad),
          BYTE_FIELD(T, port_num, kNoIbmad)};
}

TEST(SmpAttrs, NoticeDetailsLayouts) {
  check_round_trip(details_gid_fields());
  check_no_spill(details_gid_fields());
  check_round_trip(details_129_fields());
  check_no_spill(details_129_fields());
  check_round_trip(details_144_fields());
  check_no_spill(details_144_fields());
  check_round_trip(details_145_fields());
  check_no_spill(details_145_fields());
  check_round_trip(details_256_fields());
  check_no_spill(details_256_fields());
  check_round_trip(details_257_fields());
  check_no_spill(details_257_fields());
  check_round_trip(details_259_fields());
  check_no_spill(details_259_fields());
}

}  // namespace
}  // namespace madengine::wire
