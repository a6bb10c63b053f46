// libFuzzer target for SMPs: decodes the input as a LID-routed or
// directed-route SMP, validates it, decodes the payload as the attribute its
// ID names and reads every field. Built with -DFUZZ_SMP_MAKE_CORPUS (and
// without -fsanitize=fuzzer) it instead writes the seed corpus to argv[1].
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp_attrs.hpp"

namespace {

using namespace madengine::wire;

// Values flow here so the optimiser cannot drop the reads.
volatile std::uint64_t g_sink;
void sink(std::uint64_t v) { g_sink = g_sink + v; }

// Decoding then encoding must give back the same bytes.
template <typename T>
const T* round_trip(std::span<const std::uint8_t> data, T& out) {
  const auto v = decode<T>(data);
  if (!v) return nullptr;
  out = *v;
  std::uint8_t again[sizeof(T)];
  if (!encode(out, std::span<std::uint8_t>(again, sizeof(T)))) __builtin_trap();
  for (std::size_t i = 0; i < sizeof(T); ++i)
    if (again[i] != data[i]) __builtin_trap();
  return &out;
}

void read_node_info(const NodeInfo& n) {
  sink(n.base_version + n.class_version + n.node_type + n.num_ports);
  sink(n.system_image_guid.get() ^ n.node_guid.get() ^ n.port_guid.get());
  sink(n.partition_cap.get() + n.device_id.get() + n.revision.get() + n.local_port_num + n.vendor_id());
  sink(n.is_switch());
  sink(std::string(to_string(n.type())).size());
}

void read_port_info(const PortInfo& p) {
  sink(p.m_key.get() ^ p.gid_prefix.get());
  sink(p.lid.get() + p.master_sm_lid.get() + p.capability_mask.get() + p.diag_code.get() +
       p.m_key_lease_period.get());
  sink(p.local_port_num + p.link_width_enabled + p.link_width_supported + p.link_width_active);
  sink(p.link_speed_supported() + p.port_state() + p.port_physical_state() + p.link_down_default_state() +
       p.m_key_protect_bits() + p.lmc() + p.link_speed_active() + p.link_speed_enabled() +
       p.neighbor_mtu() + p.master_sm_sl() + p.vl_cap() + p.init_type());
  sink(p.vl_high_limit + p.vl_arbitration_high_cap + p.vl_arbitration_low_cap);
  sink(p.init_type_reply() + p.mtu_cap() + p.vl_stall_count() + p.hoq_life() + p.operational_vls() +
       p.partition_enforcement_inbound() + p.partition_enforcement_outbound() + p.filter_raw_inbound() +
       p.filter_raw_outbound());
  sink(p.m_key_violations.get() + p.p_key_violations.get() + p.q_key_violations.get() + p.guid_cap);
  sink(p.client_reregister() + p.multicast_pkey_trap_suppression_enabled() + p.subnet_timeout() +
       p.resp_time_value() + p.local_phy_errors() + p.overrun_errors() + p.max_credit_hint.get() +
       p.link_round_trip_latency() + p.capability_mask2.get() + p.link_speed_ext_active() +
       p.link_speed_ext_supported() + p.link_speed_ext_enabled());
  sink(static_cast<std::uint8_t>(p.state()) + static_cast<std::uint8_t>(p.phys_state()) +
       p.has_cap(port_cap::kIsSM) + mtu_bytes(p.neighbor_mtu()) + mtu_bytes(p.mtu_cap()));
}

void read_switch_info(const SwitchInfo& s) {
  sink(s.linear_fdb_cap.get() + s.random_fdb_cap.get() + s.multicast_fdb_cap.get() + s.linear_fdb_top.get());
  sink(s.default_port + s.default_multicast_primary_port + s.default_multicast_not_primary_port);
  sink(s.life_time_value() + s.port_state_change() + s.optimized_sl_to_vl_mapping_programming());
  sink(s.lids_per_port.get() + s.partition_enforcement_cap.get());
  sink(s.inbound_enforcement_cap() + s.outbound_enforcement_cap() + s.filter_raw_inbound_cap() +
       s.filter_raw_outbound_cap() + s.enhanced_port0() + s.multicast_fdb_top.get());
}

void read_notice(const Notice& n) {
  sink(n.is_generic() + n.type() + n.producer_type() + n.vendor_id() + n.trap_number.get() + n.device_id() +
       n.issuer_lid.get() + n.notice_toggle() + n.notice_count());
  sink(n.issuer_gid.prefix.get() ^ n.issuer_gid.guid.get());
  switch (n.trap_number.get()) {
    case trap::kGidInService:
    case trap::kGidOutOfService:
    case trap::kMcGroupCreated:
    case trap::kMcGroupDeleted: {
      const auto d = n.details<NoticeDetailsGid>();
      sink(d.gid.prefix.get() ^ d.gid.guid.get());
      break;
    }
    case trap::kLinkStateChange: sink(n.details<NoticeDetails128>().lid.get()); break;
    case trap::kLocalLinkIntegrity:
    case trap::kExcessiveBufferOverrun:
    case trap::kFlowControlWatchdog: {
      const auto d = n.details<NoticeDetails129>();
      sink(d.lid.get() + d.port_num);
      break;
    }
    case trap::kLocalChanges: {
      const auto d = n.details<NoticeDetails144>();
      sink(d.lid.get() + d.other_local_changes() + d.capability_mask.get() + d.change_flags.get() +
           d.capability_mask2.get());
      break;
    }
    case trap::kSystemImageGuidChange: {
      const auto d = n.details<NoticeDetails145>();
      sink(d.lid.get() + d.system_image_guid.get());
      break;
    }
    case trap::kBadMKey: {
      const auto d = n.details<NoticeDetails256>();
      sink(d.lid.get() + d.dr_slid.get() + d.method + d.attr_id.get() + d.attr_mod.get() + d.m_key.get());
      sink(d.dr_notice() + d.dr_path_truncated() + d.dr_hop_count());
      // The hop count is 6 bits but only 30 return-path bytes exist.
      const std::size_t hops = d.dr_hop_count() < d.dr_return_path.size() ? d.dr_hop_count() : d.dr_return_path.size();
      for (std::size_t i = 0; i < hops; ++i) sink(d.dr_return_path[i]);
      break;
    }
    case trap::kBadPKey:
    case trap::kBadQKey: {
      const auto d = n.details<NoticeDetails257>();
      sink(d.lid1.get() + d.lid2.get() + d.key.get() + d.sl() + d.qp1() + d.qp2());
      sink(d.gid1.guid.get() ^ d.gid2.guid.get());
      break;
    }
    case trap::kBadPKeySwitchPort: {
      const auto d = n.details<NoticeDetails259>();
      sink(d.data_valid.get() + d.lid1.get() + d.lid2.get() + d.pkey.get() + d.sl() + d.qp1() + d.qp2() +
           d.sw_lid.get() + d.port_num);
      sink(d.gid1.prefix.get() ^ d.gid2.prefix.get());
      break;
    }
    default:
      for (std::uint8_t b : n.data_details) sink(b);
  }
}

void exercise_attr(std::uint16_t attr_id, std::uint32_t attr_mod, std::span<const std::uint8_t> data) {
  sink(std::string(smp_attr_name(attr_id)).size() + smp_attr_size(attr_id).value_or(0));
  switch (attr_id) {
    case smp_attr::kNodeInfo: {
      NodeInfo v;
      if (round_trip(data, v)) read_node_info(v);
      break;
    }
    case smp_attr::kNodeDescription: {
      NodeDescription v;
      if (round_trip(data, v)) sink(v.text().size() + v.str().size());
      break;
    }
    case smp_attr::kPortInfo: {
      PortInfo v;
      if (round_trip(data, v)) read_port_info(v);
      sink(port_info_modifier(static_cast<std::uint8_t>(attr_mod)));
      break;
    }
    case smp_attr::kSwitchInfo: {
      SwitchInfo v;
      if (round_trip(data, v)) read_switch_info(v);
      break;
    }
    case smp_attr::kLinearFwdTable: {
      LftBlock v;
      if (round_trip(data, v))
        for (std::size_t i = 0; i < kLftBlockSize; ++i) sink(v.port(i));
      sink(lft_modifier_valid(attr_mod));
      break;
    }
    case smp_attr::kMulticastFwdTable: {
      MftBlock v;
      if (round_trip(data, v))
        for (std::size_t i = 0; i < kMftBlockSize; ++i) sink(v.mask(i));
      if (const auto m = parse_mft_modifier(attr_mod)) {
        if (mft_modifier(m->position, m->block) != attr_mod) __builtin_trap();
      }
      break;
    }
    case smp_attr::kPKeyTable: {
      PKeyTableBlock v;
      if (round_trip(data, v))
        for (std::size_t i = 0; i < kPKeyBlockSize; ++i)
          sink(pkey_is_valid(v.pkey(i)) + pkey_is_full_member(v.pkey(i)) + pkeys_match(v.pkey(i), kDefaultPKey));
      sink(pkey_table_block_of(attr_mod) + pkey_table_port_of(attr_mod));
      break;
    }
    case smp_attr::kSl2VlTable: {
      Sl2VlTable v;
      if (round_trip(data, v))
        for (std::uint8_t sl = 0; sl < kSlCount; ++sl) sink(v.get_vl(sl));
      break;
    }
    case smp_attr::kVlArbTable: {
      VlArbTableBlock v;
      if (round_trip(data, v))
        for (const auto& e : v.entries) sink(e.vl() + e.weight);
      sink(vl_arb_modifier_valid(attr_mod));
      break;
    }
    case smp_attr::kGuidInfo: {
      GuidInfoBlock v;
      if (round_trip(data, v))
        for (std::size_t i = 0; i < kGuidInfoBlockSize; ++i) sink(v.guid(i));
      break;
    }
    case smp_attr::kSmInfo: {
      SmInfo v;
      if (round_trip(data, v)) {
        sink(v.guid.get() ^ v.sm_key.get());
        sink(v.act_count.get() + v.priority() + v.sm_state());
        sink(std::string(to_string(v.state())).size());
        sink(sm_outranks(v.priority(), v.guid.get(), kSmPriorityMax, 0));
      }
      break;
    }
    case smp_attr::kNotice: {
      if (const auto n = decode_smp_notice(data)) read_notice(*n);
      break;
    }
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const std::span<const std::uint8_t> in(bytes, size);
  const auto hdr = decode<MadHeader>(in);
  if (!hdr) return 0;
  if (hdr->klass() == MgmtClass::kSubnDirected) {
    const auto smp = decode<DrSmp>(in);
    if (!smp) return 0;
    const MadError err = validate(*smp);
    sink(std::string(to_string(err)).size());
    if (err != MadError::kOk) return 0;
    sink(smp->hop_pointer() + smp->hop_count() + smp->direction_in() + smp->smp_status());
    sink(smp->dr_slid.get() + smp->dr_dlid.get() + smp->m_key.get());
    // Paths hold hops 1..hop_count; validate() bounds hop_count to 63.
    for (std::uint8_t i = 1; i <= smp->hop_count(); ++i) sink(smp->initial_path[i] + smp->return_path[i]);
    exercise_attr(hdr->attr_id.get(), hdr->attr_mod.get(), smp->data);
  } else if (hdr->klass() == MgmtClass::kSubnLid) {
    const auto smp = decode<Smp>(in);
    if (!smp) return 0;
    sink(smp->m_key.get() + smp->hdr.tid.get() + smp->hdr.is_response());
    exercise_attr(hdr->attr_id.get(), hdr->attr_mod.get(), smp->data);
  } else {
    // Any other class: still treat the bytes after the SMP header as SMP data.
    if (size >= 64) exercise_attr(hdr->attr_id.get(), hdr->attr_mod.get(), in.subspan(64));
  }
  return 0;
}

#ifdef FUZZ_SMP_MAKE_CORPUS
// Writes a handful of realistic SMPs, built with the codecs, as seeds.
namespace {

template <typename Mad, typename Attr>
void put(Mad& mad, const Attr& a) {
  if (!encode(a, std::span<std::uint8_t>(mad.data))) std::abort();
}

template <typename Mad>
void write(const std::string& dir, const char* name, const Mad& mad) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(&mad, 1, sizeof mad, f) != sizeof mad) std::abort();
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  DrPath path;
  path.push(1);
  path.push(3);

  DrSmp ni_get = make_dr_smp(method::kGet, smp_attr::kNodeInfo, 0, 0x1001, path);
  write(dir, "dr_nodeinfo_get", ni_get);

  DrSmp ni_resp = ni_get;
  ni_resp.hdr.method = method::kGetResp;
  ni_resp.set_direction_in(true);
  ni_resp.set_hops(path.hops, path.hops);
  ni_resp.return_path[1] = 5;
  ni_resp.return_path[2] = 1;
  NodeInfo ni{};
  ni.base_version = 1;
  ni.class_version = 1;
  ni.set_type(NodeType::kSwitch);
  ni.num_ports = 36;
  ni.system_image_guid.set(0x0002c90300a1b2c3ull);
  ni.node_guid.set(0x0002c90300a1b2c3ull);
  ni.port_guid.set(0x0002c90300a1b2c3ull);
  ni.partition_cap.set(8);
  ni.device_id.set(0xcb20);
  ni.revision.set(0xa0);
  ni.local_port_num = 5;
  ni.set_vendor_id(0x0002c9);
  put(ni_resp, ni);
  write(dir, "dr_nodeinfo_getresp_switch", ni_resp);

  Smp pi_resp{};
  pi_resp.hdr = make_smp_header(MgmtClass::kSubnLid, method::kGetResp, smp_attr::kPortInfo, 1, 0x2002);
  PortInfo pi{};
  pi.gid_prefix.set(kDefaultSubnetPrefix);
  pi.lid.set(0x0012);
  pi.master_sm_lid.set(0x0001);
  pi.capability_mask.set(port_cap::kIsTrapSupported | port_cap::kIsNoticeSupported |
                         port_cap::kIsClientReregistrationSupported | port_cap::kIsCapabilityMask2Supported);
  pi.local_port_num = 1;
  pi.link_width_enabled = link_width::k4x;
  pi.link_width_supported = link_width::k1x | link_width::k4x;
  pi.link_width_active = link_width::k4x;
  pi.set_link_speed_supported(link_speed::k2_5 | link_speed::k5 | link_speed::k10);
  pi.set_link_speed_enabled(link_speed::k2_5 | link_speed::k5 | link_speed::k10);
  pi.set_state(PortState::kActive);
  pi.set_port_physical_state(static_cast<std::uint8_t>(PortPhysState::kLinkUp));
  pi.set_link_down_default_state(static_cast<std::uint8_t>(LinkDownDefaultState::kPolling));
  pi.set_lmc(0);
  pi.set_neighbor_mtu(static_cast<std::uint8_t>(Mtu::k4096));
  pi.set_mtu_cap(static_cast<std::uint8_t>(Mtu::k4096));
  pi.set_vl_cap(vl_cap::kVl0To7);
  pi.set_operational_vls(vl_cap::kVl0To7);
  pi.vl_high_limit = 4;
  pi.vl_arbitration_high_cap = 8;
  pi.vl_arbitration_low_cap = 8;
  pi.set_hoq_life(0x10);
  pi.guid_cap = 8;
  pi.set_subnet_timeout(18);
  pi.set_resp_time_value(16);
  pi.set_link_speed_ext_active(link_speed_ext::k25);
  pi.set_link_speed_ext_supported(link_speed_ext::k14 | link_speed_ext::k25);
  pi.set_link_speed_ext_enabled(link_speed_ext::k14 | link_speed_ext::k25);
  put(pi_resp, pi);
  write(dir, "lid_portinfo_getresp", pi_resp);

  DrSmp pi_set = make_dr_smp(method::kSet, smp_attr::kPortInfo, 0, 0x2003, path);
  pi.set_state(PortState::kArmed);
  pi.set_client_reregister(1);
  put(pi_set, pi);
  write(dir, "dr_portinfo_set_armed", pi_set);

  DrSmp si_resp = make_dr_smp(method::kGetResp, smp_attr::kSwitchInfo, 0, 0x3003, path);
  si_resp.set_direction_in(true);
  SwitchInfo si{};
  si.linear_fdb_cap.set(0xc000);
  si.multicast_fdb_cap.set(0x1000);
  si.linear_fdb_top.set(0x0040);
  si.default_multicast_primary_port = 0xff;
  si.default_multicast_not_primary_port = 0xff;
  si.set_life_time_value(18);
  si.set_port_state_change(1);
  si.lids_per_port.set(1);
  si.partition_enforcement_cap.set(32);
  si.set_inbound_enforcement_cap(1);
  si.set_outbound_enforcement_cap(1);
  si.multicast_fdb_top.set(kMulticastFdbTopNone);
  put(si_resp, si);
  write(dir, "dr_switchinfo_getresp", si_resp);

  Smp lft_set{};
  lft_set.hdr = make_smp_header(MgmtClass::kSubnLid, method::kSet, smp_attr::kLinearFwdTable, lft_modifier(1), 0x4004);
  LftBlock lft{};
  for (std::size_t i = 0; i < kLftBlockSize; ++i) lft.set_port(i, static_cast<std::uint8_t>(1 + i % 36));
  put(lft_set, lft);
  write(dir, "lid_lft_set_block1", lft_set);

  Smp mft_set{};
  mft_set.hdr = make_smp_header(MgmtClass::kSubnLid, method::kSet, smp_attr::kMulticastFwdTable, mft_modifier(1, 2), 0x5005);
  MftBlock mft{};
  for (std::size_t i = 0; i < kMftBlockSize; ++i) mft.set_mask(i, static_cast<std::uint16_t>(0x8001u << (i % 2)));
  put(mft_set, mft);
  write(dir, "lid_mft_set", mft_set);

  DrSmp pkey_resp = make_dr_smp(method::kGetResp, smp_attr::kPKeyTable, pkey_table_modifier(0, 3), 0x6006, path);
  PKeyTableBlock pk{};
  pk.set_pkey(0, kDefaultPKey);
  pk.set_pkey(1, 0x8001);
  pk.set_pkey(2, 0x0002);
  put(pkey_resp, pk);
  write(dir, "dr_pkey_getresp", pkey_resp);

  Smp sl2vl_set{};
  sl2vl_set.hdr = make_smp_header(MgmtClass::kSubnLid, method::kSet, smp_attr::kSl2VlTable, sl2vl_modifier(1, 2), 0x7007);
  Sl2VlTable sv{};
  for (std::uint8_t sl = 0; sl < kSlCount; ++sl) sv.set_vl(sl, sl % 8);
  put(sl2vl_set, sv);
  write(dir, "lid_sl2vl_set", sl2vl_set);

  Smp vlarb_set{};
  vlarb_set.hdr = make_smp_header(MgmtClass::kSubnLid, method::kSet, smp_attr::kVlArbTable,
                                  vl_arb_modifier(vl_arb_block::kLowLower, 2), 0x8008);
  VlArbTableBlock va{};
  for (std::size_t i = 0; i < kVlArbBlockSize; ++i) {
    va.entries[i].set_vl(static_cast<std::uint8_t>(i % 8));
    va.entries[i].weight = 64;
  }
  put(vlarb_set, va);
  write(dir, "lid_vlarb_set", vlarb_set);

  Smp gi_resp{};
  gi_resp.hdr = make_smp_header(MgmtClass::kSubnLid, method::kGetResp, smp_attr::kGuidInfo, guid_info_modifier(0), 0x9009);
  GuidInfoBlock gi{};
  gi.set_guid(0, 0x0002c90300a1b2c4ull);
  put(gi_resp, gi);
  write(dir, "lid_guidinfo_getresp", gi_resp);

  DrSmp nd_resp = make_dr_smp(method::kGetResp, smp_attr::kNodeDescription, 0, 0xa00a, path);
  nd_resp.set_direction_in(true);
  NodeDescription nd{};
  nd.set_text("MF0;switch-17:MSB7700/U1");
  put(nd_resp, nd);
  write(dir, "dr_nodedesc_getresp", nd_resp);

  Smp sm_set{};
  sm_set.hdr = make_smp_header(MgmtClass::kSubnLid, method::kSet, smp_attr::kSmInfo, sm_info_mod::kHandover, 0xb00b);
  SmInfo sm{};
  sm.guid.set(0x0002c90300a1b2c5ull);
  sm.sm_key.set(0);
  sm.act_count.set(1234);
  sm.set_priority(14);
  sm.set_state(SmState::kMaster);
  put(sm_set, sm);
  write(dir, "lid_sminfo_set_handover", sm_set);

  Smp trap128{};
  trap128.hdr = make_smp_header(MgmtClass::kSubnLid, method::kTrap, smp_attr::kNotice, 0, 0xc00c);
  Notice n = make_generic_notice(notice_type::kUrgent, notice_producer::kSwitch, trap::kLinkStateChange, 0x0004);
  NoticeDetails128 d128{};
  d128.lid.set(0x0004);
  n.set_details(d128);
  if (!encode_smp_notice(n, trap128.data)) std::abort();
  write(dir, "lid_trap128", trap128);

  Smp trap144{};
  trap144.hdr = make_smp_header(MgmtClass::kSubnLid, method::kTrap, smp_attr::kNotice, 0, 0xd00d);
  n = make_generic_notice(notice_type::kInfo, notice_producer::kCa, trap::kLocalChanges, 0x0012);
  NoticeDetails144 d144{};
  d144.lid.set(0x0012);
  d144.capability_mask.set(port_cap::kIsSM | port_cap::kIsTrapSupported);
  d144.change_flags.set(trap144_change::kSmPriority);
  n.set_details(d144);
  if (!encode_smp_notice(n, trap144.data)) std::abort();
  write(dir, "lid_trap144", trap144);

  Smp trap256{};
  trap256.hdr = make_smp_header(MgmtClass::kSubnLid, method::kTrap, smp_attr::kNotice, 0, 0xe00e);
  n = make_generic_notice(notice_type::kSecurity, notice_producer::kCa, trap::kBadMKey, 0x0012);
  NoticeDetails256 d256{};
  d256.lid.set(0x0012);
  d256.method = method::kSet;
  d256.attr_id.set(smp_attr::kPortInfo);
  d256.m_key.set(0x1234);
  d256.set_dr_notice(1);
  d256.set_dr_hop_count(2);
  d256.dr_return_path[0] = 3;
  d256.dr_return_path[1] = 1;
  n.set_details(d256);
  if (!encode_smp_notice(n, trap256.data)) std::abort();
  write(dir, "lid_trap256", trap256);
  return 0;
}
#endif
