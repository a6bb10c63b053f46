// SMP attribute and SA record decoding for madwire (see attributes.hpp).
#include "attributes.hpp"

#include <fmt/format.h>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "madengine/wire/sa/port_info_record.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"

namespace madengine::tools {

namespace w = madengine::wire;
using Json = nlohmann::ordered_json;

namespace {

std::string hex(std::uint64_t v, int digits) { return fmt::format("0x{:0{}x}", v, digits); }
std::string gid(const w::Gid& g) { return fmt::format("{:016x}:{:016x}", g.prefix.get(), g.guid.get()); }

Json node_info(const w::NodeInfo& n) {
  return Json{{"node_type", w::to_string(n.type())},
              {"num_ports", n.num_ports},
              {"system_image_guid", hex(n.system_image_guid.get(), 16)},
              {"node_guid", hex(n.node_guid.get(), 16)},
              {"port_guid", hex(n.port_guid.get(), 16)},
              {"partition_cap", n.partition_cap.get()},
              {"device_id", hex(n.device_id.get(), 4)},
              {"revision", hex(n.revision.get(), 8)},
              {"local_port_num", n.local_port_num},
              {"vendor_id", hex(n.vendor_id(), 6)}};
}

Json port_info(const w::PortInfo& p) {
  return Json{{"m_key", hex(p.m_key.get(), 16)},
              {"gid_prefix", hex(p.gid_prefix.get(), 16)},
              {"lid", p.lid.get()},
              {"master_sm_lid", p.master_sm_lid.get()},
              {"capability_mask", hex(p.capability_mask.get(), 8)},
              {"local_port_num", p.local_port_num},
              {"link_width_active", p.link_width_active},
              {"link_speed_active", p.link_speed_active()},
              {"port_state", p.port_state()},
              {"port_physical_state", p.port_physical_state()},
              {"lmc", p.lmc()},
              {"neighbor_mtu", p.neighbor_mtu()},
              {"master_sm_sl", p.master_sm_sl()},
              {"vl_cap", p.vl_cap()},
              {"mtu_cap", p.mtu_cap()},
              {"operational_vls", p.operational_vls()},
              {"client_reregister", p.client_reregister()},
              {"subnet_timeout", p.subnet_timeout()}};
}

}  // namespace

std::optional<Json> describe_smp_attribute(std::uint16_t attr_id, std::span<const std::uint8_t> data) {
  switch (attr_id) {
    case w::smp_attr::kNodeInfo:
      if (auto n = w::decode<w::NodeInfo>(data)) return Json{{"node_info", node_info(*n)}};
      break;
    case w::smp_attr::kNodeDescription:
      if (auto d = w::decode<w::NodeDescription>(data)) return Json{{"node_description", d->str()}};
      break;
    case w::smp_attr::kPortInfo:
      if (auto p = w::decode<w::PortInfo>(data)) return Json{{"port_info", port_info(*p)}};
      break;
    case w::smp_attr::kSwitchInfo:
      if (auto s = w::decode<w::SwitchInfo>(data))
        return Json{{"switch_info",
                     {{"linear_fdb_cap", s->linear_fdb_cap.get()},
                      {"multicast_fdb_cap", s->multicast_fdb_cap.get()},
                      {"linear_fdb_top", s->linear_fdb_top.get()},
                      {"life_time_value", s->life_time_value()},
                      {"port_state_change", s->port_state_change()},
                      {"enhanced_port0", s->enhanced_port0()}}}};
      break;
    case w::smp_attr::kSmInfo:
      if (auto s = w::decode<w::SmInfo>(data))
        return Json{{"sm_info",
                     {{"guid", hex(s->guid.get(), 16)},
                      {"sm_key", hex(s->sm_key.get(), 16)},
                      {"act_count", s->act_count.get()},
                      {"priority", s->priority()},
                      {"sm_state", s->sm_state()}}}};
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::optional<Json> describe_sa_record(std::uint16_t attr_id, std::span<const std::uint8_t> data) {
  switch (attr_id) {
    case w::sa_attr::kPathRecord:
      if (auto p = w::decode<w::PathRecord>(data))
        return Json{{"path_record",
                     {{"service_id", hex(p->service_id.get(), 16)},
                      {"dgid", gid(p->dgid)},
                      {"sgid", gid(p->sgid)},
                      {"dlid", p->dlid.get()},
                      {"slid", p->slid.get()},
                      {"reversible", p->reversible()},
                      {"numb_path", p->numb_path()},
                      {"pkey", hex(p->pkey.get(), 4)},
                      {"sl", p->sl()},
                      {"mtu", p->mtu()},
                      {"rate", p->rate()},
                      {"packet_life_time", p->packet_life_time()},
                      {"hop_limit", p->hop_limit()}}}};
      break;
    case w::sa_attr::kNodeRecord:
      if (auto n = w::decode<w::NodeRecord>(data))
        return Json{{"node_record",
                     {{"lid", n->lid.get()}, {"node_info", node_info(n->node_info)}, {"node_description", n->node_description.str()}}}};
      break;
    case w::sa_attr::kPortInfoRecord:
      if (auto p = w::decode<w::PortInfoRecord>(data))
        return Json{{"port_info_record",
                     {{"lid", p->endport_lid.get()}, {"port_num", p->port_num}, {"port_info", port_info(p->port_info)}}}};
      break;
    default:
      break;
  }
  return std::nullopt;
}

}  // namespace madengine::tools
