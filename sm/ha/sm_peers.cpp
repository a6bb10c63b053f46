// Peer SMs (see sm_peers.hpp): pure helpers, no I/O of their own.
#include "sm/ha/sm_peers.hpp"

#include <cstring>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm::ha {

std::vector<SmPort> find_sm_ports(const fabric::Fabric& f, std::uint64_t own_port_guid) {
  std::vector<SmPort> out;
  for (fabric::NodeId id = 0; id < f.nodes.size(); ++id) {
    const fabric::Node& n = f.nodes[id];
    // A switch's SM sits behind management port 0; a CA's on ports 1..N.
    const std::uint8_t first = n.is_switch() ? 0 : 1;
    const std::uint8_t last = n.is_switch() ? 0 : n.num_ports();
    for (std::uint8_t p = first; p <= last && p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (port.guid == 0 || port.guid == own_port_guid) continue;
      if (!port.info.has_cap(wire::port_cap::kIsSM) || port.info.has_cap(wire::port_cap::kIsSMdisabled)) continue;
      out.push_back(SmPort{.port_guid = port.guid,
                           .lid = f.lid_of(fabric::EndPort{id, p}),
                           .node = id,
                           .port = p,
                           .path = n.dr_path});
    }
  }
  return out;
}

MadBuf make_sminfo_get(const wire::DrPath& path, std::uint8_t port_num, std::uint64_t sm_key,
                       std::uint64_t m_key) noexcept {
  wire::SmInfo si{};
  si.sm_key = wire::be64::from(sm_key);
  std::array<std::uint8_t, sizeof(wire::SmInfo)> data{};
  wire::encode(si, std::span<std::uint8_t>(data));
  return make_dr_request(wire::method::kGet, wire::smp_attr::kSmInfo, 0, path, port_num, data, m_key);
}

MadBuf make_sminfo_set(std::uint32_t modifier, const wire::DrPath& path, std::uint8_t port_num,
                       const wire::SmInfo& ours, std::uint64_t m_key) noexcept {
  std::array<std::uint8_t, sizeof(wire::SmInfo)> data{};
  wire::encode(ours, std::span<std::uint8_t>(data));
  return make_dr_request(wire::method::kSet, wire::smp_attr::kSmInfo, modifier, path, port_num, data, m_key);
}

MadBuf make_trap144(std::uint16_t our_lid, std::uint16_t master_lid, std::uint8_t port_num,
                    std::uint32_t capability_mask) noexcept {
  wire::NoticeDetails144 d{};
  d.lid = wire::be16::from(our_lid);
  d.capability_mask = wire::be32::from(capability_mask);
  d.change_flags = wire::be16::from(wire::trap144_change::kSmPriority);
  wire::Notice n = wire::make_generic_notice(wire::notice_type::kInfo, wire::notice_producer::kCa, wire::trap::kLocalChanges,
                                             our_lid);
  n.set_details(d);
  MadBuf b{};
  wire::Smp& smp = b.as<wire::Smp>();
  smp.hdr = wire::make_smp_header(wire::MgmtClass::kSubnLid, wire::method::kTrap, wire::smp_attr::kNotice, 0, 0);
  wire::encode_smp_notice(n, std::span<std::uint8_t>(smp.data));
  b.len = wire::kMadSize;
  b.addr.lid = master_lid;
  b.addr.port_num = port_num;
  return b;
}

std::optional<PeerSm> decode_sminfo_reply(const TxnResult& r, std::uint64_t our_sm_key) noexcept {
  if (!smp_response_ok(r)) return std::nullopt;
  const auto si = wire::decode<wire::SmInfo>(smp_data(r.response));
  if (!si || si->guid.get() == 0) return std::nullopt;
  return PeerSm{.guid = si->guid.get(),
                .priority = static_cast<std::uint8_t>(si->priority()),
                .state = si->state(),
                .act_count = si->act_count.get(),
                .key_ok = our_sm_key == 0 || si->sm_key.get() == our_sm_key};
}

}  // namespace madengine::sm::ha
