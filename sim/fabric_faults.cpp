// State changes and faults in the simulated fabric: port states and their
// change bits, links down and up, lossy links, muted, reset, dead and
// revived nodes.
#include <algorithm>
#include <stdexcept>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sim/fabric_parts.hpp"

namespace madengine::sim {

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
