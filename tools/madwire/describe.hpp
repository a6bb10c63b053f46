// Turns one MAD's bytes into a JSON description of its fields: the common
// header, the class layout (LID-routed or directed-route SMP, SA with RMPP),
// and the attribute payload where madengine has a codec for it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

namespace madengine::tools {

nlohmann::ordered_json describe_mad(std::span<const std::uint8_t> bytes);

}  // namespace madengine::tools
