// NodeDescription (IBA 14.2.5.2): 64 bytes of UTF-8 text naming the node,
// NUL-padded; a description of exactly 64 bytes has no terminator, so the
// text is never read past the attribute.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace madengine::wire {

inline constexpr std::size_t kNodeDescriptionSize = 64;

struct NodeDescription {
  std::array<std::uint8_t, kNodeDescriptionSize> bytes;

  // The text up to the first NUL (or all 64 bytes when there is none).
  std::string_view text() const noexcept {
    const char* p = reinterpret_cast<const char*>(bytes.data());
    std::size_t n = 0;
    while (n < bytes.size() && p[n] != '\0') ++n;
    return {p, n};
  }
  std::string str() const { return std::string(text()); }

  // Stores `s` truncated to 64 bytes and pads the rest with NULs. Returns
  // false when `s` had to be truncated.
  bool set_text(std::string_view s) noexcept {
    const std::size_t n = std::min(s.size(), bytes.size());
    bytes.fill(0);
    if (n != 0) std::memcpy(bytes.data(), s.data(), n);
    return n == s.size();
  }
};
static_assert(sizeof(NodeDescription) == kNodeDescriptionSize && alignof(NodeDescription) == 1);

}  // namespace madengine::wire
