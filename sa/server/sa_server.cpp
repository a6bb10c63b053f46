// The SA server (see sa_server.hpp): admission (bounded queue, requester
// share, retried TIDs) in the handler, answering in the core's poller, one
// RMPP transfer per multi-MAD answer, and the state core's work: leases,
// traps 64/65 from epoch changes, forwarded notices, Reports with retries.
#include "sa/server/sa_server.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "madengine/wire/class_port_info.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/fabric/link_rate.hpp"
#include "sa/server/components.hpp"
#include "sa/server/path_query.hpp"
#include "sa/server/records.hpp"

namespace madengine::sa {

namespace a = wire::sa_attr;
namespace m = wire::method;
namespace st = wire::sa_status;

SaRecordKind record_kind(std::uint16_t attr_id) noexcept {
  switch (attr_id) {
    case a::kClassPortInfo: return SaRecordKind::kClassPortInfo;
    case a::kInformInfo: return SaRecordKind::kInformInfo;
    case a::kNodeRecord: return SaRecordKind::kNode;
    case a::kPortInfoRecord: return SaRecordKind::kPortInfo;
    case a::kSl2VlTableRecord: return SaRecordKind::kSl2Vl;
    case a::kSwitchInfoRecord: return SaRecordKind::kSwitchInfo;
    case a::kLinearFwdTableRecord: return SaRecordKind::kLft;
    case a::kMulticastFwdTableRecord: return SaRecordKind::kMft;
    case a::kSmInfoRecord: return SaRecordKind::kSmInfo;
    case a::kLinkRecord: return SaRecordKind::kLink;
    case a::kGuidInfoRecord: return SaRecordKind::kGuidInfo;
    case a::kServiceRecord: return SaRecordKind::kService;
    case a::kPKeyTableRecord: return SaRecordKind::kPKeyTable;
    case a::kPathRecord: return SaRecordKind::kPath;
    case a::kVlArbTableRecord: return SaRecordKind::kVlArb;
    case a::kMcMemberRecord: return SaRecordKind::kMcMember;
    case a::kMultiPathRecord: return SaRecordKind::kMultiPath;
    case a::kInformInfoRecord: return SaRecordKind::kInformInfoRecord;
    default: return SaRecordKind::kOther;
  }
}

const char* to_string(SaRecordKind k) noexcept {
  static constexpr const char* kNames[] = {"ClassPortInfo", "InformInfo", "NodeRecord", "PortInfoRecord",
                                           "SL2VLRecord", "SwitchInfoRecord", "LFTRecord", "MFTRecord",
                                           "SMInfoRecord", "LinkRecord", "GUIDInfoRecord", "ServiceRecord",
                                           "PKeyTableRecord", "PathRecord", "VLArbRecord", "MCMemberRecord",
                                           "MultiPathRecord", "InformInfoRecord", "other"};
  const auto i = static_cast<std::size_t>(k);
  return i < kSaRecordKinds ? kNames[i] : "?";
}

SaRecordCounters& SaRecordCounters::operator+=(const SaRecordCounters& o) noexcept {
  received += o.received;
  answered += o.answered;
  busy += o.busy;
  dropped += o.dropped;
  duplicates += o.duplicates;
  ignored += o.ignored;
  for (std::size_t i = 0; i < errors.size(); ++i) errors[i] += o.errors[i];
  return *this;
}

SaMethodKind method_kind(std::uint8_t method) noexcept {
  switch (method) {
    case wire::method::kGet: return SaMethodKind::kGet;
    case wire::method::kGetTable: return SaMethodKind::kGetTable;
    case wire::method::kGetMulti: return SaMethodKind::kGetMulti;
    case wire::method::kSet: return SaMethodKind::kSet;
    case wire::method::kDelete: return SaMethodKind::kDelete;
    default: return SaMethodKind::kOther;
  }
}

const char* to_string(SaMethodKind k) noexcept {
  static constexpr const char* kNames[] = {"Get", "GetTable", "GetMulti", "Set", "Delete", "other"};
  const auto i = static_cast<std::size_t>(k);
  return i < kSaMethodKinds ? kNames[i] : "?";
}

std::size_t latency_bucket(std::uint64_t ns) noexcept {
  if (ns <= kSaLatencyBucket0Ns) return 0;
  const auto b = static_cast<std::size_t>(std::bit_width((ns - 1) / kSaLatencyBucket0Ns));
  return std::min(b, kSaLatencyBuckets - 1);
}

SaRecordCounters SaCounters::total() const noexcept {
  SaRecordCounters t;
  for (const auto& k : by_kind) t += k;
  return t;
}

namespace {

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

std::size_t error_slot(std::uint16_t status) noexcept {
  if ((status & 0xff00) != 0) return std::min<std::size_t>(status >> 8, 7);
  if ((status & wire::status::kCodeMask) == wire::status::kMethodUnsupported ||
      (status & wire::status::kCodeMask) == wire::status::kMethodAttrUnsupported)
    return kErrUnsupported;
  return kErrInvalidField;
}

std::uint64_t mix(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

std::uint64_t requester_key(const MadBuf& b) noexcept {
  return std::uint64_t{b.addr.lid} << 32 | b.addr.remote_qpn;
}

// What makes a request the same request (a retry) rather than a new one that
// reuses its TID: every byte of the MAD (method, attribute, modifier,
// component mask and record included) besides who sent it. Four independent
// lanes so the multiplies overlap; received MADs are zero-padded to 256 bytes.
std::uint64_t request_digest(const MadBuf& b) noexcept {
  static_assert(wire::kMadSize % 32 == 0);
  std::uint64_t lane[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull};
  const std::uint8_t* p = b.mad.bytes.data();
  for (std::size_t i = 0; i < wire::kMadSize; i += 32) {
    for (std::size_t l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + i + 8 * l, sizeof w);
      lane[l] = (lane[l] ^ w) * 0xff51afd7ed558ccdull;
      lane[l] ^= lane[l] >> 29;
    }
  }
  return mix(lane[0] ^ mix(lane[1] ^ mix(lane[2] ^ mix(lane[3]))));
}

std::uint8_t response_method(std::uint8_t req) noexcept {
  return req == m::kSet ? m::kGetResp : static_cast<std::uint8_t>(req | m::kResponse);
}

// PathRecord components compared byte for byte with each record; the rest
// are constraints that path_query applies itself (GIDs, which it resolves to
// ports in either accepted prefix; selectors, NumbPath, Reversible).
constexpr std::uint64_t kPathFilterMask = wire::path_record_cm::kServiceId | wire::path_record_cm::kDLid |
                                          wire::path_record_cm::kSLid | wire::path_record_cm::kSl |
                                          wire::path_record_cm::kTClass | wire::path_record_cm::kFlowLabel;

// Owner selectors. Answers of several MADs (GetTable, GetMulti) run on the
// core the requester's RMPP ACKs reach: the dispatcher steers responses by
// the TID's core field, so the query is steered the same way.
std::uint32_t select_by_tid(const MadBuf& b, const void*) noexcept { return tid_core(b.hdr().tid.get()); }

std::uint32_t select_get(const MadBuf& b, const void*) noexcept {
  const auto& sa = b.as<wire::SaMad>();
  if (sa.hdr.attr_id.get() == a::kPathRecord) {
    const std::uint64_t mask = sa.comp_mask.get();
    if ((mask & wire::path_record_cm::kDLid) != 0)
      return static_cast<std::uint32_t>(b.mad.bytes[kPathRecordDlidOffset] << 8 | b.mad.bytes[kPathRecordDlidOffset + 1]);
    if ((mask & wire::path_record_cm::kDGid) != 0) {
      // GID-addressed (rdma_cm, IPoIB): spread by the DGID's GUID, with no
      // lookup. The cores share the path database, so any core answers any
      // path; the GUID is stable across epochs, so a retry is steered as
      // its first copy was.
      std::uint64_t guid = 0;
      for (std::size_t i = 0; i < 8; ++i) guid = guid << 8 | b.mad.bytes[kPathRecordDgidGuidOffset + i];
      return static_cast<std::uint32_t>(mix(guid));
    }
  }
  return b.addr.lid;
}

}  // namespace

// ============================================================== CoreWorker

class SaServer::CoreWorker final : public Poller {
 public:
  CoreWorker(SaServer& server, std::uint16_t core_id, Core& core)
      : server_(server),
        cfg_(server.cfg_),
        id_(core_id),
        core_(core),
        sender_(core.clock(), core, cfg_.rmpp),
        queue_(cfg_.queue_max, nullptr),
        queue_digest_(cfg_.queue_max, 0),
        copies_(cfg_.queue_max),
        share_(kShareSlots, 0),
        dedup_(cfg_.dedup_slots),
        dedup_answer_(cfg_.dedup_slots),
        dedup_full_(cfg_.dedup_slots) {
    if (id_ == cfg_.state_core) {
      TransactionConfig tc;
      tc.core_id = static_cast<std::uint8_t>(core_id);
      txn_ = std::make_unique<TransactionManager>(core.clock(), core, tc);
    }
    scratch_.reserve(64 * 1024);
  }

  // Kept buffers still queued go back to the pool (the engine is stopped:
  // an SaServer outlives no running Engine).
  ~CoreWorker() {
    for (std::uint32_t i = 0; i < queue_len_; ++i) {
      const std::uint32_t pos = (queue_head_ + i) % static_cast<std::uint32_t>(queue_.size());
      if (queue_[pos] != &copies_[pos]) core_.pool().free(MadPool::kNoCore, queue_[pos]);
    }
  }

  // ---- admission (the MadHandler, on this core) ----
  void admit(MadBuf& buf, CoreContext& ctx) noexcept {
    auto& sa = buf.as<wire::SaMad>();
    // The requester's ACK/STOP/ABORT of one of our transfers travels with the
    // request method (IBA 13.6.3: the response bit flipped), so it arrives
    // here, on the core that owns the transfer (both are steered by TID).
    if (sa.rmpp.active() && sa.rmpp.rmpp_type() != wire::RmppType::kData) {
      sender_.on_mad(buf);
      return;
    }
    auto& k = counters_.at(record_kind(sa.hdr.attr_id.get()), sa.hdr.method);
    bump(k.received);
    if (buf.len < wire::kMadSize || wire::validate(sa) != wire::MadError::kOk) {
      const std::uint16_t s = sa.hdr.class_version != wire::kSaClassVersion ? wire::status::kBadVersion
                                                                           : wire::status::kInvalidField;
      reply_status(buf, s, k, ctx.tx());
      return;
    }
    // A request sent as a one-segment RMPP transfer (a GetMulti) is
    // acknowledged, as every receiver acknowledges a transfer's last segment
    // (IBA 13.6.4): the requester's RMPP would otherwise resend it until its
    // window times out.
    constexpr std::uint8_t kWhole = wire::rmpp_flag::kFirst | wire::rmpp_flag::kLast;
    if (sa.rmpp.active() && (sa.rmpp.flags() & kWhole) == kWhole) {
      make_rmpp_reply(buf, ack_, wire::RmppType::kAck, wire::rmpp_status::kNormal, 1, 1, cfg_.rmpp.data_offset);
      if (!ctx.tx().send(ack_)) bump(k.dropped);
    }
    const Nanos now = admit_now(ctx);
    Dedup& d = dedup_slot(buf);
    const std::uint64_t digest = request_digest(buf);
    if (d.state != Dedup::kEmpty && d.key_req == requester_key(buf) && d.tid == sa.hdr.tid.get() &&
        d.digest == digest && now - d.at_ns <= cfg_.dedup_ttl_ns) {
      if (d.state == Dedup::kInWork) {  // the answer is on its way
        bump(k.duplicates);
        return;
      }
      if (d.has_answer) {  // answered: send the same answer again
        bump(k.duplicates);
        replay_answer(dedup_index(buf), buf);
        if (!ctx.tx().send(buf)) bump(k.dropped);
        return;
      }
    }
    std::uint32_t& share = share_[mix(requester_key(buf)) & (kShareSlots - 1)];
    if (queue_len_ == queue_.size() || share >= cfg_.requester_queued_max) {
      // Full, or this requester used its share: BUSY now so it backs off (IBA 13.4.7).
      if (make_error_response(buf, wire::status::kBusy)) {
        bump(k.busy);
        buf.as<wire::SaMad>().rmpp = {};
        if (!ctx.tx().send(buf)) bump(k.dropped);
      } else {
        bump(k.ignored);
      }
      return;
    }
    ++share;
    d.state = Dedup::kInWork;
    d.key_req = requester_key(buf);
    d.tid = sa.hdr.tid.get();
    d.digest = digest;
    d.at_ns = now;
    d.has_answer = false;
    // Queued without a copy when the core lets us keep its buffer; else
    // copied into this position's own slot.
    const std::size_t pos = (queue_head_ + queue_len_) % queue_.size();
    queue_digest_[pos] = digest;
    if (ctx.keep(buf)) {
      queue_[pos] = &buf;
    } else {
      copies_[pos] = buf;
      queue_[pos] = &copies_[pos];
    }
    ++queue_len_;
  }

  // ---- the poll loop's share ----
  std::size_t poll(Nanos now_ns) noexcept override {
    admit_now_valid_ = false;  // the next receive phase reads the clock again
    answer_now_ns_ = now_ns;
    std::size_t work = 0;
    // A restored image is applied before any query this poll answers.
    if (txn_ != nullptr && server_.restore_pending_.load(std::memory_order_acquire)) {  // pairs with restore_state
      try {
        work += apply_restore();
      } catch (...) {
        // Out of memory: the stores keep what they had; the image is lost.
      }
    }
    if (txn_ != nullptr && server_.partition_groups_pending_.load(std::memory_order_acquire)) {  // pairs with set_partition_groups
      try {
        work += apply_partition_groups();
      } catch (...) {
        // Out of memory: the groups stay as they were until the SM's next list.
      }
    }
    if (queue_len_ != 0) {
      refresh_snapshot();
      prefetch_paths();
      for (std::uint32_t i = 0; i < cfg_.burst_max && queue_len_ != 0; ++i, ++work) {
        MadBuf& req = *queue_[queue_head_];
        kept_req_ = &req != &copies_[queue_head_] ? &req : nullptr;
        req_digest_ = queue_digest_[queue_head_];
        queue_head_ = (queue_head_ + 1) % static_cast<std::uint32_t>(queue_.size());
        --queue_len_;
        std::uint32_t& share = share_[mix(requester_key(req)) & (kShareSlots - 1)];
        if (share > 0) --share;
        process(req, now_ns);
        // Answered by a copy (tables, RMPP) or not at all: its buffer is done.
        if (kept_req_ != nullptr) core_.free_kept(*kept_req_);
        kept_req_ = nullptr;
      }
    }
    work += sender_.poll(now_ns);
    if (txn_ != nullptr) work += state_poll(now_ns);
    return work;
  }

  bool on_response(const MadBuf& buf) noexcept {
    const auto& h = buf.hdr();
    if (h.mgmt_class == static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm)) {
      const auto& rm = buf.as<wire::SaMad>().rmpp;
      if (rm.active() && rm.rmpp_type() != wire::RmppType::kData) return sender_.on_mad(buf);
    }
    return txn_ != nullptr && txn_->on_response(buf);
  }

  void snapshot_counters(SaCounters& out) const {
    for (std::size_t i = 0; i < kSaRecordKinds; ++i) {
      for (std::size_t m = 0; m < kSaMethodKinds; ++m) {
        const auto& s = counters_.by_kind[i][m];
        SaRecordCounters c;
        c.received = s.received.load(std::memory_order_relaxed);
        c.answered = s.answered.load(std::memory_order_relaxed);
        c.busy = s.busy.load(std::memory_order_relaxed);
        c.dropped = s.dropped.load(std::memory_order_relaxed);
        c.duplicates = s.duplicates.load(std::memory_order_relaxed);
        c.ignored = s.ignored.load(std::memory_order_relaxed);
        for (std::size_t e = 0; e < kErrSlots; ++e) c.errors[e] = s.errors[e].load(std::memory_order_relaxed);
        out.by_kind[i] += c;
        out.by_kind_method[i][m] += c;
      }
    }
    for (std::size_t b = 0; b < kSaLatencyBuckets; ++b) {
      const std::uint64_t n = counters_.latency[b].load(std::memory_order_relaxed);
      out.latency.buckets[b] += n;
      out.latency.count += n;
    }
    out.latency.sum_ns += counters_.latency_sum_ns.load(std::memory_order_relaxed);
    out.rmpp_transfers += counters_.rmpp_transfers.load(std::memory_order_relaxed);
    out.reports_sent += counters_.reports_sent.load(std::memory_order_relaxed);
    out.reports_acked += counters_.reports_acked.load(std::memory_order_relaxed);
    out.reports_failed += counters_.reports_failed.load(std::memory_order_relaxed);
    out.lease_expired += counters_.lease_expired.load(std::memory_order_relaxed);
  }

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

  // PathRecord Gets: start the reads of the whole burst before answering
  // any of it, so their cache misses overlap; in passes, each using the
  // lines the one before pulled in: GID queries' GUID slots, then every
  // query's per-LID entries (path ends, LID entry, partition set,
  // retry-cache slot), then each (source switch, destination switch) byte.
  void prefetch_paths() const noexcept {
    if (snap_ == nullptr) return;  // nothing published yet: every query is answered BUSY
    namespace cm = wire::path_record_cm;
    const std::uint32_t n = std::min(cfg_.burst_max, queue_len_);
    const auto record = [&](std::uint32_t i) -> const wire::PathRecord* {
      const auto& sa = queue_[(queue_head_ + i) % queue_.size()]->as<wire::SaMad>();
      if (sa.hdr.attr_id.get() != a::kPathRecord) return nullptr;
      return reinterpret_cast<const wire::PathRecord*>(sa.data.data());
    };
    const auto mask_of = [&](std::uint32_t i) {
      return queue_[(queue_head_ + i) % queue_.size()]->as<wire::SaMad>().comp_mask.get();
    };
    for (std::uint32_t i = 0; i < n; ++i) {
      const wire::PathRecord* pr = record(i);
      if (pr == nullptr) continue;
      const std::uint64_t mask = mask_of(i);
      if ((mask & cm::kSLid) == 0 && (mask & cm::kSGid) != 0) snap_->prefetch_guid(pr->sgid.guid.get());
      if ((mask & cm::kDLid) == 0 && (mask & cm::kDGid) != 0) snap_->prefetch_guid(pr->dgid.guid.get());
    }
    // Each query's LIDs, once: a GID's from its slot (in cache by now),
    // unchecked (the answer checks it against the LID entry prefetched here).
    std::array<std::uint16_t, 2 * kPrefetchBurstMax> lids{};
    const std::uint32_t m = std::min<std::uint32_t>(n, kPrefetchBurstMax);
    for (std::uint32_t i = 0; i < m; ++i) {
      const wire::PathRecord* pr = record(i);
      if (pr == nullptr) continue;
      const std::uint64_t mask = mask_of(i);
      lids[2 * i] = (mask & cm::kSLid) != 0 ? pr->slid.get()
                    : (mask & cm::kSGid) != 0 ? snap_->likely_lid_of_guid(pr->sgid.guid.get())
                                              : 0;
      lids[2 * i + 1] = (mask & cm::kDLid) != 0 ? pr->dlid.get()
                        : (mask & cm::kDGid) != 0 ? snap_->likely_lid_of_guid(pr->dgid.guid.get())
                                                  : 0;
    }
    for (std::uint32_t i = 0; i < m; ++i) {
      const std::uint16_t slid = lids[2 * i], dlid = lids[2 * i + 1];
      if (slid == 0 || dlid == 0) continue;
      snap_->paths.prefetch_ends(slid, dlid);
      if (slid < snap_->lid_info.size() && dlid < snap_->lid_info.size()) {
        __builtin_prefetch(&snap_->lid_info[slid]);
        __builtin_prefetch(&snap_->lid_info[dlid]);
      }
      snap_->partition_index.prefetch(slid);
      snap_->partition_index.prefetch(dlid);
      __builtin_prefetch(&dedup_[dedup_index(*queue_[(queue_head_ + i) % queue_.size()])], 1);  // rewritten on answering
    }
    for (std::uint32_t i = 0; i < m; ++i)
      if (lids[2 * i] != 0 && lids[2 * i + 1] != 0) snap_->paths.prefetch(lids[2 * i], lids[2 * i + 1]);
  }
  static constexpr std::uint32_t kPrefetchBurstMax = 64;  // queries a burst prefetches for (burst_max beyond it: unprefetched)

  void refresh_snapshot() noexcept {
    // The epoch check is one atomic load; the shared_ptr is reloaded only on change.
    const std::uint64_t e = server_.store_.epoch();
    if (snap_ == nullptr || e != snap_epoch_) {
      snap_ = server_.store_.current();
      snap_epoch_ = e;
      mc_defaults_valid_ = false;
    }
  }

  // Sends `resp`, remembers it for a retried TID, and counts it.
  // BUSY answers count as busy, every other answer (records or an error
  // status) as answered, so received = answered + busy + duplicates + dropped.
  // `data_len`: bytes of SA data that may be non-zero (kSaDataSize: unknown).
  // The queued request's own buffer is sent as it is (send_kept), anything
  // else is copied; either way `resp` is read only before it is handed over.
  void finish(MadBuf& resp, std::uint16_t status, AtomicCounters::Kind& k, bool cache,
              std::size_t data_len = wire::kSaDataSize) noexcept {
    const bool busy = status == wire::status::kBusy;
    if (status != 0 && !busy) bump(k.errors[error_slot(status)]);
    if (busy) cache = false;  // a retry after BUSY is a new attempt
    const std::size_t slot = dedup_index(resp);
    Dedup& d = dedup_[slot];
    const bool ours = owns_slot(d, resp);
    // Written before the send; it is read only once has_answer says so.
    if (ours && cache) remember_answer(slot, resp, data_len);
    bool sent = false;
    if (&resp == kept_req_) {
      sent = core_.send_kept(resp);
      if (sent) kept_req_ = nullptr;  // the core's now
    } else {
      sent = core_.send(resp);
    }
    if (!sent) {
      bump(k.dropped);
      return;
    }
    bump(busy ? k.busy : k.answered);
    if (ours) {
      record_latency(d);
      d.state = busy ? Dedup::kEmpty : Dedup::kAnswered;
      d.has_answer = cache;
    }
  }

  // From the query's admission (its dedup slot's time) to now; one bucket
  // and the sum, each with this core as the only writer.
  void record_latency(const Dedup& d) noexcept {
    const std::uint64_t ns = answer_now_ns_ > d.at_ns ? static_cast<std::uint64_t>(answer_now_ns_ - d.at_ns) : 0;
    bump(counters_.latency[latency_bucket(ns)]);
    bump(counters_.latency_sum_ns, ns);
  }

  // The retry cache keeps the 56 header bytes and the first 64 data bytes of
  // an answer (a PathRecord answer whole: the rest of its MAD is zeros); an
  // answer with non-zero bytes beyond them is kept whole in dedup_full_.
  void remember_answer(std::size_t slot, const MadBuf& resp, std::size_t data_len) noexcept {
    CachedAnswer& c = dedup_answer_[slot];
    const std::uint8_t* mad = resp.mad.bytes.data();
    std::memcpy(c.head.data(), mad, c.head.size());
    std::memcpy(c.data.data(), mad + wire::kSaHeaderSize, c.data.size());
    c.len = resp.len;
    c.full = data_len > kCachedDataBytes && !tail_is_zero(resp);
    if (c.full) dedup_full_[slot] = resp.mad;
  }

  static bool tail_is_zero(const MadBuf& resp) noexcept {
    constexpr std::size_t kFrom = wire::kSaHeaderSize + kCachedDataBytes;
    std::uint64_t any = 0;
    for (std::size_t i = kFrom; i < wire::kMadSize; i += sizeof(any)) {
      std::uint64_t w;
      std::memcpy(&w, resp.mad.bytes.data() + i, sizeof(w));
      any |= w;
    }
    return any == 0;
  }

  // Rewrites the retried request `buf` into the answer cached in `slot`
  // (byte for byte the MAD first sent; the address is the retry's).
  void replay_answer(std::size_t slot, MadBuf& buf) const noexcept {
    const CachedAnswer& c = dedup_answer_[slot];
    std::uint8_t* mad = buf.mad.bytes.data();
    if (c.full) {
      buf.mad = dedup_full_[slot];
    } else {
      std::memcpy(mad, c.head.data(), c.head.size());
      std::memcpy(mad + wire::kSaHeaderSize, c.data.data(), c.data.size());
      std::memset(mad + wire::kSaHeaderSize + kCachedDataBytes, 0, wire::kMadSize - wire::kSaHeaderSize - kCachedDataBytes);
    }
    buf.len = c.len;
  }

  void reply_status(MadBuf& buf, std::uint16_t status, AtomicCounters::Kind& k, TxSink& tx) noexcept {
    if (!make_error_response(buf, status)) {
      bump(k.ignored);
      return;
    }
    buf.as<wire::SaMad>().rmpp = {};
    bump(k.errors[error_slot(status)]);
    if (tx.send(buf)) bump(k.answered);
    else bump(k.dropped);
  }

  void error(MadBuf& req, std::uint16_t status, AtomicCounters::Kind& k) noexcept {
    if (!make_error_response(req, status)) {
      bump(k.ignored);  // no response exists for this method (IBA 13.4.5)
      return;
    }
    req.as<wire::SaMad>().rmpp = {};
    finish(req, status, k, true);
  }

  // A Set or Delete that changed the state: answered, and the replica and
  // journal see a new generation.
  void answer_changed(MadBuf& req, const void* rec, std::size_t len, AtomicCounters::Kind& k) noexcept {
    server_.bump_state_generation();
    answer_one(req, rec, len, k);
  }

  // A one-MAD answer carrying `rec` (or nothing).
  void answer_one(MadBuf& req, const void* rec, std::size_t len, AtomicCounters::Kind& k) noexcept {
    wire::SaMad& sa = begin_answer(req);
    const std::size_t n = rec != nullptr ? std::min(len, sa.data.size()) : 0;
    if (n != 0) std::memcpy(sa.data.data(), rec, n);
    std::memset(sa.data.data() + n, 0, sa.data.size() - n);
    finish(req, 0, k, true, n);
  }

  // The same for the record a Get collected into scratch_ (`len` bytes of
  // it). The record, then zeros: each byte written once; a PathRecord, the
  // common answer, with constant sizes so the copy and fill are plain vector
  // stores instead of rep-string instructions, slow to start. (Kept apart from answer_one: with a smaller typed record inlined
  // there, g++ flags the constant-size branch it can never take.)
  void answer_one_scratch(MadBuf& req, std::size_t len, AtomicCounters::Kind& k) noexcept {
    wire::SaMad& sa = begin_answer(req);
    const std::size_t n = std::min(len, sa.data.size());
    if (n == sizeof(wire::PathRecord)) {
      std::memcpy(sa.data.data(), scratch_.data(), sizeof(wire::PathRecord));
      std::memset(sa.data.data() + sizeof(wire::PathRecord), 0, sa.data.size() - sizeof(wire::PathRecord));
    } else {
      std::memcpy(sa.data.data(), scratch_.data(), n);
      std::memset(sa.data.data() + n, 0, sa.data.size() - n);
    }
    finish(req, 0, k, true, n);
  }

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
  void answer_table(MadBuf& req, std::uint16_t stride, AtomicCounters::Kind& k) noexcept {
    MadBuf tmpl = req;
    auto& sa = tmpl.as<wire::SaMad>();
    sa.hdr.method = response_method(sa.hdr.method);
    sa.hdr.status = wire::be16::from(0);
    sa.rmpp = {};
    sa.sm_key = wire::be64::from(0);
    sa.attr_offset = wire::be16::from(static_cast<std::uint16_t>(stride / 8));
    if (scratch_.size() <= wire::kSaDataSize) {
      // One segment: sent here, sized to its records like OpenSM's, so a
      // client without RMPP reassembly (saquery on ibsim) counts them from
      // the MAD's length. A lost segment is recovered by the client's retry,
      // which the retry cache answers.
      if (cfg_.rmpp_one_segment) {
        sa.rmpp.version = 1;
        sa.rmpp.type = static_cast<std::uint8_t>(wire::RmppType::kData);
        sa.rmpp.set_flags(kRmppNoRespTime, wire::rmpp_flag::kActive | wire::rmpp_flag::kFirst | wire::rmpp_flag::kLast);
        sa.rmpp.data1 = wire::be32::from(1);
        sa.rmpp.data2 = wire::be32::from(static_cast<std::uint32_t>(kRmppSegmentPayload - wire::kSaDataSize + scratch_.size()));
      }
      sa.data.fill(0);
      if (!scratch_.empty()) std::memcpy(sa.data.data(), scratch_.data(), scratch_.size());
      tmpl.len = static_cast<std::uint16_t>(wire::kSaHeaderSize + scratch_.size());
      bump(counters_.rmpp_transfers);
      finish(tmpl, 0, k, true, scratch_.size());
      return;
    }
    const RmppStart r = sender_.send(tmpl, scratch_, &CoreWorker::on_sent, this);
    switch (r) {
      case RmppStart::kOk: {
        bump(k.answered);
        Dedup& d = dedup_slot(req);
        if (owns_slot(d, req)) {
          record_latency(d);
          d.state = Dedup::kAnswered;
          d.has_answer = false;  // a retry after the transfer re-runs the query
        }
        return;
      }
      case RmppStart::kDuplicateKey: bump(k.duplicates); return;  // that transfer is still running
      case RmppStart::kTableFull:  // every transfer slot busy: the requester retries
        error(req, wire::status::kBusy, k);
        return;
      case RmppStart::kTooLarge: error(req, st::kNoResources, k); return;
    }
  }

  static void on_sent(void* user, const RmppSendDone&) noexcept {
    bump(static_cast<CoreWorker*>(user)->counters_.rmpp_transfers);
  }

  Requester requester_of(const MadBuf& req) const noexcept {
    Requester r;
    r.lid = req.addr.lid;
    if (req.addr.has_grh) {
      r.gid = req.addr.gid;
    } else if (snap_ != nullptr) {
      if (const auto* e = snap_->end_port_by_lid(req.addr.lid)) {
        const auto& n = snap_->fabric.nodes[e->node];
        const std::uint64_t g = n.ports[e->port].guid != 0 ? n.ports[e->port].guid : n.node_guid;
        r.gid = {wire::be64::from(snap_->subnet_prefix), wire::be64::from(g)};
      }
    }
    return r;
  }

  void process(MadBuf& req, Nanos now_ns) noexcept {
    auto& sa = req.as<wire::SaMad>();
    const std::uint16_t attr = sa.hdr.attr_id.get();
    const std::uint8_t meth = sa.hdr.method;
    auto& k = counters_.at(record_kind(attr), meth);
    if (snap_ == nullptr) {  // nothing published yet: the SA is not ready
      error(req, wire::status::kBusy, k);
      return;
    }
    // An SM_Key neither zero nor ours: the MAD is discarded unanswered
    // (C15-0.1.5, as OpenSM); a retry is judged afresh.
    if (const std::uint64_t key = sa.sm_key.get(); key != 0 && key != snap_->sm.sm_key) {
      bump(k.ignored);
      Dedup& d = dedup_slot(req);
      if (owns_slot(d, req)) d.state = Dedup::kEmpty;
      return;
    }
    switch (meth) {
      case m::kGet:
      case m::kGetTable: return query(req, k, meth == m::kGet);
      case m::kGetMulti:
        if (attr != a::kMultiPathRecord) return error(req, wire::status::kMethodAttrUnsupported, k);
        return multi_path(req, k);
      case m::kSet:
      case m::kDelete: return modify(req, k, meth == m::kSet, now_ns);
      default: return error(req, wire::status::kMethodUnsupported, k);
    }
  }

  void query(MadBuf& req, AtomicCounters::Kind& k, bool get) noexcept {
    auto& sa = req.as<wire::SaMad>();
    const std::uint16_t attr = sa.hdr.attr_id.get();
    const std::uint64_t mask = sa.comp_mask.get();
    if (attr == a::kClassPortInfo) {
      if (!get) return error(req, wire::status::kMethodAttrUnsupported, k);
      const wire::ClassPortInfo cpi = class_port_info();
      return answer_one(req, &cpi, sizeof(cpi), k);
    }
    const RecordLayout* layout = record_layout(attr);
    if (layout == nullptr) return error(req, wire::status::kMethodAttrUnsupported, k);
    if ((mask & ~layout->valid_mask()) != 0) return error(req, st::kReqInvalid, k);  // invalid component mask
    const std::uint8_t* q = sa.data.data();
    // P_KeyTableRecords only answer trusted requests (IBA 15.2.5.11, C15-0.2.2):
    // the SM_Key must be the SM's (a zero key is never trusted).
    if (attr == a::kPKeyTableRecord && (sa.sm_key.get() == 0 || sa.sm_key.get() != snap_->sm.sm_key))
      return error(req, st::kReqInvalid, k);
    const bool path = attr == a::kPathRecord;
    RecordSink sink(scratch_, *layout, path ? mask & kPathFilterMask : mask, q, get ? (path ? 1 : 2) : SIZE_MAX,
                    bit_mask_components(attr, sa.hdr.attr_mod.get()));
    std::uint16_t status = 0;
    try {
      if (path) {
        wire::PathRecord pr;
        std::memcpy(&pr, q, sizeof(pr));
        PathQuery pq{&pr, mask, req.addr.lid, snap_->sm.subnet_timeout, get};
        status = collect_path_records(*snap_, pq, sink);
      } else if (!collect_snapshot_records(*snap_, attr, sink)) {
        status = collect_state_records(attr, trusted(sa), req.addr.lid, sink);
      }
    } catch (...) {  // out of memory building a huge table
      status = st::kNoResources;
    }
    if (status != 0) return error(req, status, k);
    if (get) {
      if (sink.count() == 0) return error(req, st::kNoRecords, k);
      if (sink.count() > 1) return error(req, st::kTooManyRecords, k);
      return answer_one_scratch(req, layout->size, k);
    }
    answer_table(req, sink.stride(), k);
  }

  // A trusted request carries our SM_Key (a zero key is never ours to trust).
  bool trusted(const wire::SaMad& sa) const noexcept {
    return sa.sm_key.get() != 0 && sa.sm_key.get() == snap_->sm.sm_key;
  }

  std::uint16_t collect_state_records(std::uint16_t attr, bool trusted, std::uint16_t requester_lid, RecordSink& sink) {
    switch (attr) {
      case a::kServiceRecord: {
        // A ServiceKey goes only to trusted requesters (IBA 15.2.5.14, as OpenSM).
        // ServiceLease is the time left, in whole seconds rounded up (as
        // OpenSM's lease timer keeps it): a standby copying the table, or a
        // client, reads when the lease ends, not how long it once was.
        const auto v = server_.services_.view();
        for (const auto& e : *v) {
          wire::ServiceRecord rec = e.rec;
          if (e.expires_ns >= 0) {
            const Nanos left_ns = std::max<Nanos>(0, e.expires_ns - answer_now_ns_);
            rec.service_lease = wire::be32::from(static_cast<std::uint32_t>((left_ns + kNanosPerSecond - 1) / kNanosPerSecond));
          }
          const std::size_t before = sink.count();
          const bool more = sink.offer(&rec);
          if (!trusted && sink.count() != before) {
            wire::ServiceRecord r;
            std::memcpy(&r, sink.last(), sizeof r);
            r.service_key.fill(0);
            std::memcpy(sink.last(), &r, sizeof r);
          }
          if (!more) break;
        }
        return 0;
      }
      case a::kMcMemberRecord: {
        // Untrusted requesters (no SM_Key, or not ours) learn which groups
        // exist, not who is in them: one record per group, its PortGID,
        // JoinState and ProxyJoin zero (IBA 15.2.5.17, as OpenSM does).
        // Members are still matched, so a PortGID or JoinState component
        // selects the groups that have such a member.
        // Untrusted requesters see the groups of partitions their port
        // holds (OpenSM's rule; trusted ones, a standby replicating among
        // them, see every group); a group without members shows once to them.
        const auto v = server_.groups_.view();
        const std::vector<std::uint16_t> req_keys = trusted ? std::vector<std::uint16_t>{} : requester_pkeys(requester_lid);
        for (const auto& g : *v) {
          if (!trusted && !holds_partition(req_keys, g.params.pkey.get())) continue;
          if (g.members.empty()) {
            if (trusted) continue;
            const wire::McMemberRecord r = member_record(g, McMember{});
            if (!sink.offer(&r)) return 0;
            continue;
          }
          for (const auto& mem : g.members) {
            const wire::McMemberRecord r = member_record(g, mem);
            const std::size_t before = sink.count();
            const bool more = sink.offer(&r);
            const bool hidden = !trusted && sink.count() != before;
            if (hidden) hide_member(sink.last());
            if (!more) return 0;
            if (hidden) break;  // the group is listed once: next group
          }
        }
        return 0;
      }
      case a::kInformInfoRecord: {
        const auto v = server_.subs_.view();
        for (const auto& s : *v) {
          const wire::InformInfoRecord r = inform_record(s);
          if (!sink.offer(&r)) break;
        }
        return 0;
      }
      default: return wire::status::kMethodAttrUnsupported;
    }
  }

  // Zeroes the member fields of the MCMemberRecord at `rec` (as stored in a sink).
  static void hide_member(std::uint8_t* rec) noexcept {
    wire::McMemberRecord r;
    std::memcpy(&r, rec, sizeof r);
    r.port_gid = {};
    r.set_join_state(0);
    r.set_proxy_join(false);
    std::memcpy(rec, &r, sizeof r);
  }

  void multi_path(MadBuf& req, AtomicCounters::Kind& k) noexcept {
    auto& sa = req.as<wire::SaMad>();
    const std::span<const std::uint8_t> rec(sa.data.data(), sa.data.size());
    const auto fixed = wire::decode<wire::MultiPathRecord>(rec);
    if (!fixed || std::size_t{fixed->sgid_count} + fixed->dgid_count > wire::kMultiPathGidsMax)
      return error(req, st::kReqInvalid, k);
    std::array<wire::Gid, wire::kMultiPathGidsMax> s{}, d{};
    for (std::size_t i = 0; i < fixed->sgid_count; ++i) s[i] = *wire::multipath_sgid(rec, i);
    for (std::size_t i = 0; i < fixed->dgid_count; ++i) d[i] = *wire::multipath_dgid(rec, i);
    const RecordLayout& pl = *record_layout(a::kPathRecord);
    RecordSink sink(scratch_, pl, 0, nullptr, SIZE_MAX);
    std::uint16_t status = 0;
    try {
      status = collect_multi_path_records(*snap_, *fixed, std::span(s.data(), fixed->sgid_count),
                                          std::span(d.data(), fixed->dgid_count), sa.comp_mask.get(),
                                          snap_->sm.subnet_timeout, sink);
    } catch (...) {
      status = st::kNoResources;
    }
    if (status != 0) return error(req, status, k);
    answer_table(req, sink.stride(), k);
  }

  void modify(MadBuf& req, AtomicCounters::Kind& k, bool set, Nanos now_ns) noexcept {
    auto& sa = req.as<wire::SaMad>();
    const std::uint16_t attr = sa.hdr.attr_id.get();
    const std::uint64_t mask = sa.comp_mask.get();
    if (id_ != cfg_.state_core) return error(req, wire::status::kMethodAttrUnsupported, k);  // misrouted
    const Requester who = requester_of(req);
    // A requester the SA cannot place (no GRH, a LID our subnet does not
    // give) owns nothing it could register: refused, as OpenSM refuses it
    // ("unknown LID", ERR_REQ_INVALID). Kept, it would be stored under a
    // zero GID that its port never matches again.
    if (who.gid.guid.get() == 0) return error(req, st::kReqInvalid, k);
    std::uint16_t status = st::kReqInvalid;
    try {
      switch (attr) {
        case a::kServiceRecord: {
          wire::ServiceRecord r, out{};
          std::memcpy(&r, sa.data.data(), sizeof(r));
          status = set ? server_.services_.set(r, mask, who, now_ns, out) : server_.services_.erase(r, mask, who, out);
          // The answer to a Set or Delete hides the key as a Get's does (IBA
          // 15.2.5.14; OpenSM's osmtest checks that it reads back zero).
          if (!trusted(sa)) out.service_key.fill(0);
          if (status == 0) return answer_changed(req, &out, sizeof(out), k);
          break;
        }
        case a::kMcMemberRecord: {
          wire::McMemberRecord r, out{};
          std::memcpy(&r, sa.data.data(), sizeof(r));
          status = set ? server_.groups_.join(r, mask, join_context(r, who), out) : server_.groups_.leave(r, mask, who, out);
          if (status == 0) return answer_changed(req, &out, sizeof(out), k);
          break;
        }
        case a::kInformInfo: {
          if (!set) return error(req, wire::status::kMethodAttrUnsupported, k);
          wire::InformInfo r;
          std::memcpy(&r, sa.data.data(), sizeof(r));
          status = server_.subs_.set(r, who, req.addr);
          if (status == 0) return answer_changed(req, &r, sizeof(r), k);
          break;
        }
        default: return error(req, wire::status::kMethodAttrUnsupported, k);
      }
    } catch (...) {
      status = st::kNoResources;
    }
    error(req, status, k);
  }

  McJoinContext join_context(const wire::McMemberRecord& r, const Requester& who) {
    McJoinContext c;
    c.who = who;
    c.packet_life = snap_->sm.subnet_timeout;
    if (!mc_defaults_valid_) {
      // OpenSM's defaults for a group created without MTU/rate: the smallest of any CA port.
      mc_mtu_ = 5;
      mc_rate_ = 0;
      for (const auto& n : snap_->fabric.nodes) {
        if (n.is_switch()) continue;
        for (std::size_t p = 1; p < n.ports.size(); ++p) {
          if (!n.ports[p].linked()) continue;
          if (n.ports[p].mtu != 0) mc_mtu_ = std::min(mc_mtu_, n.ports[p].mtu);
          const std::uint8_t rc = fabric::port_rate_code(n, static_cast<std::uint8_t>(p));
          mc_rate_ = mc_rate_ == 0 ? rc : wire::rate_min(mc_rate_, rc);
        }
      }
      if (mc_rate_ == 0) mc_rate_ = wire::rate_code::k10Gbps;
      // The MLIDs every switch can forward (OpenSM: the least MulticastFDBCap).
      std::uint32_t mft_cap = std::uint32_t{kMlidLast} - kMlidFirst + 1;
      for (const auto& n : snap_->fabric.nodes)
        if (n.is_switch() && n.switch_info.multicast_fdb_cap.get() != 0)
          mft_cap = std::min<std::uint32_t>(mft_cap, n.switch_info.multicast_fdb_cap.get());
      server_.groups_.set_mlid_last(static_cast<std::uint16_t>(kMlidFirst + mft_cap - 1));
      mc_defaults_valid_ = true;
    }
    c.default_mtu = mc_mtu_;
    c.default_rate = mc_rate_;
    if (!snap_->local_prefix(r.port_gid.prefix.get())) return c;
    const auto it = snap_->by_port_guid.find(r.port_gid.guid.get());
    if (it == snap_->by_port_guid.end()) return c;
    const fabric::EndPort e = it->second;
    const auto& port = snap_->fabric.nodes[e.node].ports[e.port];
    c.port_guid = r.port_gid.guid.get();
    if (port.mtu != 0) c.port_mtu = port.mtu;
    c.port_rate = fabric::link_rate_code(snap_->fabric, e.node, e.port);
    const auto keys = port_pkeys(*snap_, e);
    c.port_pkeys.assign(keys.begin(), keys.end());
    c.requester_pkeys = requester_pkeys(who.lid);
    return c;
  }

  // The P_Key table of the port at `lid` (the default partition when unknown).
  std::vector<std::uint16_t> requester_pkeys(std::uint16_t lid) const {
    const fabric::EndPort* e = snap_ != nullptr ? snap_->end_port_by_lid(lid) : nullptr;
    if (e == nullptr) return {wire::kDefaultPKey};
    const auto keys = port_pkeys(*snap_, *e);
    return {keys.begin(), keys.end()};
  }

  wire::ClassPortInfo class_port_info() const noexcept {
    wire::ClassPortInfo c{};
    c.base_version = 1;
    c.class_version = wire::kSaClassVersion;
    c.capability_mask = wire::be16::from(wire::cpi_cap::kTrap | wire::cpi_cap::kCapMask2 |
                                         wire::cpi_cap::kSaOptionalRecords | wire::cpi_cap::kSaMultiPath |
                                         wire::cpi_cap::kSaPortInfoCapMaskMatch);
    c.set_cap_mask2(wire::cpi_cap2::kSaFullPortInfoRecord | wire::cpi_cap2::kSaExtendedSpeeds |
                    wire::cpi_cap2::kSaMulticastFdbTop | wire::cpi_cap2::kSaPortInfoCapMask2Match |
                    wire::cpi_cap2::kSaSendOnlyFullMember | wire::cpi_cap2::kSaLinkWidth2x |
                    wire::cpi_cap2::kSaLinkSpeedHdr | wire::cpi_cap2::kSaLinkSpeedNdr);
    c.set_resp_time_value(cfg_.resp_time_value);
    // No redirection: the redirect and trap targets are QP1 with the GSI Q_Key (as OpenSM fills them).
    c.redirect_qp = wire::be32::from(1);
    c.redirect_qkey = wire::be32::from(kGsiQkey);
    c.trap_qkey = wire::be32::from(kGsiQkey);
    return c;
  }

  // ---- state core: leases, traps, Reports ----
  std::size_t state_poll(Nanos now_ns) noexcept {
    std::size_t work = txn_->poll(now_ns);
    try {
      if (const std::size_t n = server_.services_.expire(now_ns)) {
        bump(counters_.lease_expired, n);
        server_.bump_state_generation();
        ++work;
      }
      if (server_.store_.epoch() != trap_epoch_) {
        if (server_.cfg_.gid_traps_from_epochs) {
          work += epoch_traps();
        } else {
          trap_epoch_ = server_.store_.epoch();  // the SM sends traps 64/65 (SmConfig::on_notice)
        }
        if (const auto snap = server_.store_.current()) refresh_report_targets(*snap);
      }
      if (server_.notices_pending_.load(std::memory_order_acquire)) {  // pairs with the release in forward_notice
        std::vector<wire::Notice> pending;
        {
          std::lock_guard lock(server_.notices_mu_);
          pending.swap(server_.notices_);
          server_.notices_pending_.store(false, std::memory_order_relaxed);
        }
        for (const auto& n : pending) report(n);
        work += pending.size();
      }
      const std::uint64_t g = server_.groups_.generation();
      if (g != mc_generation_) {
        mc_generation_ = g;
        server_.notify_mcast_change();
        ++work;
      }
    } catch (...) {
      // Out of memory in the bookkeeping: try again next poll.
    }
    return work;
  }

  // The partitions' groups set_partition_groups() left, applied by the stores' owner.
  std::size_t apply_partition_groups() {
    std::optional<std::vector<wire::McMemberRecord>> g;
    {
      std::lock_guard lock(server_.partition_groups_mu_);
      g.swap(server_.partition_groups_);
      server_.partition_groups_pending_.store(false, std::memory_order_relaxed);
    }
    if (!g) return 0;
    const std::uint64_t before = server_.groups_.generation();
    server_.groups_.set_well_known(*g);
    if (server_.groups_.generation() != before) server_.bump_state_generation();
    return 1;
  }

  // HA: the image restore_state() left, applied by the stores' owner.
  std::size_t apply_restore() {
    std::optional<SaStateImage> img;
    {
      std::lock_guard lock(server_.restore_mu_);
      img.swap(server_.restore_image_);
      server_.restore_pending_.store(false, std::memory_order_relaxed);
    }
    if (!img) return 0;
    apply(std::move(*img), server_.services_, server_.groups_, server_.subs_);  // invalid groups are dropped
    if (const auto snap = server_.store_.current()) refresh_report_targets(*snap);
    server_.bump_state_generation();
    return 1;
  }

  // Reports go to the subscriber's LID (IBA 13.4.8.3). A restored or
  // replicated subscription carries the LID its subscriber had then; the
  // current snapshot's LID of its GID wins (unknown GIDs keep theirs).
  void refresh_report_targets(const Snapshot& snap) {
    const auto v = server_.subs_.view();
    std::vector<Subscription> next;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Subscription& s = (*v)[i];
      const auto it = snap.by_port_guid.find(s.subscriber.guid.get());
      if (it == snap.by_port_guid.end() || !snap.local_prefix(s.subscriber.prefix.get())) continue;
      const std::uint16_t lid = snap.fabric.lid_of(it->second);
      if (lid == 0 || lid == s.addr.lid) continue;
      if (next.empty()) next.assign(v->begin(), v->end());
      next[i].addr.lid = lid;
    }
    if (next.empty()) return;
    server_.subs_.restore(std::move(next));
    server_.bump_state_generation();
  }

  // Traps 64/65 (IBA 13.4.8.2): end ports that came or went between epochs.
  std::size_t epoch_traps() {
    const auto snap = server_.store_.current();
    trap_epoch_ = server_.store_.epoch();
    if (snap == nullptr) return 0;
    std::unordered_set<std::uint64_t> now;
    for (const auto& [guid, e] : snap->by_port_guid) now.insert(guid);
    std::size_t n = 0;
    if (have_ports_) {
      for (const std::uint64_t g : now)
        if (!known_ports_.contains(g)) n += gid_trap(*snap, wire::trap::kGidInService, g);
      for (const std::uint64_t g : known_ports_)
        if (!now.contains(g)) n += gid_trap(*snap, wire::trap::kGidOutOfService, g);
    }
    known_ports_.swap(now);
    have_ports_ = true;
    return n;
  }

  std::size_t gid_trap(const Snapshot& snap, std::uint16_t trap, std::uint64_t guid) {
    wire::Notice n = wire::make_generic_notice(wire::notice_type::kSubnetManagement,
                                               wire::notice_producer::kClassManager, trap, snap.sm.lid);
    wire::NoticeDetailsGid d{};
    d.gid = {wire::be64::from(snap.subnet_prefix), wire::be64::from(guid)};
    n.set_details(d);
    n.issuer_gid = {wire::be64::from(snap.subnet_prefix), wire::be64::from(snap.sm.port_guid)};
    report(n);
    return 1;
  }

  // One Report per covering subscription, retried until its ReportResp (IBA 13.4.8.3).
  void report(const wire::Notice& n) noexcept {
    const auto subs = server_.subs_.view();
    for (const auto& s : *subs) {
      if (!InformStore::covers(s.info, n.trap_number.get(), static_cast<std::uint8_t>(n.type()),
                               n.producer_type(), n.issuer_lid.get()))
        continue;
      MadBuf b;
      auto& sa = b.as<wire::SaMad>();
      sa = wire::SaMad{};
      sa.hdr.base_version = 1;
      sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
      sa.hdr.class_version = wire::kSaClassVersion;
      sa.hdr.method = m::kReport;
      sa.hdr.attr_id = wire::be16::from(a::kNotice);
      std::memcpy(sa.data.data(), &n, sizeof(n));
      b.addr = s.addr;
      if (b.addr.qkey == 0) b.addr.qkey = kGsiQkey;
      if (b.addr.remote_qpn == 0) b.addr.remote_qpn = 1;
      if (txn_->request(b, cfg_.report, &CoreWorker::on_report_done, this) == TxnStatus::kOk)
        bump(counters_.reports_sent);
      else
        bump(counters_.reports_failed);
    }
  }

  static void on_report_done(void* user, const TxnResult& r) noexcept {
    auto* self = static_cast<CoreWorker*>(user);
    bump(r.status == TxnStatus::kOk ? self->counters_.reports_acked : self->counters_.reports_failed);
  }

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
  std::uint64_t trap_epoch_ = 0;
  bool have_ports_ = false;
  std::unordered_set<std::uint64_t> known_ports_;
  std::uint64_t mc_generation_ = 0;
  AtomicCounters counters_;
};

// ============================================================== glue

class SaServer::Handler final : public MadHandler {
 public:
  explicit Handler(SaServer& s) : s_(s) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { s_.workers_[ctx.core_id()]->admit(buf, ctx); }

 private:
  SaServer& s_;
};

class SaServer::Hook final : public MadHandler {
 public:
  explicit Hook(SaServer& s) : s_(s) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { s_.on_response(buf, ctx); }

 private:
  SaServer& s_;
};

class SaServer::Provider final : public McGroupProvider {
 public:
  explicit Provider(const McastStore& g) : g_(g) {}
  std::vector<McGroup> groups() override {
    std::vector<McGroup> out;
    const auto v = g_.view();
    for (const auto& grp : *v) {
      McGroup x;
      x.mlid = grp.params.mlid.get();
      for (const auto& mem : grp.members) x.member_port_guids.push_back(mem.port_gid.guid.get());
      out.push_back(std::move(x));
    }
    return out;
  }

 private:
  const McastStore& g_;
};

void SaServer::notify_mcast_change() noexcept { provider_->notify(); }

SaServer::SaServer(Engine& engine, const SnapshotStore& store, SaServerConfig cfg)
    : store_(store), cfg_(cfg), groups_(cfg.mc_groups_max, cfg.consolidate_ipv6_snm_req) {
  if (engine.running()) throw std::invalid_argument("SaServer: the engine is already running");
  if (cfg_.state_core >= engine.cores()) throw std::invalid_argument("SaServer: state_core out of range");
  if (cfg_.queue_max == 0 || cfg_.burst_max == 0 || cfg_.requester_queued_max == 0)
    throw std::invalid_argument("SaServer: queue_max, burst_max and requester_queued_max must be positive");
  if (cfg_.dedup_slots == 0 || (cfg_.dedup_slots & (cfg_.dedup_slots - 1)) != 0)
    throw std::invalid_argument("SaServer: dedup_slots must be a power of two");
  handler_ = std::make_unique<Handler>(*this);
  provider_ = std::make_unique<Provider>(groups_);
  for (std::uint16_t c = 0; c < engine.cores(); ++c)
    workers_.push_back(std::make_unique<CoreWorker>(*this, c, engine.core(c)));
  constexpr std::uint8_t kSa = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  engine.add_handler({kSa, m::kGet, std::nullopt}, *handler_, OwnerSelector::spread_by(&select_get, nullptr));
  engine.add_handler({kSa, m::kGetTable, std::nullopt}, *handler_, OwnerSelector::by(&select_by_tid));
  engine.add_handler({kSa, m::kGetMulti, std::nullopt}, *handler_, OwnerSelector::by(&select_by_tid));
  engine.add_handler({kSa, m::kSet, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  engine.add_handler({kSa, m::kDelete, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  // Everything else of the class (GetTraceTable, a stray Report...) is answered "method unsupported".
  engine.add_handler({kSa, std::nullopt, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  for (std::uint16_t c = 0; c < engine.cores(); ++c) {
    engine.add_poller(c, *workers_[c]);
    if (cfg_.install_response_hooks) {
      hooks_.push_back(std::make_unique<Hook>(*this));
      engine.set_response_hook(c, *hooks_.back());
    }
  }
}

SaServer::~SaServer() = default;

bool SaServer::on_response(const MadBuf& buf, CoreContext& ctx) noexcept {
  const std::uint16_t c = ctx.core_id();
  return c < workers_.size() && workers_[c]->on_response(buf);
}

void SaServer::forward_notice(const wire::Notice& notice) {
  std::lock_guard lock(notices_mu_);
  notices_.push_back(notice);
  notices_pending_.store(true, std::memory_order_release);  // pairs with the acquire in state_poll
}

SaStateImage SaServer::capture_state() const { return capture(services_, groups_, subs_); }

void SaServer::set_partition_groups(std::vector<wire::McMemberRecord> groups) {
  std::lock_guard lock(partition_groups_mu_);
  partition_groups_ = std::move(groups);
  partition_groups_pending_.store(true, std::memory_order_release);  // pairs with the acquire in CoreWorker::poll
}

void SaServer::restore_state(SaStateImage image) {
  std::lock_guard lock(restore_mu_);
  restore_image_ = std::move(image);
  restore_pending_.store(true, std::memory_order_release);  // pairs with the acquire in CoreWorker::poll
}

SaCounters SaServer::counters() const {
  SaCounters c;
  for (const auto& w : workers_) w->snapshot_counters(c);
  return c;
}

McGroupProvider& SaServer::mcast_provider() noexcept { return *provider_; }
const ServiceStore& SaServer::services() const noexcept { return services_; }
const McastStore& SaServer::groups() const noexcept { return groups_; }
const InformStore& SaServer::subscriptions() const noexcept { return subs_; }

}  // namespace madengine::sa
