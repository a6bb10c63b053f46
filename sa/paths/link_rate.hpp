// Link rates: from PortInfo's active width and speed codes to bandwidth, and
// to the IBA "rate" code PathRecords carry (IBA 15.2.5.16, Table 205).
#pragma once

#include <cstdint>

namespace madengine::sa {

// Mb/s of data for an active width code (1=1x, 2=4x, 4=8x, 8=12x) and speed
// code (1=SDR, 2=DDR, 4=QDR; ext 1=FDR, 2=EDR when ext_speed != 0).
std::uint32_t link_mbps(std::uint8_t width, std::uint8_t speed, std::uint8_t ext_speed = 0) noexcept;

// The PathRecord rate code for a bandwidth (the largest code not above it).
std::uint8_t rate_code(std::uint32_t mbps) noexcept;
std::uint32_t rate_mbps(std::uint8_t code) noexcept;

}  // namespace madengine::sa
