// P_KeyTable (IBA 14.2.5.7): one block of 32 P_Keys. The top bit of a P_Key
// is the membership type (1 = full, 0 = limited); the low 15 bits are the
// partition. The modifier is the block, plus the port number on switches.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kPKeyBlockSize = 32;
inline constexpr std::uint16_t kPKeyMembershipBit = 0x8000;
inline constexpr std::uint16_t kPKeyBaseMask = 0x7fff;
inline constexpr std::uint16_t kDefaultPKey = 0xffff;  // full member of the default partition
inline constexpr std::uint16_t kInvalidPKey = 0x0000;  // an empty entry (IBA 10.9.1.2)

constexpr std::uint16_t pkey_base(std::uint16_t pkey) noexcept { return pkey & kPKeyBaseMask; }
constexpr bool pkey_is_full_member(std::uint16_t pkey) noexcept { return (pkey & kPKeyMembershipBit) != 0; }
// 0x0000 and 0x8000 are both invalid (IBA 10.9.1.2).
constexpr bool pkey_is_valid(std::uint16_t pkey) noexcept { return pkey_base(pkey) != 0; }
// Two P_Keys let packets through when the partitions match and at least one
// side is a full member (IBA 10.9.3).
constexpr bool pkeys_match(std::uint16_t a, std::uint16_t b) noexcept {
  return pkey_is_valid(a) && pkey_base(a) == pkey_base(b) && (pkey_is_full_member(a) || pkey_is_full_member(b));
}

struct PKeyTableBlock {
  std::array<be16, kPKeyBlockSize> pkeys;

  std::uint16_t pkey(std::size_t i) const noexcept { return pkeys[i % kPKeyBlockSize].get(); }
  void set_pkey(std::size_t i, std::uint16_t v) noexcept { pkeys[i % kPKeyBlockSize].set(v); }
};
static_assert(sizeof(PKeyTableBlock) == kSmpDataSize && alignof(PKeyTableBlock) == 1);

// Modifier: bits 15..0 block, bits 31..16 port number (switches only).
constexpr std::uint32_t pkey_table_modifier(std::uint16_t block, std::uint8_t port = 0) noexcept {
  return std::uint32_t{port} << 16 | block;
}
constexpr std::uint16_t pkey_table_block_of(std::uint32_t attr_mod) noexcept {
  return static_cast<std::uint16_t>(attr_mod & 0xffffu);
}
constexpr std::uint16_t pkey_table_port_of(std::uint32_t attr_mod) noexcept {
  return static_cast<std::uint16_t>(attr_mod >> 16);
}
// Blocks needed for PartitionCap (NodeInfo) or PartitionEnforcementCap (SwitchInfo) entries.
constexpr std::uint32_t pkey_blocks_for(std::uint32_t entries) noexcept {
  return (entries + kPKeyBlockSize - 1) / kPKeyBlockSize;
}

}  // namespace madengine::wire
