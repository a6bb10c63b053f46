// Sub-byte fields. The IBA numbers bits from the most significant bit of the
// first byte; BitField<ByteOffset, BitOffset, Width> names a field by its
// position within a byte range exactly as the spec's tables do, so a field
// definition can be checked against the spec by eye.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

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

namespace bits_detail {

// The bytes of an alignment-1 wire struct. BitField offsets in attribute and
// record headers are byte offsets from the start of the struct, exactly as
// the spec's tables give them, so accessors address the whole struct.
template <typename T>
inline const std::uint8_t* raw(const T* p) noexcept {
  return reinterpret_cast<const std::uint8_t*>(p);
}
template <typename T>
inline std::uint8_t* raw(T* p) noexcept {
  return reinterpret_cast<std::uint8_t*>(p);
}

// The narrowest unsigned type that holds a field of `Width` bits, so a 4-bit
// accessor returns std::uint8_t and a 24-bit one std::uint32_t.
template <unsigned Width>
using UintFor = std::conditional_t<(Width <= 8), std::uint8_t,
                                   std::conditional_t<(Width <= 16), std::uint16_t, std::uint32_t>>;

}  // namespace bits_detail
}  // namespace madengine::wire

// Declares the accessor pair name()/set_name(v) of a sub-byte field at
// (byte, bit, width) in IBA terms (bit 0 = most significant bit of the byte),
// relative to the start of the enclosing struct. set_ keeps only the low
// `width` bits of v; neighbouring fields are never touched.
#define MADENGINE_WIRE_BITS(name, byte, bit, width)                                                    \
  ::madengine::wire::bits_detail::UintFor<width> name() const noexcept {                               \
    return static_cast<::madengine::wire::bits_detail::UintFor<width>>(                                 \
        ::madengine::wire::BitField<byte, bit, width>::get(::madengine::wire::bits_detail::raw(this))); \
  }                                                                                                    \
  void set_##name(::madengine::wire::bits_detail::UintFor<width> v) noexcept {                         \
    ::madengine::wire::BitField<byte, bit, width>::set(::madengine::wire::bits_detail::raw(this), v);   \
  }                                                                                                    \
  static_assert(true, "")

// The same, also naming the field's BitField type `Type` (for static_asserts
// that it stays inside its member).
#define MADENGINE_WIRE_NAMED_BITS(Type, name, byte, bit, width) \
  using Type = ::madengine::wire::BitField<byte, bit, width>;   \
  MADENGINE_WIRE_BITS(name, byte, bit, width)

// A one-bit flag read and written as bool.
#define MADENGINE_WIRE_FLAG(Type, name, byte, bit)                                                          \
  using Type = ::madengine::wire::BitField<byte, bit, 1>;                                                   \
  bool name() const noexcept { return Type::get(::madengine::wire::bits_detail::raw(this)) != 0; }         \
  void set_##name(bool v) noexcept { Type::set(::madengine::wire::bits_detail::raw(this), v ? 1u : 0u); } \
  static_assert(true, "")
