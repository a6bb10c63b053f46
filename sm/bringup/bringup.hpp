// Bring-up (IBA 14.4): programs what routing and LID assignment decided.
// Per switch SwitchInfo (LinearFDBTop, LifeTimeValue) and the LFT blocks that
// differ from what the switch holds; PortInfo on every linked port and every
// end port (LID/LMC, master SM, timeouts, M_Key, NeighborMTU, OperationalVLs,
// partition enforcement); P_Key tables of end ports and of
// switch ports toward CAs (sm/partitions: only changed blocks); then
// INIT -> ARMED -> ACTIVE.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/task.hpp"
#include "fabric/cow_vector.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "sm/discovery/discovery.hpp"
#include "madengine/sm/port_settings.hpp"
#include "sm/mkeys/mkey_book.hpp"
#include "sm/partitions/partition_plan.hpp"
#include "sm/qos/qos_options.hpp"
#include "sm/routing/routing.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm {

struct BringupConfig {
  std::uint8_t port_num = 1;  // local port SMPs leave from
  std::uint16_t sm_lid = 0;
  std::uint8_t sm_sl = 0;
  PortSettings ports;  // subnet prefix and timeout among them
  std::uint64_t m_key = 0;
  std::uint16_t m_key_lease_period = 0;
  std::uint8_t m_key_protect_bits = 0;
  // The keys ports hold (discovery's learned ones merged in): a port whose
  // key or protection differs from the above is re-keyed first, with the key
  // it holds, then everything uses `m_key`; updated as ports take the new
  // key. Null: every SMP carries `m_key`. Must outlive bring_up().
  MKeyBook* keys = nullptr;
  // The P_Keys every end port must hold; null: the default partition, every
  // port a full member (OpenSM without a partitions file). Must outlive bring_up().
  const PartitionPlan* partitions = nullptr;
  bool allow_both_pkeys = false;
  PartEnforce part_enforce = PartEnforce::kBoth;  // on switch ports toward CAs (OpenSM's part_enforce)
  // QoS on: PortInfo.VLHighLimit of every linked port from its class's
  // tables (sm/qos); null: left as the port has it. Must outlive bring_up().
  const QosConfig* qos = nullptr;
};

// What the SM has programmed, kept across sweeps so a re-sweep writes only
// what changed.
struct ProgrammedState {
  struct SwitchLft {
    std::uint16_t top = 0;  // LinearFDBTop we last wrote
    // Per block, a 64-bit hash of what the switch acknowledged holding (0:
    // unknown): 8 bytes a block instead of a copy of all of them (190 MB of
    // copies at 43,904 hosts).
    std::vector<std::uint64_t> blocks;
  };
  std::unordered_map<std::uint64_t, SwitchLft> lft;  // by switch node GUID
  // Whole P_Key tables (every block) as read or written, by (node GUID,
  // port): CA ports, switch port 0 and switch external ports (a switch's
  // ports share its GUID). A port not here is read before it is written.
  std::map<std::pair<std::uint64_t, std::uint8_t>, fabric::CowVector<std::uint16_t>> pkeys;  // shared with the snapshots
  // The PortInfo last written and acknowledged, by (node GUID, port):
  // SMAs need not echo every field (ibsim keeps no SubnetTimeOut or
  // NeighborMTU), so "unchanged" is judged against what we wrote.
  std::map<std::pair<std::uint64_t, std::uint8_t>, wire::PortInfo> port_written;
};

struct BringupReport {
  std::uint32_t switch_info_sets = 0;
  std::uint32_t lft_blocks_written = 0;
  std::uint32_t lfts_lost = 0;  // switches holding our LinearFDBTop over other blocks (reset mid-programming): rewritten
  std::uint32_t port_info_sets = 0;
  std::uint32_t ports_armed = 0;
  std::uint32_t ports_activated = 0;
  std::uint32_t pkey_sets = 0;        // P_Key blocks written
  std::uint32_t pkey_reads = 0;       // P_Key blocks read (ports not known yet)
  std::uint32_t pkeys_dropped = 0;    // P_Keys that did not fit a port's table
  std::uint32_t enforcement_off = 0;  // switch ports toward a CA that cannot hold its P_Keys
  std::uint32_t client_reregisters = 0;  // PortInfo Sets with ClientReregister, after the publication (client_reregister.hpp)
  std::uint32_t rekeyed = 0;             // end ports given the SM's M_Key (or its protection) this bring-up
  std::uint32_t errors = 0;  // failed Sets or read-backs that disagree
  std::uint32_t links_lost = 0;  // PortInfo Sets answered DOWN on a port discovery saw linked: sweep again
  std::uint64_t smps = 0;
};

// Programs the fabric in `d` (LIDs already assigned); updates each port's
// `info` and `state` in d.fabric to what the SMAs answered.
Task<BringupReport> bring_up(SmpQueue& q, DiscoveryResult& d, const RoutingResult& routes, const BringupConfig& cfg,
                             ProgrammedState& state);

}  // namespace madengine::sm
