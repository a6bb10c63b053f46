// The wrong answer --plant-wrong-answer plants on its way to the storm (one
// field of one PathRecord answer), by name: what the options parse and the
// embedded run's host transport (fabric_hosts.hpp) applies.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace madstorm {

// Which field of a PathRecord answer a planted fault changes.
enum class PlantedFault : std::uint8_t { kNone, kMtu, kRate, kPKey, kSl, kDlid, kHopLimit };
const char* to_string(PlantedFault f) noexcept;
// "mtu", "rate", "pkey", "sl", "dlid", "hop-limit"; nullopt otherwise.
std::optional<PlantedFault> planted_fault_from_string(std::string_view s) noexcept;

}  // namespace madstorm
