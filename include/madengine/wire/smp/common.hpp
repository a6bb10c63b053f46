// Shared plumbing for the SMP attribute codecs in this folder: byte access to
// a wire struct for its BitField accessors, and the common attribute-modifier
// shapes (IBA 14.2.5) that several attributes reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine::wire::smp_detail {

// The bytes of an alignment-1 wire struct. BitField offsets in the attribute
// headers are byte offsets from the start of the attribute, exactly as the
// spec's tables give them, so accessors address the whole struct.
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
using UintFor = std::conditional_t<
    (Width <= 8), std::uint8_t,
    std::conditional_t<(Width <= 16), std::uint16_t, std::uint32_t>>;

}  // namespace madengine::wire::smp_detail

// Declares the accessor pair name()/set_name(v) of a sub-byte field at
// (byte, bit, width) in IBA terms (bit 0 = most significant bit of the byte),
// relative to the start of the enclosing attribute. set_ keeps only the low
// `width` bits of v; neighbouring fields are never touched.
#define MADENGINE_WIRE_BITS(name, byte, bit, width)                                        \
  ::madengine::wire::smp_detail::UintFor<width> name() const noexcept {                   \
    return static_cast<::madengine::wire::smp_detail::UintFor<width>>(                     \
        ::madengine::wire::BitField<byte, bit, width>::get(                                \
            ::madengine::wire::smp_detail::raw(this)));                                    \
  }                                                                                        \
  void set_##name(::madengine::wire::smp_detail::UintFor<width> v) noexcept {             \
    ::madengine::wire::BitField<byte, bit, width>::set(::madengine::wire::smp_detail::raw(this), v); \
  }                                                                                        \
  static_assert(true, "")

namespace madengine::wire {

// Largest port number an IBA node can have (NumPorts is 8 bits, 255 is
// reserved for the "all ports" notion in some attributes).
inline constexpr std::uint8_t kPortNumMax = 254;

// The LID ranges the forwarding tables cover (IBA 4.1.3, Table 2).
inline constexpr std::uint16_t kUnicastLidMax = 0xbfff;
inline constexpr std::uint16_t kMulticastLidBase = 0xc000;
inline constexpr std::uint16_t kMulticastLidMax = 0xfffe;  // 0xffff is the permissive LID

}  // namespace madengine::wire
