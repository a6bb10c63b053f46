// Records of a GetTable (and GetMulti/GetTraceTable) response payload. The
// SA lays records out AttributeOffset 8-byte words apart (IBA 15.2.1.1,
// 15.4); these helpers index them with bounds checks, so a short or lying
// payload yields nullopt/false instead of a read past the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "madengine/wire/codec.hpp"

namespace madengine::wire {

// Bytes between records for an AttributeOffset.
constexpr std::size_t table_stride(std::uint16_t attr_offset) noexcept {
  return std::size_t{attr_offset} * 8;
}

// How many whole records of the stride `attr_offset` fit in `payload_bytes`
// (the reassembled payload after the SA header, trimmed to its length).
constexpr std::size_t table_record_count(std::size_t payload_bytes, std::uint16_t attr_offset) noexcept {
  return attr_offset == 0 ? 0 : payload_bytes / table_stride(attr_offset);
}

// The `i`-th record's bytes (one stride); nullopt if `attr_offset` is 0 or
// the record does not lie wholly inside `payload`.
inline std::optional<std::span<const std::uint8_t>> table_record_bytes(
    std::span<const std::uint8_t> payload, std::uint16_t attr_offset, std::size_t i) noexcept {
  if (i >= table_record_count(payload.size(), attr_offset)) return std::nullopt;
  return payload.subspan(i * table_stride(attr_offset), table_stride(attr_offset));
}

// Decodes the `i`-th record as a T; nullopt if out of range or if the
// stride is too small to hold a T (a peer using the wrong AttributeOffset).
template <WireStruct T>
std::optional<T> table_record(std::span<const std::uint8_t> payload, std::uint16_t attr_offset,
                              std::size_t i) noexcept {
  if (table_stride(attr_offset) < sizeof(T)) return std::nullopt;
  const auto bytes = table_record_bytes(payload, attr_offset, i);
  if (!bytes) return std::nullopt;
  return decode<T>(*bytes);
}

// Writes `rec` as the `i`-th record, zeroing the padding up to the stride;
// false (nothing written) if out of range or the stride is too small.
template <WireStruct T>
bool set_table_record(std::span<std::uint8_t> payload, std::uint16_t attr_offset, std::size_t i,
                      const T& rec) noexcept {
  const std::size_t stride = table_stride(attr_offset);
  if (stride < sizeof(T) || i >= table_record_count(payload.size(), attr_offset)) return false;
  auto slot = payload.subspan(i * stride, stride);
  for (std::size_t b = sizeof(T); b < stride; ++b) slot[b] = 0;
  return encode(rec, slot);
}

}  // namespace madengine::wire
