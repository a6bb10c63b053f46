// The one way bytes become wire structs and back. Every wire struct is
// trivially copyable with alignment 1 and a static_assert'ed size, so a
// bounds-checked memcpy is a complete, UB-free codec; semantic checks
// (hop pointers, RMPP states, offsets) live beside each struct as validate().
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

namespace madengine::wire {

template <typename T>
concept WireStruct = std::is_trivially_copyable_v<T> && alignof(T) == 1;

// Decodes a T from the start of `bytes`; nullopt if the input is too short.
template <WireStruct T>
constexpr std::optional<T> decode(std::span<const std::uint8_t> bytes) noexcept {
  if (bytes.size() < sizeof(T)) return std::nullopt;
  T v;
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

// Encodes `v` into the start of `out`; false (and nothing written) if it does not fit.
template <WireStruct T>
constexpr bool encode(const T& v, std::span<std::uint8_t> out) noexcept {
  if (out.size() < sizeof(T)) return false;
  std::memcpy(out.data(), &v, sizeof(T));
  return true;
}

template <WireStruct T>
std::span<const std::uint8_t> as_bytes(const T& v) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}
template <WireStruct T>
std::span<std::uint8_t> as_writable_bytes(T& v) noexcept {
  return {reinterpret_cast<std::uint8_t*>(&v), sizeof(T)};
}

}  // namespace madengine::wire
