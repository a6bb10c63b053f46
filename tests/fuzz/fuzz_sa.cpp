// libFuzzer target for the SA decoders: an SA MAD is decoded and validated,
// its data decoded as the record its AttributeID names (and, for table
// responses, every record AttributeOffset lays out, and MultiPathRecord's GID
// list), with every getter exercised and re-encoding checked. Any input must
// leave ASan/UBSan silent.
//
// Built with -DMADENGINE_SA_CORPUS_MAIN instead of libFuzzer, this file is the
// generator of the seed corpus in corpus/sa/:
//   clang++ -std=c++20 -DMADENGINE_SA_CORPUS_MAIN -Iinclude tests/fuzz/fuzz_sa.cpp -o gen && ./gen tests/fuzz/corpus/sa
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa_records.hpp"

namespace {

using namespace madengine::wire;

volatile std::uint64_t g_sink;

void sink(std::uint64_t v) noexcept { g_sink = g_sink + v; }
void sink(const Gid& g) noexcept { sink(g.prefix.get() ^ g.guid.get()); }

// A decoded record must re-encode to the bytes it came from, and survive a
// trip through a GetTable slot.
template <typename T>
void check_reencode(const T& rec, std::span<const std::uint8_t> from) {
  std::array<std::uint8_t, sizeof(T)> out{};
  if (!encode(rec, out) || std::memcmp(out.data(), from.data(), sizeof(T)) != 0) __builtin_trap();
  std::array<std::uint8_t, 2 * ((sizeof(T) + 7) / 8) * 8> table{};
  const auto off = attr_offset_for(sizeof(T));
  if (!set_table_record(std::span<std::uint8_t>(table), off, 1, rec)) __builtin_trap();
  const auto back = table_record<T>(table, off, 1);
  if (!back || std::memcmp(&*back, &rec, sizeof(T)) != 0) __builtin_trap();
}

void touch(const ClassPortInfo& r) {
  sink(r.base_version + r.class_version + r.capability_mask.get() + r.cap_mask2() + r.resp_time_value());
  sink(r.redirect_gid);
  sink(r.redirect_tc() + r.redirect_sl() + r.redirect_flow_label() + r.redirect_lid.get() + r.redirect_pkey.get() +
       r.redirect_qpn() + r.redirect_qkey.get());
  sink(r.trap_gid);
  sink(r.trap_tc() + r.trap_sl() + r.trap_flow_label() + r.trap_lid.get() + r.trap_pkey.get() + r.trap_hop_limit() +
       r.trap_qpn() + r.trap_qkey.get());
}
void touch(const InformInfo& r) {
  sink(r.gid);
  sink(r.lid_range_begin.get() + r.lid_range_end.get() + r.is_generic + r.subscribe + r.type.get());
  sink(r.is_generic ? r.trap_number() + r.producer_type() : r.device_id() + r.vendor_id());
  sink(r.qpn() + r.resp_time_value());
}
void touch(const InformInfoRecord& r) {
  sink(r.subscriber_gid);
  sink(r.subscriber_enum.get());
  touch(r.inform_info);
}
void touch(const NodeRecord& r) {
  sink(r.lid.get() + r.node_info.node_type + r.node_info.num_ports + r.node_info.node_guid.get() +
       r.node_info.port_guid.get() + r.node_info.vendor_id() + r.node_info.local_port_num);
  sink(r.node_description.bytes[0]);
}
void touch(const PortInfoRecord& r) {
  sink(r.endport_lid.get() + r.port_num + r.options);
  for (const auto b : as_bytes(r.port_info)) sink(b);
}
void touch(const Sl2VlTableRecord& r) {
  sink(r.lid.get() + r.input_port_num + r.output_port_num);
  for (std::uint8_t sl = 0; sl < kSlCount; ++sl) sink(r.table.get_vl(sl));
}
void touch(const SwitchInfoRecord& r) {
  sink(r.lid.get() + r.switch_info.linear_fdb_top.get() + r.switch_info.life_time_value() +
       r.switch_info.port_state_change() + r.switch_info.multicast_fdb_top.get());
}
void touch(const LftRecord& r) {
  sink(r.lid.get() + r.block_num.get());
  for (const auto p : r.lft.ports) sink(p);
}
void touch(const MftRecord& r) {
  sink(r.lid.get() + r.position() + r.block_num());
  for (std::size_t i = 0; i < kMftBlockSize; ++i) sink(r.mft.mask(i));
}
void touch(const SmInfoRecord& r) {
  sink(r.lid.get() + r.sm_info.guid.get() + r.sm_info.sm_key.get() + r.sm_info.act_count.get() +
       r.sm_info.priority() + r.sm_info.sm_state());
}
void touch(const LinkRecord& r) { sink(r.from_lid.get() + r.from_port + r.to_port + r.to_lid.get()); }
void touch(const GuidInfoRecord& r) {
  sink(r.lid.get() + r.block_num);
  for (const auto& g : r.guid_info.guids) sink(g.get());
}
void touch(const ServiceRecord& r) {
  sink(r.service_id.get() + r.service_pkey.get() + r.service_lease.get());
  sink(r.service_gid);
  for (const auto b : r.service_name) sink(b);
  for (const auto& v : r.service_data16) sink(v.get());
  for (const auto& v : r.service_data32) sink(v.get());
  for (const auto& v : r.service_data64) sink(v.get());
}
void touch(const PKeyTableRecord& r) {
  sink(r.lid.get() + r.block_num.get() + r.port_num);
  for (const auto& p : r.pkey_table.pkeys) sink(p.get());
}
void touch(const PathRecord& r) {
  sink(r.service_id.get() + r.dlid.get() + r.slid.get() + r.raw_traffic() + r.flow_label() + r.hop_limit() +
       r.tclass + r.reversible() + r.numb_path() + r.pkey.get() + r.qos_class() + r.sl());
  sink(r.dgid);
  sink(r.sgid);
  sink(r.mtu_selector() + r.mtu() + r.rate_selector() + r.rate() + r.packet_life_time_selector() +
       r.packet_life_time() + r.preference + mtu_bytes(r.mtu()));
}
void touch(const VlArbTableRecord& r) {
  sink(r.lid.get() + r.output_port_num + r.block_num);
  for (const auto b : as_bytes(r.vl_arb_table)) sink(b);
}
void touch(const McMemberRecord& r) {
  sink(r.mgid);
  sink(r.port_gid);
  sink(r.qkey.get() + r.mlid.get() + r.mtu_selector() + r.mtu() + r.tclass + r.pkey.get() + r.rate_selector() +
       r.rate() + r.packet_life_time_selector() + r.packet_life_time() + r.sl() + r.flow_label() + r.hop_limit() +
       r.scope() + r.join_state() + r.proxy_join());
}
void touch(const MultiPathRecord& r) {
  sink(r.raw_traffic() + r.flow_label() + r.hop_limit() + r.tclass + r.reversible() + r.numb_path() + r.pkey.get() +
       r.qos_class() + r.sl() + r.mtu_selector() + r.mtu() + r.rate_selector() + r.rate() +
       r.packet_life_time_selector() + r.packet_life_time() + r.service_id() + r.independence_selector() +
       r.sgid_count + r.dgid_count);
}

// The record at the start of `data`, then every record of the table.
template <typename T>
void decode_as(std::span<const std::uint8_t> data, std::uint16_t attr_offset) {
  if (const auto rec = decode<T>(data)) {
    touch(*rec);
    check_reencode(*rec, data);
  }
  const std::size_t n = table_record_count(data.size(), attr_offset);
  for (std::size_t i = 0; i <= n; ++i) {  // one past the end must come back empty
    const auto rec = table_record<T>(data, attr_offset, i);
    if (i == n && rec) __builtin_trap();
    if (rec) touch(*rec);
  }
}

void decode_multipath(std::span<const std::uint8_t> data) {
  decode_as<MultiPathRecord>(data, 0);
  const auto fixed = decode<MultiPathRecord>(data);
  if (!fixed) return;
  for (std::size_t i = 0; i < kMultiPathGidsMax + 2; ++i) {
    if (const auto g = multipath_sgid(data, i)) sink(*g);
    if (const auto g = multipath_dgid(data, i)) sink(*g);
    if (const auto g = multipath_gid(data, i)) sink(*g);
  }
}

[[maybe_unused]] void fuzz_one(std::span<const std::uint8_t> input) {
  // Short inputs are padded with zeros so the fuzzer can reach the record
  // decoders without first having to grow 256 bytes.
  std::array<std::uint8_t, kMadSize> buf{};
  std::memcpy(buf.data(), input.data(), input.size() < buf.size() ? input.size() : buf.size());
  const auto mad = decode<SaMad>(buf);
  if (!mad) __builtin_trap();
  sink(static_cast<std::uint64_t>(validate(*mad)));
  sink(std::strlen(to_string(validate(*mad))));
  sink(mad->hdr.is_response() + mad->rmpp.flags() + mad->rmpp.resp_time() + mad->sm_key.get() + mad->comp_mask.get());

  // A table payload ends where RMPP says it does when the MAD carries that:
  // PayloadLength counts the SA's 20 header bytes after the RMPP header too.
  constexpr std::size_t kSaClassHeader = kSaHeaderSize - kMadHeaderSize - kRmppHeaderSize;
  std::span<const std::uint8_t> data(mad->data);
  if (mad->rmpp.active() && (mad->rmpp.flags() & rmpp_flag::kLast) && mad->rmpp.data2.get() >= kSaClassHeader) {
    const std::size_t len = mad->rmpp.data2.get() - kSaClassHeader;
    if (len < data.size()) data = data.first(len);
  }
  const std::uint16_t off = mad->attr_offset.get();
  switch (mad->hdr.attr_id.get()) {
    case sa_attr::kClassPortInfo: decode_as<ClassPortInfo>(data, off); break;
    case sa_attr::kInformInfo: decode_as<InformInfo>(data, off); break;
    case sa_attr::kInformInfoRecord: decode_as<InformInfoRecord>(data, off); break;
    case sa_attr::kNodeRecord: decode_as<NodeRecord>(data, off); break;
    case sa_attr::kPortInfoRecord: decode_as<PortInfoRecord>(data, off); break;
    case sa_attr::kSl2VlTableRecord: decode_as<Sl2VlTableRecord>(data, off); break;
    case sa_attr::kSwitchInfoRecord: decode_as<SwitchInfoRecord>(data, off); break;
    case sa_attr::kLinearFwdTableRecord: decode_as<LftRecord>(data, off); break;
    case sa_attr::kMulticastFwdTableRecord: decode_as<MftRecord>(data, off); break;
    case sa_attr::kSmInfoRecord: decode_as<SmInfoRecord>(data, off); break;
    case sa_attr::kLinkRecord: decode_as<LinkRecord>(data, off); break;
    case sa_attr::kGuidInfoRecord: decode_as<GuidInfoRecord>(data, off); break;
    case sa_attr::kServiceRecord: decode_as<ServiceRecord>(data, off); break;
    case sa_attr::kPKeyTableRecord: decode_as<PKeyTableRecord>(data, off); break;
    case sa_attr::kPathRecord: decode_as<PathRecord>(data, off); break;
    case sa_attr::kVlArbTableRecord: decode_as<VlArbTableRecord>(data, off); break;
    case sa_attr::kMcMemberRecord: decode_as<McMemberRecord>(data, off); break;
    case sa_attr::kMultiPathRecord: decode_multipath(data); break;
    default:
      for (std::size_t i = 0; i < table_record_count(data.size(), off); ++i)
        if (const auto b = table_record_bytes(data, off, i)) sink(b->size());
      break;
  }
}

}  // namespace

#ifndef MADENGINE_SA_CORPUS_MAIN
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz_one({data, size});
  return 0;
}
#else
#include <cstdio>
#include <string>

namespace {

SaMad sa_mad(std::uint8_t meth, std::uint16_t attr, std::uint64_t tid, std::uint64_t comp_mask) {
  return make_sa_request(meth, attr, tid, comp_mask, std::uint8_t{0});  // the record is filled by the caller
}

bool write(const std::string& dir, const char* name, const SaMad& m) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = std::fwrite(&m, sizeof(m), 1, f) == 1;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  constexpr std::uint64_t kPrefix = kDefaultSubnetPrefix;

  // A PathRecord Get by SGID/DGID, as ibacm or rdma_cm sends it.
  SaMad get_pr = sa_mad(method::kGet, sa_attr::kPathRecord, 0x1001,
                        path_record_cm::kDGid | path_record_cm::kSGid | path_record_cm::kNumbPath |
                            path_record_cm::kPKey);
  PathRecord pr{};
  pr.dgid = Gid{be64::from(kPrefix), be64::from(0x0002c90300a1b2c4ull)};
  pr.sgid = Gid{be64::from(kPrefix), be64::from(0x0002c90300a1b2c3ull)};
  pr.set_reversible(true);
  pr.set_numb_path(1);
  pr.pkey.set(0xffff);
  encode(pr, get_pr.data);

  // A NodeRecord GetTableResp with two records, single MAD, RMPP active.
  SaMad nr_resp = sa_mad(method::kGetTableResp, sa_attr::kNodeRecord, 0x1002, 0);
  const std::uint16_t off = attr_offset_for(sizeof(NodeRecord));
  nr_resp.attr_offset = be16::from(off);
  nr_resp.rmpp.version = 1;
  nr_resp.rmpp.type = static_cast<std::uint8_t>(RmppType::kData);
  nr_resp.rmpp.set_flags(0, rmpp_flag::kActive | rmpp_flag::kFirst | rmpp_flag::kLast);
  nr_resp.rmpp.data1 = be32::from(1);
  nr_resp.rmpp.data2 = be32::from(static_cast<std::uint32_t>(20 + 2 * table_stride(off)));
  for (std::uint16_t i = 0; i < 2; ++i) {
    NodeRecord nr{};
    nr.lid = be16::from(static_cast<std::uint16_t>(1 + i));
    nr.node_info.base_version = 1;
    nr.node_info.class_version = 1;
    nr.node_info.node_type = static_cast<std::uint8_t>(i == 0 ? NodeType::kSwitch : NodeType::kCa);
    nr.node_info.num_ports = i == 0 ? 36 : 1;
    nr.node_info.node_guid = be64::from(0x0002c90300001000ull + i);
    nr.node_info.port_guid = nr.node_info.node_guid;
    nr.node_info.set_vendor_id(0x0002c9);
    const char* desc = i == 0 ? "switch-1" : "host-1 mlx5_0";
    std::memcpy(nr.node_description.bytes.data(), desc, std::strlen(desc));
    set_table_record(std::span<std::uint8_t>(nr_resp.data), off, i, nr);
  }

  // An MCMemberRecord Set: a full-member join of the IPoIB broadcast group.
  SaMad join = sa_mad(method::kSet, sa_attr::kMcMemberRecord, 0x1003,
                      mc_member_record_cm::kMGid | mc_member_record_cm::kPortGid | mc_member_record_cm::kJoinState |
                          mc_member_record_cm::kPKey | mc_member_record_cm::kQKey);
  McMemberRecord mc{};
  mc.mgid = Gid{be64::from(0xff12401bffff0000ull), be64::from(0x00000000ffffffffull)};
  mc.port_gid = pr.sgid;
  mc.qkey = be32::from(0x0000000b);
  mc.pkey = be16::from(0xffff);
  mc.set_scope(2);
  mc.set_join_state(join_state::kFullMember);
  encode(mc, join.data);

  const bool ok = write(dir, "path_record_get.mad", get_pr) && write(dir, "node_record_get_table_resp.mad", nr_resp) &&
                  write(dir, "mc_member_record_set.mad", join);
  if (!ok) std::perror("writing corpus");
  return ok ? 0 : 1;
}
#endif
