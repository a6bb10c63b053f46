// The Subnet Administrator server: registers MadHandlers for class 0x03
// (SubnAdm) on an Engine and answers Get, GetTable, GetMulti, Set and Delete
// from the SnapshotStore's current epoch and the SA's mutable state; sends
// Reports to InformInfo subscribers: the notices forwarded to it and traps
// 64/65 of each epoch change the store publishes (epoch_change.hpp). Each
// core admits queries into a bounded queue (BUSY beyond it, and beyond a
// requester's share), answers a retried TID once, and sends multi-MAD
// answers with its own RMPP sender.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/compute_pool.hpp"
#include "engine/dispatch.hpp"
#include "engine/engine.hpp"
#include "engine/rmpp.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sa/snapshot.hpp"
#include "sa/state/journal.hpp"
#include "sa/state/mutable_state.hpp"
#include "sa/mcast_groups.hpp"

namespace madengine::sa {

struct SaServerConfig {
  std::uint16_t state_core = 0;             // owner of services, groups and subscriptions (Set/Delete, Reports)
  std::uint32_t queue_max = 512;            // admitted queries waiting on one core
  std::uint32_t requester_queued_max = 64;  // one requester's share of a core's queue
  std::uint32_t burst_max = 64;             // queries answered per poll
  std::uint32_t dedup_slots = 1024;         // per core; a power of two
  Nanos dedup_ttl_ns = 2 * kNanosPerSecond; // how long an answer is kept for a retried TID
  std::uint8_t resp_time_value = 16;        // ClassPortInfo RespTimeValue (what OpenSM 3.3.23 reports)
  RmppConfig rmpp{.transfers_max = 16, .segments_max = 4096};
  RequestOptions report{.timeout_ms = 200, .retries = 3};
  std::uint32_t mc_groups_max = 16384;
  bool consolidate_ipv6_snm_req = false;  // OpenSM's option: solicited-node groups share an MLID (mutable_state.hpp)
  bool install_response_hooks = true;
  // One-segment GetTable answers carry an RMPP DATA header (First|Last), as
  // OpenSM's do; false sends them as plain MADs (RMPP inactive).
  bool rmpp_one_segment = true;       // false: the owner calls on_response() from its own hook
  // Where an epoch a core lets go of is freed: the last reference to a large
  // fabric's snapshot takes 10 ms and more to free, too long for a core that
  // answers queries. nullptr: the core frees it.
  ComputePool* release_pool = nullptr;
};

// Record types the counters are kept for.
enum class SaRecordKind : std::uint8_t {
  kClassPortInfo, kInformInfo, kNode, kPortInfo, kSl2Vl, kSwitchInfo, kLft, kMft, kSmInfo, kLink, kGuidInfo,
  kService, kPKeyTable, kPath, kVlArb, kMcMember, kMultiPath, kInformInfoRecord, kOther, kCount
};
inline constexpr std::size_t kSaRecordKinds = static_cast<std::size_t>(SaRecordKind::kCount);
SaRecordKind record_kind(std::uint16_t attr_id) noexcept;
const char* to_string(SaRecordKind k) noexcept;

// Methods the counters are kept for (IBA 15.2.1.1): each record kind is
// counted per method too (metrics: requests by record type and method).
enum class SaMethodKind : std::uint8_t { kGet, kGetTable, kGetMulti, kSet, kDelete, kOther, kCount };
inline constexpr std::size_t kSaMethodKinds = static_cast<std::size_t>(SaMethodKind::kCount);
SaMethodKind method_kind(std::uint8_t method) noexcept;
const char* to_string(SaMethodKind k) noexcept;

// Answer latency of admitted queries, from admission to the answer handed to
// the transport (engine clock: simulated time on the sim). Bucket i holds
// latencies up to 1.024 us * 2^i (i < kSaLatencyBuckets - 1); the last one
// the rest.
inline constexpr std::size_t kSaLatencyBuckets = 22;
inline constexpr std::uint64_t kSaLatencyBucket0Ns = 1024;
std::size_t latency_bucket(std::uint64_t ns) noexcept;

// Errors by status: [SA code 1..7] = MAD status >> 8, then the common codes.
inline constexpr std::size_t kErrUnsupported = 8;   // method or attribute not supported
inline constexpr std::size_t kErrInvalidField = 9;  // bad version or field
inline constexpr std::size_t kErrSlots = 10;

struct SaRecordCounters {
  std::uint64_t received = 0;
  std::uint64_t answered = 0;    // OK answers and error answers alike
  std::uint64_t busy = 0;        // answered BUSY without being admitted
  std::uint64_t dropped = 0;     // admitted but never answered: must stay 0
  std::uint64_t duplicates = 0;  // retried TIDs answered from the cache or absorbed while in work
  std::uint64_t ignored = 0;     // requests of a method without a response (Send...): nothing to answer
  std::array<std::uint64_t, kErrSlots> errors{};
  SaRecordCounters& operator+=(const SaRecordCounters& o) noexcept;
};

struct SaLatency {
  std::array<std::uint64_t, kSaLatencyBuckets> buckets{};  // not cumulative
  std::uint64_t count = 0;
  std::uint64_t sum_ns = 0;
};

struct SaCounters {
  std::array<SaRecordCounters, kSaRecordKinds> by_kind{};  // summed over methods
  std::array<std::array<SaRecordCounters, kSaMethodKinds>, kSaRecordKinds> by_kind_method{};
  SaLatency latency;
  std::uint64_t rmpp_transfers = 0;
  std::uint64_t reports_sent = 0;
  std::uint64_t reports_acked = 0;
  std::uint64_t reports_failed = 0;
  std::uint64_t lease_expired = 0;
  SaRecordCounters total() const noexcept;
  const SaRecordCounters& operator[](SaRecordKind k) const noexcept { return by_kind[static_cast<std::size_t>(k)]; }
};

class SaServer {
 public:
  // Registers handlers, pollers and (unless configured off) response hooks on
  // `engine`, which must not be running. Throws std::invalid_argument on a bad config.
  SaServer(Engine& engine, const SnapshotStore& store, SaServerConfig cfg = {});
  ~SaServer();
  SaServer(const SaServer&) = delete;
  SaServer& operator=(const SaServer&) = delete;

  // For owners that install their own response hooks: offers a response MAD
  // received on `core`; true if the SA consumed it (RMPP ACK/STOP/ABORT of
  // one of its transfers, ReportResp to one of its Reports).
  bool on_response(const MadBuf& buf, CoreContext& ctx) noexcept;

  // A notice the SM received (trap 128, 144...) to forward to subscribers as
  // Reports. Any thread; delivered by the state core.
  void forward_notice(const wire::Notice& notice);

  // Readable from any thread (each counter has one writer).
  SaCounters counters() const;
  // The multicast groups as the SM programs MFTs from them (sm/mcast); the
  // SA notifies it from its state core after every change. Header-only
  // interface: the SA library does not link the SM.
  McGroupProvider& mcast_provider() noexcept;
  const ServiceStore& services() const noexcept;
  const McastStore& groups() const noexcept;
  const InformStore& subscriptions() const noexcept;

  // HA (docs/ha.md): the services, groups and subscriptions as the
  // stores last published them. Any thread (reads the published views).
  SaStateImage capture_state() const;
  // Replaces the three stores with `image` (a journal, a standby's replica).
  // Any thread: the stores are written by the state core only, so the image
  // waits in a slot the state core empties at its next poll, before it
  // answers anything else; a later image replaces one not yet applied. The
  // multicast provider is notified, lease timers and Report targets (by the
  // current snapshot's LIDs) are re-derived.
  void restore_state(SaStateImage image);
  // Changes on every successful Set/Delete (ServiceRecord, MCMemberRecord,
  // InformInfo), lease expiry and restore. Any thread; the journal writer
  // compares it with the value it last wrote.
  std::uint64_t state_generation() const noexcept { return state_generation_.load(std::memory_order_acquire); }
  // The groups the SM's partitions create (IPoIB broadcast groups, mgid
  // lines; McastStore::set_well_known). Any thread; applied by the state
  // core at its next poll, a later list replacing one not yet applied.
  void set_partition_groups(std::vector<wire::McMemberRecord> groups);

  class CoreWorker;  // per-core state (sa_server.cpp)

 private:
  friend class CoreWorker;
  void notify_mcast_change() noexcept;
  void release(std::shared_ptr<const Snapshot> old) const noexcept;
  // Single writer (the state core): no read-modify-write needed.
  void bump_state_generation() noexcept {
    state_generation_.store(state_generation_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  class Handler;
  class Hook;
  class Provider;

  const SnapshotStore& store_;
  std::shared_ptr<EpochFeed> epoch_feed_;  // the store's changes: traps 64/65 (the state core reads it)
  SaServerConfig cfg_;
  std::vector<std::unique_ptr<CoreWorker>> workers_;
  std::unique_ptr<Handler> handler_;
  std::vector<std::unique_ptr<Hook>> hooks_;
  std::unique_ptr<Provider> provider_;
  ServiceStore services_;
  McastStore groups_;
  InformStore subs_;
  std::mutex notices_mu_;
  std::vector<wire::Notice> notices_;  // guarded by notices_mu_
  std::atomic<bool> notices_pending_{false};
  std::mutex restore_mu_;
  std::optional<SaStateImage> restore_image_;  // guarded by restore_mu_
  std::atomic<bool> restore_pending_{false};
  std::mutex partition_groups_mu_;
  std::optional<std::vector<wire::McMemberRecord>> partition_groups_;  // guarded by partition_groups_mu_
  std::atomic<bool> partition_groups_pending_{false};
  std::atomic<std::uint64_t> state_generation_{0};  // written by the state core only
};

}  // namespace madengine::sa
