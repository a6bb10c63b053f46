// Per-port tables the SA answers SL2VL, VLArb and GUIDInfo records from
// (IBA 14.2.5.5, 14.2.5.8, 14.2.5.9): read after bring-up, in one SMP window,
// only for ports whose shape changed since they were last read.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "engine/task.hpp"
#include "sa/snapshot.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm {

struct TablesOptions {
  std::uint8_t port_num = 1;  // local port SMPs leave from
  std::uint64_t m_key = 0;
  // Switch external ports too: VLArb per linked port and SL2VL per (input,
  // output) pair, every input for every linked output, about ports^2 SMPs a switch (2.2 M at
  // 11,664 hosts). Off by default: OpenSM 3.3.23 reads none of them either
  // (with QoS off it neither reads nor programs SL2VL/VLArb anywhere).
  bool switch_ports = false;
};

// What a port looked like when its tables were read; a port is re-read when
// this differs (a link went down and up, VLs or capabilities changed).
struct PortShape {
  std::uint64_t port_guid = 0;
  std::uint64_t peer_guid = 0;
  std::uint8_t peer_port = 0;
  std::uint8_t state = 0;
  std::uint8_t operational_vls = 0;
  std::uint8_t vl_cap = 0;
  std::uint8_t vl_arb_high_cap = 0;
  std::uint8_t vl_arb_low_cap = 0;
  std::uint8_t guid_cap = 0;
  std::uint32_t inputs_hash = 0;  // switches with switch_ports: the input ports read
  bool operator==(const PortShape&) const noexcept = default;
};

// Kept by the SM across sweeps, by (node GUID, port number).
struct TablesCache {
  struct Entry {
    PortShape shape;
    sa::PortTables tables;  // pkeys unused here (bring-up owns P_Keys)
  };
  std::map<std::pair<std::uint64_t, std::uint8_t>, Entry> ports;
};

struct TablesReport {
  std::uint64_t smps = 0;
  std::uint32_t ports_read = 0;   // ports whose tables were (re-)read this sweep
  std::uint32_t ports_kept = 0;   // unchanged ports answered from the cache
  std::uint32_t errors = 0;       // SMPs that failed; the port is re-read next sweep
};

// Reads the tables of changed ports of `f` into `cache` (which also forgets
// ports no longer in the fabric); a CA port by its path in `ca_port_paths`
// ([node][port], as discovery found them). `q` must be idle.
Task<TablesReport> read_port_tables(SmpQueue& q, const fabric::Fabric& f,
                                    const std::vector<std::vector<wire::DrPath>>& ca_port_paths, TablesOptions opts,
                                    TablesCache& cache);

// Copies the cached tables of nodes [first, last) into `rows` ([node][port];
// the caller sizes it to the fabric).
void fill_port_tables(const fabric::Fabric& f, const TablesCache& cache, sa::PortTableView::Rows& rows,
                      fabric::NodeId first, fabric::NodeId last);

}  // namespace madengine::sm
