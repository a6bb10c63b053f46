// Performance Management (class 0x04, IBA 16.1): the MAD layout, the
// attributes a performance manager reads (ClassPortInfo, PortCounters,
// PortCountersExtended) and the PMA's CapabilityMask bits. The PerfMgt
// header is the common one plus 40 reserved bytes: data starts at byte 64.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/mad.hpp"
#include "madengine/wire/sa/common.hpp"  // detail::field_within

namespace madengine::wire {

inline constexpr std::uint8_t kPerfClassVersion = 1;
inline constexpr std::size_t kPerfDataOffset = 64;  // IBA 16.1.1: 24-byte header, 40 reserved
inline constexpr std::size_t kPerfDataSize = kMadSize - kPerfDataOffset;

namespace perf_attr {
inline constexpr std::uint16_t kClassPortInfo = attr::kClassPortInfo;
inline constexpr std::uint16_t kPortCounters = 0x0012;          // IBA 16.1.3.5
inline constexpr std::uint16_t kPortCountersExtended = 0x001d;  // IBA 16.1.4.11
}  // namespace perf_attr

// ClassPortInfo.CapabilityMask of a PMA (IBA 16.1.2, Table 197 and the
// 1.2.1/1.3 additions), as libibmad names them (IB_PM_*).
namespace perf_cap {
inline constexpr std::uint16_t kAllPortSelect = 1u << 8;
inline constexpr std::uint16_t kExtendedWidth = 1u << 9;        // PortCountersExtended, all eight counters
inline constexpr std::uint16_t kExtendedWidthNoIetf = 1u << 10; // PortCountersExtended, data and packets only
inline constexpr std::uint16_t kXmitWait = 1u << 12;            // PortCounters.PortXmitWait
}  // namespace perf_cap

// PortCounters (attribute 0x0012), 44 bytes. The counters saturate at their
// width; a Set with CounterSelect bits clears those counters (bit 0
// SymbolErrorCounter ... bit 15 PortRcvPkts; CounterSelect2 bit 0 PortXmitWait).
struct PortCounters {
  std::uint8_t reserved0;
  std::uint8_t port_select;
  be16 counter_select;
  be16 symbol_errors;
  std::uint8_t link_error_recovery;
  std::uint8_t link_downed;
  be16 rcv_errors;
  be16 rcv_remote_phys_errors;
  be16 rcv_switch_relay_errors;
  be16 xmit_discards;
  std::uint8_t xmit_constraint_errors;
  std::uint8_t rcv_constraint_errors;
  std::uint8_t counter_select2;
  std::uint8_t integrity_overrun;  // LocalLinkIntegrityErrors 4, ExcessiveBufferOverrunErrors 4
  be16 reserved1;
  be16 vl15_dropped;
  be32 xmit_data;  // in units of 4 bytes (IBA 16.1.3.5)
  be32 rcv_data;
  be32 xmit_pkts;
  be32 rcv_pkts;
  be32 xmit_wait;

  MADENGINE_WIRE_NAMED_BITS(LocalLinkIntegrity, local_link_integrity_errors, 19, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(ExcessiveBufferOverrun, excessive_buffer_overrun_errors, 19, 4, 4);
};
static_assert(sizeof(PortCounters) == 44 && alignof(PortCounters) == 1);
static_assert(offsetof(PortCounters, symbol_errors) == 4);
static_assert(offsetof(PortCounters, rcv_errors) == 8);
static_assert(offsetof(PortCounters, xmit_discards) == 14);
static_assert(offsetof(PortCounters, counter_select2) == 18);
static_assert(offsetof(PortCounters, vl15_dropped) == 22);
static_assert(offsetof(PortCounters, xmit_data) == 24);
static_assert(offsetof(PortCounters, xmit_wait) == 40);
static_assert(detail::field_within<PortCounters::LocalLinkIntegrity>(19, 1));
static_assert(detail::field_within<PortCounters::ExcessiveBufferOverrun>(19, 1));

// CounterSelect bits of PortCounters (IBA 16.1.3.5, Table 201).
namespace pc_select {
inline constexpr std::uint16_t kErrors = 0x0fff;   // every error counter: what a reset clears when the 64-bit data counters exist
inline constexpr std::uint16_t kAll = 0xffff;      // errors and the 32-bit data and packet counters
inline constexpr std::uint8_t kXmitWait2 = 0x01;   // CounterSelect2 bit 0
}  // namespace pc_select

// PortCountersExtended (attribute 0x001D), the 64-bit data and packet
// counters, 72 bytes; they do not saturate in practice and are never cleared here.
struct PortCountersExtended {
  std::uint8_t reserved0;
  std::uint8_t port_select;
  be16 counter_select;
  be32 reserved1;
  be64 xmit_data;  // in units of 4 bytes
  be64 rcv_data;
  be64 xmit_pkts;
  be64 rcv_pkts;
  be64 unicast_xmit_pkts;
  be64 unicast_rcv_pkts;
  be64 multicast_xmit_pkts;
  be64 multicast_rcv_pkts;
};
static_assert(sizeof(PortCountersExtended) == 72 && alignof(PortCountersExtended) == 1);
static_assert(offsetof(PortCountersExtended, xmit_data) == 8);
static_assert(offsetof(PortCountersExtended, multicast_rcv_pkts) == 64);

}  // namespace madengine::wire
