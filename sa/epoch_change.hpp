// What changed from one published epoch to the next, derived once per
// publication by the SnapshotStore (snapshot.hpp) and read by everyone who
// reacts to it: the SA's state core (Reports of traps 64/65 to InformInfo
// subscribers) and the node's events (notices, port changes).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "madengine/wire/smp/notice.hpp"

namespace madengine::sa {

struct Snapshot;

// A port whose LID or state differs between the two epochs, by (node GUID,
// port number): a switch's ports 0..N, a CA's linked ports. State 0: absent
// from that epoch (IBA PortState codes otherwise).
struct PortDelta {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint8_t port_num = 0;
  bool is_switch = false;
  std::uint16_t old_lid = 0, new_lid = 0;
  std::uint8_t old_state = 0, new_state = 0;
};

struct EpochChange {
  std::uint64_t epoch = 0;       // the epoch published
  std::uint64_t from_epoch = 0;  // the one before it
  // False for the first publication a store sees: nothing to compare with,
  // so nothing is reported (read the fabric instead).
  bool compared = false;
  // End-port GUIDs (a switch's port 0, linked CA ports) in service now and
  // not before, and the reverse, in fabric order.
  std::vector<std::uint64_t> gained, lost;
  std::vector<PortDelta> ports;
  // Traps 64 (GID in service) for `gained`, then 65 (out of service) for
  // `lost` (IBA 13.4.8.2, as OpenSM's port and drop managers send them),
  // issued by the master SM of the new epoch.
  std::vector<wire::Notice> gid_traps;
};

// The change from `before` (null: none published) to `after`; both indexed.
EpochChange diff_epochs(const Snapshot* before, const Snapshot& after);

// A change computed ahead of its publication (on a compute thread, beside
// the snapshot's indexes), against the epoch then current. The store uses
// it only if that epoch is still current when `after` is published; else
// it derives the change itself.
struct PreparedChange {
  std::weak_ptr<const Snapshot> base;  // weak: an old epoch is not kept alive for it
  bool computed = false;
  EpochChange change;
};
PreparedChange prepare_change(const std::shared_ptr<const Snapshot>& base, const Snapshot& after);

}  // namespace madengine::sa
