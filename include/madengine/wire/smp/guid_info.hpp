// GUIDInfo (IBA 14.2.5.5): one block of 8 port GUIDs (index 0 of block 0 is
// the port's own GUID, the rest are alias GUIDs assigned by the SM). The
// block number is the attribute modifier.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kGuidInfoBlockSize = 8;

struct GuidInfoBlock {
  std::array<be64, kGuidInfoBlockSize> guids;

  std::uint64_t guid(std::size_t i) const noexcept { return guids[i % kGuidInfoBlockSize].get(); }
  void set_guid(std::size_t i, std::uint64_t g) noexcept { guids[i % kGuidInfoBlockSize].set(g); }
};
static_assert(sizeof(GuidInfoBlock) == kSmpDataSize && alignof(GuidInfoBlock) == 1);

constexpr std::uint32_t guid_info_modifier(std::uint32_t block) noexcept { return block; }
// Blocks needed for GUIDCap (PortInfo) entries.
constexpr std::uint32_t guid_info_blocks_for(std::uint32_t guid_cap) noexcept {
  return (guid_cap + kGuidInfoBlockSize - 1) / kGuidInfoBlockSize;
}

}  // namespace madengine::wire
