// The SA worker's admission (see core_worker.hpp): bounded queue, each
// requester's share, retried TIDs answered from the retry cache; the poll
// loop that drains the queue; the per-core counters.
#include <algorithm>
#include <cstring>
#include <utility>

#include "sa/server/core_worker.hpp"

namespace madengine::sa {

namespace {

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

}  // namespace

SaServer::CoreWorker::CoreWorker(SaServer& server, std::uint16_t core_id, Core& core)
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

SaServer::CoreWorker::~CoreWorker() {
  for (std::uint32_t i = 0; i < queue_len_; ++i) {
    const std::uint32_t pos = (queue_head_ + i) % static_cast<std::uint32_t>(queue_.size());
    if (queue_[pos] != &copies_[pos]) core_.pool().free(MadPool::kNoCore, queue_[pos]);
  }
}

void SaServer::CoreWorker::admit(MadBuf& buf, CoreContext& ctx) noexcept {
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

std::size_t SaServer::CoreWorker::poll(Nanos now_ns) noexcept {
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
    // The state core's joins, leaves and subscriptions of this burst are
    // published once, after it and before its answers go out (flush_tx).
    const bool state_core = txn_ != nullptr;
    if (state_core) {
      server_.groups_.hold();
      server_.subs_.hold();
    }
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
    if (state_core) {
      // Out of memory copying a view: its change stays due for the next burst.
      try {
        server_.groups_.release();
      } catch (...) {
      }
      try {
        server_.subs_.release();
      } catch (...) {
      }
    }
  }
  work += sender_.poll(now_ns);
  if (txn_ != nullptr) work += state_poll(now_ns);
  return work;
}

bool SaServer::CoreWorker::on_response(const MadBuf& buf) noexcept {
  const auto& h = buf.hdr();
  if (h.mgmt_class == static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm)) {
    const auto& rm = buf.as<wire::SaMad>().rmpp;
    if (rm.active() && rm.rmpp_type() != wire::RmppType::kData) return sender_.on_mad(buf);
  }
  return txn_ != nullptr && txn_->on_response(buf);
}

void SaServer::CoreWorker::snapshot_counters(SaCounters& out) const {
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

void SaServer::CoreWorker::refresh_snapshot() noexcept {
  // The epoch check is one atomic load; the shared_ptr is reloaded only on change.
  const std::uint64_t e = server_.store_.epoch();
  if (snap_ == nullptr || e != snap_epoch_) {
    std::shared_ptr<const Snapshot> old = std::exchange(snap_, server_.store_.current());
    snap_epoch_ = e;
    mc_defaults_valid_ = false;
    server_.release(std::move(old));
  }
}

void SaServer::release(std::shared_ptr<const Snapshot> old) const noexcept {
  if (old != nullptr && cfg_.release_pool != nullptr) release_on(*cfg_.release_pool, std::move(old));
}

void SaServer::CoreWorker::record_latency(const Dedup& d) noexcept {
  const std::uint64_t ns = answer_now_ns_ > d.at_ns ? static_cast<std::uint64_t>(answer_now_ns_ - d.at_ns) : 0;
  bump(counters_.latency[latency_bucket(ns)]);
  bump(counters_.latency_sum_ns, ns);
}

void SaServer::CoreWorker::remember_answer(std::size_t slot, const MadBuf& resp, std::size_t data_len) noexcept {
  CachedAnswer& c = dedup_answer_[slot];
  const std::uint8_t* mad = resp.mad.bytes.data();
  std::memcpy(c.head.data(), mad, c.head.size());
  std::memcpy(c.data.data(), mad + wire::kSaHeaderSize, c.data.size());
  c.len = resp.len;
  c.full = data_len > kCachedDataBytes && !tail_is_zero(resp);
  if (c.full) dedup_full_[slot] = resp.mad;
}

bool SaServer::CoreWorker::tail_is_zero(const MadBuf& resp) noexcept {
  constexpr std::size_t kFrom = wire::kSaHeaderSize + kCachedDataBytes;
  std::uint64_t any = 0;
  for (std::size_t i = kFrom; i < wire::kMadSize; i += sizeof(any)) {
    std::uint64_t w;
    std::memcpy(&w, resp.mad.bytes.data() + i, sizeof(w));
    any |= w;
  }
  return any == 0;
}

void SaServer::CoreWorker::replay_answer(std::size_t slot, MadBuf& buf) const noexcept {
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

}  // namespace madengine::sa
