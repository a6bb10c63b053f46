// MulticastForwardingTable (IBA 14.2.5.11): 32 MLIDs x 16 ports per block,
// each entry a 16-bit port mask. The attribute modifier carries the port
// position (which group of 16 ports, bits 31..28) and the block (bits 8..0).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kMftBlockSize = 32;          // MLIDs per block
inline constexpr std::uint8_t kMftPortsPerPosition = 16;  // bits per port mask
inline constexpr std::uint32_t kMftBlocksMax = 512;       // (0xffff - 0xc000 + 1) / 32
inline constexpr std::uint8_t kMftPositionsMax = 16;      // 16 * 16 = 256 ports

struct MftBlock {
  std::array<be16, kMftBlockSize> port_masks;  // bit i = port position*16 + i

  std::uint16_t mask(std::size_t mlid_in_block) const noexcept {
    return port_masks[mlid_in_block % kMftBlockSize].get();
  }
  void set_mask(std::size_t mlid_in_block, std::uint16_t m) noexcept {
    port_masks[mlid_in_block % kMftBlockSize].set(m);
  }
};
static_assert(sizeof(MftBlock) == kSmpDataSize && alignof(MftBlock) == 1);

struct MftModifier {
  std::uint8_t position = 0;  // 0..15
  std::uint16_t block = 0;    // 0..511
  constexpr bool operator==(const MftModifier&) const noexcept = default;
};

constexpr std::uint32_t mft_modifier(std::uint8_t position, std::uint16_t block) noexcept {
  return (std::uint32_t{position} & 0xfu) << 28 | (std::uint32_t{block} & 0x1ffu);
}
// nullopt when reserved bits 27..9 are set.
constexpr std::optional<MftModifier> parse_mft_modifier(std::uint32_t attr_mod) noexcept {
  if ((attr_mod & 0x0ffffe00u) != 0) return std::nullopt;
  return MftModifier{static_cast<std::uint8_t>(attr_mod >> 28), static_cast<std::uint16_t>(attr_mod & 0x1ffu)};
}

// The block and entry holding a multicast LID (>= 0xc000).
constexpr std::uint16_t mft_block_of(std::uint16_t mlid) noexcept {
  return static_cast<std::uint16_t>((mlid - kMulticastLidBase) / kMftBlockSize);
}
constexpr std::size_t mft_index_of(std::uint16_t mlid) noexcept {
  return (mlid - kMulticastLidBase) % kMftBlockSize;
}

}  // namespace madengine::wire
