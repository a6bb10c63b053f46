// SLtoVLMappingTable (IBA 14.2.5.8): 16 four-bit VLs, one per SL, SL0 in the
// high nibble of byte 0. On switches the modifier names the input and output
// port (in << 8 | out); on CAs and routers it is the port.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::uint8_t kSlCount = 16;
inline constexpr std::uint8_t kVl15 = 15;  // the management VL; in a data SL2VL table it means "drop"

struct Sl2VlTable {
  std::array<std::uint8_t, kSlCount / 2> bytes;

  std::uint8_t get_vl(std::uint8_t sl) const noexcept {
    const std::uint8_t b = bytes[(sl & 0xf) / 2];
    return (sl & 1) ? (b & 0xf) : (b >> 4);
  }
  void set_vl(std::uint8_t sl, std::uint8_t vl) noexcept {
    std::uint8_t& b = bytes[(sl & 0xf) / 2];
    b = (sl & 1) ? static_cast<std::uint8_t>((b & 0xf0) | (vl & 0xf))
                 : static_cast<std::uint8_t>((b & 0x0f) | (vl & 0xf) << 4);
  }
};
static_assert(sizeof(Sl2VlTable) == 8 && alignof(Sl2VlTable) == 1);

constexpr std::uint32_t sl2vl_modifier(std::uint8_t in_port, std::uint8_t out_port) noexcept {
  return std::uint32_t{in_port} << 8 | out_port;
}

}  // namespace madengine::wire
