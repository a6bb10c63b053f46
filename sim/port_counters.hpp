// The simulated PMA's per-port counters (IBA 16.1.3.5 PortCounters and
// 16.1.4.11 PortCountersExtended): data and packets counted as packets
// cross links (72 four-byte words a MAD, as ibsim counts them), LinkDowned
// when a link goes down, PortRcvErrors when a lossy link drops a packet, and
// any counter raised by the fault injector (Fabric::add_port_counter).
// Counters saturate at their width, as the spec asks of a PMA.
#pragma once

#include <cstdint>

namespace madengine::sim {

// The counters the fault injector may raise.
enum class PortCounter : std::uint8_t {
  kSymbolErrors,
  kLinkErrorRecovery,
  kLinkDowned,
  kRcvErrors,
  kRcvRemotePhysErrors,
  kRcvSwitchRelayErrors,
  kXmitDiscards,
  kXmitConstraintErrors,
  kRcvConstraintErrors,
  kLocalLinkIntegrityErrors,
  kExcessiveBufferOverrunErrors,
  kVl15Dropped,
  kXmitWait,
};

struct SimPortCounters {
  // PortCountersExtended: 64-bit, never cleared by a PortCounters Set.
  std::uint64_t ext_xmit_data = 0, ext_rcv_data = 0, ext_xmit_pkts = 0, ext_rcv_pkts = 0;
  // PortCounters: the 32-bit data and packet counters and the error counters.
  std::uint32_t xmit_data = 0, rcv_data = 0, xmit_pkts = 0, rcv_pkts = 0, xmit_wait = 0;
  std::uint16_t symbol_errors = 0, rcv_errors = 0, rcv_remote_phys_errors = 0, rcv_switch_relay_errors = 0;
  std::uint16_t xmit_discards = 0, vl15_dropped = 0;
  std::uint8_t link_error_recovery = 0, link_downed = 0, xmit_constraint_errors = 0, rcv_constraint_errors = 0;
  std::uint8_t local_link_integrity_errors = 0, excessive_buffer_overrun_errors = 0;  // 4 bits each
};

// A MAD on the wire in PortXmitData units: 256 bytes of MAD plus the LRH,
// BTH, DETH and CRCs, 288 bytes, as ibsim counts it.
inline constexpr std::uint32_t kMadDataWords = 72;

}  // namespace madengine::sim
