// Width/speed/rate tables (IBA 14.2.5.6 PortInfo; 15.2.5.16 PathRecord rate).
#include "sa/paths/link_rate.hpp"

#include <array>

namespace madengine::sa {

namespace {
struct RateEntry {
  std::uint8_t code;
  std::uint32_t mbps;
};
// Rate codes by bandwidth (codes are not ordered by speed on the wire).
constexpr std::array<RateEntry, 17> kRates{{{2, 2500},    {5, 5000},    {3, 10000},   {11, 14000},
                                            {6, 20000},   {15, 25000},  {4, 30000},   {7, 40000},
                                            {12, 56000},  {8, 60000},   {9, 80000},   {16, 100000},
                                            {13, 112000}, {10, 120000}, {14, 168000}, {17, 200000},
                                            {18, 300000}}};
}  // namespace

std::uint32_t link_mbps(std::uint8_t width, std::uint8_t speed, std::uint8_t ext_speed) noexcept {
  std::uint32_t lanes = 0;
  switch (width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    default: return 0;
  }
  std::uint32_t lane = 0;
  if (ext_speed == 1) lane = 14000;       // FDR
  else if (ext_speed == 2) lane = 25000;  // EDR
  else if (speed == 1) lane = 2500;       // SDR
  else if (speed == 2) lane = 5000;       // DDR
  else if (speed == 4) lane = 10000;      // QDR
  else return 0;
  return lanes * lane;
}

std::uint8_t rate_code(std::uint32_t mbps) noexcept {
  std::uint8_t best = 2;
  for (const auto& r : kRates)
    if (r.mbps <= mbps) best = r.code;
  return best;
}

std::uint32_t rate_mbps(std::uint8_t code) noexcept {
  for (const auto& r : kRates)
    if (r.code == code) return r.mbps;
  return 0;
}

}  // namespace madengine::sa
