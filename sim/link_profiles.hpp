// Link profiles: a generated topology's widths and speeds as a hardware
// generation sets them (every port's enable masks, both ends of each link),
// so the same fat tree can be a 4x SDR fabric (ibsim's default), an EDR,
// HDR, NDR or XDR one, NDR with 2x (NDR200) split host ports, or a mixed
// fabric of HDR leaves under NDR spines. Ports that enable NDR or XDR make
// their node today's hardware in the sim (see Fabric::current_hardware).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sim/topology.hpp"

namespace madengine::sim {

// The enable masks of one port (PortInfo codes, as topology files give them).
struct PortSpeeds {
  std::uint8_t width = kDefaultWidthEnabled;
  std::uint8_t speed = kDefaultSpeedEnabled;
  std::uint8_t speed_ext = kDefaultSpeedExtEnabled;
  std::uint8_t speed_ext2 = link_speed_ext2::kNone;
};

// The names link profiles go by: sdr (ibsim's default), qdr, fdr, edr, hdr,
// ndr, xdr (4x everywhere), ndr200 (NDR switches and HCAs, host links split
// to 2x), hdr-ndr (HDR HCAs and leaf switches, NDR spines).
inline constexpr const char* kLinkProfileNames = "sdr | qdr | fdr | edr | hdr | ndr | xdr | ndr200 | hdr-ndr";

// Sets every port's masks by its role: a CA port, a switch port toward a CA
// (a leaf's host port), or a switch port toward a switch. A leaf switch is
// one with a CA on any port. Throws std::invalid_argument naming the
// profile when it is unknown.
void apply_link_profile(Topology& topo, std::string_view profile);

// The masks a generation enables on a 4x port of that speed.
PortSpeeds port_speeds(std::string_view generation);

}  // namespace madengine::sim
