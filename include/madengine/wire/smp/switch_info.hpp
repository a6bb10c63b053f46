// SwitchInfo (IBA 14.2.5.4): a switch's forwarding-table capacities and tops,
// default ports, lifetime, enforcement capabilities and the PortStateChange
// flag that tells a light sweep something changed below this switch.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

struct SwitchInfo {
  be16 linear_fdb_cap;     // 0: LFT entries supported
  be16 random_fdb_cap;     // 2
  be16 multicast_fdb_cap;  // 4: MFT entries supported
  be16 linear_fdb_top;     // 6: highest valid LFT index (set by the SM)
  std::uint8_t default_port;                        // 8
  std::uint8_t default_multicast_primary_port;      // 9
  std::uint8_t default_multicast_not_primary_port;  // 10
  std::uint8_t bits11_;    // 11: LifeTimeValue, PortStateChange, OptimizedSLtoVLMappingProgramming
  be16 lids_per_port;      // 12
  be16 partition_enforcement_cap;  // 14: P_Key entries on external ports
  std::uint8_t bits16_;    // 16: enforcement capabilities, EnhancedPort0
  std::uint8_t reserved17;
  be16 multicast_fdb_top;  // 18: highest valid MFT index (IBA 1.2.1+)

  MADENGINE_WIRE_BITS(life_time_value, 11, 0, 5);
  // PortStateChange (14.2.5.4): set by the switch when any port's state
  // changed; writing 1 in a Set clears it, writing 0 leaves it alone. A Set
  // built from a GetResp must therefore decide explicitly what to write here.
  MADENGINE_WIRE_BITS(port_state_change, 11, 5, 1);
  MADENGINE_WIRE_BITS(optimized_sl_to_vl_mapping_programming, 11, 6, 2);
  MADENGINE_WIRE_BITS(inbound_enforcement_cap, 16, 0, 1);
  MADENGINE_WIRE_BITS(outbound_enforcement_cap, 16, 1, 1);
  MADENGINE_WIRE_BITS(filter_raw_inbound_cap, 16, 2, 1);
  MADENGINE_WIRE_BITS(filter_raw_outbound_cap, 16, 3, 1);
  MADENGINE_WIRE_BITS(enhanced_port0, 16, 4, 1);

  // Turns a SwitchInfo read with Get into the payload of a Set: the
  // PortStateChange bit is written as `clear_port_state_change` so a stale 1
  // from the GetResp never clears a change the SM has not yet seen.
  void prepare_for_set(bool clear_port_state_change) noexcept {
    set_port_state_change(clear_port_state_change ? 1 : 0);
  }
};
static_assert(sizeof(SwitchInfo) == 20 && alignof(SwitchInfo) == 1);
static_assert(offsetof(SwitchInfo, linear_fdb_top) == 6);
static_assert(offsetof(SwitchInfo, default_port) == 8);
static_assert(offsetof(SwitchInfo, bits11_) == 11);
static_assert(offsetof(SwitchInfo, lids_per_port) == 12);
static_assert(offsetof(SwitchInfo, partition_enforcement_cap) == 14);
static_assert(offsetof(SwitchInfo, bits16_) == 16);
static_assert(offsetof(SwitchInfo, multicast_fdb_top) == 18);

// LinearFDBTop / MulticastFDBTop value meaning "no entries" for MFTs
// (IBA 14.2.5.4: MulticastFDBTop below 0xc000 disables all MFT entries).
inline constexpr std::uint16_t kMulticastFdbTopNone = 0xbfff;

}  // namespace madengine::wire
