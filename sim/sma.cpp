// The Subnet Management Agent every simulated node runs: answers SubnGet and
// SubnSet (IBA 14.2.5) from the fabric's state, checks M_Keys (14.2.4), and
// drives the port state machine on Set(PortInfo). Defaults for read-only
// fields follow ibsim 0.10 so that the conformance test compares like with
// like.
#include <algorithm>
#include <cstring>

#include "madengine/wire/smp/guid_info.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/mft.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/sl2vl.hpp"
#include "madengine/wire/smp/switch_info.hpp"
#include "madengine/wire/smp/vl_arb.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

namespace st = wire::status;

namespace {

constexpr std::uint32_t kCaCapMask = 0x0010c048;        // Trap, SLMapping, ExtSpeeds, CapMask2, VendorClass
constexpr std::uint32_t kCaCapMaskLinked = 0x0050c048;  // ibsim 0.10 adds CapabilityMaskNotice on linked ports
constexpr std::uint32_t kSwitchPort0CapMask = 0x0000c048;
constexpr std::uint16_t kCapMask2 = 0x0030;        // LinkWidth2x, LinkSpeedHDR
// Today's hardware adds NDR, and XDR with the second extended speeds.
constexpr std::uint16_t kCapMask2Ndr = kCapMask2 | wire::port_cap2::kIsLinkSpeedNDRSupported;
constexpr std::uint16_t kCapMask2Xdr =
    kCapMask2Ndr | wire::port_cap2::kIsExtendedSpeeds2Supported | wire::port_cap2::kIsLinkSpeedXDRSupported;
constexpr std::uint8_t kWidthSupported = 0x1f;     // 1x 4x 8x 12x 2x
constexpr std::uint8_t kSpeedSupported = 0x07;     // SDR DDR QDR
constexpr std::uint8_t kSpeedExtSupported = 0x07;  // FDR EDR HDR (ibsim 0.10)
constexpr std::uint32_t kRevision = 0xa1;
constexpr std::uint8_t kVlArbCap = 8;
// ibsim's default SL2VL (SL i -> VL i, SL15 -> VL7) and VL arbitration tables.
constexpr std::uint8_t kDefaultSl2Vl[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7};

template <typename T>
T &at(std::uint8_t *data) noexcept {
  return *reinterpret_cast<T *>(data);
}

}  // namespace

bool Fabric::sma_process(Packet &pkt, PortIdx in) noexcept {
  auto &h = *reinterpret_cast<wire::MadHeader *>(pkt.mad.bytes.data());
  const bool directed = h.klass() == wire::MgmtClass::kSubnDirected;
  const std::uint32_t node = port_node_[in];
  std::uint8_t *data = pkt.mad.bytes.data() + 64;
  const std::uint64_t m_key = reinterpret_cast<const wire::Smp *>(pkt.mad.bytes.data())->m_key.get();
  const std::uint16_t attr = h.attr_id.get();
  const std::uint32_t mod = h.attr_mod.get();
  std::uint16_t status = st::kOk;
  bool show_mkey = true;

  if (h.method != wire::method::kGet && h.method != wire::method::kSet) {
    if (h.is_response() || h.method == wire::method::kTrapRepress) return false;  // nothing to answer
    status = st::kMethodUnsupported;
  } else if (h.base_version != 1 || h.class_version != 1) {
    status = st::kBadVersion;
  } else {
    // M_Key check (IBA 14.2.4.1, Table 142): a Set, or a Get at protection
    // level 2 or 3, with the wrong key gets no answer at all. The lease
    // (14.2.4.2): a failed check starts the timer, the right key stops it,
    // and when it runs out the protection bits drop to 0 (the key stays),
    // so a Get shows the key to whoever asks and the subnet can be recovered.
    PortCfg &guard = cfg_[mgmt_port(node, in)];
    const Nanos now = clock_.now_ns();
    if (guard.m_key_lease_end_ns >= 0 && now >= guard.m_key_lease_end_ns) {
      guard.m_key_protect = 0;
      guard.m_key_lease_end_ns = -1;
    }
    if (guard.m_key != 0 && m_key != guard.m_key) {
      const bool refused = h.method == wire::method::kSet || guard.m_key_protect >= 2;
      if (refused) {
        if (guard.m_key_lease != 0 && guard.m_key_lease_end_ns < 0)
          guard.m_key_lease_end_ns = now + Nanos{guard.m_key_lease} * kNanosPerSecond;
        if (guard.m_key_violations != 0xffff) ++guard.m_key_violations;
        drop(DropReason::kMKey);
        return false;
      }
      show_mkey = guard.m_key_protect == 0;
    } else if (guard.m_key != 0) {
      guard.m_key_lease_end_ns = -1;  // the right key: the SM is alive
    }
    const bool set = h.method == wire::method::kSet;
    if (!set) std::memset(data, 0, wire::kSmpDataSize);
    switch (attr) {
      case wire::smp_attr::kNodeDescription:
        if (set) {
          status = st::kMethodAttrUnsupported;
        } else {
          at<wire::NodeDescription>(data).set_text(description(node));
        }
        break;
      case wire::smp_attr::kNodeInfo:
        status = set ? st::kMethodAttrUnsupported : sma_node_info(node, in, data);
        break;
      case wire::smp_attr::kPortInfo:
        status = sma_port_info(set, node, in, mod, data, show_mkey);
        break;
      case wire::smp_attr::kSwitchInfo:
        status = sma_switch_info(set, node, data);
        break;
      case wire::smp_attr::kLinearFwdTable:
        status = sma_lft(set, node, mod, data);
        break;
      case wire::smp_attr::kMulticastFwdTable:
        status = sma_mft(set, node, mod, data);
        break;
      case wire::smp_attr::kPKeyTable:
        status = sma_pkey(set, node, in, mod, data);
        break;
      case wire::smp_attr::kSl2VlTable:
        status = sma_sl2vl(set, node, in, mod, data);
        break;
      case wire::smp_attr::kVlArbTable:
        status = sma_vlarb(set, node, in, mod, data);
        break;
      case wire::smp_attr::kGuidInfo:
        status = sma_guid_info(set, node, in, mod, data);
        break;
      case wire::smp_attr::kSmInfo:
        status = sma_sm_info(set, node, data);
        break;
      default:
        status = st::kMethodAttrUnsupported;
        break;
    }
  }
  h.method = wire::method::kGetResp;
  // DR: the D bit goes with the status (IBA 14.2.1.2).
  h.status.set(static_cast<std::uint16_t>(status | (directed ? 0x8000 : 0)));
  return true;
}

std::uint16_t Fabric::sma_node_info(std::uint32_t node, PortIdx in, std::uint8_t *data) noexcept {
  auto &ni = at<wire::NodeInfo>(data);
  ni.base_version = 1;
  ni.class_version = 1;
  ni.node_type = node_type_[node];
  ni.num_ports = num_ports_[node];
  ni.system_image_guid = wire::be64::from(sys_guid_[node]);
  ni.node_guid = wire::be64::from(node_guid_[node]);
  ni.port_guid = wire::be64::from(cfg_[mgmt_port(node, in)].guid);
  ni.partition_cap = wire::be16::from(is_switch(node) ? config_.switch_partition_cap : config_.ca_partition_cap);
  ni.device_id = wire::be16::from(device_id_[node]);
  ni.revision = wire::be32::from(kRevision);
  ni.local_port_num = port_num_of(in);
  ni.set_vendor_id(vendor_id_[node]);
  return st::kOk;
}

std::uint16_t Fabric::sma_port_info(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t *data,
                                    bool show_mkey) noexcept {
  // Bit 31, SMSupportExtendedSpeeds, is the SM's word that it reads the
  // extended speed fields; the rest is the port number.
  const bool sm_ext_speeds = (mod & wire::kSmSupportsExtendedSpeeds) != 0;
  mod &= ~wire::kSmSupportsExtendedSpeeds;
  if (mod > num_ports_[node]) return st::kInvalidField;
  PortIdx p = (mod == 0 && !is_switch(node)) ? in : port(node, static_cast<std::uint8_t>(mod));
  if (p == kNoPortIdx) return st::kInvalidField;
  const bool port0 = is_switch(node) && p == first_port_[node];
  const bool mgmt = !is_switch(node) || port0;
  PortCfg &c = cfg_[p];
  const bool current = current_hardware(node), xdr = (node_flags_[node] & kXdr) != 0;
  std::uint16_t set_status = st::kOk;

  if (set) {
    // A CA's SMA only configures the port the SMP came in on (as ibsim).
    if (!is_switch(node) && p != in) return st::kInvalidField;
    const auto &req = at<const wire::PortInfo>(data);
    // Validate everything before changing anything: a failed Set changes
    // nothing and is answered with the current values.
    const std::uint8_t new_state = req.port_state();
    const std::uint8_t new_phys = req.port_physical_state();
    const PortIdx q = peer_[p];
    const std::uint8_t cur = state_[p];
    const std::uint8_t we = req.link_width_enabled;
    const std::uint8_t se = req.link_speed_enabled();
    auto validate = [&]() -> std::uint16_t {
      if (!port0) {
        switch (new_state) {
          case 0:
            break;
          case 1:
            break;  // DOWN: the link retrains
          case 3:   // ARMED from INIT (IBA 7.2.5), with the link up
            if (cur != 3 && (cur != 2 || q == kNoPortIdx || phys_[p] != 5)) return st::kInvalidField;
            break;
          case 4:  // ACTIVE from ARMED, neighbour at least ARMED (ibsim's rule)
            if (cur != 4 && (cur != 3 || q == kNoPortIdx || state_[q] < 3)) return st::kInvalidField;
            break;
          default:
            return st::kInvalidField;  // INIT cannot be written
        }
        if (new_phys != 0 && new_phys != 2 && new_phys != 3) return st::kInvalidField;
      }
      if (req.operational_vls() > config_.vl_cap) return st::kInvalidField;
      if (req.neighbor_mtu() > std::max(config_.mtu_cap, mtu_cap_of(p))) return st::kInvalidField;
      if (req.lmc() > 7) return st::kInvalidField;
      if (we != 0 && we != 0xff && (we & ~kWidthSupported)) return st::kInvalidField;
      if (se != 0 && se != 15 && (se & ~kSpeedSupported)) return st::kInvalidField;
      return st::kOk;
    };
    set_status = validate();

    bool changed = false;
    if (set_status == st::kOk) {
      if (mgmt) {
        c.m_key = req.m_key.get();
        c.gid_prefix = req.gid_prefix.get();
        if (lid_[p] != req.lid.get()) changed = true;
        lid_[p] = req.lid.get();
        if (c.sm_lid != req.master_sm_lid.get()) changed = true;
        c.sm_lid = req.master_sm_lid.get();
        c.m_key_lease = req.m_key_lease_period.get();
        c.m_key_protect = req.m_key_protect_bits();
        c.lmc = req.lmc();
        if (c.sm_sl != req.master_sm_sl()) changed = true;
        c.sm_sl = req.master_sm_sl();
        c.subnet_timeout = req.subnet_timeout();
        // ClientReregister is an action, not a state: engines on the port are
        // told.
        if (req.client_reregister()) {
          changed = true;
          ++c.client_reregisters;
        }
      }
      if (req.link_down_default_state()) c.link_down_default = req.link_down_default_state();
      if (req.neighbor_mtu()) c.neighbor_mtu = req.neighbor_mtu();
      if (req.operational_vls()) c.op_vls = req.operational_vls();
      c.vl_high_limit = req.vl_high_limit;
      c.hoq_life = req.hoq_life();
      c.vl_stall = req.vl_stall_count();
      // Partition enforcement is kept by switch external ports (ibsim drops it).
      if (is_switch(node) && !port0)
        c.part_enforce = static_cast<std::uint8_t>(req.partition_enforcement_inbound() |
                                                   req.partition_enforcement_outbound() << 1);
      if (!port0) {
        // An explicit mask retrains the link; "set to supported" (0xff, 15,
        // 31, 7) and "disable extended speeds" (30) change nothing, as in
        // ibsim: the topology's masks are the hardware's.
        const std::uint8_t ee = req.link_speed_ext_enabled(), ee2 = req.link_speed_ext_enabled2();
        if (we && we != wire::link_width::kSetToSupported) c.width_enabled = we;
        if (se && se != wire::link_speed::kSetToSupported) c.speed_enabled = se;
        if (ee != 0 && ee < 16) c.speed_ext_enabled = ee;
        if (ee2 != 0 && ee2 != wire::link_speed_ext2::kSetToSupported) c.speed_ext2_enabled = ee2 & link_speed_ext2::kXdr;
        if (q != kNoPortIdx) {
          c.width_active = cfg_[q].width_active = active_width(c.width_enabled, cfg_[q].width_enabled);
          c.speed_active = cfg_[q].speed_active = active_speed(c.speed_enabled, cfg_[q].speed_enabled);
          c.speed_ext_active = cfg_[q].speed_ext_active = active_speed_ext(c.speed_ext_enabled, cfg_[q].speed_ext_enabled);
          c.speed_ext2_active = cfg_[q].speed_ext2_active =
              active_speed_ext2(c.speed_ext2_enabled, cfg_[q].speed_ext2_enabled);
        }
        if (new_phys == 3) {  // Disabled: the link goes down and stays down
          link_down(p);
          phys_[p] = 3;
        } else if (new_phys == 2 && phys_[p] == 3) {
          phys_[p] = 2;
          link_up(p);
        }
        if (new_state == 1 && q != kNoPortIdx && phys_[p] == 5) {
          // Down retrains the link: both ends come back in INIT (as ibsim).
          set_state(p, 1);
          set_state(q, 1);
          set_state(p, 2);
          set_state(q, 2);
        } else if (new_state == 3 || new_state == 4) {
          set_state(p, new_state);
        }
      }
      if (changed) note_port_change(p);
    }
  }

  auto &pi = at<wire::PortInfo>(data);
  std::memset(data, 0, wire::kSmpDataSize);
  const bool linked = peer_[p] != kNoPortIdx;
  if (mgmt) {
    pi.m_key = wire::be64::from(show_mkey ? c.m_key : 0);
    pi.gid_prefix = wire::be64::from(c.gid_prefix);
    pi.lid = wire::be16::from(lid_[p]);
    pi.master_sm_lid = wire::be16::from(c.sm_lid);
    std::uint32_t cap = port0 ? kSwitchPort0CapMask : (linked ? kCaCapMaskLinked : kCaCapMask);
    if (!port0 && (config_.ca_client_reregistration || current)) cap |= wire::port_cap::kIsClientReregistrationSupported;
    if (auto it = port_endpoints_.find(p); it != port_endpoints_.end())
      for (EndpointId e : it->second)
        if (endpoints_[e].spec.is_sm && endpoints_[e].device_present) cap |= wire::port_cap::kIsSM;
    pi.capability_mask = wire::be32::from(cap);
    pi.m_key_lease_period = wire::be16::from(c.m_key_lease);
    pi.set_m_key_protect_bits(c.m_key_protect);
    pi.set_lmc(c.lmc);
    pi.set_master_sm_sl(c.sm_sl);
    pi.guid_cap = port0 ? 1 : config_.ca_guid_cap;
    pi.set_subnet_timeout(c.subnet_timeout);
    pi.set_resp_time_value(port0 ? 8 : 0);
    pi.capability_mask2 = wire::be16::from(!current ? kCapMask2 : xdr ? kCapMask2Xdr : kCapMask2Ndr);
  }
  pi.local_port_num = port_num_of(in);
  pi.link_width_enabled = c.width_enabled;
  pi.link_width_supported = kWidthSupported;
  pi.link_width_active = c.width_active;
  pi.set_link_speed_supported(kSpeedSupported);
  pi.set_port_state(state_[p]);
  pi.set_port_physical_state(phys_[p]);
  pi.set_link_down_default_state(c.link_down_default);
  pi.set_link_speed_active(c.speed_active);
  pi.set_link_speed_enabled(c.speed_enabled);
  pi.set_neighbor_mtu(c.neighbor_mtu);
  pi.set_vl_cap(config_.vl_cap);
  pi.vl_high_limit = c.vl_high_limit;
  pi.vl_arbitration_high_cap = kVlArbCap;
  pi.vl_arbitration_low_cap = kVlArbCap;
  pi.set_mtu_cap(mtu_cap_of(p));
  pi.set_vl_stall_count(c.vl_stall);
  pi.set_hoq_life(c.hoq_life);
  pi.set_operational_vls(c.op_vls);
  pi.set_partition_enforcement_inbound(c.part_enforce & 1);
  pi.set_partition_enforcement_outbound((c.part_enforce >> 1) & 1);
  pi.m_key_violations = wire::be16::from(mgmt ? c.m_key_violations : 0);
  // NDR and later ports tell their extended speeds only to an SM that says
  // it reads them (what OpenSM's NDR support works around); older ones
  // report them always, as ibsim.
  if (c.speed_ext_active && (!current || sm_ext_speeds)) {
    pi.set_link_speed_ext_active(c.speed_ext_active);
    pi.set_link_speed_ext_supported(kSpeedExtSupported | (c.speed_ext_enabled & link_speed_ext::kNdr));
    pi.set_link_speed_ext_enabled(c.speed_ext_enabled);
  }
  if (xdr && sm_ext_speeds) {
    pi.set_link_speed_ext_active2(c.speed_ext2_active);
    pi.set_link_speed_ext_supported2(c.speed_ext2_enabled);
    pi.set_link_speed_ext_enabled2(c.speed_ext2_enabled);
  }
  return set_status;
}

std::uint16_t Fabric::sma_switch_info(bool set, std::uint32_t node, std::uint8_t *data) noexcept {
  if (switch_of_[node] == kNoNode) return st::kMethodAttrUnsupported;
  SwitchState &sw = switches_[switch_of_[node]];
  auto &si = at<wire::SwitchInfo>(data);
  if (set) {
    if (si.linear_fdb_top.get() >= config_.linear_fdb_cap) return st::kInvalidField;
    const std::uint16_t mtop = si.multicast_fdb_top.get();
    if (mtop != 0 && mtop != wire::kMulticastFdbTopNone &&
        (mtop < wire::kMulticastLidBase || mtop - wire::kMulticastLidBase >= config_.multicast_fdb_cap))
      return st::kInvalidField;
    sw.linear_fdb_top = si.linear_fdb_top.get();
    sw.multicast_fdb_top = mtop;
    sw.default_port = si.default_port;
    sw.default_mcast_primary = si.default_multicast_primary_port;
    sw.default_mcast_not_primary = si.default_multicast_not_primary_port;
    sw.life_time = si.life_time_value();
    if (si.port_state_change()) sw.port_state_change = false;  // writing 1 clears it
  }
  std::memset(data, 0, wire::kSmpDataSize);
  si.linear_fdb_cap = wire::be16::from(config_.linear_fdb_cap);
  si.multicast_fdb_cap = wire::be16::from(config_.multicast_fdb_cap);
  si.linear_fdb_top = wire::be16::from(sw.linear_fdb_top);
  si.default_port = sw.default_port;
  si.default_multicast_primary_port = sw.default_mcast_primary;
  si.default_multicast_not_primary_port = sw.default_mcast_not_primary;
  si.set_life_time_value(sw.life_time);
  si.set_port_state_change(sw.port_state_change ? 1 : 0);
  si.partition_enforcement_cap = wire::be16::from(config_.switch_enforcement_cap);
  si.set_filter_raw_inbound_cap(1);
  si.set_filter_raw_outbound_cap(1);
  si.set_enhanced_port0(sw.enhanced_port0 ? 1 : 0);
  si.multicast_fdb_top = wire::be16::from(sw.multicast_fdb_top);
  return st::kOk;
}

std::uint16_t Fabric::sma_lft(bool set, std::uint32_t node, std::uint32_t mod, std::uint8_t *data) noexcept {
  if (switch_of_[node] == kNoNode) return st::kMethodAttrUnsupported;
  if (!wire::lft_modifier_valid(mod) || mod * wire::kLftBlockSize >= config_.linear_fdb_cap) return st::kInvalidField;
  SwitchState &sw = switches_[switch_of_[node]];
  static_assert(wire::kLftBlockSize == LftPool::kBlockLids);
  if (set) {
    // Blocks are shared between switches: a write swaps this switch's block id.
    if (sw.lft.size() <= mod) {
      if (sw.lft.capacity() <= mod) sw.lft.reserve(config_.linear_fdb_cap / wire::kLftBlockSize);
      sw.lft.resize(mod + 1u, LftPool::kEmpty);
    }
    const std::uint32_t id = lft_pool_.acquire(data);
    lft_pool_.release(sw.lft[mod]);
    sw.lft[mod] = id;
  }
  if (mod < sw.lft.size())
    std::memcpy(data, lft_pool_.block(sw.lft[mod]).data(), wire::kLftBlockSize);
  else
    std::memset(data, wire::kLftNoPort, wire::kLftBlockSize);
  return st::kOk;
}

std::uint16_t Fabric::sma_mft(bool set, std::uint32_t node, std::uint32_t mod, std::uint8_t *data) noexcept {
  if (switch_of_[node] == kNoNode) return st::kMethodAttrUnsupported;
  const auto m = wire::parse_mft_modifier(mod);
  const std::size_t positions = num_ports_[node] / wire::kMftPortsPerPosition + 1u;
  if (!m || std::size_t{m->block} * wire::kMftBlockSize >= config_.multicast_fdb_cap || m->position >= positions)
    return st::kInvalidField;
  SwitchState &sw = switches_[switch_of_[node]];
  auto &blk = at<wire::MftBlock>(data);
  auto index = [&](std::size_t i) {
    return (std::size_t{m->block} * wire::kMftBlockSize + i) * positions + m->position;
  };
  if (set) {
    if (sw.mft.empty()) sw.mft.assign(std::size_t{config_.multicast_fdb_cap} * positions, 0);
    for (std::size_t i = 0; i < wire::kMftBlockSize; ++i) sw.mft[index(i)] = blk.mask(i);
  }
  for (std::size_t i = 0; i < wire::kMftBlockSize; ++i) blk.set_mask(i, sw.mft.empty() ? 0 : sw.mft[index(i)]);
  return st::kOk;
}

std::uint16_t Fabric::sma_pkey(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod,
                               std::uint8_t *data) noexcept {
  PortIdx p = in;
  std::uint32_t cap = config_.ca_partition_cap;
  if (is_switch(node)) {
    const std::uint16_t pn = wire::pkey_table_port_of(mod);
    if (pn > num_ports_[node]) return st::kInvalidField;
    p = port(node, static_cast<std::uint8_t>(pn));
    cap = pn == 0 ? config_.switch_partition_cap : config_.switch_enforcement_cap;
  }
  const std::uint32_t block = wire::pkey_table_block_of(mod);
  if (block >= wire::pkey_blocks_for(cap)) return st::kInvalidField;
  auto &blk = at<wire::PKeyTableBlock>(data);
  auto it = pkeys_.find(p);
  if (set) {
    if (it == pkeys_.end()) {
      std::vector<std::uint16_t> t(cap, wire::kInvalidPKey);
      t[0] = wire::kDefaultPKey;
      it = pkeys_.emplace(p, std::move(t)).first;
    }
    for (std::size_t i = 0; i < wire::kPKeyBlockSize && block * wire::kPKeyBlockSize + i < cap; ++i)
      it->second[block * wire::kPKeyBlockSize + i] = blk.pkey(i);
  }
  for (std::size_t i = 0; i < wire::kPKeyBlockSize; ++i) {
    const std::size_t idx = block * wire::kPKeyBlockSize + i;
    std::uint16_t v = 0;
    if (idx < cap) v = it != pkeys_.end() ? it->second[idx] : (idx == 0 ? wire::kDefaultPKey : wire::kInvalidPKey);
    blk.set_pkey(i, v);
  }
  return st::kOk;
}

std::uint8_t Fabric::mtu_cap_of(PortIdx p) const noexcept {
  const std::uint32_t node = port_node_[p];
  if (current_hardware(node)) return 5;  // 4096
  return is_switch(node) && p == first_port_[node] ? 3 : config_.mtu_cap;  // a switch's port 0: 2048
}

std::array<std::uint8_t, 8> Fabric::sl2vl(PortIdx out, std::uint8_t in_port_num) const noexcept {
  std::array<std::uint8_t, 8> t;
  std::memcpy(t.data(), kDefaultSl2Vl, 8);
  if (out >= port_count() || sl2vl_.empty()) return t;
  const std::uint64_t key =
      std::uint64_t{out} << 16 | (is_switch(port_node_[out]) ? std::uint64_t{in_port_num} : std::uint64_t{0});
  if (const auto it = sl2vl_.find(key); it != sl2vl_.end()) t = it->second;
  return t;
}

std::uint16_t Fabric::sma_sl2vl(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod,
                                std::uint8_t *data) noexcept {
  std::uint64_t key;
  if (is_switch(node)) {
    const std::uint8_t in_port = static_cast<std::uint8_t>(mod >> 8), out_port = static_cast<std::uint8_t>(mod);
    if (in_port > num_ports_[node] || out_port > num_ports_[node]) return st::kInvalidField;
    key = std::uint64_t{port(node, out_port)} << 16 | in_port;
  } else {
    key = std::uint64_t{in} << 16;
  }
  if (set) {
    std::array<std::uint8_t, 8> t;
    std::memcpy(t.data(), data, 8);
    sl2vl_[key] = t;
  }
  std::memset(data, 0, wire::kSmpDataSize);
  auto it = sl2vl_.find(key);
  std::memcpy(data, it != sl2vl_.end() ? it->second.data() : kDefaultSl2Vl, 8);
  return st::kOk;
}

std::uint16_t Fabric::sma_vlarb(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod,
                                std::uint8_t *data) noexcept {
  if (!wire::vl_arb_modifier_valid(mod)) return st::kInvalidField;
  const std::uint16_t block = static_cast<std::uint16_t>(mod >> 16);
  PortIdx p = in;
  if (is_switch(node)) {
    const std::uint16_t pn = mod & 0xffff;
    if (pn > num_ports_[node]) return st::kInvalidField;
    p = port(node, static_cast<std::uint8_t>(pn));
  }
  const std::uint64_t key = std::uint64_t{p} << 8 | block;
  if (set) {
    std::array<std::uint8_t, 64> t;
    std::memcpy(t.data(), data, 64);
    vlarb_[key] = t;
  }
  auto it = vlarb_.find(key);
  if (it != vlarb_.end()) {
    std::memcpy(data, it->second.data(), 64);
    return st::kOk;
  }
  // ibsim's defaults: low table VL1..VL14 weight 4 (VL0 weight 0), high table
  // VL0 weight 4.
  std::memset(data, 0, wire::kSmpDataSize);
  auto &blk = at<wire::VlArbTableBlock>(data);
  if (block == wire::vl_arb_block::kLowLower || block == wire::vl_arb_block::kHighLower) {
    const bool high = block == wire::vl_arb_block::kHighLower;
    for (std::uint8_t i = 0; i < 15; ++i) {
      blk.entries[i].set_vl(i);
      blk.entries[i].weight = high ? (i == 0 ? 4 : 0) : (i == 0 ? 0 : 4);
    }
  }
  return st::kOk;
}

std::uint16_t Fabric::sma_guid_info(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod,
                                    std::uint8_t *data) noexcept {
  const PortIdx p = mgmt_port(node, in);
  const std::uint32_t cap = is_switch(node) ? 1 : config_.ca_guid_cap;
  if (mod >= wire::guid_info_blocks_for(cap)) return st::kInvalidField;
  auto &blk = at<wire::GuidInfoBlock>(data);
  auto it = guid_info_.find(p);
  if (set) {
    if (it == guid_info_.end()) it = guid_info_.emplace(p, std::vector<std::uint64_t>(cap, 0)).first;
    for (std::size_t i = 0; i < wire::kGuidInfoBlockSize; ++i) {
      const std::size_t idx = mod * wire::kGuidInfoBlockSize + i;
      if (idx != 0 && idx < cap) it->second[idx] = blk.guid(i);  // index 0 is the port GUID, read-only
    }
  }
  for (std::size_t i = 0; i < wire::kGuidInfoBlockSize; ++i) {
    const std::size_t idx = mod * wire::kGuidInfoBlockSize + i;
    std::uint64_t g = 0;
    if (idx == 0)
      g = cfg_[p].guid;
    else if (idx < cap && it != guid_info_.end())
      g = it->second[idx];
    blk.set_guid(i, g);
  }
  return st::kOk;
}

// A passive stand-in for an SM that is not running an engine: Get answers the
// stored SMInfo; Set (HANDOVER and friends) is accepted and changes nothing.
std::uint16_t Fabric::sma_sm_info(bool set, std::uint32_t node, std::uint8_t *data) noexcept {
  (void)set;
  auto it = sm_info_.find(node);
  if (it == sm_info_.end()) return st::kMethodAttrUnsupported;
  std::memset(data, 0, wire::kSmpDataSize);
  std::memcpy(data, &it->second, sizeof(wire::SmInfo));
  return st::kOk;
}

}  // namespace madengine::sim
