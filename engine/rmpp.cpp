// RMPP sender and receiver (see rmpp.hpp). Segment numbers count from 1;
// PayloadLength is the total in the first DATA segment and the remainder in
// the last, both counting the class header bytes of every segment
// (IBA 13.6.2.3; the Linux kernel and OpenSM count it the same way).
#include "engine/rmpp.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstring>
#include <stdexcept>


namespace madengine {

using wire::RmppHeader;
using wire::RmppType;
namespace rmpp_flag = wire::rmpp_flag;
namespace rmpp_status = wire::rmpp_status;

namespace {

constexpr std::size_t kRmppOffset = wire::kMadHeaderSize;

RmppHeader rmpp_of(const MadBuf& m) noexcept {
  RmppHeader r;
  std::memcpy(&r, m.mad.bytes.data() + kRmppOffset, sizeof r);
  return r;
}

void set_rmpp(MadBuf& m, const RmppHeader& r) noexcept {
  std::memcpy(m.mad.bytes.data() + kRmppOffset, &r, sizeof r);
}

RmppHeader make_rmpp(RmppType type, std::uint8_t flags, std::uint8_t status, std::uint32_t d1,
                     std::uint32_t d2) noexcept {
  RmppHeader r{};
  r.version = 1;
  r.type = static_cast<std::uint8_t>(type);
  r.set_flags(kRmppNoRespTime, static_cast<std::uint8_t>(flags | rmpp_flag::kActive));
  r.status = status;
  r.data1 = wire::be32::from(d1);
  r.data2 = wire::be32::from(d2);
  return r;
}

void validate_config(const RmppConfig& c) {
  if (c.transfers_max == 0 || c.segments_max == 0)
    throw std::invalid_argument("RmppConfig: transfers_max and segments_max must be >= 1");
  if (c.data_offset < wire::kMadHeaderSize + wire::kRmppHeaderSize || c.data_offset >= wire::kMadSize)
    throw std::invalid_argument("RmppConfig: data_offset must lie between the RMPP header and the MAD end");
  if (c.window_segs == 0 || c.burst_segs_max == 0)
    throw std::invalid_argument("RmppConfig: window_segs and burst_segs_max must be >= 1");
  if (c.resp_timeout_ns <= 0 || c.total_timeout_ns <= 0 || c.stop_timeout_ns <= 0 || c.linger_ns < 0)
    throw std::invalid_argument("RmppConfig: timeouts must be positive");
}

}  // namespace

const char* to_string(RmppOutcome o) noexcept {
  switch (o) {
    case RmppOutcome::kDone: return "done";
    case RmppOutcome::kAbortedByPeer: return "aborted by peer";
    case RmppOutcome::kAborted: return "aborted";
    case RmppOutcome::kCancelled: return "cancelled";
  }
  return "unknown";
}

// ---- key index -------------------------------------------------------------

namespace detail {

RmppKeyIndex::RmppKeyIndex(std::uint32_t slots_max)
    : slot_plus1_(std::bit_ceil(2 * std::size_t{slots_max})), hash_(slot_plus1_.size()),
      mask_(static_cast<std::uint32_t>(slot_plus1_.size() - 1)) {}

void RmppKeyIndex::insert(std::uint64_t hash, std::uint32_t slot) noexcept {
  std::uint32_t i = static_cast<std::uint32_t>(hash) & mask_;
  while (slot_plus1_[i] != 0) i = (i + 1) & mask_;  // at most half full: terminates
  slot_plus1_[i] = slot + 1;
  hash_[i] = hash;
}

void RmppKeyIndex::erase(std::uint64_t hash, std::uint32_t slot) noexcept {
  std::uint32_t i = static_cast<std::uint32_t>(hash) & mask_;
  while (slot_plus1_[i] != slot + 1) {
    assert(slot_plus1_[i] != 0);
    i = (i + 1) & mask_;
  }
  slot_plus1_[i] = 0;
  // Backward shift keeps probe chains unbroken without tombstones.
  for (std::uint32_t j = (i + 1) & mask_; slot_plus1_[j] != 0; j = (j + 1) & mask_) {
    const std::uint32_t home = static_cast<std::uint32_t>(hash_[j]) & mask_;
    if (((j - home) & mask_) >= ((j - i) & mask_)) {
      slot_plus1_[i] = slot_plus1_[j];
      hash_[i] = hash_[j];
      slot_plus1_[j] = 0;
      i = j;
    }
  }
}

std::uint64_t RmppKeyIndex::hash_of(const RmppKey& k) noexcept {
  std::uint64_t h = k.tid * 0x9e3779b97f4a7c15ull;
  h ^= (std::uint64_t{k.lid} << 40) ^ (std::uint64_t{k.qpn} << 8) ^ k.mgmt_class;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 31);
}

}  // namespace detail

// ---- sender ----------------------------------------------------------------

RmppSender::RmppSender(const Clock& clock, TxSink& tx, RmppConfig cfg)
    : clock_(clock), tx_(tx), cfg_((validate_config(cfg), cfg)), seg_data_(wire::kMadSize - cfg.data_offset),
      payload_max_(std::size_t{cfg.segments_max} * seg_data_), transfers_(cfg.transfers_max),
      buffers_(new std::uint8_t[std::size_t{cfg.transfers_max} * payload_max_]), index_(cfg.transfers_max),
      timers_(cfg.transfers_max) {
  for (std::uint32_t i = 0; i < cfg.transfers_max; ++i)
    transfers_[i].next_free = i + 1 < cfg.transfers_max ? i + 1 : kNone;
}

std::uint32_t RmppSender::segments_for(std::size_t bytes) const noexcept {
  return static_cast<std::uint32_t>(std::max<std::size_t>(1, (bytes + seg_data_ - 1) / seg_data_));
}

std::uint32_t RmppSender::find(const RmppKey& k, std::uint64_t hash) const noexcept {
  return index_.find(hash, [&](std::uint32_t s) { return transfers_[s].key == k; });
}

RmppStart RmppSender::send(const MadBuf& tmpl, std::span<const std::uint8_t> payload, RmppSendCallback cb,
                           void* user) noexcept {
  if (payload.size() > payload_max_) return RmppStart::kTooLarge;
  const RmppKey key = RmppKey::of(tmpl);
  const std::uint64_t hash = detail::RmppKeyIndex::hash_of(key);
  if (find(key, hash) != kNone) return RmppStart::kDuplicateKey;
  if (free_head_ == kNone) return RmppStart::kTableFull;
  const std::uint32_t slot = free_head_;
  Transfer& t = transfers_[slot];
  free_head_ = t.next_free;
  t.tmpl = tmpl;
  t.key = key;
  t.hash = hash;
  t.payload_len = static_cast<std::uint32_t>(payload.size());
  t.seg_count = segments_for(payload.size());
  t.next_seg = 1;
  t.last_ack = 0;
  t.window_last = 1;
  t.highest_sent = 0;
  t.retries = 0;
  t.state = State::kSending;
  t.cb = cb;
  t.user = user;
  if (!payload.empty()) std::memcpy(payload_of(slot), payload.data(), payload.size());
  index_.insert(hash, slot);
  ++active_;
  const Nanos now_ns = clock_.now_ns();
  timers_.push(slot, now_ns + cfg_.resp_timeout_ns);
  pump(slot, now_ns);
  return RmppStart::kOk;
}

void RmppSender::build_segment(const Transfer& t, std::uint32_t seg, MadBuf& out) const noexcept {
  out = t.tmpl;
  out.len = wire::kMadSize;
  const std::size_t class_hdr = cfg_.data_offset - kRmppOffset - wire::kRmppHeaderSize;
  const std::size_t off = std::size_t{seg - 1} * seg_data_;
  const std::size_t n = std::min(seg_data_, t.payload_len - off);
  std::uint8_t flags = 0;
  std::uint32_t paylen = 0;  // middle segments carry 0
  if (seg == 1) {
    flags |= rmpp_flag::kFirst;
    paylen = static_cast<std::uint32_t>(t.seg_count * class_hdr + t.payload_len);
  }
  if (seg == t.seg_count) {
    flags |= rmpp_flag::kLast;
    paylen = static_cast<std::uint32_t>(class_hdr + n);
  }
  set_rmpp(out, make_rmpp(RmppType::kData, flags, rmpp_status::kNormal, seg, paylen));
  std::uint8_t* data = out.mad.bytes.data() + cfg_.data_offset;
  if (n != 0) std::memcpy(data, payload_of(static_cast<std::uint32_t>(&t - transfers_.data())) + off, n);
  std::memset(data + n, 0, seg_data_ - n);
}

std::size_t RmppSender::pump(std::uint32_t slot, Nanos now_ns) noexcept {
  Transfer& t = transfers_[slot];
  if (t.state != State::kSending) return 0;
  const std::uint32_t last = std::min(t.window_last, t.seg_count);
  std::size_t sent = 0;
  while (t.next_seg <= last && sent < cfg_.burst_segs_max) {
    build_segment(t, t.next_seg, scratch_);
    if (!tx_.send(scratch_)) {
      ++counters_.sink_full;
      break;
    }
    ++counters_.segments_sent;
    if (t.next_seg <= t.highest_sent) ++counters_.segments_resent;
    t.highest_sent = std::max(t.highest_sent, t.next_seg);
    ++t.next_seg;
    ++sent;
  }
  if (sent != 0) timers_.push(slot, now_ns + cfg_.resp_timeout_ns);
  return sent;
}

void RmppSender::send_abort(const Transfer& t, std::uint8_t status) noexcept {
  scratch_ = t.tmpl;
  scratch_.len = wire::kMadSize;
  set_rmpp(scratch_, make_rmpp(RmppType::kAbort, 0, status, 0, 0));
  std::memset(scratch_.mad.bytes.data() + cfg_.data_offset, 0, seg_data_);
  ++counters_.aborts_sent;
  if (!tx_.send(scratch_)) ++counters_.sink_full;  // the receiver's own timer ends it then
}

void RmppSender::finish(std::uint32_t slot, RmppOutcome outcome, std::uint8_t status) noexcept {
  Transfer& t = transfers_[slot];
  const RmppSendDone done{t.key, outcome, status, t.seg_count};
  const RmppSendCallback cb = t.cb;
  void* const user = t.user;
  index_.erase(t.hash, slot);
  if (timers_.contains(slot)) timers_.remove(slot);
  t.state = State::kFree;
  t.next_free = free_head_;
  free_head_ = slot;
  --active_;
  if (outcome == RmppOutcome::kDone) ++counters_.done;
  if (cb != nullptr) cb(user, done);  // last: it may start a new transfer
}

bool RmppSender::on_mad(const MadBuf& m) noexcept {
  if (m.len < kRmppOffset + wire::kRmppHeaderSize) return false;
  const RmppHeader r = rmpp_of(m);
  if (!r.active() || r.rmpp_type() == RmppType::kData) return false;  // DATA is the receiver's
  const RmppKey key = RmppKey::of(m);
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone) return false;
  Transfer& t = transfers_[slot];
  const Nanos now_ns = clock_.now_ns();
  auto abort_with = [&](std::uint8_t status) {
    send_abort(t, status);
    finish(slot, RmppOutcome::kAborted, status);
  };
  if (r.version != 1) {
    abort_with(rmpp_status::kUnsupportedVersion);
    return true;
  }
  switch (r.rmpp_type()) {
    case RmppType::kAck: {
      ++counters_.acks;
      const std::uint32_t seg = r.data1.get();
      const std::uint32_t nwl = r.data2.get();
      if (nwl < seg) {
        abort_with(rmpp_status::kNewWindowLastTooSmall);
        return true;
      }
      if (seg > t.highest_sent) {  // acknowledges what we never sent
        abort_with(rmpp_status::kSegmentNumberTooBig);
        return true;
      }
      if (t.state == State::kStopped) {
        if (seg < t.last_ack) {
          ++counters_.old_acks;
          return true;
        }
        // Resume after STOP: the receiver dropped what came meanwhile, so go
        // back to the first segment it has not acknowledged.
        t.state = State::kSending;
        t.last_ack = seg;
        t.window_last = std::max(t.window_last, nwl);
        t.next_seg = seg + 1;
        t.retries = 0;
      } else if (seg < t.last_ack || (seg == t.last_ack && nwl <= t.window_last)) {
        ++counters_.old_acks;  // IBA 13.6.3.2: an ACK that moves nothing is ignored
        return true;
      } else {
        t.last_ack = seg;
        t.window_last = std::max(t.window_last, nwl);
        t.next_seg = std::max(t.next_seg, seg + 1);
        t.retries = 0;
      }
      if (t.last_ack >= t.seg_count) {
        finish(slot, RmppOutcome::kDone, rmpp_status::kNormal);
        return true;
      }
      timers_.push(slot, now_ns + cfg_.resp_timeout_ns);
      pump(slot, now_ns);
      return true;
    }
    case RmppType::kStop:
      if (r.status != rmpp_status::kResourcesExhausted) {
        abort_with(rmpp_status::kIllegalStatus);
        return true;
      }
      ++counters_.stops;
      t.state = State::kStopped;
      timers_.push(slot, now_ns + cfg_.stop_timeout_ns);
      return true;
    case RmppType::kAbort:
      ++counters_.aborts_received;
      finish(slot, RmppOutcome::kAbortedByPeer, r.status);
      return true;
    default:
      abort_with(rmpp_status::kBadRmppType);
      return true;
  }
}

std::size_t RmppSender::poll(Nanos now_ns) noexcept {
  std::size_t work = 0;
  while (!timers_.empty() && timers_.top_deadline_ns() <= now_ns) {
    const std::uint32_t slot = timers_.top_id();
    timers_.remove(slot);
    Transfer& t = transfers_[slot];
    ++work;
    if (t.state == State::kStopped) {
      send_abort(t, rmpp_status::kTotalTimeTooLong);
      finish(slot, RmppOutcome::kAborted, rmpp_status::kTotalTimeTooLong);
      continue;
    }
    ++counters_.window_timeouts;
    if (++t.retries > cfg_.retries_max) {
      send_abort(t, rmpp_status::kTooManyRetries);
      finish(slot, RmppOutcome::kAborted, rmpp_status::kTooManyRetries);
      continue;
    }
    t.next_seg = t.last_ack + 1;  // go back to the first unacknowledged segment
    timers_.push(slot, now_ns + cfg_.resp_timeout_ns);
  }
  if (active_ != 0) {
    for (std::uint32_t slot = 0; slot < transfers_.size(); ++slot) work += pump(slot, now_ns);
  }
  return work;
}

bool RmppSender::cancel(const RmppKey& key) noexcept {
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone) return false;
  send_abort(transfers_[slot], rmpp_status::kUnspecified);
  finish(slot, RmppOutcome::kCancelled, rmpp_status::kUnspecified);
  return true;
}

// ---- receiver --------------------------------------------------------------

RmppReceiver::RmppReceiver(const Clock& clock, TxSink& tx, RmppRecvCallback cb, void* user, RmppConfig cfg)
    : clock_(clock), tx_(tx), cb_(cb), user_(user), cfg_((validate_config(cfg), cfg)),
      seg_data_(wire::kMadSize - cfg.data_offset),
      class_hdr_(cfg.data_offset - kRmppOffset - wire::kRmppHeaderSize),
      payload_max_(std::size_t{cfg.segments_max} * seg_data_), transfers_(cfg.transfers_max),
      buffers_(new std::uint8_t[std::size_t{cfg.transfers_max} * payload_max_]), index_(cfg.transfers_max),
      timers_(cfg.transfers_max) {
  for (std::uint32_t i = 0; i < cfg.transfers_max; ++i)
    transfers_[i].next_free = i + 1 < cfg.transfers_max ? i + 1 : kNone;
}

std::uint32_t RmppReceiver::find(const RmppKey& k, std::uint64_t hash) const noexcept {
  return index_.find(hash, [&](std::uint32_t s) { return transfers_[s].key == k; });
}

void make_rmpp_reply(const MadBuf& like, MadBuf& out, RmppType type, std::uint8_t status, std::uint32_t d1,
                     std::uint32_t d2, std::size_t data_offset) noexcept {
  out = like;
  out.len = wire::kMadSize;
  out.hdr().method = static_cast<std::uint8_t>(like.hdr().method ^ wire::method::kResponse);
  out.hdr().status = wire::be16::from(0);
  set_rmpp(out, make_rmpp(type, 0, status, d1, d2));
  std::memset(out.mad.bytes.data() + data_offset, 0, wire::kMadSize - data_offset);
}

void RmppReceiver::send_ctl(const MadBuf& like, RmppType type, std::uint8_t status, std::uint32_t d1,
                            std::uint32_t d2) noexcept {
  make_rmpp_reply(like, scratch_, type, status, d1, d2, cfg_.data_offset);
  switch (type) {
    case RmppType::kAck: ++counters_.acks_sent; break;
    case RmppType::kStop: ++counters_.stops_sent; break;
    case RmppType::kAbort: ++counters_.aborts_sent; break;
    default: break;
  }
  if (!tx_.send(scratch_)) ++counters_.sink_full;  // the sender's timer recovers a lost control MAD
}

void RmppReceiver::ack(Transfer& t, Nanos now_ns) noexcept {
  send_ctl(t.first, RmppType::kAck, rmpp_status::kNormal, t.expected - 1, t.window_last);
  t.last_ack_ns = now_ns;
}

void RmppReceiver::release(std::uint32_t slot) noexcept {
  Transfer& t = transfers_[slot];
  index_.erase(t.hash, slot);
  if (timers_.contains(slot)) timers_.remove(slot);
  t.state = State::kFree;
  t.next_free = free_head_;
  free_head_ = slot;
  --active_;
}

// Every slot busy: a finished transfer that lingers only to repeat a lost
// final ACK gives way to a new one (the oldest first); a client that asks
// again and again (a standby's replica rounds) would otherwise be refused
// until the lingers end. False if every slot holds a live transfer.
bool RmppReceiver::reclaim_linger() noexcept {
  std::uint32_t oldest = kNone;
  for (std::uint32_t i = 0; i < transfers_.size(); ++i)
    if (transfers_[i].state == State::kLinger &&
        (oldest == kNone || transfers_[i].linger_until_ns < transfers_[oldest].linger_until_ns))
      oldest = i;
  if (oldest == kNone) return false;
  release(oldest);
  ++counters_.lingers_reclaimed;
  return true;
}

void RmppReceiver::deliver(std::uint32_t slot, RmppOutcome outcome, std::uint8_t status) noexcept {
  Transfer& t = transfers_[slot];
  RmppRecvDone done;
  done.key = t.key;
  done.outcome = outcome;
  done.rmpp_status = status;
  if (outcome == RmppOutcome::kDone) {
    ++counters_.done;
    done.first = &t.first;
    done.payload = {data_of(slot), t.data_len};
    // Linger so a lost final ACK can be repeated when the sender re-sends.
    t.state = State::kLinger;
    t.linger_until_ns = clock_.now_ns() + cfg_.linger_ns;
    timers_.push(slot, t.linger_until_ns);
    if (cb_ != nullptr) cb_(user_, done);
    return;
  }
  release(slot);
  if (cb_ != nullptr) cb_(user_, done);
}

void RmppReceiver::abort_transfer(std::uint32_t slot, std::uint8_t status, RmppOutcome outcome) noexcept {
  send_ctl(transfers_[slot].first, RmppType::kAbort, status, 0, 0);
  deliver(slot, outcome, status);
}

bool RmppReceiver::on_mad(const MadBuf& m) noexcept {
  if (m.len < kRmppOffset + wire::kRmppHeaderSize) return false;
  const RmppHeader r = rmpp_of(m);
  if (!r.active()) return false;
  if (r.rmpp_type() == RmppType::kData) {
    on_data(m, clock_.now_ns());
    return true;
  }
  if (r.rmpp_type() != RmppType::kAbort) return false;  // ACK and STOP are the sender's
  const RmppKey key = RmppKey::of(m);
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone) return false;
  if (transfers_[slot].state == State::kLinger) return true;  // already complete
  ++counters_.aborts_received;
  deliver(slot, RmppOutcome::kAbortedByPeer, r.status);
  return true;
}

void RmppReceiver::on_data(const MadBuf& m, Nanos now_ns) noexcept {
  const RmppHeader r = rmpp_of(m);
  const RmppKey key = RmppKey::of(m);
  std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  const std::uint32_t seg = r.data1.get();
  const bool first = (r.flags() & rmpp_flag::kFirst) != 0;
  const bool last = (r.flags() & rmpp_flag::kLast) != 0;

  if (r.version != 1) {
    send_ctl(m, RmppType::kAbort, rmpp_status::kUnsupportedVersion, 0, 0);
    if (slot != kNone && transfers_[slot].state != State::kLinger)
      deliver(slot, RmppOutcome::kAborted, rmpp_status::kUnsupportedVersion);
    return;
  }

  if (slot == kNone) {
    if (!first) {
      ++counters_.unknown;  // e.g. a re-send after we finished and forgot
      return;
    }
    if (seg != 1) {
      send_ctl(m, RmppType::kAbort, rmpp_status::kInconsistentFirstAndSegment, 0, 0);
      return;
    }
    const std::uint32_t total = r.data2.get();
    const std::uint32_t count =
        std::max<std::uint32_t>(1, static_cast<std::uint32_t>((std::size_t{total} + kRmppSegmentPayload - 1) /
                                                              kRmppSegmentPayload));
    const std::size_t last_paylen = total - std::size_t{count - 1} * kRmppSegmentPayload;
    if (last_paylen < class_hdr_ || last_paylen > kRmppSegmentPayload) {
      send_ctl(m, RmppType::kAbort, rmpp_status::kInconsistentLastAndLength, 0, 0);
      return;
    }
    if (free_head_ == kNone) reclaim_linger();
    if (count > cfg_.segments_max || free_head_ == kNone) {
      // No state for it: too large for our buffers, or too many at once.
      send_ctl(m, RmppType::kAbort, rmpp_status::kUnspecified, 0, 0);
      return;
    }
    slot = free_head_;
    Transfer& t = transfers_[slot];
    free_head_ = t.next_free;
    t.first = m;
    t.key = key;
    t.hash = detail::RmppKeyIndex::hash_of(key);
    t.total_paylen = total;
    t.seg_count = count;
    t.expected = 1;
    t.window_last = 1;
    t.data_len = 0;
    t.last_ack_ns = -1;
    t.state = State::kReceiving;
    index_.insert(t.hash, slot);
    ++active_;
    timers_.push(slot, now_ns + cfg_.total_timeout_ns);
  }

  Transfer& t = transfers_[slot];
  const bool may_reack = t.last_ack_ns < 0 || now_ns - t.last_ack_ns >= cfg_.reack_gap_ns;
  switch (t.state) {
    case State::kLinger:
      ++counters_.duplicates;
      if (may_reack) ack(t, now_ns);  // our final ACK was lost
      return;
    case State::kStopped:
      return;  // no resources: dropped until resume()
    default:
      break;
  }
  if (first != (seg == 1) || seg == 0) {
    abort_transfer(slot, rmpp_status::kInconsistentFirstAndSegment, RmppOutcome::kAborted);
    return;
  }
  if (seg > t.window_last) {
    abort_transfer(slot, rmpp_status::kSegmentNumberTooBig, RmppOutcome::kAborted);
    return;
  }
  if (seg != t.expected) {
    // Behind: the sender re-sent because an ACK was lost. Ahead: a segment
    // was lost or reordered; it is dropped and re-sent after the sender's
    // timeout. Either way repeat the last in-order ACK, at most once a gap.
    ++(seg < t.expected ? counters_.duplicates : counters_.out_of_order);
    if (may_reack) ack(t, now_ns);
    return;
  }
  const std::size_t last_paylen = t.total_paylen - std::size_t{t.seg_count - 1} * kRmppSegmentPayload;
  if (last != (seg == t.seg_count) || (last && r.data2.get() != last_paylen)) {
    abort_transfer(slot, rmpp_status::kInconsistentLastAndLength, RmppOutcome::kAborted);
    return;
  }
  const std::size_t n = last ? last_paylen - class_hdr_ : seg_data_;
  std::memcpy(data_of(slot) + std::size_t{seg - 1} * seg_data_, m.mad.bytes.data() + cfg_.data_offset, n);
  t.data_len += static_cast<std::uint32_t>(n);
  ++t.expected;
  ++counters_.segments;
  if (last) {
    t.window_last = t.seg_count;
    ack(t, now_ns);
    deliver(slot, RmppOutcome::kDone, rmpp_status::kNormal);
  } else if (seg == t.window_last) {
    t.window_last = std::min(seg + cfg_.window_segs, t.seg_count);
    ack(t, now_ns);
  }
}

std::size_t RmppReceiver::poll(Nanos now_ns) noexcept {
  std::size_t work = 0;
  while (!timers_.empty() && timers_.top_deadline_ns() <= now_ns) {
    const std::uint32_t slot = timers_.top_id();
    timers_.remove(slot);
    ++work;
    if (transfers_[slot].state == State::kLinger) {
      release(slot);
    } else {
      abort_transfer(slot, rmpp_status::kTotalTimeTooLong, RmppOutcome::kAborted);
    }
  }
  return work;
}

bool RmppReceiver::stop(const RmppKey& key) noexcept {
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone || transfers_[slot].state != State::kReceiving) return false;
  Transfer& t = transfers_[slot];
  t.state = State::kStopped;
  send_ctl(t.first, RmppType::kStop, rmpp_status::kResourcesExhausted, 0, 0);  // data fields reserved
  return true;
}

bool RmppReceiver::resume(const RmppKey& key) noexcept {
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone || transfers_[slot].state != State::kStopped) return false;
  Transfer& t = transfers_[slot];
  t.state = State::kReceiving;
  ack(t, clock_.now_ns());
  return true;
}

bool RmppReceiver::cancel(const RmppKey& key) noexcept {
  const std::uint32_t slot = find(key, detail::RmppKeyIndex::hash_of(key));
  if (slot == kNone || transfers_[slot].state == State::kLinger) return false;
  abort_transfer(slot, rmpp_status::kUnspecified, RmppOutcome::kCancelled);
  return true;
}

}  // namespace madengine
