// PathRecord and MultiPathRecord answers (IBA 15.2.5.16, 15.2.5.20) from the
// path-record database: endpoints by LID or GID, every LID of an LMC block,
// partition checks, SL (the path's layer when routing layered it), and the
// MTU/rate/packet-lifetime selectors, with the
// values OpenSM gives (packet lifetime = subnet timeout, 0 on loopback;
// hop limit 0 inside the subnet; MTU, rate and lifetime with selector "exactly").
#pragma once

#include <cstdint>
#include <span>

#include "madengine/wire/sa_records.hpp"
#include "sa/server/records.hpp"
#include "sa/snapshot.hpp"

namespace madengine::sa {

struct PathQuery {
  const wire::PathRecord* rec = nullptr;  // the query's record
  std::uint64_t mask = 0;                 // its component mask
  std::uint16_t requester_lid = 0;        // source when the query names none
  std::uint8_t packet_life = 0x12;        // subnet timeout (OpenSM's default 18)
  bool get = false;                       // Get (one record) rather than GetTable
  bool prefetched = false;                // the caller has prefetched its ends (a burst's prefetch pass)
};

// Appends the matching PathRecords; returns an SA status (0 when the query
// was well formed, whatever the count).
std::uint16_t collect_path_records(const Snapshot& snap, const PathQuery& q, RecordSink& sink);

// MultiPathRecord (GetMulti): paths between every SGID and every DGID of the
// request, NumbPath of them at most. Returns an SA status.
std::uint16_t collect_multi_path_records(const Snapshot& snap, const wire::MultiPathRecord& q,
                                         std::span<const wire::Gid> sgids, std::span<const wire::Gid> dgids,
                                         std::uint64_t mask, std::uint8_t packet_life, RecordSink& sink);

// The P_Keys of an end port: its table, or the default partition when the
// snapshot has none for it.
std::span<const std::uint16_t> port_pkeys(const Snapshot& snap, fabric::EndPort e) noexcept;

// The end port a GID names in this subnet, or nullptr.
const fabric::EndPort* end_port_by_gid(const Snapshot& snap, const wire::Gid& gid) noexcept;

}  // namespace madengine::sa
