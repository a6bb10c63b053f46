// Attribute payloads -> JSON for madwire: the SMP attributes discovery reads
// and the SA records clients ask for most. Unknown attributes stay hex.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

namespace madengine::tools {

std::optional<nlohmann::ordered_json> describe_smp_attribute(std::uint16_t attr_id, std::span<const std::uint8_t> data);
std::optional<nlohmann::ordered_json> describe_sa_record(std::uint16_t attr_id, std::span<const std::uint8_t> data);

}  // namespace madengine::tools
