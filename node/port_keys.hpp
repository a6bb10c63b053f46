// The [sm] keys of sm::PortSettings under OpenSM's names, with their
// ranges: the one list config.cpp reads and config_diff.cpp compares.
#pragma once

#include <array>
#include <cstdint>

#include "madengine/sm/port_settings.hpp"

namespace madengine::node {

struct PortKey {
  const char* name;
  std::uint8_t sm::PortSettings::*member;
  std::int64_t lo, hi;
};

inline constexpr std::array<PortKey, 9> kPortKeys{{
    {"max_op_vls", &sm::PortSettings::max_op_vls, 1, 5},
    {"packet_life_time", &sm::PortSettings::packet_life_time, 0, 31},
    {"head_of_queue_lifetime", &sm::PortSettings::head_of_queue_lifetime, 0, 31},
    {"leaf_head_of_queue_lifetime", &sm::PortSettings::leaf_head_of_queue_lifetime, 0, 31},
    {"vl_stall_count", &sm::PortSettings::vl_stall_count, 0, 7},
    {"leaf_vl_stall_count", &sm::PortSettings::leaf_vl_stall_count, 0, 7},
    // The forced enables also take "set to supported" (255, 15, 31) and 30
    // (extended speeds off); config.cpp refuses the values between.
    {"force_link_width", &sm::PortSettings::force_link_width, 0, 255},
    {"force_link_speed", &sm::PortSettings::force_link_speed, 0, 15},
    {"force_link_speed_ext", &sm::PortSettings::force_link_speed_ext, 0, 31},
}};

}  // namespace madengine::node
