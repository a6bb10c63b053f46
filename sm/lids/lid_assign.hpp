// LID assignment: every end port keeps the LID it had (from the guid2lid map,
// else the LID it already carries from a previous SM), and only ports with
// neither get new ones. CA ports get aligned blocks of 2^LMC; switches LMC 0.
// Conflicts are settled deterministically: the map beats a port's current
// LID, and within each, the lower port GUID wins.
#pragma once

#include <cstdint>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "sm/lids/guid2lid_file.hpp"

namespace madengine::sm {

struct LidAssignReport {
  std::uint32_t kept_from_map = 0;
  std::uint32_t kept_current = 0;  // adopted the LID the port already had
  std::uint32_t assigned_new = 0;
  std::uint32_t conflicts = 0;     // ports that lost a LID another port claimed first
  std::uint32_t exhausted = 0;     // ports left without a LID (LID space full)
};

// `current` (optional, same order as fabric.end_ports()): the base LID each
// end port reported in PortInfo before we configured it, 0 if none.
// Updates the fabric's LIDs and `map` (which the caller saves).
LidAssignReport assign_lids(fabric::Fabric& fabric, Guid2Lid& map, std::uint8_t lmc,
                            const std::vector<std::uint16_t>& current = {});

// The GUID a LID assignment is keyed by: a CA port's GUID, a switch's port 0 GUID.
std::uint64_t end_port_guid(const fabric::Fabric& fabric, fabric::EndPort e) noexcept;

}  // namespace madengine::sm
