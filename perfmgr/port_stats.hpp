// One port's counters as the performance manager keeps them: the last
// reading as the port holds it, the change since the reading before, the
// running totals across clears, and the rules that act on a reading
// (OpenSM's clear policy, the error thresholds). Pure functions: the
// manager calls them on its core, tests call them directly.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/wire/perf.hpp"
#include "perfmgr/perf_config.hpp"

namespace madengine::perfmgr {

// Counters by index: the data and packet counters (64-bit from
// PortCountersExtended, else PortCounters' 32-bit ones) and the error counters.
enum class Counter : std::uint8_t {
  kXmitData,  // 4-byte words
  kRcvData,
  kXmitPkts,
  kRcvPkts,
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
  kCount,
};
inline constexpr std::size_t kCounters = static_cast<std::size_t>(Counter::kCount);
inline constexpr std::size_t kFirstError = static_cast<std::size_t>(Counter::kSymbolErrors);
// IBA names (as perfquery prints them) and the names of metrics and JSON keys.
const char* iba_name(Counter c) noexcept;
const char* metric_name(Counter c) noexcept;

using CounterSet = std::array<std::uint64_t, kCounters>;

inline std::uint64_t& at(CounterSet& s, Counter c) noexcept { return s[static_cast<std::size_t>(c)]; }
inline std::uint64_t at(const CounterSet& s, Counter c) noexcept { return s[static_cast<std::size_t>(c)]; }

// A reading's values: the error counters from PortCounters; data and packets
// from PortCountersExtended when `extended`, else from PortCounters.
CounterSet from_port_counters(const wire::PortCounters& pc) noexcept;
void take_extended(CounterSet& s, const wire::PortCountersExtended& e) noexcept;

// Change from `prev` to `now`; a counter that went down was cleared by
// someone else (OpenSM calls it an out-of-band clear): its change is `now`.
CounterSet delta(const CounterSet& prev, const CounterSet& now) noexcept;

// OpenSM's perfmgr clear rule: a 32-bit-or-narrower counter at three
// quarters of its range (a 4-bit one at 10) is cleared with a PortCounters
// Set, so it never saturates; the 32-bit data and packet counters count only
// when the port has no PortCountersExtended; 64-bit counters are never
// cleared. Returns the CounterSelect to clear with, 0: none.
std::uint16_t clear_select(const wire::PortCounters& pc, bool extended, bool xmit_wait) noexcept;

// The error counters whose change reaches its threshold (bit i: Counter
// kFirstError + i); 0: the port is healthy.
std::uint32_t over_thresholds(const CounterSet& change, const ErrorThresholds& t) noexcept;

// A port as the last round left it (published, read by the metrics and the admin socket).
struct PortPerf {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint8_t port_num = 0;
  std::uint16_t lid = 0;  // the LID the PMA was asked at (a switch's port 0 LID)
  bool is_switch = false;
  bool extended = false;  // PortCountersExtended read
  std::string description;  // NodeDescription
  std::uint64_t peer_guid = 0;
  std::uint8_t peer_port = 0;
  CounterSet raw{};     // as the port held them at the last read
  CounterSet change{};  // since the read before (0 before a second read)
  CounterSet total{};   // since the manager first read the port, across clears
  double interval_s = 0;  // between the last two reads
  std::uint64_t reads = 0, failures = 0, clears = 0;
  bool over_threshold = false;  // reported, not yet healthy again
  Nanos read_ns = -1;           // engine clock
  // Rates over the last interval (bytes and packets per second).
  double xmit_bytes_per_s() const noexcept { return rate(Counter::kXmitData) * 4; }
  double rcv_bytes_per_s() const noexcept { return rate(Counter::kRcvData) * 4; }
  double rate(Counter c) const noexcept { return interval_s > 0 ? static_cast<double>(at(change, c)) / interval_s : 0; }
  bool has_errors() const noexcept;  // a non-zero error counter (as ibqueryerrors reports)
};

struct PerfTable {
  std::uint64_t round = 0;   // rounds completed
  std::uint64_t epoch = 0;   // the SM epoch the round read
  Nanos round_end_ns = -1;
  std::vector<PortPerf> ports;  // in the epoch's node order, then port
};

}  // namespace madengine::perfmgr
