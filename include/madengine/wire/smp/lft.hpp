// LinearForwardingTable (IBA 14.2.5.10): one block of 64 output ports for
// LIDs block*64 .. block*64+63. The block number is the attribute modifier.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kLftBlockSize = 64;
// Unicast LIDs 0..0xbfff span 768 blocks.
inline constexpr std::uint32_t kLftBlocksMax = (kUnicastLidMax + 1u) / kLftBlockSize;
// Output port 255 means "drop" (no route) in a linear forwarding table.
inline constexpr std::uint8_t kLftNoPort = 0xff;

struct LftBlock {
  std::array<std::uint8_t, kLftBlockSize> ports;

  std::uint8_t port(std::size_t lid_in_block) const noexcept { return ports[lid_in_block % kLftBlockSize]; }
  void set_port(std::size_t lid_in_block, std::uint8_t p) noexcept { ports[lid_in_block % kLftBlockSize] = p; }
};
static_assert(sizeof(LftBlock) == kLftBlockSize && alignof(LftBlock) == 1);

constexpr std::uint32_t lft_block_of(std::uint16_t lid) noexcept { return lid / kLftBlockSize; }
constexpr std::size_t lft_index_of(std::uint16_t lid) noexcept { return lid % kLftBlockSize; }
constexpr std::uint32_t lft_modifier(std::uint32_t block) noexcept { return block; }
constexpr bool lft_modifier_valid(std::uint32_t attr_mod) noexcept { return attr_mod < kLftBlocksMax; }

}  // namespace madengine::wire
