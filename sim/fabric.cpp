// Fabric construction, the model read back, and time; forwarding,
// endpoints and faults are fabric_forwarding.cpp, fabric_endpoints.cpp and
// fabric_faults.cpp; the SMA's attribute handlers are sma.cpp.
#include "sim/fabric.hpp"

#include <algorithm>
#include <stdexcept>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sim/fabric_parts.hpp"

namespace madengine::sim {

namespace {

// ibsim's defaults for a port's M_Key lease period and subnet timeout.
constexpr std::uint16_t kDefaultMKeyLease = 4089;
constexpr std::uint8_t kDefaultSubnetTimeout = 31;
constexpr std::uint8_t kDefaultVlStall = 7;
constexpr std::size_t kSlotsReserve = 4096;

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

}  // namespace madengine::sim
