// ServiceRecord (IBA 15.2.5.14, 176 bytes): a service a port registers with
// the SA (Set), looks up (Get/GetTable) and withdraws (Delete), with a lease
// and 64 bytes of opaque service data viewed as 8/16/32/64-bit words.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "madengine/wire/endian.hpp"

namespace madengine::wire {

inline constexpr std::uint32_t kServiceLeaseInfinite = 0xffffffffu;

namespace service_record_cm {
inline constexpr std::uint64_t kServiceId = 1ull << 0;
inline constexpr std::uint64_t kServiceGid = 1ull << 1;
inline constexpr std::uint64_t kServicePKey = 1ull << 2;
inline constexpr std::uint64_t kReserved = 1ull << 3;
inline constexpr std::uint64_t kServiceLease = 1ull << 4;
inline constexpr std::uint64_t kServiceKey = 1ull << 5;
inline constexpr std::uint64_t kServiceName = 1ull << 6;
// ServiceData8.i is bit 7 + i (i < 16), ServiceData16.i bit 23 + i (i < 8),
// ServiceData32.i bit 31 + i (i < 4), ServiceData64.i bit 35 + i (i < 2).
constexpr std::uint64_t data8(unsigned i) noexcept { return i < 16 ? 1ull << (7 + i) : 0; }
constexpr std::uint64_t data16(unsigned i) noexcept { return i < 8 ? 1ull << (23 + i) : 0; }
constexpr std::uint64_t data32(unsigned i) noexcept { return i < 4 ? 1ull << (31 + i) : 0; }
constexpr std::uint64_t data64(unsigned i) noexcept { return i < 2 ? 1ull << (35 + i) : 0; }
inline constexpr std::uint64_t kServiceData8_0 = 1ull << 7;
inline constexpr std::uint64_t kServiceData16_0 = 1ull << 23;
inline constexpr std::uint64_t kServiceData32_0 = 1ull << 31;
inline constexpr std::uint64_t kServiceData64_0 = 1ull << 35;
inline constexpr std::uint64_t kServiceData64_1 = 1ull << 36;
}  // namespace service_record_cm

struct ServiceRecord {
  be64 service_id;
  Gid service_gid;
  be16 service_pkey;
  be16 reserved;
  be32 service_lease;  // seconds; kServiceLeaseInfinite never expires
  std::array<std::uint8_t, 16> service_key;
  std::array<std::uint8_t, 64> service_name;  // UTF-8, NUL padded
  std::array<std::uint8_t, 16> service_data8;
  std::array<be16, 8> service_data16;
  std::array<be32, 4> service_data32;
  std::array<be64, 2> service_data64;

  // The name up to its first NUL (all 64 bytes when none).
  std::string_view name() const noexcept {
    const auto* p = reinterpret_cast<const char*>(service_name.data());
    std::size_t n = 0;
    while (n < service_name.size() && p[n] != '\0') ++n;
    return {p, n};
  }
  // NUL-pads the name; false (name unchanged) if longer than 64 bytes.
  bool set_name(std::string_view n) noexcept {
    if (n.size() > service_name.size()) return false;
    service_name.fill(0);
    for (std::size_t i = 0; i < n.size(); ++i) service_name[i] = static_cast<std::uint8_t>(n[i]);
    return true;
  }
};
static_assert(sizeof(ServiceRecord) == 176 && alignof(ServiceRecord) == 1);
static_assert(offsetof(ServiceRecord, service_gid) == 8);
static_assert(offsetof(ServiceRecord, service_pkey) == 24);
static_assert(offsetof(ServiceRecord, service_lease) == 28);
static_assert(offsetof(ServiceRecord, service_key) == 32);
static_assert(offsetof(ServiceRecord, service_name) == 48);
static_assert(offsetof(ServiceRecord, service_data8) == 112);
static_assert(offsetof(ServiceRecord, service_data16) == 128);
static_assert(offsetof(ServiceRecord, service_data32) == 144);
static_assert(offsetof(ServiceRecord, service_data64) == 160);

}  // namespace madengine::wire
