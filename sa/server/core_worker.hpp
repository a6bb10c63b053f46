// The SA's worker on one engine core (SaServer::CoreWorker), shared by the
// files that hold its roles: admission.cpp, answers.cpp, queries.cpp,
// state_ops.cpp and state_core.cpp. Private to sa/server.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "madengine/wire/class_port_info.hpp"
#include "sa/server/records.hpp"
#include "sa/server/sa_server.hpp"

namespace madengine::sa {

namespace a = wire::sa_attr;
namespace m = wire::method;
namespace st = wire::sa_status;

// Counters of one core: one writer (the core), any reader.
struct AtomicCounters {
  struct Kind {
    std::atomic<std::uint64_t> received{0}, answered{0}, busy{0}, dropped{0}, duplicates{0}, ignored{0};
    std::array<std::atomic<std::uint64_t>, kErrSlots> errors{};
  };
  std::array<std::array<Kind, kSaMethodKinds>, kSaRecordKinds> by_kind;
  std::array<std::atomic<std::uint64_t>, kSaLatencyBuckets> latency{};
  std::atomic<std::uint64_t> latency_sum_ns{0};
  Kind& at(SaRecordKind kind, std::uint8_t method) noexcept {
    return by_kind[static_cast<std::size_t>(kind)][static_cast<std::size_t>(method_kind(method))];
  }
  std::atomic<std::uint64_t> rmpp_transfers{0}, reports_sent{0}, reports_acked{0}, reports_failed{0}, lease_expired{0};
};

// Single-writer increment: no read-modify-write needed; readers see a torn-free value.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

inline std::uint64_t requester_key(const MadBuf& b) noexcept {
  return std::uint64_t{b.addr.lid} << 32 | b.addr.remote_qpn;
}

inline std::uint8_t response_method(std::uint8_t req) noexcept {
  return req == m::kSet ? m::kGetResp : static_cast<std::uint8_t>(req | m::kResponse);
}

class SaServer::CoreWorker final : public Poller {
 public:
  CoreWorker(SaServer& server, std::uint16_t core_id, Core& core);
  // Kept buffers still queued go back to the pool (the engine is stopped:
  // an SaServer outlives no running Engine).
  ~CoreWorker();
  // Admission: the MadHandler's work, on this core.
  void admit(MadBuf& buf, CoreContext& ctx) noexcept;
  // The poll loop's share: restored images, the admitted queries, RMPP, the state core.
  std::size_t poll(Nanos now_ns) noexcept override;
  // An RMPP ACK/STOP/ABORT of one of our transfers, or a ReportResp.
  bool on_response(const MadBuf& buf) noexcept;
  void snapshot_counters(SaCounters& out) const;

 private:
  static constexpr std::size_t kShareSlots = 1024;

  // The retry cache's keys, one cache line a slot, apart from the cached
  // answers (dedup_answer_, same index): every admission reads a key, only
  // retries read an answer, so the keys stay in cache. A retry matches the
  // requester, the TID and the digest of the whole request: a client that
  // reuses a TID for another request (osmtest does) gets a new answer.
  struct alignas(64) Dedup {
    enum State : std::uint8_t { kEmpty, kInWork, kAnswered };
    State state = kEmpty;
    bool has_answer = false;
    std::uint64_t key_req = 0;
    std::uint64_t tid = 0;
    std::uint64_t digest = 0;  // request_digest()
    Nanos at_ns = 0;
  };
  static_assert(sizeof(Dedup) == 64);

  static constexpr std::size_t kCachedDataBytes = sizeof(wire::PathRecord);

  struct alignas(64) CachedAnswer {
    std::array<std::uint8_t, wire::kSaHeaderSize> head{};
    std::array<std::uint8_t, kCachedDataBytes> data{};
    std::uint16_t len = 0;
    bool full = false;  // the whole MAD is in dedup_full_ (same slot)
  };
  static_assert(sizeof(CachedAnswer) == 128, "two cache lines a slot");

  // ---- admission, the poll loop, the retry cache (admission.cpp) ----
  std::size_t dedup_index(const MadBuf& b) const noexcept {
    const std::uint64_t h = mix(requester_key(b) ^ mix(b.hdr().tid.get()));
    return h & (dedup_.size() - 1);
  }
  Dedup& dedup_slot(const MadBuf& b) noexcept { return dedup_[dedup_index(b)]; }
  // The slot still belongs to the request being answered (a new request with
  // the same TID may have taken it since).
  bool owns_slot(const Dedup& d, const MadBuf& b) const noexcept {
    return d.key_req == requester_key(b) && d.tid == b.hdr().tid.get() && d.digest == req_digest_;
  }
  // The clock, read once per receive phase: the admissions of one poll loop
  // share it (the core runs poll() after every receive phase, which forgets
  // it). Saves a clock read per MAD; a phase lasts microseconds, the retry
  // cache's TTL seconds.
  Nanos admit_now(CoreContext& ctx) noexcept {
    if (!admit_now_valid_) {
      admit_now_ns_ = ctx.clock().now_ns();
      admit_now_valid_ = true;
    }
    return admit_now_ns_;
  }
  void refresh_snapshot() noexcept;
  // From the query's admission (its dedup slot's time) to now; one bucket
  // and the sum, each with this core as the only writer.
  void record_latency(const Dedup& d) noexcept;
  // The retry cache keeps the 56 header bytes and the first 64 data bytes of
  // an answer (a PathRecord answer whole: the rest of its MAD is zeros); an
  // answer with non-zero bytes beyond them is kept whole in dedup_full_.
  void remember_answer(std::size_t slot, const MadBuf& resp, std::size_t data_len) noexcept;
  static bool tail_is_zero(const MadBuf& resp) noexcept;
  // Rewrites the retried request `buf` into the answer cached in `slot`
  // (byte for byte the MAD first sent; the address is the retry's).
  void replay_answer(std::size_t slot, MadBuf& buf) const noexcept;

  // ---- answers: one MAD, or a table by RMPP (answers.cpp) ----
  // Sends `resp`, remembers it for a retried TID, and counts it.
  // BUSY answers count as busy, every other answer (records or an error
  // status) as answered, so received = answered + busy + duplicates + dropped.
  // `data_len`: bytes of SA data that may be non-zero (kSaDataSize: unknown).
  // The queued request's own buffer is sent as it is (send_kept), anything
  // else is copied; either way `resp` is read only before it is handed over.
  void finish(MadBuf& resp, std::uint16_t status, AtomicCounters::Kind& k, bool cache,
              std::size_t data_len = wire::kSaDataSize) noexcept;
  void reply_status(MadBuf& buf, std::uint16_t status, AtomicCounters::Kind& k, TxSink& tx) noexcept;
  void error(MadBuf& req, std::uint16_t status, AtomicCounters::Kind& k) noexcept;
  // A Set or Delete that changed the state: answered, and the replica and
  // journal see a new generation.
  void answer_changed(MadBuf& req, const void* rec, std::size_t len, AtomicCounters::Kind& k) noexcept;
  // A one-MAD answer carrying `rec` (or nothing).
  void answer_one(MadBuf& req, const void* rec, std::size_t len, AtomicCounters::Kind& k) noexcept;
  // The same for the record a Get collected into scratch_ (`len` bytes of
  // it). The record, then zeros: each byte written once; a PathRecord, the
  // common answer, with constant sizes so the copy and fill are plain vector
  // stores instead of rep-string instructions, slow to start. (Kept apart from answer_one: with a smaller typed record inlined
  // there, g++ flags the constant-size branch it can never take.)
  void answer_one_scratch(MadBuf& req, std::size_t len, AtomicCounters::Kind& k) noexcept;
  // A response header in place of the request's.
  static wire::SaMad& begin_answer(MadBuf& req) noexcept {
    auto& sa = req.as<wire::SaMad>();
    sa.hdr.method = response_method(sa.hdr.method);
    sa.hdr.status = wire::be16::from(0);
    sa.rmpp = {};
    sa.sm_key = wire::be64::from(0);
    sa.attr_offset = wire::be16::from(0);
    return sa;
  }
  // A multi-record answer: one RMPP transfer (IBA 15.4), even for one segment.
  void answer_table(MadBuf& req, std::uint16_t stride, AtomicCounters::Kind& k) noexcept;
  static void on_sent(void* user, const RmppSendDone&) noexcept {
    bump(static_cast<CoreWorker*>(user)->counters_.rmpp_transfers);
  }

  // ---- Get, GetTable, GetMulti (queries.cpp) ----
  // PathRecord Gets: start the reads of the whole burst before answering
  // any of it, so their cache misses overlap; in passes, each using the
  // lines the one before pulled in: GID queries' GUID slots, then every
  // query's per-LID entries (path ends, LID entry, partition set,
  // retry-cache slot), then each (source switch, destination switch) byte.
  void prefetch_paths() const noexcept;
  static constexpr std::uint32_t kPrefetchBurstMax = 64;  // queries a burst prefetches for (burst_max beyond it: unprefetched)
  void process(MadBuf& req, Nanos now_ns) noexcept;
  void query(MadBuf& req, AtomicCounters::Kind& k, bool get) noexcept;
  // A trusted request carries our SM_Key (a zero key is never ours to trust).
  bool trusted(const wire::SaMad& sa) const noexcept {
    return sa.sm_key.get() != 0 && sa.sm_key.get() == snap_->sm.sm_key;
  }
  std::uint16_t collect_state_records(std::uint16_t attr, bool trusted, std::uint16_t requester_lid, RecordSink& sink);
  // Zeroes the member fields of the MCMemberRecord at `rec` (as stored in a sink).
  static void hide_member(std::uint8_t* rec) noexcept;
  void multi_path(MadBuf& req, AtomicCounters::Kind& k) noexcept;
  // The P_Key table of the port at `lid` (the default partition when unknown).
  std::vector<std::uint16_t> requester_pkeys(std::uint16_t lid) const;
  wire::ClassPortInfo class_port_info() const noexcept;

  // ---- Set and Delete: services, groups, subscriptions (state_ops.cpp) ----
  Requester requester_of(const MadBuf& req) const noexcept;
  void modify(MadBuf& req, AtomicCounters::Kind& k, bool set, Nanos now_ns) noexcept;
  McJoinContext join_context(const wire::McMemberRecord& r, const Requester& who);

  // ---- the state core: leases, traps, Reports, restored images (state_core.cpp) ----
  std::size_t state_poll(Nanos now_ns) noexcept;
  // The partitions' groups set_partition_groups() left, applied by the stores' owner.
  std::size_t apply_partition_groups();
  // HA: the image restore_state() left, applied by the stores' owner.
  std::size_t apply_restore();
  // Reports go to the subscriber's LID (IBA 13.4.8.3). A restored or
  // replicated subscription carries the LID its subscriber had then; the
  // current snapshot's LID of its GID wins (unknown GIDs keep theirs).
  void refresh_report_targets(const Snapshot& snap);
  // Traps 64/65 (IBA 13.4.8.2) of the epochs published since the last
  // poll, as the store derived them (EpochChange).
  std::size_t report_epoch_changes();
  // One Report per covering subscription, retried until its ReportResp (IBA 13.4.8.3).
  void report(const wire::Notice& n) noexcept;
  static void on_report_done(void* user, const TxnResult& r) noexcept;

  SaServer& server_;
  const SaServerConfig& cfg_;
  const std::uint16_t id_;
  Core& core_;
  RmppSender sender_;
  MadBuf ack_;  // the ACK of a request sent as an RMPP transfer
  std::unique_ptr<TransactionManager> txn_;
  // The admission queue: kept engine buffers, or (when the core keeps no
  // more) the copy in the same position of copies_.
  std::vector<MadBuf*> queue_;
  std::vector<std::uint64_t> queue_digest_;  // request_digest() of each queued request
  std::uint64_t req_digest_ = 0;             // of the request being answered
  std::vector<MadBuf> copies_;
  MadBuf* kept_req_ = nullptr;  // the kept buffer of the query being answered, until sent or freed
  std::uint32_t queue_head_ = 0, queue_len_ = 0;
  std::vector<std::uint32_t> share_;
  std::vector<Dedup> dedup_;
  Nanos admit_now_ns_ = 0;
  bool admit_now_valid_ = false;
  Nanos answer_now_ns_ = 0;  // this poll's time: answers' latency is taken against it
  std::vector<CachedAnswer> dedup_answer_;
  std::vector<wire::Mad> dedup_full_;
  std::vector<std::uint8_t> scratch_;
  std::shared_ptr<const Snapshot> snap_;
  std::uint64_t snap_epoch_ = 0;
  bool mc_defaults_valid_ = false;
  std::uint8_t mc_mtu_ = 4, mc_rate_ = 3;
  std::uint64_t targets_epoch_ = 0;  // the epoch Report targets were last refreshed from
  std::uint64_t mc_generation_ = 0;
  AtomicCounters counters_;
};

}  // namespace madengine::sa
