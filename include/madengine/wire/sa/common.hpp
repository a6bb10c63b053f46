// Pieces every SA record shares: the selector/value encoding of MTU, rate and
// packet lifetime (IBA 15.2.5.16), the MTU and rate codes, the multicast
// join states, and the helpers records use to reach their sub-byte fields.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::wire {

// How a query's MTU, rate or packet lifetime compares with the path's
// (IBA 15.2.5.16, Table 205 notes): the top two bits of the byte.
namespace selector {
inline constexpr std::uint8_t kGreaterThan = 0;
inline constexpr std::uint8_t kLessThan = 1;
inline constexpr std::uint8_t kExactly = 2;
inline constexpr std::uint8_t kLargest = 3;  // largest available (smallest for lifetime)
}  // namespace selector

// MTU codes are the Mtu enum of smp/port_info.hpp (IBA 9.6.2); records
// carry them raw in a 6-bit field so unknown codes survive a round trip.

// Static rate codes (IBA 15.2.5.16, Rate component; later codes from the
// extended speed annexes as OpenSM and the kernel use them).
namespace rate_code {
inline constexpr std::uint8_t k2_5Gbps = 2;
inline constexpr std::uint8_t k10Gbps = 3;
inline constexpr std::uint8_t k30Gbps = 4;
inline constexpr std::uint8_t k5Gbps = 5;
inline constexpr std::uint8_t k20Gbps = 6;
inline constexpr std::uint8_t k40Gbps = 7;
inline constexpr std::uint8_t k60Gbps = 8;
inline constexpr std::uint8_t k80Gbps = 9;
inline constexpr std::uint8_t k120Gbps = 10;
inline constexpr std::uint8_t k14Gbps = 11;
inline constexpr std::uint8_t k56Gbps = 12;
inline constexpr std::uint8_t k112Gbps = 13;
inline constexpr std::uint8_t k168Gbps = 14;
inline constexpr std::uint8_t k25Gbps = 15;
inline constexpr std::uint8_t k100Gbps = 16;
inline constexpr std::uint8_t k200Gbps = 17;
inline constexpr std::uint8_t k300Gbps = 18;
inline constexpr std::uint8_t k28Gbps = 19;
inline constexpr std::uint8_t k50Gbps = 20;
inline constexpr std::uint8_t k400Gbps = 21;
inline constexpr std::uint8_t k600Gbps = 22;
inline constexpr std::uint8_t k800Gbps = 23;
inline constexpr std::uint8_t k1200Gbps = 24;
inline constexpr std::uint8_t kMax = k1200Gbps;
}  // namespace rate_code

// MCMemberRecord JoinState bits (IBA 15.2.5.17).
namespace join_state {
inline constexpr std::uint8_t kFullMember = 0x1;
inline constexpr std::uint8_t kNonMember = 0x2;
inline constexpr std::uint8_t kSendOnlyNonMember = 0x4;
inline constexpr std::uint8_t kSendOnlyFullMember = 0x8;  // IBA 1.3
}  // namespace join_state

// A selector+value byte (MTU, rate, packet lifetime): selector in bits 7-6,
// value in bits 5-0.
constexpr std::uint8_t selector_of(std::uint8_t b) noexcept { return b >> 6; }
constexpr std::uint8_t value_of(std::uint8_t b) noexcept { return b & 0x3f; }
constexpr std::uint8_t make_selector_value(std::uint8_t sel, std::uint8_t value) noexcept {
  return static_cast<std::uint8_t>(((sel & 0x3) << 6) | (value & 0x3f));
}

namespace detail {

// True when a BitField lies wholly inside the member [offset, offset + size):
// records static_assert this for every sub-byte field so none can spill into
// its neighbour.
template <typename Field>
constexpr bool field_within(std::size_t offset, std::size_t size) noexcept {
  return Field::kEnd <= offset + size && offset <= Field::kEnd - Field::kBytes;
}

// A record's bytes, for BitFields numbered by the record's own byte offsets
// (the offsets of the IBA tables).
template <typename T>
const std::uint8_t* bytes_of(const T& v) noexcept {
  return reinterpret_cast<const std::uint8_t*>(&v);
}
template <typename T>
std::uint8_t* bytes_of(T& v) noexcept {
  return reinterpret_cast<std::uint8_t*>(&v);
}

}  // namespace detail
}  // namespace madengine::wire
