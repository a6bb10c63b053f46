// The fabric a state file describes: the port our SM runs on and the subnet
// prefix it manages. The SA journal and guid2lid carry it, so a daemon
// started on another port or fabric neither restores nor vouches for state
// that is not its own (an SM port GUID of 0: a file that does not say, as
// an OpenSM-written guid2lid).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace madengine::sa {

struct FabricIdentity {
  std::uint64_t sm_port_guid = 0;
  std::uint64_t subnet_prefix = 0;

  bool known() const noexcept { return sm_port_guid != 0; }
  bool operator==(const FabricIdentity&) const noexcept = default;
};

// "SM port 0x0002c90300000001, subnet prefix 0xfe80000000000000" (logs).
inline std::string to_string(const FabricIdentity& id) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "SM port 0x%016llx, subnet prefix 0x%016llx",
                static_cast<unsigned long long>(id.sm_port_guid), static_cast<unsigned long long>(id.subnet_prefix));
  return buf;
}

}  // namespace madengine::sa
