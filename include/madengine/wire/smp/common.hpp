// Shared pieces of the SMP attribute codecs in this folder: the accessor
// plumbing (from wire/bits.hpp), and the common attribute-modifier
// shapes (IBA 14.2.5) that several attributes reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine::wire::smp_detail {

// The SMP headers' names for the shared accessor plumbing (wire/bits.hpp,
// which also defines MADENGINE_WIRE_BITS).
using bits_detail::raw;
template <unsigned Width>
using UintFor = bits_detail::UintFor<Width>;

}  // namespace madengine::wire::smp_detail

namespace madengine::wire {

// Largest port number an IBA node can have (NumPorts is 8 bits, 255 is
// reserved for the "all ports" notion in some attributes).
inline constexpr std::uint8_t kPortNumMax = 254;

// The LID ranges the forwarding tables cover (IBA 4.1.3, Table 2).
inline constexpr std::uint16_t kUnicastLidMax = 0xbfff;
inline constexpr std::uint16_t kMulticastLidBase = 0xc000;
inline constexpr std::uint16_t kMulticastLidMax = 0xfffe;  // 0xffff is the permissive LID

}  // namespace madengine::wire
