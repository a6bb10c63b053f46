// Sub-byte fields. The IBA numbers bits from the most significant bit of the
// first byte; BitField<ByteOffset, BitOffset, Width> names a field by its
// position within a byte range exactly as the spec's tables do, so a field
// definition can be checked against the spec by eye.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace madengine::wire {

// Reads/writes a field of Width bits (1..32) that starts BitOffset bits (0..7,
// MSB first) into byte ByteOffset of a big-endian byte range.
template <std::size_t ByteOffset, unsigned BitOffset, unsigned Width>
struct BitField {
  static_assert(BitOffset < 8 && Width >= 1 && Width <= 32);
  static constexpr std::size_t kBytes = (BitOffset + Width + 7) / 8;
  static constexpr unsigned kShift = static_cast<unsigned>(kBytes * 8 - BitOffset - Width);
  static constexpr std::uint64_t kMask = (Width == 64 ? ~0ull : ((1ull << Width) - 1));
  static constexpr std::size_t kEnd = ByteOffset + kBytes;

  static constexpr std::uint32_t get(const std::uint8_t* base) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < kBytes; ++i) v = (v << 8) | base[ByteOffset + i];
    return static_cast<std::uint32_t>((v >> kShift) & kMask);
  }
  static constexpr void set(std::uint8_t* base, std::uint32_t value) noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < kBytes; ++i) v = (v << 8) | base[ByteOffset + i];
    v = (v & ~(kMask << kShift)) | ((std::uint64_t{value} & kMask) << kShift);
    for (std::size_t i = kBytes; i-- > 0;) {
      base[ByteOffset + i] = static_cast<std::uint8_t>(v & 0xff);
      v >>= 8;
    }
  }
};

}  // namespace madengine::wire
