// Component-mask matching for every SA record: one table per record of its
// components as (bit offset, width) in wire order, reserved fields counted
// (IBA 15.2.5: component i is the i-th field of the record's table), so
// Get/GetTable filtering is one generic masked compare.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace madengine::sa {

struct Component {
  std::uint16_t bit_offset;  // from the record's first byte, MSB first
  std::uint16_t width_bits;
};

struct RecordLayout {
  std::uint16_t attr_id = 0;
  std::uint16_t size = 0;  // bytes of the record on the wire
  std::span<const Component> components;
  // Components a mask may select: bits beyond are an invalid component mask.
  std::uint64_t valid_mask() const noexcept {
    return components.size() >= 64 ? ~0ull : (1ull << components.size()) - 1;
  }
};

// The layout of an SA attribute, or nullptr for attributes without one.
const RecordLayout* record_layout(std::uint16_t attr_id) noexcept;

// True when every component selected by `mask` is equal in `rec` and
// `query` (both at least layout.size bytes). Components also in `bit_masks`
// match when `rec` has every bit `query` sets in them.
bool components_equal(const RecordLayout& layout, std::uint64_t mask, const std::uint8_t* rec,
                      const std::uint8_t* query, std::uint64_t bit_masks = 0) noexcept;

// The components a query of `attr_id` with attribute modifier `attr_mod`
// compares as bit masks (for components_equal): PortInfoRecord's
// CapabilityMask and CapabilityMask2 under AttributeModifier bit 31, the
// only record with such a mode. 0 for every other query.
std::uint64_t bit_mask_components(std::uint16_t attr_id, std::uint32_t attr_mod) noexcept;

// The field of component `i` as an integer (width <= 64), for tests and keys.
std::uint64_t component_value(const RecordLayout& layout, std::size_t i, const std::uint8_t* rec) noexcept;

}  // namespace madengine::sa
