// PlantedFault names, as --plant-wrong-answer takes them.
#include "lib/planted_fault.hpp"

#include <array>
#include <cstddef>

namespace madstorm {

namespace {
constexpr std::array<const char*, 7> kFaultNames = {"none", "mtu", "rate", "pkey", "sl", "dlid", "hop-limit"};
}

const char* to_string(PlantedFault f) noexcept { return kFaultNames[static_cast<std::size_t>(f)]; }

std::optional<PlantedFault> planted_fault_from_string(std::string_view s) noexcept {
  for (std::size_t i = 1; i < kFaultNames.size(); ++i)
    if (s == kFaultNames[i]) return static_cast<PlantedFault>(i);
  return std::nullopt;
}

}  // namespace madstorm
