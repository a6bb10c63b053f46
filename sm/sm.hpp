// SubnetManager: the SM role as coroutine tasks on one engine core. Heavy
// sweep (discovery), LIDs, routing, path database, bring-up, multicast
// forwarding and publication of an SA snapshot; light sweeps and trap 128
// drive re-sweeps; our port's SMA answers SubnGet/SubnSet(SMInfo) and the
// HA agent (sm/ha) decides when we sweep, program, stand by or hand over.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/compute_pool.hpp"
#include "engine/engine.hpp"
#include "engine/scheduler.hpp"
#include "engine/transaction.hpp"
#include "madengine/engine/transport.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sm/routing_hook.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "sa/snapshot.hpp"
#include "sm/bringup/bringup.hpp"
#include "sm/ha/ha_agent.hpp"
#include "sm/ha/replica_client.hpp"
#include "sm/lids/guid2lid_file.hpp"
#include "sm/mcast/mcast.hpp"
#include "sm/mkeys/mkey_book.hpp"
#include "sm/partitions/partition_plan.hpp"
#include "sm/qos/qos_policy.hpp"
#include "sm/qos/qos_program.hpp"
#include "sm/routing/routing.hpp"
#include "sm/smp_queue.hpp"
#include "sm/tables/tables.hpp"

namespace madengine {
class OffloadMailbox;
}

namespace madengine::sm {

// Where the SM is: each heavy sweep's phases as they begin, the publication
// that ends it, and a standby's replica round. A fault point for the
// scenario runner (tools/madsim kills a master in each); unset otherwise.
enum class SmPhase : std::uint8_t { kDiscovery, kLids, kRouting, kProgramming, kPublished, kReplicaCopy };
const char* to_string(SmPhase p) noexcept;

struct SmConfig {
  std::uint16_t core = 0;                  // engine core the SM's tasks run on
  std::uint32_t window_smps_max = 64;      // SMPs in flight (OpenSM: 4)
  std::uint32_t window_per_dest_max = 4;   // in flight to one node (DR path or LID)
  // Links that went down at switches that reported them (trap 128, light
  // sweep) are taken down in the last fabric after reading those switches'
  // ports, instead of walking the whole subnet (OpenSM walks it).
  bool rediscover_link_changes = true;
  std::uint32_t timeout_ms = 200;          // per attempt, OpenSM's default
  std::uint8_t retries = 3;
  std::string guid2lid_path;               // empty: LIDs are not persisted
  std::uint8_t lmc = 0;
  std::vector<RoutingAlgo> routing_chain{RoutingAlgo::kMinHop};  // engines tried in order (sm/routing)
  std::vector<std::uint64_t> root_guids;   // up/down roots (empty: detected)
  unsigned routing_threads = 1;
  unsigned path_db_threads = 1;
  // Where routing, path-database builds and snapshot preparation run
  // (threads beside the MAD cores, so the SA and SMInfo answer throughout),
  // and where the guid2lid file is written (an fsync per save). Null: the SM
  // runs them inline on its core (deterministic simulation). Must outlive the SM.
  ComputePool* compute = nullptr;
  ComputePool* io = nullptr;
  std::uint32_t light_sweep_interval_ms = 10'000;  // OpenSM's default; >= 100 in tests
  // A MASTER asks its own port for PortInfo this often (one SMP that never
  // leaves the HCA) and sweeps when the port's state or LID changed: a
  // cable pulled and put back is seen within this, not at the next light
  // sweep. Port events from the device (kPortChanged, kDeviceBack) act at once.
  std::uint32_t local_port_check_ms = 250;
  // A STANDBY re-discovers the fabric (read-only) to refresh the snapshot it
  // would publish at takeover this often; while it has none (the master has
  // not numbered every port yet) every light sweep interval, a sixth of it at
  // most. Its master is polled meanwhile.
  std::uint32_t standby_refresh_ms = 60'000;
  bool lid_routed_light_sweep = true;              // light sweeps ask switches by LID (false: directed route, as OpenSM)
  std::uint8_t priority = 0;
  std::uint64_t sm_key = 0;                // OpenSM's default is 1: use the same key to co-operate with it
  // HA (sm/ha): a STANDBY polls the master every ha_poll_interval_ms and
  // takes over after ha_poll_retries failed polls (OpenSM: 10 s x 4).
  std::uint32_t ha_poll_interval_ms = 10'000;
  std::uint8_t ha_poll_retries = 4;
  std::uint32_t ha_poll_timeout_ms = 0;    // one poll's wait; 0: the interval, at most 1 s
  // M_Key (IBA 14.2.4; OpenSM's m_key, m_key_lease_period,
  // m_key_protection_level): written to every end port, carried by every
  // SMP. A port holding another key is reached with the key it holds (from
  // guid2mkey_path, or learned from its PortInfo) and re-keyed; one whose key
  // is unknown is reached once its lease runs out (the SM sweeps again every
  // light sweep interval while ports do not answer).
  std::uint64_t m_key = 0;
  std::uint16_t m_key_lease_period = 0;
  std::uint8_t m_key_protect_bits = 0;
  std::string guid2mkey_path;  // empty: what ports hold is not kept across restarts
  std::uint8_t sm_sl = 0;
  PortSettings ports;  // subnet prefix and timeout, VLs, link widths and speeds (madengine/sm/port_settings.hpp)
  sa::McGroupProvider* mcast = nullptr;  // optional; must outlive the SM
  // Partitions (OpenSM's partitions.conf, parsed: sm/partitions); null: no
  // file (the default partition, every port full). set_partitions() replaces it.
  std::shared_ptr<const PartitionConfig> partitions;
  bool allow_both_pkeys = false;                  // OpenSM's allow_both_pkeys
  PartEnforce part_enforce = PartEnforce::kBoth;  // OpenSM's part_enforce
  // The multicast groups the partitions create (IPoIB broadcast, mgid
  // lines), after every plan that changes them; the daemon points it at
  // SaServer::set_partition_groups. Called on the SM's core.
  std::function<void(std::vector<wire::McMemberRecord>)> on_partition_groups;
  // QoS (sm/qos: OpenSM's qos_* options built into tables); null: off, the
  // SM writes no SL2VL/VLArb table (as OpenSM without -Q) and the SA reports
  // what the ports hold. On: every port's tables and VLHighLimit are written.
  std::shared_ptr<const QosConfig> qos;
  // With QoS on, the qos-policy (sm/qos/qos_policy.hpp) that gives
  // PathRecords their SL and limits; null: none. set_qos_policy() replaces it.
  std::shared_ptr<const QosPolicy> qos_policy;
  // Also read SL2VL/VLArb of switch external ports (ports^2 SMPs a switch;
  // see sm/tables). End ports' tables and GUIDInfo are always read.
  bool read_switch_port_tables = false;
  // Notices for the SA's InformInfo subscribers (IBA 13.4.8, 14.2.5.1): every
  // trap an SMA sends us (after we repress it). Called on the SM's core; the
  // daemon sets it to SaServer::forward_notice (the SM does not link the SA).
  // Traps 64/65 are not among them: the store derives them from each
  // publication (sa/epoch_change.hpp), whoever publishes.
  std::function<void(const wire::Notice&)> on_notice;
  // HA state handed on (docs/ha.md). With restore_sa_state set (the
  // daemon passes SaServer::restore_state; the SM does not know the SA), a
  // STANDBY copies the master's SA state (ServiceRecord, MCMemberRecord and
  // InformInfoRecord GetTables with the SM_Key) right after it becomes
  // STANDBY and then every ha_replica_interval_ms; on takeover the last
  // image, if not older than ha_replica_max_age_ms, goes to
  // restore_sa_state before the first publication, and clients are not asked
  // to reregister. The age is how much older the image is than the master's
  // last answered poll (the takeover itself comes a polling budget later):
  // 0 means 3 replica intervals. sa_state_restored: the owner restored fresh state before
  // start (warm restart journal), so our first mastership does not ask either.
  std::function<void(sa::SaStateImage)> restore_sa_state;
  std::uint32_t ha_replica_interval_ms = 1000;
  std::uint32_t ha_replica_max_age_ms = 0;
  bool sa_state_restored = false;
  // The epoch the owner published before start (a persisted epoch of the
  // last run, docs/ha.md): ours are numbered after it, so the SA's cores,
  // which reload a snapshot when the epoch number changes, see each of ours.
  std::uint64_t first_epoch = 0;
  // An embedder's routing (routing_hook.hpp) in place of
  // `routing`: called on the compute pool with each heavy sweep's fabric.
  RoutingHook routing_hook;
  // Every SMInfo state change of this SM (sm/ha), on the SM's core.
  std::function<void(wire::SmState from, wire::SmState to)> on_transition;
  // Each SmPhase as it begins, on the SM's core (simulation fault point).
  std::function<void(SmPhase)> on_phase;
};

// The replica age a takeover still vouches for (ha_replica_max_age_ms, or its default).
std::uint64_t replica_max_age_ms(const SmConfig& c) noexcept;

// Counts and timings of one heavy sweep.
struct SweepStats {
  std::uint64_t smps = 0;  // SMPs submitted by the whole sweep (retries not counted)
  std::uint64_t discovery_smps = 0;
  std::uint64_t tables_smps = 0;       // SL2VL, VLArb, GUIDInfo reads (sm/tables)
  std::uint32_t tables_ports_read = 0; // ports whose tables were (re-)read
  std::uint32_t gid_traps = 0;         // traps 64/65 of this sweep's publications (the store's changes)
  std::uint32_t nodes = 0, switches = 0, cas = 0, links = 0;
  std::uint32_t new_nodes = 0, vanished_nodes = 0;
  std::uint32_t lids_new = 0;
  std::uint32_t discovery_errors = 0;
  bool rediscovered = false;          // from the last fabric and the changed switches, not a walk of the subnet
  std::string walk_reason;            // why a re-discovery was not enough (empty: none was tried)
  BringupReport bringup;
  std::uint32_t mft_blocks_written = 0;
  std::uint16_t top_lid = 0;
  std::string routing_engine;        // the engine of the chain that routed, or "routing hook"
  std::uint8_t routing_vls = 0;      // SLs/VLs its layers use (identity SL2VL)
  std::uint32_t lids_rerouted = 0;   // LIDs routed this sweep (incremental: only those a change touched)
  QosReport qos;        // SL2VL/VLArb writes (QoS on)
  double tables_s = 0;  // after subnet up: not in programming_s or total_s
  double discovery_s = 0, lids_s = 0, routing_s = 0, path_db_s = 0, programming_s = 0, total_s = 0;
  bool ok = false;
  std::string error;
};

// Routes and the path database of one fabric, as a compute job returns them.
struct Routed {
  RoutingResult routes;
  sa::PathDb paths;
  double routing_s = 0, path_db_s = 0;  // wall time on the compute thread
};

// What a routing pass gives an epoch's snapshot (SubnetManager::assemble_snapshot).
struct SnapshotParts {
  fabric::Fabric fabric;
  std::vector<fabric::Lft> lfts;
  std::uint16_t top_lid = 0;
  sa::PathDb paths;
  sa::SmIdentity sm;  // the master as the SA reports it
};

// A snapshot assembled and indexed, with its change from the epoch the store
// held while it was prepared; not yet published.
struct AssembledSnapshot {
  std::shared_ptr<sa::Snapshot> snap;
  sa::PreparedChange change;
};

// The publication a sweep re-routes from (incremental routing, path
// database reuse): its snapshot (fabric, LFTs, paths) and its routing
// without the LFTs, which the snapshot holds. Immutable, so a compute job
// can read it while the SM core goes on.
struct RouteBase {
  std::shared_ptr<const sa::Snapshot> snap;
  std::shared_ptr<const RoutingResult> routes;
};

// The compute job itself: a pure function of its arguments; `base` null:
// every destination routed, the path database built. With `hook` (not
// empty), the embedder's hook routes instead of the engines `ropts` names,
// every destination each time (`base` is not used).
Routed route_fabric(const fabric::Fabric& f, const RoutingOptions& ropts, unsigned shards, unsigned path_db_threads,
                    const RouteBase* base = nullptr, const RoutingHook* hook = nullptr);

// What the SM remembers of its own mastership; the SMInfo state itself is
// the HA agent's (sm/ha).
struct SmRoleState {
  bool mastership_new = true;  // no sweep has completed since we last became master
  bool sa_state_decided = false;  // this mastership's SA state and ClientReregister are settled
  bool reregister = true;         // this mastership asks clients to reregister (it cannot vouch for their state)
  bool ask_all = false;           // every client is asked to reregister, until a sweep programs and asks cleanly
  std::uint16_t vouched_sm_lid = 0;  // the master whose replica this mastership restored (its clients need not reregister)
  // No sweep of this mastership has numbered the subnet yet, or our port was
  // gone since (another SM may have numbered it meanwhile): ports keep the
  // LIDs they carry before our guid2lid map (sm/lids, LidPreference::kCurrent).
  bool lids_from_fabric = true;
  // Made master by a HANDOVER: the handing master lives on, so the SA state
  // is copied from it once more before this mastership vouches for it.
  bool handed_by_live_master = false;
};

struct SmStatus {
  bool subnet_up = false;
  wire::SmState state = wire::SmState::kNotActive;
  std::uint16_t sm_lid = 0;    // the master's LID: ours as master, else what our port's MasterSMLID says
  std::uint16_t port_lid = 0;  // our own port's LID
  std::uint64_t epoch = 0;
  std::uint64_t heavy_sweeps = 0;        // heavy sweeps that brought the subnet up
  std::uint64_t port_table_sweeps = 0;  // of those, ended: their port tables (read after subnet up) in the SA
  std::uint64_t light_sweeps = 0;
  std::uint64_t last_light_smps = 0;
  std::uint64_t last_light_lid_routed = 0;  // of those, SwitchInfo Gets sent LID-routed
  std::uint64_t traps = 0;
  std::uint64_t sminfo_answered = 0;
  // HA: transitions so far, the SM being polled (0: none), and the agent's counters.
  std::uint64_t ha_transitions = 0;
  std::uint64_t polled_guid = 0;
  ha::HaCounters ha;
  std::uint64_t sweeps_not_programmed = 0;  // heavy sweeps that left the fabric alone (standby, handing over)
  std::uint64_t early_publications = 0;     // snapshots published before programming (takeover, warm restart)
  std::uint64_t prepared_publications = 0;  // of those, a standby's prepared snapshot published at takeover
  std::uint64_t prepared_snapshots = 0;     // snapshots a standby prepared from its own sweeps
  // HA state handed on: replication rounds (standby) and what takeovers did.
  ha::ReplicaCounters replica;
  std::uint64_t sa_state_handed_on = 0;     // masterships that restored a replica into the SA
  std::uint64_t reregister_masterships = 0; // masterships that asked clients to reregister
  std::uint64_t vouched_masterships = 0;    // masterships that did not (replica or restored journal)
  // MASTER whose SA holds the clients' registrations: it vouched for them,
  // and every client it had to ask (all, or some ports) was asked. The node
  // journals only then.
  bool sa_state_current = false;
  SweepStats last_heavy;
  // As refresh_status() last copied them from the SM's core (the daemon
  // asks every second): the SM's SMP transactions and the standby's replica.
  TxnCounters smps;                     // sent (retries included), retried, timed out...
  std::int64_t replica_age_ms = -1;     // age of the last complete replica image; -1: none
  std::uint8_t priority = 0;            // our SMInfo priority (set_priority changes it)
};

struct HeavySweep;  // heavy_sweep.hpp

class SubnetManager {
 public:
  // Registers the SM's pollers and handlers on `engine` (before start()) and
  // spawns its task; the transport must be added to the engine and opened
  // with AgentSpec{.smi = true, .is_sm = true}. Throws on a bad config.
  // Stop the engine before destroying the SM.
  SubnetManager(Engine& engine, Transport& transport, SmConfig config, sa::SnapshotStore& store);
  ~SubnetManager();
  SubnetManager(const SubnetManager&) = delete;
  SubnetManager& operator=(const SubnetManager&) = delete;

  // Any thread.
  SmStatus status() const;
  // Waits until `pred(status())` holds or the timeout passes.
  bool wait_for(const std::function<bool(const SmStatus&)>& pred, std::chrono::milliseconds timeout) const;
  bool wait_subnet_up(std::chrono::milliseconds timeout) const {
    return wait_for([](const SmStatus& s) { return s.subnet_up; }, timeout);
  }
  // A heavy sweep that walks the whole subnet (no re-discovery from the last fabric).
  void request_heavy_sweep() noexcept {
    walk_requested_.store(true, std::memory_order_relaxed);
    heavy_requested_.store(true, std::memory_order_relaxed);
  }
  // A light sweep now, as the interval would start it (any thread; a master only).
  void request_light_sweep() noexcept { light_requested_.store(true, std::memory_order_relaxed); }
  // Periodic sweeping on or off (any thread), as OpenSM's console `sweep
  // on|off`: off, the light sweeps of the interval and the retries of a
  // sweep that met errors stop, for maintenance on the fabric; traps, a
  // change of our own port and requested sweeps still sweep.
  void set_periodic_sweeps(bool on) noexcept { periodic_sweeps_.store(on, std::memory_order_relaxed); }
  bool periodic_sweeps() const noexcept { return periodic_sweeps_.load(std::memory_order_relaxed); }
  // Turns of the SM's task loop (idle steps, sweeps started): liveness for a
  // watchdog. Any thread.
  std::uint64_t loop_turns() const noexcept { return loop_turns_.load(std::memory_order_relaxed); }
  // Engine time the heavy sweep in progress started; -1 when none runs. Any thread.
  Nanos sweep_started_ns() const noexcept { return sweep_started_ns_.load(std::memory_order_relaxed); }

  // The SM's core only (an operator's command posted there, CommandMailbox):
  // our SMInfo priority from now on (IBA 14.4.1.1: a master sweeps again and
  // hands over to a standby that now outranks it; a standby that now
  // outranks its master tells it with trap 144).
  void set_priority(std::uint8_t priority) noexcept;
  std::uint8_t priority() const noexcept { return cfg_.priority; }
  // Our own SMInfo identity (port GUID, priority, SM_Key).
  const ha::SmIdentity& identity() const noexcept { return ha_->machine().self(); }
  // The other SMs as the last sweep or poll found them.
  const std::vector<ha::FoundSm>& peers() const noexcept { return ha_->peers(); }
  // Copies what only the core may read (SMP counters, replica age, HA counters) into status().
  void refresh_status() noexcept;
  // Any thread: the partitions the next heavy sweep programs (it is
  // requested now); null: none. The caller parsed and checked the file.
  void set_partitions(std::shared_ptr<const PartitionConfig> cfg);
  // Any thread: the qos-policy the next publication applies (a heavy sweep
  // is requested); null: none.
  void set_qos_policy(std::shared_ptr<const QosPolicy> policy);

 private:
  class ResponseHook;
  class SmaHandler;
  class PortWatch;
  Task<void> run();
  Task<void> heavy_sweep();
  // The heavy sweep's phases (heavy_sweep.cpp), in order; a Task<bool>
  // that returns false ends the sweep.
  Task<bool> sweep_discovery(HeavySweep& h);
  Task<bool> sweep_election(HeavySweep& h);
  void sweep_lids(HeavySweep& h);
  Task<bool> sweep_routing(HeavySweep& h);
  Task<bool> sweep_early_publication(HeavySweep& h);
  BringupConfig sweep_bringup_config(HeavySweep& h);
  Task<void> sweep_programming(HeavySweep& h);
  Task<bool> sweep_publication(HeavySweep& h);
  Task<void> sweep_reregistration(HeavySweep& h);
  void sweep_subnet_up(HeavySweep& h);
  Task<void> sweep_port_tables(HeavySweep& h);
  void sweep_done(HeavySweep& h);
  // A heavy sweep ends without programming: says why, sweeps again later.
  void sweep_failed(SweepStats& st, std::string error);
  // A heavy sweep that waited through a loss of our device stops: says so
  // and asks for a fresh sweep that walks the subnet.
  void stale_sweep();
  RoutingOptions routing_options() const;
  // Routes and the path database of `f`, computed on the compute pool.
  Task<std::optional<Routed>> route(std::shared_ptr<const fabric::Fabric> f, bool incremental);
  // The one assembly of an epoch's snapshot (a sweep's early and final
  // publications, a standby's prepared one): `parts` and the tables as
  // programmed, on this core; its indexes and its change from the store's
  // current epoch on the compute pool. Nullopt: cancelled.
  Task<std::optional<AssembledSnapshot>> assemble_snapshot(SnapshotParts parts);
  // `a` becomes the next epoch through the store, which derives its change
  // (traps 64/65 included) for the SA and the node; returns its traps 64/65.
  std::uint32_t publish(AssembledSnapshot a);
  sa::SmIdentity sm_identity(const LocalPort& lp, std::uint16_t lid, wire::SmState state, std::uint32_t act_count) const noexcept;
  void save_guid2lid_async();
  // M_Keys (sm_mkeys.cpp): the book from guid2mkey, what discovery learned,
  // and the file written (by the I/O pool) when it changed.
  void load_mkeys();
  bool mkeys_in_use() const noexcept { return cfg_.m_key != 0 || !mkeys_.keys.empty(); }
  void learn_mkeys(const DiscoveryResult& d);
  void save_mkeys_async();
  Task<void> prepare_warm(fabric::Fabric f, std::vector<std::uint16_t> current_lids, LocalPort lp);
  bool publish_warm(const fabric::Fabric& f, const std::vector<std::uint16_t>& current_lids);
  Task<bool> light_sweep();
  // A switch reported a link-state change (trap 128 from its LID): the next
  // heavy sweep re-reads it; an issuer that is not a known switch makes it walk.
  void note_changed_switch(std::uint16_t lid);
  // Our own port's PortInfo (state, LID) as a master left it; true when it changed.
  Task<bool> local_port_changed();
  Task<void> replica_loop();
  // Starts a replica round against the SA at `master_lid` (false: refused).
  bool start_replica_round(std::uint16_t master_lid, Nanos timeout_ns);
  // One last round from the master that handed us the subnet (bounded by
  // the replica interval), so registrations since the standby's last round
  // are not lost.
  Task<void> final_replica_round();
  bool settle_sa_state(const DiscoveryResult& d);
  // Why the fabric `d` found shows another SM numbered it since our guid2lid
  // was written (empty: nothing shows it).
  std::string numbered_elsewhere(const DiscoveryResult& d) const;
  // The CA ports whose clients this sweep asks to reregister besides a
  // mastership's or an absorption's all (sa_state.cpp): into reregister_ports_.
  void note_reregister_ports(const fabric::Fabric& f, std::uint16_t sm_lid);
  // Drops what we wrote to nodes that have reset since (sm/reset_nodes.cpp).
  void forget_reset_nodes(const fabric::Fabric& f);
  // We hand our part to another master (subnets joined): remember its ports.
  void remember_handed_part();
  // STANDBY, after a sweep: master_lid_unique_ from what it found.
  void note_master_lid(const DiscoveryResult& d);
  Task<std::uint32_t> program_mcast(const fabric::Fabric& f);
  void on_sm_mad(MadBuf& buf, CoreContext& ctx) noexcept;
  std::uint16_t shown_sm_lid() const noexcept;  // SmStatus::sm_lid: ours as master, else our port's MasterSMLID
  void update_status(const std::function<void(SmStatus&)>& fn);
  void publish_ha_status();
  bool sweeping() const noexcept {
    return ha_->state() == wire::SmState::kMaster || ha_->state() == wire::SmState::kDiscovering;
  }
  // The snapshot's port tables (as read and as programmed), partitions, QoS
  // and MFTs; nodes a slice at a time, the core yielded between slices.
  Task<void> fill_tables(const fabric::Fabric& f, sa::Snapshot& snap);
  // The port tables for `f` from the SM's caches: the P_Key tables as
  // programmed, or those of `pkeys_of` (an epoch's rows) when given; false:
  // cancelled.
  Task<bool> port_table_rows(const fabric::Fabric& f, const sa::PortTableView::Rows* pkeys_of,
                             sa::PortTableView::Rows& rows);
  // The partitions applied to `f` (sm_partitions.cpp): kept in plan_, its
  // notes logged and its groups handed on when they change.
  const PartitionPlan& plan_partitions_for(const fabric::Fabric& f, std::uint64_t sm_port_guid);
  std::vector<sa::SwitchMft> mft_view(const fabric::Fabric& f) const;  // what mft_programmed_ holds, by node
  void notify(const wire::Notice& n) noexcept;
  void phase(SmPhase p) const {
    if (cfg_.on_phase) cfg_.on_phase(p);
  }
  static void mcast_changed(void* self) noexcept;

  Engine& engine_;
  Transport& transport_;
  SmConfig cfg_;
  sa::SnapshotStore& store_;
  // Pools: cfg_'s, or inline ones of our own. The mailbox hears finished
  // compute jobs on our core (offload.hpp).
  std::unique_ptr<ComputePool> own_compute_, own_io_;
  ComputePool* compute_ = nullptr;
  ComputePool* io_ = nullptr;
  std::shared_ptr<OffloadMailbox> mailbox_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<TransactionManager> txn_;
  std::unique_ptr<SmpQueue> queue_;
  std::unique_ptr<ResponseHook> hook_;
  std::unique_ptr<SmaHandler> sma_;
  std::unique_ptr<PortWatch> port_watch_;
  std::unique_ptr<ha::HaAgent> ha_;
  std::unique_ptr<ha::ReplicaClient> replica_;  // when cfg_.restore_sa_state is set

  // Owner core only.
  Guid2Lid guid2lid_;
  Guid2Lid guid2lid_saved_;  // as last handed to the I/O pool
  // STANDBY: the LID each end port carried at our last refresh sweep (the
  // master's numbering, prepared snapshot or not). A takeover keeps the
  // LIDs of ports it does not find free of new owners with it.
  Guid2Lid master_lids_;
  sa::FabricIdentity fabric_;      // our SM port and subnet prefix: what our state files name
  bool guid2lid_name_due_ = false; // the file does not name our fabric yet: the next save writes it
  MKeyBook mkeys_;
  Guid2Mkey mkeys_saved_;    // as last handed to the I/O pool
  bool unreachable_ = false; // the last heavy sweep had ports that did not answer (M_Key in use: try again)
  ProgrammedState programmed_;
  std::map<std::pair<std::uint64_t, MftKey>, wire::MftBlock> mft_programmed_;
  TablesCache tables_;
  QosProgrammed qos_programmed_;
  std::shared_ptr<const PartitionConfig> partitions_;  // as the last plan used it
  std::shared_ptr<const PartitionPlan> plan_;
  std::shared_ptr<const QosPolicy> qos_policy_;                // as the last publication used it
  bool qos_policy_taken_ = false;                               // cfg_.qos_policy was taken over
  std::shared_ptr<const sa::QosPolicyView> qos_view_;          // resolved against plan_
  // The SA's QoS settings for a publication (snapshot.qos, valid SLs, the policy).
  void fill_qos(const fabric::Fabric& f, sa::Snapshot& snap);
  std::vector<wire::McMemberRecord> groups_sent_;
  bool groups_sent_once_ = false;
  std::shared_ptr<const sa::Snapshot> current_;
  // STANDBY: a snapshot computed from our own sweep of the master's fabric
  // (its LIDs, our routes), published the moment a takeover sweep finds the
  // same LIDs, so the SA answers before routing is recomputed.
  std::shared_ptr<sa::Snapshot> warm_;
  sa::PreparedChange warm_change_;  // warm_'s change from the epoch current when it was prepared
  // The routing of current_ (and of warm_) without its LFTs, which the
  // snapshot holds: the next sweep re-routes incrementally from them (null:
  // it routes everything).
  std::shared_ptr<const RoutingResult> current_routes_, warm_routes_;
  SmRoleState role_;
  // CA ports whose clients the next publication asks to reregister
  // (note_reregister_ports), kept until a sweep programs and asks cleanly.
  std::unordered_set<std::uint64_t> reregister_ports_;
  // The CA ports of the part we handed to another master (two subnets
  // joined). Their clients registered with our SA; until that master asks
  // them to reregister, no replica of its SA holds them. Our next
  // mastership asks them, whatever state it restores.
  std::unordered_set<std::uint64_t> handed_part_;
  // A takeover's first sweep: the end ports our last standby refresh found
  // numbered by the master. A CA port outside it joined the master's subnet
  // since (a part it was handed, say); whether that master asked its
  // clients before it died, no replica tells: they are asked again.
  Guid2Lid seen_as_standby_;
  std::uint16_t replica_lid_ = 0;  // the SA the standby's replica rounds copy (the master's LID)
  // STANDBY: the master's LID as our last sweep found it, when no other end
  // port carried it (0: none, or not unique). Two subnets joined, a LID may
  // name a port in each part until one master numbers both: an SA query to
  // it may reach another SA (even our own), whose state vouches for nothing.
  std::uint16_t master_lid_unique_ = 0;
  std::uint16_t sm_lid_ = 0;
  std::uint8_t local_port_ = 1;  // as NodeInfo.LocalPortNum reported it (0 on a switch)
  std::uint64_t epoch_ = 0;
  std::uint64_t traps_ = 0;
  std::uint64_t sminfo_answered_ = 0;
  bool replica_now_ = false;       // became STANDBY: replicate without waiting for the interval
  bool resweep_ = false;           // the last heavy sweep as master had discovery or bring-up errors: sweep again
  bool sa_state_restored_ = false; // cfg_.sa_state_restored, until our first mastership

  std::atomic<bool> heavy_requested_{true};
  std::atomic<bool> light_requested_{false};  // request_light_sweep() (any thread)
  std::atomic<bool> periodic_sweeps_{true};   // set_periodic_sweeps() (any thread)
  std::atomic<std::uint64_t> loop_turns_{0};     // written by the SM's core only
  std::atomic<Nanos> sweep_started_ns_{-1};      // written by the SM's core only
  // The next heavy sweep walks the whole subnet; unless set, it re-discovers
  // from the last fabric the switches in changed_switches_ (node GUIDs, from
  // traps 128 and light sweeps; sm/discovery/rediscover.hpp).
  std::atomic<bool> walk_requested_{true};  // request_heavy_sweep() (any thread)
  std::string walk_reason_;                  // the SM's own finding that the next sweep must walk
  std::vector<std::uint64_t> changed_switches_;
  std::uint8_t local_state_seen_ = 0;  // our port's PortState after our last sweep (0: unknown)
  bool local_check_now_ = false;       // a port event: check our port without waiting
  // Losses of our port's device: a sweep that waited through one (its SMPs
  // held until the device came back) read a fabric another SM may have
  // renumbered meanwhile, and stops before it numbers or programs.
  std::uint32_t device_losses_ = 0;
  Nanos device_lost_ns_ = -1;  // when our device was last lost: the master's life after it is unseen
  TaskHandle run_task_;                // run(): woken from its idle sleep by traps and SMInfo Sets
  bool idle_ = false;                  // run() sleeps between its checks
  std::atomic<bool> mcast_dirty_{false};
  std::mutex partitions_mu_;
  std::shared_ptr<const PartitionConfig> partitions_next_;  // guarded by partitions_mu_
  std::shared_ptr<const QosPolicy> qos_policy_next_;         // guarded by partitions_mu_
  std::atomic<bool> qos_policy_changed_{false};
  std::atomic<bool> partitions_changed_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  SmStatus status_;
};

}  // namespace madengine::sm
