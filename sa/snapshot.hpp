// An immutable view of the subnet that the SM publishes after each routing
// pass (one epoch) and the SA answers every query from: the fabric with its
// raw attributes, the LFTs, the path-record database and lookup indexes.
// Publication is one atomic pointer swap, so the SA never waits for the SM.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fabric/cow_vector.hpp"
#include "fabric/fabric.hpp"
#include "fabric/lft.hpp"
#include "madengine/wire/smp/guid_info.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/smp/sl2vl.hpp"
#include "madengine/wire/smp/vl_arb.hpp"
#include "sa/epoch_change.hpp"
#include "sa/guid_index.hpp"
#include "sa/partition_index.hpp"
#include "sa/paths/path_db.hpp"
#include "sa/qos_policy_view.hpp"

namespace madengine::sa {

// The master SM as the SA reports it (SMInfoRecord, ClassPortInfo, Reports).
struct SmIdentity {
  std::uint64_t port_guid = 0;
  std::uint16_t lid = 0;
  std::uint8_t sl = 0;
  std::uint8_t priority = 0;
  std::uint8_t state = 0;  // SmState
  std::uint64_t sm_key = 0;
  std::uint32_t act_count = 0;
  std::uint8_t subnet_timeout = wire::kDefaultSubnetTimeout;
};

// Per-port tables the SM read or programmed; empty vectors mean "not read"
// (the SA then assumes the default partition, IBA 10.9.1.2, for P_Key checks).
// Shared with the SM's caches and the epochs before (copy on write).
struct PortTables {
  fabric::CowVector<std::uint16_t> pkeys;           // the whole P_Key table, index order
  fabric::CowVector<wire::Sl2VlTable> sl2vl;        // by input port (CAs: one entry, input port 0)
  fabric::CowVector<wire::VlArbTableBlock> vl_arb;  // blocks 1..4 at [0..3]
  fabric::CowVector<std::uint64_t> guids;           // GUIDInfo (alias GUIDs), index order
};

// A switch's multicast forwarding table: per MLID (from 0xc000) the ports it forwards to.
struct SwitchMft {
  fabric::NodeId node = fabric::kNoNode;
  std::vector<std::vector<std::uint16_t>> masks;  // [mlid - 0xc000][position], 16 ports per position
};

// What a PathRecord needs of an end port, by LID, in one 32-byte entry: the
// port's GUID (a GID lookup checks it here), its partition set and its
// path-database entry (copied from `paths` by index()), so each end of a
// path is one cache line.
struct alignas(32) LidEntry {
  std::uint64_t port_guid = 0;
  std::uint16_t pkey_set = PartitionIndex::kNoSet;  // partition_index's set of its P_Key table
  bool present = false;                             // a port has this LID
  bool is_switch = false;
  std::uint8_t port0_mtu = 0;   // switches: port 0's MTUCap
  std::uint8_t port0_rate = 0;  // switches: port 0's active rate code
  std::uint8_t port = 0;
  std::uint8_t reserved = 0;
  PathDb::Attach path;  // as paths.attach(lid)
};
static_assert(sizeof(LidEntry) == 32);

// The MFTs change with multicast joins and leaves, not with routing, so they
// are published on their own: the SM replaces the view after writing MFT
// blocks without building a new epoch (node ids are the epoch's).
class MftTables {
 public:
  MftTables() : v_(std::make_shared<const std::vector<SwitchMft>>()) {}
  std::shared_ptr<const std::vector<SwitchMft>> load() const noexcept { return v_.load(std::memory_order_acquire); }
  void store(std::vector<SwitchMft> v) {
    v_.store(std::make_shared<const std::vector<SwitchMft>>(std::move(v)), std::memory_order_release);
  }

 private:
  std::atomic<std::shared_ptr<const std::vector<SwitchMft>>> v_;
};

// An epoch's per-port tables, [node][port]; may be empty or shorter than
// the fabric. The SM replaces them inside the epoch once it has read
// GUIDInfo, SL2VL and VLArb after subnet up (a new epoch would copy the
// fabric and the path database for them). P_Key tables are the same
// buffers in every version: the partition index is built from them, and a
// P_Key span read from one version stays valid while the epoch lives.
class PortTableView {
 public:
  using Rows = std::vector<std::vector<PortTables>>;
  PortTableView() : PortTableView(Rows{}) {}
  explicit PortTableView(Rows r) : v_(std::make_shared<const Rows>(std::move(r))) {}
  // Hold what load() gave while reading from it.
  std::shared_ptr<const Rows> load() const noexcept { return v_.load(std::memory_order_acquire); }
  void store(Rows r) {
    v_.store(std::make_shared<const Rows>(std::move(r)), std::memory_order_release);
    version_.fetch_add(1, std::memory_order_relaxed);
  }
  // How many times the tables were replaced in this epoch.
  std::size_t version() const noexcept { return version_.load(std::memory_order_relaxed); }
  // Port `port` of node `n` in `rows`; nullptr: not there.
  static const PortTables* find(const Rows& rows, fabric::NodeId n, std::uint8_t port) noexcept {
    return n < rows.size() && port < rows[n].size() ? &rows[n][port] : nullptr;
  }

 private:
  std::atomic<std::shared_ptr<const Rows>> v_;
  std::atomic<std::size_t> version_{0};
};

struct Snapshot {
  std::uint64_t epoch = 0;
  fabric::Fabric fabric;
  std::vector<fabric::Lft> lfts;
  std::uint16_t top_lid = 0;
  PathDb paths;
  SmIdentity sm;
  std::uint64_t subnet_prefix = wire::kDefaultSubnetPrefix;  // as the SM writes it to every end port
  // A GID of this subnet: the configured prefix or a link-local one (as OpenSM accepts them).
  bool local_prefix(std::uint64_t prefix) const noexcept {
    return prefix == subnet_prefix || wire::is_link_local_prefix(prefix);
  }
  std::shared_ptr<PortTableView> port_tables = std::make_shared<PortTableView>();  // never null
  // The partitions the SM defined (partitions.conf) with their SLs; empty:
  // the default partition only.
  std::vector<PartitionInfo> partitions;
  // QoS as the SM set it up: on, the SLs no port class maps to VL15 (a
  // PathRecord carries only those), and the qos-policy (null: none).
  bool qos = false;
  std::uint16_t valid_sl_mask = 0xffff;
  std::shared_ptr<const QosPolicyView> qos_policy;
  std::shared_ptr<MftTables> mfts = std::make_shared<MftTables>();  // never null
  // Indexes built once per epoch by index().
  std::vector<fabric::EndPort> by_lid;  // LID -> end port (every LID of an LMC block)
  std::vector<LidEntry> lid_info;       // LID -> what PathRecords need (same indexing; `paths` as index() found it)
  std::uint64_t lid_paths_generation = 0;  // paths.generation() when index() copied its entries
  std::unordered_map<std::uint64_t, fabric::EndPort> by_port_guid;
  std::unordered_map<std::uint64_t, fabric::NodeId> by_node_guid;
  PartitionIndex partition_index;       // LID -> P_Key set, for PathRecord's partition check
  GuidIndex lid_by_guid;                // port GUID -> base LID, for GID-addressed queries

  // Fills the indexes from `fabric` and `paths`; call before publishing, after both are set.
  void index();
  // The port with this GUID: its base LID and LID count ({0, 0}: none).
  GuidIndex::Lids lids_of_guid(std::uint64_t guid) const noexcept {
    return lid_by_guid.find(guid, [this](std::uint16_t lid) { return lid < lid_info.size() ? lid_info[lid].port_guid : 0; });
  }
  void prefetch_guid(std::uint64_t guid) const noexcept { lid_by_guid.prefetch(guid); }
  // The LID entries' path-database part is paths' own (not replaced since index()).
  bool lid_paths_current() const noexcept { return lid_paths_generation == paths.generation(); }
  GuidIndex::Guess guess_of_guid(std::uint64_t guid) const noexcept { return lid_by_guid.guess(guid); }
  const fabric::EndPort* end_port_by_lid(std::uint16_t lid) const noexcept {
    return lid < by_lid.size() && by_lid[lid].node != fabric::kNoNode ? &by_lid[lid] : nullptr;
  }
};

// A consumer's queue of EpochChanges, filled by the store at each
// publication and emptied by its one consumer (bounded: beyond `max` the
// oldest is dropped and counted). Holding a feed costs the store a push
// per publication; drop it to unsubscribe.
class EpochFeed {
 public:
  explicit EpochFeed(std::size_t max) : max_(max) {}
  // A cheap check before take(): changes are waiting.
  bool pending() const noexcept { return pending_.load(std::memory_order_acquire); }
  // The changes published since the last take, oldest first.
  std::vector<std::shared_ptr<const EpochChange>> take();
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  friend class SnapshotStore;
  void push(const std::shared_ptr<const EpochChange>& c) noexcept;

  const std::size_t max_;
  std::mutex mu_;
  std::deque<std::shared_ptr<const EpochChange>> q_;  // guarded by mu_
  std::atomic<bool> pending_{false};
  std::atomic<std::uint64_t> dropped_{0};
};

// Where the SM (or an embedder's own SM) publishes and the SA reads.
// Readers keep the shared_ptr for the duration of a query (or a batch), so
// an epoch outlives its readers.
//
// Every publication passes here, whoever makes it, so the store is the one
// producer of what changed between epochs (EpochChange: end ports gained
// and lost, traps 64/65, port changes): the SA and the node's events read
// it from their feeds, and no publisher or reader diffs epochs itself. An
// SA without our SM still reports traps 64/65, and with it each change is
// reported once.
class SnapshotStore {
 public:
  static constexpr std::size_t kFeedMax = 1024;

  // Makes `s` (indexed, its epoch set) current and hands each feed its
  // change from the epoch before. `prepared` is that change when it was
  // computed against the epoch still current (off the publisher's core);
  // otherwise it is derived here, on the caller's thread. One publisher at
  // a time. Returns the change (null if it could not be built: out of memory).
  // `replaced`, when given, receives the epoch replaced, for its owner to
  // free where it chooses (a large one takes milliseconds to free).
  std::shared_ptr<const EpochChange> publish(std::shared_ptr<const Snapshot> s, PreparedChange prepared = {},
                                             std::shared_ptr<const Snapshot>* replaced = nullptr) noexcept;
  // Takes the epoch `epoch` back (nothing published then) unless another
  // was published since: a restarted daemon's persisted epoch when its SM
  // turns out not to be the master. Any thread; false: not current.
  bool withdraw(std::uint64_t epoch) noexcept {
    std::shared_ptr<const Snapshot> cur = current_.load(std::memory_order_acquire);
    if (cur == nullptr || cur->epoch != epoch) return false;
    if (!current_.compare_exchange_strong(cur, nullptr, std::memory_order_acq_rel)) return false;
    epoch_.compare_exchange_strong(epoch, 0, std::memory_order_acq_rel);  // a publication since keeps its own
    return true;
  }
  std::shared_ptr<const Snapshot> current() const noexcept { return current_.load(std::memory_order_acquire); }
  // A cheap check for readers that cache the pointer: reload when it changes.
  std::uint64_t epoch() const noexcept { return epoch_.load(std::memory_order_acquire); }
  // A feed of the changes published from now on. Any thread.
  std::shared_ptr<EpochFeed> subscribe(std::size_t max = kFeedMax) const;

 private:
  std::atomic<std::shared_ptr<const Snapshot>> current_;
  std::atomic<std::uint64_t> epoch_{0};
  mutable std::mutex feeds_mu_;
  mutable std::vector<std::weak_ptr<EpochFeed>> feeds_;  // guarded by feeds_mu_
};

}  // namespace madengine::sa
