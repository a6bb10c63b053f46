// Big-endian wire integers (be16, be32, be64) and the byte-array types (Gid)
// every wire struct is built from. They have alignment 1 so wire structs can
// mirror the IBA layout byte for byte, and never convert implicitly to or from
// host integers: a missing byte swap is a compile error, not a wrong LID.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace madengine::wire {

template <typename T>
class BigEndian {
  static_assert(std::is_unsigned_v<T>);

 public:
  constexpr BigEndian() noexcept = default;
  static constexpr BigEndian from(T host) noexcept {
    BigEndian v;
    v.set(host);
    return v;
  }
  constexpr T get() const noexcept {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | bytes_[i]);
    return v;
  }
  constexpr void set(T host) noexcept {
    for (std::size_t i = sizeof(T); i-- > 0;) {
      bytes_[i] = static_cast<std::uint8_t>(host & 0xff);
      host = static_cast<T>(host >> 8);
    }
  }
  constexpr bool operator==(const BigEndian&) const noexcept = default;
  constexpr const std::array<std::uint8_t, sizeof(T)>& bytes() const noexcept { return bytes_; }

 private:
  std::array<std::uint8_t, sizeof(T)> bytes_{};
};

using be16 = BigEndian<std::uint16_t>;
using be32 = BigEndian<std::uint32_t>;
using be64 = BigEndian<std::uint64_t>;

static_assert(sizeof(be16) == 2 && alignof(be16) == 1);
static_assert(sizeof(be32) == 4 && alignof(be32) == 1);
static_assert(sizeof(be64) == 8 && alignof(be64) == 1);
static_assert(std::is_trivially_copyable_v<be64>);

// A 128-bit GID as it sits on the wire: subnet prefix then interface id (GUID).
struct Gid {
  be64 prefix;
  be64 guid;
  constexpr bool operator==(const Gid&) const noexcept = default;
};
static_assert(sizeof(Gid) == 16 && alignof(Gid) == 1);

inline constexpr std::uint64_t kDefaultSubnetPrefix = 0xfe80000000000000ull;

// fe80::/10 (IBA 4.1.1): a link-local GID names a port of the local subnet
// whatever the subnet's configured prefix, and SAs accept it as such.
constexpr bool is_link_local_prefix(std::uint64_t prefix) noexcept {
  return (prefix & 0xffc0000000000000ull) == kDefaultSubnetPrefix;
}

}  // namespace madengine::wire
