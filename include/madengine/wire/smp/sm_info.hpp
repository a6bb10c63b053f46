// SMInfo (IBA 14.2.5.13): an SM's GUID, SM_Key, activity counter, priority
// and state, exchanged by SMs for master election and handover (IBA 14.4).
// A Set's attribute modifier carries the control packet type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

enum class SmState : std::uint8_t {
  kNotActive = 0,
  kDiscovering = 1,
  kStandby = 2,
  kMaster = 3,
};

constexpr const char* to_string(SmState s) noexcept {
  switch (s) {
    case SmState::kNotActive: return "NOTACTIVE";
    case SmState::kDiscovering: return "DISCOVERING";
    case SmState::kStandby: return "STANDBY";
    case SmState::kMaster: return "MASTER";
  }
  return "unknown";
}

// SMInfo Set attribute modifiers (IBA 14.4.1, Table 183): what the sender
// asks the receiving SM to do.
namespace sm_info_mod {
inline constexpr std::uint32_t kHandover = 1;
inline constexpr std::uint32_t kAcknowledge = 2;
inline constexpr std::uint32_t kDisable = 3;
inline constexpr std::uint32_t kStandby = 4;
inline constexpr std::uint32_t kDiscover = 5;
}  // namespace sm_info_mod

inline constexpr std::uint8_t kSmPriorityMax = 15;

struct SmInfo {
  be64 guid;       // 0: port GUID of the SM
  be64 sm_key;     // 8: zero in a response unless the requester proved it knows the key
  be32 act_count;  // 16: incremented by a master as it works, watched by standbys
  std::uint8_t bits20_;  // 20: Priority, SMState

  MADENGINE_WIRE_BITS(priority, 20, 0, 4);
  MADENGINE_WIRE_BITS(sm_state, 20, 4, 4);

  SmState state() const noexcept { return static_cast<SmState>(sm_state()); }
  void set_state(SmState s) noexcept { set_sm_state(static_cast<std::uint8_t>(s)); }
};
static_assert(sizeof(SmInfo) == 21 && alignof(SmInfo) == 1);
static_assert(offsetof(SmInfo, sm_key) == 8);
static_assert(offsetof(SmInfo, act_count) == 16);
static_assert(offsetof(SmInfo, bits20_) == 20);

// Election order (IBA 14.4.1.1): higher priority wins, then the lower GUID.
constexpr bool sm_outranks(std::uint8_t prio_a, std::uint64_t guid_a, std::uint8_t prio_b,
                           std::uint64_t guid_b) noexcept {
  return prio_a != prio_b ? prio_a > prio_b : guid_a < guid_b;
}

}  // namespace madengine::wire
