// Fabric construction, forwarding (directed route per IBA 14.2.2, LID routed
// through LFTs), endpoints, time and fault injection. The SMA's attribute
// handlers are in sma.cpp.
#include "sim/fabric.hpp"

#include <algorithm>
#include <stdexcept>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::sim {

using wire::DrSmp;
using wire::kPermissiveLid;

namespace {

constexpr std::uint8_t kDown = static_cast<std::uint8_t>(wire::PortState::kDown);
constexpr std::uint8_t kInit = static_cast<std::uint8_t>(wire::PortState::kInit);
constexpr std::uint8_t kActive = static_cast<std::uint8_t>(wire::PortState::kActive);
constexpr std::uint8_t kLinkUp = static_cast<std::uint8_t>(wire::PortPhysState::kLinkUp);
constexpr std::uint8_t kPolling = static_cast<std::uint8_t>(wire::PortPhysState::kPolling);

// ibsim's defaults for a port's M_Key lease period and subnet timeout.
constexpr std::uint16_t kDefaultMKeyLease = 4089;
constexpr std::uint8_t kDefaultSubnetTimeout = 31;
constexpr std::uint8_t kDefaultVlStall = 7;
constexpr std::size_t kSlotsReserve = 4096;

DrSmp& dr(Packet& p) noexcept { return *reinterpret_cast<DrSmp*>(p.mad.bytes.data()); }
const wire::MadHeader& hdr(const Packet& p) noexcept {
  return *reinterpret_cast<const wire::MadHeader*>(p.mad.bytes.data());
}

}  // namespace

const char* to_string(DropReason r) noexcept {
  switch (r) {
    case DropReason::kBadMad:
      return "bad MAD header";
    case DropReason::kBadPath:
      return "bad directed-route path";
    case DropReason::kNotSwitch:
      return "route continues through a non-switch";
    case DropReason::kLinkDown:
      return "link down";
    case DropReason::kPortNotActive:
      return "port not ACTIVE";
    case DropReason::kNoRoute:
      return "no route";
    case DropReason::kHopLimit:
      return "hop limit";
    case DropReason::kNodeMuted:
      return "node muted";
    case DropReason::kNodeDead:
      return "node dead";
    case DropReason::kLoss:
      return "random loss";
    case DropReason::kMKey:
      return "M_Key violation";
    case DropReason::kNoAgent:
      return "no agent";
    case DropReason::kRxFull:
      return "receive queue full";
    case DropReason::kCount:
      break;
  }
  return "?";
}

std::uint64_t FabricCounters::drops_total() const noexcept {
  std::uint64_t n = 0;
  for (auto d : drops) n += d;
  return n;
}

// ---- construction ---------------------------------------------------------

Fabric::Fabric(const Topology& topo, const FabricConfig& config) : config_(config), rng_(config.seed) {
  const std::size_t n = topo.nodes.size();
  node_type_.resize(n);
  num_ports_.resize(n);
  node_flags_.resize(n);
  first_port_.resize(n);
  node_guid_.resize(n);
  sys_guid_.resize(n);
  vendor_id_.resize(n);
  device_id_.resize(n);
  desc_off_.resize(n + 1);
  switch_of_.assign(n, kNoNode);
  std::size_t ports = 0;
  for (const auto& tn : topo.nodes) ports += tn.num_ports + (tn.is_switch() ? 1u : 0u);
  peer_.assign(ports, kNoPortIdx);
  port_node_.resize(ports);
  lid_.assign(ports, 0);
  state_.assign(ports, kDown);
  phys_.assign(ports, kPolling);
  cfg_.resize(ports);
  perf_.resize(ports);
  by_id_.reserve(n);

  PortIdx next = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    const TopoNode& tn = topo.nodes[i];
    node_type_[i] = static_cast<std::uint8_t>(tn.type);
    num_ports_[i] = tn.num_ports;
    node_flags_[i] = tn.hosts_sm ? kHostsSm : 0;
    for (const TopoPort& tp : tn.ports)
      if ((tp.speed_ext_enabled & link_speed_ext::kNdr) != 0 || tp.speed_ext2_enabled != 0) node_flags_[i] |= kCurrent;
    for (const TopoPort& tp : tn.ports)
      if (tp.speed_ext2_enabled != 0) node_flags_[i] |= kXdr;
    node_guid_[i] = tn.node_guid;
    sys_guid_[i] = tn.system_guid;
    vendor_id_[i] = tn.vendor_id;
    device_id_[i] = tn.device_id;
    desc_off_[i] = static_cast<std::uint32_t>(desc_pool_.size());
    desc_pool_ += tn.description.substr(0, 64);
    by_id_.emplace(tn.id, i);
    first_port_[i] = next;
    if (tn.is_switch()) {
      switch_of_[i] = static_cast<std::uint32_t>(switches_.size());
      SwitchState sw;
      sw.enhanced_port0 = tn.enhanced_port0;
      sw.port_state_change = true;  // links came up at power-on
      switches_.push_back(std::move(sw));
    }
    for (std::uint8_t p = tn.first_port(); p <= tn.num_ports; ++p, ++next) {
      const TopoPort& tp = tn.ports[p];
      port_node_[next] = i;
      PortCfg& c = cfg_[next];
      c.guid = tp.guid;
      c.width_enabled = tp.width_enabled;
      c.speed_enabled = tp.speed_enabled;
      c.speed_ext_enabled = tp.speed_ext_enabled;
      c.speed_ext2_enabled = tp.speed_ext2_enabled;
      c.width_active = link_width::k4x;  // ibsim's values on an unlinked port
      c.speed_active = link_speed::kSdr;
      c.lmc = tp.lmc;
      lid_[next] = tp.lid;
      const bool mgmt = !tn.is_switch() || p == 0;
      if (mgmt) {
        c.m_key_lease = kDefaultMKeyLease;
        c.subnet_timeout = kDefaultSubnetTimeout;
      }
      c.vl_stall = (tn.is_switch() && p == 0) ? 0 : kDefaultVlStall;
      c.neighbor_mtu = (tn.is_switch() && p == 0) ? 1 : config_.mtu_cap;
      c.op_vls = config_.vl_cap;
      if (tn.is_switch() && p == 0) {
        state_[next] = kActive;  // the management port is always up
        phys_[next] = kLinkUp;
      }
    }
  }
  desc_off_[n] = static_cast<std::uint32_t>(desc_pool_.size());
  for (std::uint32_t i = 0; i < n; ++i) {
    const TopoNode& tn = topo.nodes[i];
    for (std::uint8_t p = 1; p <= tn.num_ports; ++p) {
      const TopoPort& tp = tn.ports[p];
      if (!tp.connected()) continue;
      const PortIdx a = port(i, p), b = port(tp.peer_node, tp.peer_port);
      peer_[a] = b;
      state_[a] = kInit;
      phys_[a] = kLinkUp;
      const PortCfg& pc = cfg_[b];
      cfg_[a].width_active = active_width(cfg_[a].width_enabled, pc.width_enabled);
      cfg_[a].speed_active = active_speed(cfg_[a].speed_enabled, pc.speed_enabled);
      cfg_[a].speed_ext_active = active_speed_ext(cfg_[a].speed_ext_enabled, pc.speed_ext_enabled);
      cfg_[a].speed_ext2_active = active_speed_ext2(cfg_[a].speed_ext2_enabled, pc.speed_ext2_enabled);
    }
  }
  for (std::uint32_t i = 0; i < n; ++i)
    if (node_flags_[i] & kHostsSm) {
      wire::SmInfo si{};
      si.guid = wire::be64::from(cfg_[mgmt_port(i, first_port_[i])].guid);
      sm_info_.emplace(i, si);
    }
  slots_.reserve(kSlotsReserve);
  free_slots_.reserve(kSlotsReserve);
}

std::string_view Fabric::description(std::uint32_t n) const noexcept {
  return std::string_view(desc_pool_).substr(desc_off_[n], desc_off_[n + 1] - desc_off_[n]);
}

std::uint32_t Fabric::find_node(std::string_view id) const noexcept {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? kNoNode : it->second;
}

std::uint8_t Fabric::port_num_of(PortIdx p) const noexcept {
  const std::uint32_t n = port_node_[p];
  return static_cast<std::uint8_t>(p - first_port_[n] + (is_switch(n) ? 0 : 1));
}

PortIdx Fabric::port(std::uint32_t node, std::uint8_t port_num) const noexcept {
  if (node >= node_count() || port_num > num_ports_[node]) return kNoPortIdx;
  if (is_switch(node)) return first_port_[node] + port_num;
  if (port_num == 0) return kNoPortIdx;
  return first_port_[node] + port_num - 1;
}

PortIdx Fabric::mgmt_port(std::uint32_t node, PortIdx in) const noexcept {
  return is_switch(node) ? first_port_[node] : in;
}

Fabric::LinkState Fabric::link_state(PortIdx p) const noexcept {
  LinkState l;
  if (p >= port_count()) return l;
  const PortCfg& c = cfg_[p];
  l.neighbor_mtu = c.neighbor_mtu;
  l.mtu_cap = mtu_cap_of(p);
  l.width_active = c.width_active;
  l.speed_active = c.speed_active;
  l.speed_ext_active = c.speed_ext_active;
  l.speed_ext2_active = c.speed_ext2_active;
  l.op_vls = c.op_vls;
  l.lmc = c.lmc;
  l.vl_high_limit = c.vl_high_limit;
  l.part_enforce = c.part_enforce;
  l.m_key = c.m_key;
  l.m_key_protect = c.m_key_protect;
  l.m_key_lease = c.m_key_lease;
  l.m_key_violations = c.m_key_violations;
  return l;
}

std::span<const std::uint16_t> Fabric::pkey_table(PortIdx p) const noexcept {
  static constexpr std::uint16_t kDefaultOnly[] = {wire::kDefaultPKey};
  const auto it = pkeys_.find(p);
  if (it == pkeys_.end()) return kDefaultOnly;
  return it->second;
}

std::uint8_t Fabric::lft_port(std::uint32_t node, std::uint16_t lid) const noexcept {
  if (switch_of_[node] == kNoNode) return wire::kLftNoPort;
  const SwitchState& sw = switches_[switch_of_[node]];
  return lft_entry(sw, lid);
}

std::uint16_t Fabric::linear_fdb_top(std::uint32_t node) const noexcept {
  return switch_of_[node] == kNoNode ? 0 : switches_[switch_of_[node]].linear_fdb_top;
}

bool Fabric::port_state_change(std::uint32_t node) const noexcept {
  return switch_of_[node] != kNoNode && switches_[switch_of_[node]].port_state_change;
}

std::size_t Fabric::memory_bytes() const noexcept {
  std::size_t b = 0;
  b += node_type_.capacity() + num_ports_.capacity() + node_flags_.capacity();
  b += (first_port_.capacity() + desc_off_.capacity() + switch_of_.capacity() + vendor_id_.capacity()) * 4;
  b += (node_guid_.capacity() + sys_guid_.capacity()) * 8 + device_id_.capacity() * 2 + desc_pool_.capacity();
  b += switches_.capacity() * sizeof(SwitchState);
  for (const auto& sw : switches_) b += sw.lft.capacity() * 4 + sw.mft.capacity() * 2;
  b += lft_pool_.memory_bytes();
  b += (peer_.capacity() + port_node_.capacity()) * 4 + lid_.capacity() * 2 + state_.capacity() + phys_.capacity();
  b += cfg_.capacity() * sizeof(PortCfg) + perf_.capacity() * sizeof(SimPortCounters);
  b += by_id_.size() * (sizeof(std::string) + 4 + 2 * sizeof(void*)) + by_id_.bucket_count() * sizeof(void*);
  for (const auto& [k, v] : by_id_) b += k.capacity() > 15 ? k.capacity() : 0;
  return b;
}

std::size_t Fabric::pool_bytes() const noexcept {
  std::size_t b = slots_.capacity() * sizeof(Packet) + free_slots_.capacity() * 4;
  for (const auto& e : endpoints_) b += e.ring.capacity() * sizeof(MadBuf);
  return b;
}

// ---- time -----------------------------------------------------------------

Nanos Fabric::next_event_ns() const noexcept { return events_.empty() ? -1 : events_.top().at_ns; }

std::size_t Fabric::poll() noexcept {
  std::size_t n = 0;
  while (!events_.empty() && events_.top().at_ns <= clock_.now_ns()) {
    const Event e = events_.pop();
    run_event(e);
    ++n;
  }
  return n;
}

std::size_t Fabric::advance(Nanos max_step_ns) noexcept {
  const Nanos now = clock_.now_ns();
  Nanos to = now + max_step_ns;
  if (!events_.empty() && events_.top().at_ns < to) to = std::max(now, events_.top().at_ns);
  clock_.set_ns(to);
  return poll();
}

void Fabric::run_until(Nanos deadline_ns) noexcept {
  while (!events_.empty() && events_.top().at_ns <= deadline_ns) {
    clock_.set_ns(std::max(clock_.now_ns(), events_.top().at_ns));
    poll();
  }
  if (clock_.now_ns() < deadline_ns) clock_.set_ns(deadline_ns);
}

void Fabric::run_event(const Event& e) noexcept {
  switch (e.kind) {
    case EventKind::kSmaRequest:
      run_sma(e.a);
      break;
    case EventKind::kDeliver:
      deliver(e.a, e.b);
      break;
    case EventKind::kLinkDown:
      link_down(e.a);
      break;
    case EventKind::kLinkUp:
      link_up(e.a);
      break;
    case EventKind::kNodeMute:
      mute_node(e.a, true);
      break;
    case EventKind::kNodeUnmute:
      mute_node(e.a, false);
      break;
    case EventKind::kNodeReset:
      reset_node(e.a);
      break;
    case EventKind::kNodeKill:
      kill_node(e.a);
      break;
    case EventKind::kNodeRevive:
      revive_node(e.a);
      break;
  }
}

std::uint32_t Fabric::store(const Packet& pkt) {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    slots_[s] = pkt;
    return s;
  }
  slots_.push_back(pkt);
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

// ---- forwarding -----------------------------------------------------------

bool Fabric::lost(PortIdx out) noexcept {
  double rate = global_loss_;
  if (!link_loss_.empty()) {
    auto it = link_loss_.find(out);
    if (it == link_loss_.end()) it = link_loss_.find(peer_[out]);
    if (it != link_loss_.end()) rate = std::max(rate, it->second);
  }
  if (rate <= 0.0) return false;
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < rate;
}

bool Fabric::lid_matches(PortIdx p, std::uint16_t dlid) const noexcept {
  const std::uint16_t base = lid_[p];
  return base != 0 && dlid >= base && dlid < base + (1u << cfg_[p].lmc);
}

bool Fabric::cross(Packet& pkt, PortIdx out, PortIdx& arrived) noexcept {
  const PortIdx q = peer_[out];
  if (q == kNoPortIdx || phys_[out] != kLinkUp || phys_[q] != kLinkUp) {
    drop(DropReason::kLinkDown);
    return false;
  }
  if (lost(out) || (packet_fault_ != nullptr && packet_fault_->drop(pkt, out))) {
    drop(DropReason::kLoss);
    // The receiver saw a bad packet (ibsim counts its error rate the same way).
    add_port_counter(q, PortCounter::kRcvErrors, 1);
    return false;
  }
  count_crossing(out, q);
  ++pkt.hops;
  ++counters_.link_traversals;
  arrived = q;
  return true;
}

// LID routing (IBA 18.2.4.3): out of a CA's port, then switch to switch by
// LFT until a port whose LID range holds dlid. Every port crossed must be
// ACTIVE. `arrived` is the destination port (a switch's port 0 for the
// switch's own LID); pkt.at ends as the physical port it came in on.
bool Fabric::lid_route(Packet& pkt, PortIdx from, std::uint16_t dlid, PortIdx& arrived) noexcept {
  if (dlid == 0 || dlid > wire::kUnicastLidMax) {
    drop(DropReason::kNoRoute);
    return false;
  }
  std::uint32_t node = port_node_[from];
  const PortIdx self = mgmt_port(node, from);
  if (lid_matches(self, dlid)) {  // loopback
    arrived = self;
    pkt.at = from;
    return true;
  }
  PortIdx at = from;
  for (unsigned hop = 0; hop <= config_.lid_hops_max; ++hop) {
    PortIdx out;
    if (!is_switch(node)) {
      if (hop != 0) {  // reached a CA port that is not the destination
        drop(DropReason::kNoRoute);
        return false;
      }
      out = from;
    } else {
      const SwitchState& sw = switches_[switch_of_[node]];
      const std::uint8_t port = lft_entry(sw, dlid);
      if (dlid > sw.linear_fdb_top || port == wire::kLftNoPort || port == 0 || port > num_ports_[node]) {
        drop(DropReason::kNoRoute);
        return false;
      }
      out = first_port_[node] + port;
    }
    if (state_[out] != kActive) {
      drop(DropReason::kPortNotActive);
      return false;
    }
    PortIdx q;
    if (!cross(pkt, out, q)) return false;
    if (state_[q] != kActive) {
      drop(DropReason::kPortNotActive);
      return false;
    }
    at = q;
    node = port_node_[q];
    const PortIdx m = mgmt_port(node, q);
    if (lid_matches(m, dlid)) {
      arrived = m;
      pkt.at = at;
      return true;
    }
  }
  drop(DropReason::kHopLimit);
  return false;
}

void Fabric::inject(Packet& pkt, PortIdx src) noexcept {
  const std::uint32_t node = port_node_[src];
  const auto klass = static_cast<wire::MgmtClass>(hdr(pkt).mgmt_class);
  pkt.at = src;
  if (klass != wire::MgmtClass::kSubnDirected) {
    PortIdx arrived;
    if (lid_route(pkt, src, pkt.dlid, arrived)) arrive_lid(pkt, arrived);
    return;
  }
  DrSmp& smp = dr(pkt);
  if (wire::validate(smp) != wire::MadError::kOk) {
    drop(DropReason::kBadMad);
    return;
  }
  if (smp.direction_in()) {  // an SM endpoint answering (e.g. SMInfo) a DR request
    dr_response_at(pkt, src, true);
    return;
  }
  const std::uint8_t hc = smp.hop_count();
  if (smp.hop_pointer() != 0) {
    drop(DropReason::kBadMad);
    return;
  }
  if (hc == 0) {  // C14-9:3 at the source: to our own SMA
    smp.set_hops(1, 0);
    if (smp.dr_dlid.get() == kPermissiveLid) {
      to_sma(pkt, src);
    } else {
      PortIdx arrived;
      pkt.dr_end_lid = lid_[mgmt_port(node, src)];
      if (lid_route(pkt, src, smp.dr_dlid.get(), arrived)) to_sma(pkt, pkt.at);
    }
    return;
  }
  // C14-9:1: the hop pointer becomes 1 and the first path entry is our port.
  smp.set_hops(1, hc);
  PortIdx out;
  if (is_switch(node)) {
    out = port(node, smp.initial_path[1]);
    if (out == kNoPortIdx || smp.initial_path[1] == 0) {
      drop(DropReason::kBadPath);
      return;
    }
  } else {
    if (smp.initial_path[1] != port_num_of(src)) {
      drop(DropReason::kBadPath);
      return;
    }
    out = src;
  }
  PortIdx arrived;
  if (smp.dr_slid.get() == kPermissiveLid) {
    if (!cross(pkt, out, arrived)) return;
    pkt.at = arrived;
  } else {  // LID-routed head: to the switch where the directed part starts
    PortIdx dst;
    if (!lid_route(pkt, src, pkt.dlid, dst)) return;
    if (!is_switch(port_node_[dst])) {
      drop(DropReason::kNotSwitch);
      return;
    }
  }
  dr_request_at(pkt, pkt.at);
}

// An outgoing DR SMP arrived at a node on port `in` (IBA 14.2.2.2, C14-9).
void Fabric::dr_request_at(Packet& pkt, PortIdx in) noexcept {
  DrSmp& smp = dr(pkt);
  for (;;) {
    const std::uint32_t node = port_node_[in];
    const std::uint8_t hp = smp.hop_pointer(), hc = smp.hop_count();
    if (hp == 0 || hp > hc + 1) {
      drop(DropReason::kBadMad);
      return;
    }
    if (hp == hc + 1) {  // C14-9:4 the LID-routed tail delivered it
      to_sma(pkt, in);
      return;
    }
    smp.return_path[hp] = port_num_of(in);
    if (hp < hc) {  // C14-9:2 intermediate hop: only switches forward
      if (!is_switch(node)) {
        drop(DropReason::kNotSwitch);
        return;
      }
      const std::uint8_t next = smp.initial_path[hp + 1];
      if (next == 0 || next > num_ports_[node]) {
        drop(DropReason::kBadPath);
        return;
      }
      smp.set_hops(static_cast<std::uint8_t>(hp + 1), hc);
      PortIdx arrived;
      if (!cross(pkt, first_port_[node] + next, arrived)) return;
      in = arrived;
      continue;
    }
    // C14-9:3 end of the directed part.
    smp.set_hops(static_cast<std::uint8_t>(hp + 1), hc);
    if (smp.dr_dlid.get() == kPermissiveLid) {
      to_sma(pkt, in);
      return;
    }
    if (!is_switch(node)) {
      drop(DropReason::kNotSwitch);
      return;
    }
    const PortIdx p0 = first_port_[node];
    pkt.dr_end_lid = lid_[p0];
    PortIdx arrived;
    if (lid_route(pkt, p0, smp.dr_dlid.get(), arrived)) to_sma(pkt, pkt.at);
    return;
  }
}

// A returning DR SMP (D=1) at a node (IBA 14.2.2.4, C14-13). At the responder
// it leaves on the port the request came in on.
void Fabric::dr_response_at(Packet& pkt, PortIdx in, bool at_responder) noexcept {
  DrSmp& smp = dr(pkt);
  const std::uint8_t hc = smp.hop_count();
  if (at_responder) {
    const std::uint8_t hp = smp.hop_pointer();
    if (hp != hc + 1) {
      drop(DropReason::kBadMad);
      return;
    }
    if (hc == 0) {  // our own SMA answered us
      smp.set_hops(0, 0);
      to_endpoint(pkt, in, true);
      return;
    }
    const std::uint32_t node = port_node_[in];
    if (smp.dr_dlid.get() != kPermissiveLid) {
      // Back along the LID-routed tail to the switch that ended the directed part.
      PortIdx arrived;
      if (!lid_route(pkt, mgmt_port(node, in), pkt.dr_end_lid, arrived)) return;
      in = arrived;
    }
    const std::uint32_t at = port_node_[in];
    smp.set_hops(hc, hc);  // C14-13:1
    const PortIdx out = port(at, smp.return_path[hc]);
    if (out == kNoPortIdx || (!is_switch(at) && out != in)) {
      drop(DropReason::kBadPath);
      return;
    }
    PortIdx arrived;
    if (!cross(pkt, out, arrived)) return;
    in = arrived;
  }
  for (;;) {
    const std::uint32_t node = port_node_[in];
    const std::uint8_t hp = smp.hop_pointer();
    if (hp >= 2 && hp <= hc) {  // C14-13:2 intermediate hop
      if (!is_switch(node)) {
        drop(DropReason::kNotSwitch);
        return;
      }
      const std::uint8_t back = smp.return_path[hp - 1];
      if (back == 0 || back > num_ports_[node]) {
        drop(DropReason::kBadPath);
        return;
      }
      smp.set_hops(static_cast<std::uint8_t>(hp - 1), hc);
      PortIdx arrived;
      if (!cross(pkt, first_port_[node] + back, arrived)) return;
      in = arrived;
      continue;
    }
    if (hp == 1) {  // C14-13:3 end of the directed part
      smp.set_hops(0, hc);
      if (smp.dr_slid.get() == kPermissiveLid) {
        to_endpoint(pkt, in, true);
        return;
      }
      if (!is_switch(node)) {
        drop(DropReason::kNotSwitch);
        return;
      }
      PortIdx arrived;
      if (lid_route(pkt, first_port_[node], smp.dr_slid.get(), arrived)) to_endpoint(pkt, arrived, true);
      return;
    }
    drop(DropReason::kBadMad);
    return;
  }
}

void Fabric::arrive_lid(Packet& pkt, PortIdx at) noexcept {
  const wire::MadHeader& h = hdr(pkt);
  if (h.klass() == wire::MgmtClass::kSubnLid && !h.is_response() && h.method != wire::method::kTrap &&
      h.method != wire::method::kTrapRepress) {
    to_sma(pkt, pkt.at);
    return;
  }
  // PerfMgt requests go to the node's PMA (in the HCA or switch, as on hardware).
  if (h.klass() == wire::MgmtClass::kPerf && !h.is_response()) {
    to_sma(pkt, pkt.at);
    return;
  }
  to_endpoint(pkt, at, h.klass() == wire::MgmtClass::kSubnLid);
}

void Fabric::to_sma(Packet& pkt, PortIdx in) noexcept {
  const std::uint32_t node = port_node_[in];
  const wire::MadHeader& h = hdr(pkt);
  // SMInfo requests go to an SM engine attached there, if any.
  if (h.attr_id.get() == wire::smp_attr::kSmInfo && !h.is_response()) {
    auto it = port_endpoints_.find(mgmt_port(node, in));
    if (it != port_endpoints_.end())
      for (EndpointId e : it->second)
        if (endpoints_[e].spec.is_sm && endpoints_[e].device_present) {
          pkt.at = in;
          events_.push(clock_.now_ns() + pkt.hops * config_.hop_latency_ns, EventKind::kDeliver, store(pkt), e);
          return;
        }
  }
  pkt.at = in;
  ++counters_.sma_requests;
  events_.push(clock_.now_ns() + pkt.hops * config_.hop_latency_ns, EventKind::kSmaRequest, store(pkt));
}

void Fabric::to_endpoint(Packet& pkt, PortIdx at, bool smi) noexcept {
  at = mgmt_port(port_node_[at], at);
  auto it = port_endpoints_.find(at);
  EndpointId chosen = kNoEndpoint;
  if (it != port_endpoints_.end()) {
    const wire::MadHeader& h = hdr(pkt);
    const bool sa_request =
        h.klass() == wire::MgmtClass::kSubnAdm && !h.is_response() && h.method != wire::method::kReport;
    const bool tagged = !smi && !sa_request && it->second.size() > 1;
    const auto tag = static_cast<std::uint32_t>(h.tid.get() >> 32);
    for (EndpointId e : it->second) {
      const Endpoint& ep = endpoints_[e];
      if (!ep.device_present) continue;
      if (tagged && !ep.ports.empty() && ep.tid_tag == tag && ep.spec.gsi_client) {  // see attach_ports
        chosen = e;
        break;
      }
      if (chosen == kNoEndpoint && (smi ? ep.spec.smi : (sa_request ? ep.spec.sa_server : ep.spec.gsi_client))) {
        chosen = e;
        if (!tagged) break;
      }
    }
  }
  if (chosen == kNoEndpoint) {
    drop(DropReason::kNoAgent);
    return;
  }
  events_.push(clock_.now_ns() + pkt.hops * config_.hop_latency_ns, EventKind::kDeliver, store(pkt), chosen);
}

void Fabric::deliver(std::uint32_t slot, EndpointId e) noexcept {
  const Packet& pkt = slots_[slot];
  Endpoint& ep = endpoints_[e];
  if (!ep.attached || !ep.device_present) {
    drop(DropReason::kNoAgent);
  } else if (ep.count == ep.ring.size()) {
    drop(DropReason::kRxFull);
  } else {
    const std::size_t pos = (ep.head + ep.count++) % ep.ring.size();
    if (!ep.ring_at.empty()) ep.ring_at[pos] = pkt.at;
    MadBuf& b = ep.ring[pos];
    b.mad = pkt.mad;
    b.len = static_cast<std::uint16_t>(wire::kMadSize);
    b.addr = MadAddr{};
    b.addr.port_num = port_num_of(ep.port);
    b.addr.lid = pkt.slid;
    b.addr.remote_qpn = pkt.src_qp;
    b.addr.qkey = pkt.qkey;
    b.addr.sl = pkt.sl;
    b.addr.pkey_index = pkt.pkey_index;
    b.cookie = 0;
    ++counters_.delivered;
  }
  free_slots_.push_back(slot);
}

void Fabric::run_sma(std::uint32_t slot) noexcept {
  Packet pkt = slots_[slot];
  free_slots_.push_back(slot);
  const PortIdx in = pkt.at;
  const std::uint32_t node = port_node_[in];
  if (node_flags_[node] & kDead) {
    drop(DropReason::kNodeDead);
    return;
  }
  if (node_flags_[node] & kMuted) {
    drop(DropReason::kNodeMuted);
    return;
  }
  const bool perf = hdr(pkt).klass() == wire::MgmtClass::kPerf;
  if (!(perf ? pma_process(pkt, in) : sma_process(pkt, in))) return;
  ++counters_.sma_responses;
  // The response leaves after the SMA's processing time; hops restart.
  pkt.hops = 0;
  const Nanos base = clock_.now_ns();
  clock_.set_ns(base + config_.sma_latency_ns);
  if (hdr(pkt).klass() == wire::MgmtClass::kSubnDirected) {
    dr_response_at(pkt, in, true);
  } else {
    const PortIdx m = mgmt_port(node, in);
    const std::uint16_t to = pkt.slid;
    pkt.slid = lid_[m];
    pkt.dlid = to;
    std::swap(pkt.src_qp, pkt.dst_qp);
    PortIdx arrived;
    if (lid_route(pkt, m, to, arrived)) arrive_lid(pkt, arrived);
  }
  clock_.set_ns(base);
}

// ---- endpoints ------------------------------------------------------------

EndpointId Fabric::attach(std::uint32_t node, std::uint8_t port_num, const AgentSpec& spec) {
  if (node >= node_count()) throw std::invalid_argument("attach: no such node");
  if (is_switch(node) && port_num != 0)
    throw std::invalid_argument("attach: a switch's management agents live on port 0");
  const PortIdx p = port(node, port_num);
  if (p == kNoPortIdx) throw std::invalid_argument("attach: node has no port " + std::to_string(port_num));
  Endpoint ep;
  ep.port = p;
  ep.spec = spec;
  ep.attached = true;
  ep.device_present = !(node_flags_[node] & kDead);
  ep.ring.resize(config_.endpoint_rx_depth);
  endpoints_.push_back(std::move(ep));
  const auto id = static_cast<EndpointId>(endpoints_.size() - 1);
  port_endpoints_[p].push_back(id);
  return id;
}

EndpointId Fabric::attach_ports(std::span<const PortIdx> ports, const AgentSpec& spec, std::uint32_t rx_depth,
                                std::uint32_t tid_tag) {
  if (ports.empty() || rx_depth == 0) throw std::invalid_argument("attach_ports: no ports or no receive depth");
  Endpoint ep;
  ep.ports.assign(ports.begin(), ports.end());
  std::sort(ep.ports.begin(), ep.ports.end());
  ep.ports.erase(std::unique(ep.ports.begin(), ep.ports.end()), ep.ports.end());
  bool dead = false;
  for (const PortIdx p : ep.ports) {
    if (p >= port_count() || is_switch(port_node_[p]))
      throw std::invalid_argument("attach_ports: port " + std::to_string(p) + " is not a CA port");
    dead = dead || (node_flags_[port_node_[p]] & kDead) != 0;
  }
  ep.port = ports.front();
  ep.tid_tag = tid_tag;
  ep.spec = spec;
  ep.attached = true;
  ep.device_present = !dead;
  ep.ring.resize(rx_depth);
  ep.ring_at.resize(rx_depth);
  endpoints_.push_back(std::move(ep));
  const auto id = static_cast<EndpointId>(endpoints_.size() - 1);
  for (const PortIdx p : endpoints_[id].ports) port_endpoints_[p].push_back(id);
  return id;
}

void Fabric::detach(EndpointId e) noexcept {
  if (e >= endpoints_.size() || !endpoints_[e].attached) return;
  Endpoint& ep = endpoints_[e];
  auto unlist = [&](PortIdx p) {
    auto& v = port_endpoints_[p];
    v.erase(std::remove(v.begin(), v.end(), e), v.end());
  };
  if (ep.ports.empty()) unlist(ep.port);
  for (const PortIdx p : ep.ports) unlist(p);
  ep.attached = false;
  ep.count = 0;
}

bool Fabric::send(EndpointId e, const MadBuf& buf) noexcept {
  if (e >= endpoints_.size()) return false;
  return send_at(e, endpoints_[e].port, buf);
}

bool Fabric::send_from(EndpointId e, PortIdx from, const MadBuf& buf) noexcept {
  if (e >= endpoints_.size()) return false;
  const auto& ports = endpoints_[e].ports;
  if (!std::binary_search(ports.begin(), ports.end(), from)) return false;
  return send_at(e, from, buf);
}

bool Fabric::send_at(EndpointId e, PortIdx src, const MadBuf& buf) noexcept {
  const Endpoint& ep = endpoints_[e];
  if (!ep.attached || !ep.device_present) return false;
  Packet pkt;
  pkt.mad = buf.mad;
  pkt.slid = static_cast<std::uint16_t>(lid_[src] | buf.addr.path_bits);
  pkt.dlid = buf.addr.lid;
  const wire::MgmtClass k = hdr(pkt).klass();
  const bool smp = k == wire::MgmtClass::kSubnLid || k == wire::MgmtClass::kSubnDirected;
  pkt.src_qp = smp ? 0 : 1;
  pkt.dst_qp = buf.addr.remote_qpn;
  pkt.qkey = buf.addr.qkey;
  pkt.sl = buf.addr.sl;
  pkt.pkey_index = buf.addr.pkey_index;
  pkt.from_endpoint = e;
  inject(pkt, src);
  return true;
}

std::size_t Fabric::receive(EndpointId e, std::span<MadBuf*> bufs) noexcept { return receive(e, bufs, {}); }

std::size_t Fabric::receive(EndpointId e, std::span<MadBuf*> bufs, std::span<PortIdx> arrived_at) noexcept {
  if (e >= endpoints_.size()) return 0;
  Endpoint& ep = endpoints_[e];
  if (!arrived_at.empty() && arrived_at.size() < bufs.size()) bufs = bufs.first(arrived_at.size());
  std::size_t n = 0;
  while (n < bufs.size() && ep.count > 0) {
    if (!arrived_at.empty()) arrived_at[n] = ep.ring_at.empty() ? ep.port : ep.ring_at[ep.head];
    MadBuf& src = ep.ring[ep.head];
    MadBuf& dst = *bufs[n++];
    dst.mad = src.mad;
    dst.addr = src.addr;
    dst.len = src.len;
    ep.head = (ep.head + 1) % ep.ring.size();
    --ep.count;
  }
  return n;
}

std::size_t Fabric::pending(EndpointId e) const noexcept { return e < endpoints_.size() ? endpoints_[e].count : 0; }

LocalPort Fabric::local_port(EndpointId e) const noexcept {
  LocalPort lp;
  if (e >= endpoints_.size()) return lp;
  const PortIdx p = endpoints_[e].port;
  const std::uint32_t n = port_node_[p];
  lp.node_guid = node_guid_[n];
  lp.port_guid = cfg_[p].guid;
  if (cfg_[p].gid_prefix) lp.subnet_prefix = cfg_[p].gid_prefix;
  lp.lid = lid_[p];
  lp.lmc = cfg_[p].lmc;
  lp.sm_lid = cfg_[p].sm_lid;
  lp.sm_sl = cfg_[p].sm_sl;
  lp.port_num = port_num_of(p);
  lp.state = static_cast<PortState>(state_[p]);
  lp.is_switch = is_switch(n);
  return lp;
}

DeviceEvent Fabric::take_event(EndpointId e) noexcept {
  if (e >= endpoints_.size()) return DeviceEvent::kNone;
  Endpoint& ep = endpoints_[e];
  DeviceEvent ev = ep.event;
  ep.event = DeviceEvent::kNone;
  if (ev == DeviceEvent::kNone && ep.owe_back) ev = DeviceEvent::kDeviceBack;
  if (ev != DeviceEvent::kDeviceLost) ep.owe_back = false;
  return ev;
}

bool Fabric::device_present(EndpointId e) const noexcept {
  return e < endpoints_.size() && endpoints_[e].device_present;
}

void Fabric::set_sm_info(std::uint32_t node, const wire::SmInfo& info) {
  if (node >= node_count()) throw std::invalid_argument("set_sm_info: no such node");
  node_flags_[node] |= kHostsSm;
  sm_info_[node] = info;
}

// ---- state changes and faults ---------------------------------------------

// Port and device events reach the endpoints on the port (a lost device is
// not downgraded to a mere port change before the engine saw it).
void Fabric::note_port_change(PortIdx p) noexcept {
  const std::uint32_t n = port_node_[p];
  const PortIdx m = mgmt_port(n, p);
  auto it = port_endpoints_.find(m);
  if (it == port_endpoints_.end()) return;
  for (EndpointId e : it->second)
    if (endpoints_[e].event == DeviceEvent::kNone) endpoints_[e].event = DeviceEvent::kPortChanged;
}

// PortStateChange (IBA 14.2.5.4) is set by the link state machine: any
// transition to or from Down. SM-driven Init->Armed->Active do not set it.
void Fabric::set_state(PortIdx p, std::uint8_t state) noexcept {
  const std::uint8_t old = state_[p];
  if (old == state) return;
  state_[p] = state;
  const std::uint32_t n = port_node_[p];
  if ((old == kDown || state == kDown) && switch_of_[n] != kNoNode) switches_[switch_of_[n]].port_state_change = true;
  note_port_change(p);
}

void Fabric::set_link_loss_rate(PortIdx p, double rate) {
  if (p >= port_count()) throw std::invalid_argument("set_link_loss_rate: no such port");
  link_loss_[p] = rate;
}

void Fabric::link_down(PortIdx p) noexcept {
  if (p >= port_count()) return;
  const PortIdx q = peer_[p];
  for (PortIdx x : {p, q}) {
    if (x == kNoPortIdx) continue;
    if (is_switch(port_node_[x]) && x == first_port_[port_node_[x]]) continue;
    if (phys_[x] == kLinkUp) add_port_counter(x, PortCounter::kLinkDowned, 1);  // IBA 16.1.3.5: LinkDownedCounter
    phys_[x] = kPolling;
    set_state(x, kDown);
  }
}

void Fabric::link_up(PortIdx p) noexcept {
  if (p >= port_count()) return;
  const PortIdx q = peer_[p];
  if (q == kNoPortIdx) return;
  if ((node_flags_[port_node_[p]] | node_flags_[port_node_[q]]) & kDead) return;
  for (PortIdx x : {p, q}) {
    if (phys_[x] == kLinkUp && state_[x] != kDown) continue;
    phys_[x] = kLinkUp;
    set_state(x, kInit);
  }
  for (auto [a, b] : {std::pair{p, q}, std::pair{q, p}}) {
    cfg_[a].width_active = active_width(cfg_[a].width_enabled, cfg_[b].width_enabled);
    cfg_[a].speed_active = active_speed(cfg_[a].speed_enabled, cfg_[b].speed_enabled);
    cfg_[a].speed_ext_active = active_speed_ext(cfg_[a].speed_ext_enabled, cfg_[b].speed_ext_enabled);
    cfg_[a].speed_ext2_active = active_speed_ext2(cfg_[a].speed_ext2_enabled, cfg_[b].speed_ext2_enabled);
  }
}

bool Fabric::link(PortIdx a, PortIdx b) noexcept {
  if (a >= port_count() || b >= port_count() || a == b) return false;
  if (peer_[a] != kNoPortIdx || peer_[b] != kNoPortIdx) return false;
  for (PortIdx x : {a, b})
    if (is_switch(port_node_[x]) && x == first_port_[port_node_[x]]) return false;
  if (!active_width(cfg_[a].width_enabled, cfg_[b].width_enabled) ||
      !active_speed(cfg_[a].speed_enabled, cfg_[b].speed_enabled))
    return false;
  peer_[a] = b;
  peer_[b] = a;
  phys_[a] = phys_[b] = kPolling;
  link_up(a);
  return true;
}

void Fabric::mute_node(std::uint32_t n, bool muted) noexcept {
  if (n >= node_count()) return;
  node_flags_[n] = static_cast<std::uint8_t>(muted ? (node_flags_[n] | kMuted) : (node_flags_[n] & ~kMuted));
}

void Fabric::reset_node(std::uint32_t n) noexcept {
  if (n >= node_count()) return;
  const PortIdx first = first_port_[n];
  const PortIdx end = first + num_ports_[n] + (is_switch(n) ? 1 : 0);
  for (PortIdx p = first; p < end; ++p) {
    PortCfg& c = cfg_[p];
    lid_[p] = 0;
    c.m_key = 0;
    c.m_key_protect = 0;
    c.m_key_lease_end_ns = -1;
    c.part_enforce = 0;
    c.sm_lid = 0;
    c.sm_sl = 0;
    c.lmc = 0;
    c.gid_prefix = 0;
    pkeys_.erase(p);
    guid_info_.erase(p);
    const bool port0 = is_switch(n) && p == first;
    if (port0) {
      note_port_change(p);
      continue;
    }
    // The link retrains: both ends pass through Down back to Init.
    if (peer_[p] != kNoPortIdx && phys_[p] == kLinkUp) {
      set_state(p, kDown);
      set_state(peer_[p], kDown);
      set_state(p, kInit);
      set_state(peer_[p], kInit);
    }
  }
  for (auto it = sl2vl_.begin(); it != sl2vl_.end();) {
    const auto p = static_cast<PortIdx>(it->first >> 16);
    it = (p >= first && p < end) ? sl2vl_.erase(it) : std::next(it);
  }
  for (auto it = vlarb_.begin(); it != vlarb_.end();) {
    const auto p = static_cast<PortIdx>(it->first >> 8);
    it = (p >= first && p < end) ? vlarb_.erase(it) : std::next(it);
  }
  if (switch_of_[n] != kNoNode) {
    SwitchState& sw = switches_[switch_of_[n]];
    const bool esp0 = sw.enhanced_port0;
    for (const std::uint32_t id : sw.lft) lft_pool_.release(id);
    sw = SwitchState{};
    sw.enhanced_port0 = esp0;
    sw.port_state_change = true;
  }
}

void Fabric::kill_node(std::uint32_t n) noexcept {
  if (n >= node_count() || (node_flags_[n] & kDead)) return;
  const PortIdx first = first_port_[n];
  const PortIdx end = first + num_ports_[n] + (is_switch(n) ? 1 : 0);
  for (PortIdx p = first; p < end; ++p) {
    if (peer_[p] != kNoPortIdx) link_down(p);
    auto it = port_endpoints_.find(p);
    if (it == port_endpoints_.end()) continue;
    for (EndpointId e : it->second) {
      endpoints_[e].device_present = false;
      endpoints_[e].event = DeviceEvent::kDeviceLost;
      endpoints_[e].count = 0;
    }
  }
  node_flags_[n] |= kDead;
}

void Fabric::revive_node(std::uint32_t n) noexcept {
  if (n >= node_count() || !(node_flags_[n] & kDead)) return;
  node_flags_[n] &= static_cast<std::uint8_t>(~kDead);
  reset_node(n);
  const PortIdx first = first_port_[n];
  const PortIdx end = first + num_ports_[n] + (is_switch(n) ? 1 : 0);
  for (PortIdx p = first; p < end; ++p) {
    if (peer_[p] != kNoPortIdx) link_up(p);
    auto it = port_endpoints_.find(p);
    if (it == port_endpoints_.end()) continue;
    for (EndpointId e : it->second) {
      endpoints_[e].device_present = true;
      // The engine must see the loss before the return: an untaken loss
      // stays, and the return is reported by the next poll after it.
      if (endpoints_[e].event == DeviceEvent::kDeviceLost)
        endpoints_[e].owe_back = true;
      else
        endpoints_[e].event = DeviceEvent::kDeviceBack;
    }
  }
}

}  // namespace madengine::sim
