// VLArbitrationTable (IBA 14.2.5.9): one block of 32 {VL, weight} entries of
// the high- or low-priority arbitration table. The modifier selects the block
// (bits 31..16) and, on switches, the output port (bits 15..0).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kVlArbBlockSize = 32;

// Which 32 entries a block holds.
namespace vl_arb_block {
inline constexpr std::uint16_t kLowLower = 1;   // low priority, entries 0..31
inline constexpr std::uint16_t kLowUpper = 2;   // low priority, entries 32..63
inline constexpr std::uint16_t kHighLower = 3;  // high priority, entries 0..31
inline constexpr std::uint16_t kHighUpper = 4;  // high priority, entries 32..63
}  // namespace vl_arb_block

struct VlArbEntry {
  std::uint8_t vl_byte_;  // bits 0..3 reserved, bits 4..7 VL
  std::uint8_t weight;    // units of 64 bytes; 0 skips the entry

  MADENGINE_WIRE_BITS(vl, 0, 4, 4);
  constexpr bool operator==(const VlArbEntry&) const noexcept = default;
};
static_assert(sizeof(VlArbEntry) == 2 && alignof(VlArbEntry) == 1);

struct VlArbTableBlock {
  std::array<VlArbEntry, kVlArbBlockSize> entries;
};
static_assert(sizeof(VlArbTableBlock) == kSmpDataSize && alignof(VlArbTableBlock) == 1);

constexpr std::uint32_t vl_arb_modifier(std::uint16_t block, std::uint8_t port = 0) noexcept {
  return std::uint32_t{block} << 16 | port;
}
constexpr bool vl_arb_modifier_valid(std::uint32_t attr_mod) noexcept {
  const std::uint32_t block = attr_mod >> 16;
  return block >= vl_arb_block::kLowLower && block <= vl_arb_block::kHighUpper;
}

}  // namespace madengine::wire
