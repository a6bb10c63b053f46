// LID assignment: every end port keeps a LID it already has (the fabric's
// LIDs are what clients hold, guid2lid what this SM handed out), and only
// ports with neither get new ones. CA ports get aligned blocks of 2^LMC;
// switches LMC 0. The map's LIDs of ports a sweep did not find stay theirs
// (as in OpenSM's persistent database): a mute SMA's port still carries its
// LID. Collisions (two subnets joined, a Set lost) are settled
// deterministically by the preference below and, within it, the lower port GUID.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/fabric.hpp"
#include "sm/lids/guid2lid_file.hpp"

namespace madengine::sm {

// Which claim wins when a port's current LID and its guid2lid entry differ.
enum class LidPreference : std::uint8_t {
  // The map: within a mastership, whose earlier sweeps wrote the map. A port
  // carrying another LID missed a Set, or another master wrote it (two
  // subnets joined, before the other hands its part over). Current LIDs
  // come second, after the map's LIDs of absent ports.
  kMap,
  // The current LID: the first numbering of a mastership (a start, a
  // takeover). Another master may have renumbered ports since our map was
  // written; ports that stayed keep the LIDs clients know them by (OpenSM
  // too drops its guid2lid map when it comes out of standby). That
  // numbering is newer than our map: in a collision, a port carrying a LID
  // the map does not give it beats one carrying the map's. The map numbers
  // ports that carry none. An absent port's map LID yields to a port that
  // carries it, but no port is newly given one.
  kCurrent,
};

struct LidAssignReport {
  std::uint32_t kept_from_map = 0;  // got the map's LID
  std::uint32_t kept_current = 0;   // adopted a current LID the map did not give it
  std::uint32_t assigned_new = 0;
  std::uint32_t conflicts = 0;      // ports renumbered: every LID they could claim was another port's
  std::uint32_t exhausted = 0;      // ports left without a LID (LID space full)
};

// `current` (optional, same order as fabric.end_ports()): the base LID each
// end port reported in PortInfo before we configured it, 0 if none.
// Updates the fabric's LIDs and `map` (which the caller saves).
LidAssignReport assign_lids(fabric::Fabric& fabric, Guid2Lid& map, std::uint8_t lmc,
                            const std::vector<std::uint16_t>& current = {},
                            LidPreference prefer = LidPreference::kMap);

// The GUID a LID assignment is keyed by: a CA port's GUID, a switch's port 0 GUID.
std::uint64_t end_port_guid(const fabric::Fabric& fabric, fabric::EndPort e) noexcept;

// The LIDs an end port of `n` holds from `base`: one for a switch, 2^LMC for a CA.
inline LidRange lid_range(const fabric::Node& n, std::uint16_t base) noexcept {
  const unsigned span = n.is_switch() ? 1u : 1u << n.lmc;
  return {base, static_cast<std::uint16_t>(base + span - 1)};
}

}  // namespace madengine::sm
