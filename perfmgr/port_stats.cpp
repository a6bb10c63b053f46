// Counter arithmetic and policies of port_stats.hpp.
#include "perfmgr/port_stats.hpp"

namespace madengine::perfmgr {

namespace {

struct Names {
  const char* iba;
  const char* metric;
};
constexpr std::array<Names, kCounters> kNames{{
    {"PortXmitData", "xmit_data_words"},
    {"PortRcvData", "rcv_data_words"},
    {"PortXmitPkts", "xmit_packets"},
    {"PortRcvPkts", "rcv_packets"},
    {"SymbolErrorCounter", "symbol_errors"},
    {"LinkErrorRecoveryCounter", "link_error_recovery"},
    {"LinkDownedCounter", "link_downed"},
    {"PortRcvErrors", "rcv_errors"},
    {"PortRcvRemotePhysicalErrors", "rcv_remote_physical_errors"},
    {"PortRcvSwitchRelayErrors", "rcv_switch_relay_errors"},
    {"PortXmitDiscards", "xmit_discards"},
    {"PortXmitConstraintErrors", "xmit_constraint_errors"},
    {"PortRcvConstraintErrors", "rcv_constraint_errors"},
    {"LocalLinkIntegrityErrors", "local_link_integrity_errors"},
    {"ExcessiveBufferOverrunErrors", "excessive_buffer_overrun_errors"},
    {"VL15Dropped", "vl15_dropped"},
    {"PortXmitWait", "xmit_wait"},
}};

constexpr bool near_full(std::uint64_t v, std::uint64_t max) noexcept { return v >= max - max / 4; }

}  // namespace

const char* iba_name(Counter c) noexcept { return kNames[static_cast<std::size_t>(c)].iba; }
const char* metric_name(Counter c) noexcept { return kNames[static_cast<std::size_t>(c)].metric; }

CounterSet from_port_counters(const wire::PortCounters& pc) noexcept {
  CounterSet s{};
  at(s, Counter::kXmitData) = pc.xmit_data.get();
  at(s, Counter::kRcvData) = pc.rcv_data.get();
  at(s, Counter::kXmitPkts) = pc.xmit_pkts.get();
  at(s, Counter::kRcvPkts) = pc.rcv_pkts.get();
  at(s, Counter::kSymbolErrors) = pc.symbol_errors.get();
  at(s, Counter::kLinkErrorRecovery) = pc.link_error_recovery;
  at(s, Counter::kLinkDowned) = pc.link_downed;
  at(s, Counter::kRcvErrors) = pc.rcv_errors.get();
  at(s, Counter::kRcvRemotePhysErrors) = pc.rcv_remote_phys_errors.get();
  at(s, Counter::kRcvSwitchRelayErrors) = pc.rcv_switch_relay_errors.get();
  at(s, Counter::kXmitDiscards) = pc.xmit_discards.get();
  at(s, Counter::kXmitConstraintErrors) = pc.xmit_constraint_errors;
  at(s, Counter::kRcvConstraintErrors) = pc.rcv_constraint_errors;
  at(s, Counter::kLocalLinkIntegrityErrors) = pc.local_link_integrity_errors();
  at(s, Counter::kExcessiveBufferOverrunErrors) = pc.excessive_buffer_overrun_errors();
  at(s, Counter::kVl15Dropped) = pc.vl15_dropped.get();
  at(s, Counter::kXmitWait) = pc.xmit_wait.get();
  return s;
}

void take_extended(CounterSet& s, const wire::PortCountersExtended& e) noexcept {
  at(s, Counter::kXmitData) = e.xmit_data.get();
  at(s, Counter::kRcvData) = e.rcv_data.get();
  at(s, Counter::kXmitPkts) = e.xmit_pkts.get();
  at(s, Counter::kRcvPkts) = e.rcv_pkts.get();
}

CounterSet delta(const CounterSet& prev, const CounterSet& now) noexcept {
  CounterSet d{};
  for (std::size_t i = 0; i < kCounters; ++i) d[i] = now[i] >= prev[i] ? now[i] - prev[i] : now[i];
  return d;
}

std::uint16_t clear_select(const wire::PortCounters& pc, bool extended, bool xmit_wait) noexcept {
  const bool errors = near_full(pc.symbol_errors.get(), 0xffff) || near_full(pc.link_error_recovery, 0xff) ||
                      near_full(pc.link_downed, 0xff) || near_full(pc.rcv_errors.get(), 0xffff) ||
                      near_full(pc.rcv_remote_phys_errors.get(), 0xffff) ||
                      near_full(pc.rcv_switch_relay_errors.get(), 0xffff) || near_full(pc.xmit_discards.get(), 0xffff) ||
                      near_full(pc.xmit_constraint_errors, 0xff) || near_full(pc.rcv_constraint_errors, 0xff) ||
                      pc.local_link_integrity_errors() >= 10 || pc.excessive_buffer_overrun_errors() >= 10 ||
                      near_full(pc.vl15_dropped.get(), 0xffff) || (xmit_wait && near_full(pc.xmit_wait.get(), 0xffffffffu));
  const bool data = !extended && (near_full(pc.xmit_data.get(), 0xffffffffu) || near_full(pc.rcv_data.get(), 0xffffffffu) ||
                                  near_full(pc.xmit_pkts.get(), 0xffffffffu) || near_full(pc.rcv_pkts.get(), 0xffffffffu));
  if (!errors && !data) return 0;
  // Some HCAs keep one counter for both widths: with the 64-bit ones in
  // use, a clear leaves the data and packet counters alone (as OpenSM).
  return extended ? wire::pc_select::kErrors : wire::pc_select::kAll;
}

std::uint32_t over_thresholds(const CounterSet& change, const ErrorThresholds& t) noexcept {
  std::uint32_t bits = 0;
  auto check = [&](Counter c, std::uint32_t threshold) {
    if (threshold != 0 && at(change, c) >= threshold) bits |= 1u << (static_cast<std::size_t>(c) - kFirstError);
  };
  check(Counter::kSymbolErrors, t.symbol_errors);
  check(Counter::kLinkErrorRecovery, t.link_error_recovery);
  check(Counter::kLinkDowned, t.link_downed);
  check(Counter::kRcvErrors, t.rcv_errors);
  check(Counter::kXmitDiscards, t.xmit_discards);
  check(Counter::kXmitWait, t.xmit_wait);
  return bits;
}

bool PortPerf::has_errors() const noexcept {
  for (std::size_t i = kFirstError; i < kCounters; ++i)
    if (i != static_cast<std::size_t>(Counter::kXmitWait) && raw[i] != 0) return true;
  return false;
}

}  // namespace madengine::perfmgr
