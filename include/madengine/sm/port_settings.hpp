// What bring-up writes into every port's PortInfo beside its LIDs: the
// subnet prefix and timeout, virtual lanes, timeouts and the link's enabled
// widths and speeds, with OpenSM's option names and defaults. One struct
// from the configuration file's [sm] keys to the wire (NodeConfig, SmConfig
// and BringupConfig carry it whole; each default is here once).
#pragma once

#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::sm {

struct PortSettings {
  // PortInfo.GIDPrefix of every end port ("fe80::/64" or "0xfe80000000000000",
  // OpenSM's subnet_prefix, in the file): the SA's GIDs use it, and accept it
  // and link-local fe80::/10.
  std::uint64_t subnet_prefix = wire::kDefaultSubnetPrefix;
  std::uint8_t subnet_timeout = wire::kDefaultSubnetTimeout;  // PortInfo.SubnetTimeOut, also PathRecord's packet life
  // OperationalVLs: the lesser of this code (OpenSM's max_op_vls; 4 = VL0-7,
  // what layered routing plans for) and both ends' VLCap.
  std::uint8_t max_op_vls = 4;
  std::uint8_t packet_life_time = 18;  // SwitchInfo.LifeTimeValue: 4.096 us * 2^18
  // Switch external ports (IBA 14.2.5.6 HOQLife, VLStallCount): toward a
  // switch, and toward a CA ("leaf").
  std::uint8_t head_of_queue_lifetime = 0x12;
  std::uint8_t leaf_head_of_queue_lifetime = 0x10;
  std::uint8_t vl_stall_count = 7;
  std::uint8_t leaf_vl_stall_count = 7;
  // LinkWidthEnabled, LinkSpeedEnabled, LinkSpeedExtEnabled as OpenSM writes
  // them (force_link_width, force_link_speed, force_link_speed_ext): a mask,
  // "set to supported" (255, 15, 31: the defaults; written where enabled
  // and supported differ), 30 to disable extended speeds, or 0 to leave the
  // port's value alone.
  std::uint8_t force_link_width = wire::link_width::kSetToSupported;
  std::uint8_t force_link_speed = wire::link_speed::kSetToSupported;
  std::uint8_t force_link_speed_ext = wire::link_speed_ext::kSetToSupported;
};

}  // namespace madengine::sm
