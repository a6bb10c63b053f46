// The simulated PMA (performance management agent, IBA 16.1): every node
// answers PerfMgt Get/Set of ClassPortInfo, PortCounters and
// PortCountersExtended from its ports' counters (sim/port_counters.hpp).
// Port selection as ibsim's PMA: a CA answers for the port the MAD arrived
// on, a switch for any of its ports; AllPortSelect (0xFF) is not offered.
#include <algorithm>
#include <cstring>
#include <limits>

#include "madengine/wire/class_port_info.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/perf.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

namespace {

template <typename T>
void saturating_add(T& counter, std::uint64_t n) noexcept {
  constexpr std::uint64_t kMax = std::numeric_limits<T>::max();
  counter = static_cast<T>(std::min<std::uint64_t>(kMax, std::uint64_t{counter} + n));
}

void saturating_add64(std::uint64_t& counter, std::uint64_t n) noexcept {
  counter = counter > ~std::uint64_t{0} - n ? ~std::uint64_t{0} : counter + n;
}

void add_nibble(std::uint8_t& counter, std::uint64_t n) noexcept {
  counter = static_cast<std::uint8_t>(std::min<std::uint64_t>(15, std::uint64_t{counter} + n));
}

wire::PortCounters encode_counters(const SimPortCounters& c, std::uint8_t port_select) noexcept {
  wire::PortCounters pc{};
  pc.port_select = port_select;
  pc.symbol_errors.set(c.symbol_errors);
  pc.link_error_recovery = c.link_error_recovery;
  pc.link_downed = c.link_downed;
  pc.rcv_errors.set(c.rcv_errors);
  pc.rcv_remote_phys_errors.set(c.rcv_remote_phys_errors);
  pc.rcv_switch_relay_errors.set(c.rcv_switch_relay_errors);
  pc.xmit_discards.set(c.xmit_discards);
  pc.xmit_constraint_errors = c.xmit_constraint_errors;
  pc.rcv_constraint_errors = c.rcv_constraint_errors;
  pc.set_local_link_integrity_errors(c.local_link_integrity_errors);
  pc.set_excessive_buffer_overrun_errors(c.excessive_buffer_overrun_errors);
  pc.vl15_dropped.set(c.vl15_dropped);
  pc.xmit_data.set(c.xmit_data);
  pc.rcv_data.set(c.rcv_data);
  pc.xmit_pkts.set(c.xmit_pkts);
  pc.rcv_pkts.set(c.rcv_pkts);
  pc.xmit_wait.set(c.xmit_wait);
  return pc;
}

// PortCounters Set: the counters CounterSelect (IBA 16.1.3.5, Table 201) and
// CounterSelect2 name are cleared; the 64-bit ones are kept.
void clear_selected(SimPortCounters& c, std::uint16_t sel, std::uint8_t sel2) noexcept {
  if (sel & (1u << 0)) c.symbol_errors = 0;
  if (sel & (1u << 1)) c.link_error_recovery = 0;
  if (sel & (1u << 2)) c.link_downed = 0;
  if (sel & (1u << 3)) c.rcv_errors = 0;
  if (sel & (1u << 4)) c.rcv_remote_phys_errors = 0;
  if (sel & (1u << 5)) c.rcv_switch_relay_errors = 0;
  if (sel & (1u << 6)) c.xmit_discards = 0;
  if (sel & (1u << 7)) c.xmit_constraint_errors = 0;
  if (sel & (1u << 8)) c.rcv_constraint_errors = 0;
  if (sel & (1u << 9)) c.local_link_integrity_errors = 0;
  if (sel & (1u << 10)) c.excessive_buffer_overrun_errors = 0;
  if (sel & (1u << 11)) c.vl15_dropped = 0;
  if (sel & (1u << 12)) c.xmit_data = 0;
  if (sel & (1u << 13)) c.rcv_data = 0;
  if (sel & (1u << 14)) c.xmit_pkts = 0;
  if (sel & (1u << 15)) c.rcv_pkts = 0;
  if (sel2 & wire::pc_select::kXmitWait2) c.xmit_wait = 0;
}

}  // namespace

void Fabric::count_crossing(PortIdx out, PortIdx in) noexcept {
  SimPortCounters& o = perf_[out];
  saturating_add(o.xmit_pkts, 1);
  saturating_add(o.xmit_data, kMadDataWords);
  saturating_add64(o.ext_xmit_pkts, 1);
  saturating_add64(o.ext_xmit_data, kMadDataWords);
  SimPortCounters& i = perf_[in];
  saturating_add(i.rcv_pkts, 1);
  saturating_add(i.rcv_data, kMadDataWords);
  saturating_add64(i.ext_rcv_pkts, 1);
  saturating_add64(i.ext_rcv_data, kMadDataWords);
}

void Fabric::add_port_counter(PortIdx p, PortCounter c, std::uint32_t n) noexcept {
  if (p >= perf_.size()) return;
  SimPortCounters& s = perf_[p];
  switch (c) {
    case PortCounter::kSymbolErrors: saturating_add(s.symbol_errors, n); break;
    case PortCounter::kLinkErrorRecovery: saturating_add(s.link_error_recovery, n); break;
    case PortCounter::kLinkDowned: saturating_add(s.link_downed, n); break;
    case PortCounter::kRcvErrors: saturating_add(s.rcv_errors, n); break;
    case PortCounter::kRcvRemotePhysErrors: saturating_add(s.rcv_remote_phys_errors, n); break;
    case PortCounter::kRcvSwitchRelayErrors: saturating_add(s.rcv_switch_relay_errors, n); break;
    case PortCounter::kXmitDiscards: saturating_add(s.xmit_discards, n); break;
    case PortCounter::kXmitConstraintErrors: saturating_add(s.xmit_constraint_errors, n); break;
    case PortCounter::kRcvConstraintErrors: saturating_add(s.rcv_constraint_errors, n); break;
    case PortCounter::kLocalLinkIntegrityErrors: add_nibble(s.local_link_integrity_errors, n); break;
    case PortCounter::kExcessiveBufferOverrunErrors: add_nibble(s.excessive_buffer_overrun_errors, n); break;
    case PortCounter::kVl15Dropped: saturating_add(s.vl15_dropped, n); break;
    case PortCounter::kXmitWait: saturating_add(s.xmit_wait, n); break;
  }
}

void Fabric::set_pma_extended(std::uint32_t node, bool supported) noexcept {
  if (node >= node_count()) return;
  if (supported) node_flags_[node] = static_cast<std::uint8_t>(node_flags_[node] & ~kNoPerfExt);
  else node_flags_[node] = static_cast<std::uint8_t>(node_flags_[node] | kNoPerfExt);
}

bool Fabric::pma_process(Packet& pkt, PortIdx in) noexcept {
  auto& h = *reinterpret_cast<wire::MadHeader*>(pkt.mad.bytes.data());
  if (h.is_response()) return false;
  const std::uint32_t node = port_node_[in];
  std::uint8_t* data = pkt.mad.bytes.data() + wire::kPerfDataOffset;
  const std::span<std::uint8_t> out(data, wire::kPerfDataSize);
  const std::uint16_t attr = h.attr_id.get();
  const bool set = h.method == wire::method::kSet;
  std::uint16_t status = wire::status::kOk;

  // The port a counter attribute names: a CA's own (the one it arrived on),
  // any port of a switch.
  auto select = [&](std::uint8_t port_select, PortIdx& p) {
    if (is_switch(node)) p = port_select <= num_ports_[node] ? first_port_[node] + port_select : kNoPortIdx;
    else p = port_select == port_num_of(in) ? in : kNoPortIdx;
    return p != kNoPortIdx;
  };

  if (h.method != wire::method::kGet && h.method != wire::method::kSet) {
    status = wire::status::kMethodUnsupported;
  } else if (h.base_version != 1 || h.class_version != wire::kPerfClassVersion) {
    status = wire::status::kBadVersion;
  } else if (attr == wire::perf_attr::kClassPortInfo) {
    if (set) {
      status = wire::status::kMethodAttrUnsupported;
    } else {
      wire::ClassPortInfo cpi{};
      cpi.base_version = 1;
      cpi.class_version = wire::kPerfClassVersion;
      std::uint16_t cap = wire::perf_cap::kXmitWait;
      if (pma_extended(node)) cap |= wire::perf_cap::kExtendedWidth;
      cpi.capability_mask.set(cap);
      cpi.set_resp_time_value(18);  // ibsim's
      std::memset(data, 0, wire::kPerfDataSize);
      wire::encode(cpi, out);
    }
  } else if (attr == wire::perf_attr::kPortCounters) {
    const auto req = wire::decode<wire::PortCounters>(out);
    PortIdx p = kNoPortIdx;
    if (!select(req->port_select, p)) {
      status = wire::status::kInvalidField;
    } else {
      if (set) clear_selected(perf_[p], req->counter_select.get(), req->counter_select2);
      wire::PortCounters pc = encode_counters(perf_[p], req->port_select);
      pc.counter_select = req->counter_select;
      pc.counter_select2 = req->counter_select2;
      std::memset(data, 0, wire::kPerfDataSize);
      wire::encode(pc, out);
    }
  } else if (attr == wire::perf_attr::kPortCountersExtended && pma_extended(node)) {
    const auto req = wire::decode<wire::PortCountersExtended>(out);
    PortIdx p = kNoPortIdx;
    if (set) {
      status = wire::status::kMethodAttrUnsupported;  // the 64-bit counters are not cleared here
    } else if (!select(req->port_select, p)) {
      status = wire::status::kInvalidField;
    } else {
      const SimPortCounters& c = perf_[p];
      wire::PortCountersExtended e{};
      e.port_select = req->port_select;
      e.counter_select = req->counter_select;
      e.xmit_data.set(c.ext_xmit_data);
      e.rcv_data.set(c.ext_rcv_data);
      e.xmit_pkts.set(c.ext_xmit_pkts);
      e.rcv_pkts.set(c.ext_rcv_pkts);
      // Every simulated MAD is unicast.
      e.unicast_xmit_pkts.set(c.ext_xmit_pkts);
      e.unicast_rcv_pkts.set(c.ext_rcv_pkts);
      std::memset(data, 0, wire::kPerfDataSize);
      wire::encode(e, out);
    }
  } else {
    status = wire::status::kMethodAttrUnsupported;
  }
  h.method = wire::method::kGetResp;
  h.status.set(status);
  return true;
}

}  // namespace madengine::sim
