// Forwarding in the simulated fabric: directed route (IBA 14.2.2) out and
// back, LID routing through the switches' LFTs, link loss, delivery to an
// SMA or to the endpoints on a port.
#include <algorithm>
#include <stdexcept>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "sim/fabric_parts.hpp"

namespace madengine::sim {

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

}  // namespace madengine::sim
