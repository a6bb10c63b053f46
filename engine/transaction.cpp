// The transaction manager (see transaction.hpp). A TID's low half is
// core (kTidCoreBits, dispatch.hpp's layout) | generation | slot, so a
// response finds its transaction in O(1) and a late duplicate (older
// generation) does not match a newer request until the slot's generation
// wraps, 2^(kTidSeqBits - slot bits) reuses later.
#include "engine/transaction.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <stdexcept>

namespace madengine {

const char* to_string(TxnStatus s) noexcept {
  switch (s) {
    case TxnStatus::kOk: return "ok";
    case TxnStatus::kTimeout: return "timeout";
    case TxnStatus::kCancelled: return "cancelled";
    case TxnStatus::kDeviceLost: return "device lost";
    case TxnStatus::kQueueFull: return "queue full";
    case TxnStatus::kSendFailed: return "send failed";
  }
  return "unknown";
}

namespace {
constexpr std::uint32_t kSlotBitsMax = 20;  // leaves >= 4 generation bits below the core id
static_assert(kTidSeqBits >= kSlotBitsMax + 4, "TID sequence too narrow for slots plus a generation");
// Every TransactionConfig::core_id (8 bits) fits the TID's core field.
static_assert(kCoresMax >= 256, "TransactionConfig::core_id is wider than kTidCoreBits");
}

TransactionManager::TransactionManager(const Clock& clock, TxSink& tx, TransactionConfig cfg)
    : clock_(clock), tx_(tx), cfg_(cfg), timers_(cfg.window_max + cfg.queue_max) {
  if (cfg.window_max == 0 || cfg.window_per_dest_max == 0)
    throw std::invalid_argument("TransactionConfig windows must be >= 1");
  const std::uint32_t slots = cfg.window_max + cfg.queue_max;
  slot_bits_ = std::max(1u, static_cast<std::uint32_t>(std::bit_width(slots - 1)));
  if (slot_bits_ > kSlotBitsMax)
    throw std::invalid_argument("TransactionConfig window_max + queue_max must be <= 2^20");
  generation_mask_ = (1u << (kTidSeqBits - slot_bits_)) - 1;
  txns_.resize(slots);
  for (std::uint32_t i = 0; i < slots; ++i) txns_[i].next_free = i + 1 < slots ? i + 1 : kNone;
  free_head_ = 0;
  dests_.resize(std::bit_ceil(2 * cfg.window_max));
}

TransactionManager::~TransactionManager() {
  shutting_down_ = true;
  fail_all(TxnStatus::kCancelled);
}

// ---- destination windows ---------------------------------------------------

TransactionManager::DestKey TransactionManager::key_of(const MadBuf& req) noexcept {
  DestKey k;
  k.lid = req.addr.lid;
  if (req.hdr().klass() == wire::MgmtClass::kSubnDirected) {
    const auto& smp = req.as<wire::DrSmp>();
    k.hops = std::min(smp.hop_count(), wire::kDrHopsMax);
    for (std::uint8_t i = 1; i <= k.hops; ++i) k.path[i] = smp.initial_path[i];
  }
  return k;
}

std::uint64_t TransactionManager::hash_of(const DestKey& k) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 0x100000001b3ull; };
  mix(static_cast<std::uint8_t>(k.lid >> 8));
  mix(static_cast<std::uint8_t>(k.lid));
  mix(k.hops);
  for (std::uint8_t i = 1; i <= k.hops; ++i) mix(k.path[i]);
  return h ^ (h >> 29);
}

std::uint32_t TransactionManager::find_dest(const DestKey& k, std::uint64_t hash) const noexcept {
  const auto mask = static_cast<std::uint32_t>(dests_.size() - 1);
  for (auto i = static_cast<std::uint32_t>(hash) & mask;; i = (i + 1) & mask) {
    const DestEntry& e = dests_[i];
    if (e.in_flight == 0) return kNone;
    if (e.hash == hash && e.key == k) return i;
  }
}

std::uint32_t& TransactionManager::dest_count(const Txn& t) noexcept {
  const auto mask = static_cast<std::uint32_t>(dests_.size() - 1);
  // The table is at most half full (entries exist only while in flight), so
  // the probe always finds the key or an empty bucket.
  for (auto i = static_cast<std::uint32_t>(t.key_hash) & mask;; i = (i + 1) & mask) {
    DestEntry& e = dests_[i];
    if (e.in_flight == 0) {
      e.key = t.key;
      e.hash = t.key_hash;
      return e.in_flight;
    }
    if (e.hash == t.key_hash && e.key == t.key) return e.in_flight;
  }
}

void TransactionManager::dest_release(const Txn& t) noexcept {
  std::uint32_t i = find_dest(t.key, t.key_hash);
  assert(i != kNone);
  if (--dests_[i].in_flight != 0) return;
  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  const auto mask = static_cast<std::uint32_t>(dests_.size() - 1);
  for (std::uint32_t j = (i + 1) & mask; dests_[j].in_flight != 0; j = (j + 1) & mask) {
    const auto home = static_cast<std::uint32_t>(dests_[j].hash) & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      dests_[i] = dests_[j];
      dests_[j].in_flight = 0;
      i = j;
    }
  }
}

bool TransactionManager::window_open(const Txn& t) const noexcept {
  if (in_flight_ >= cfg_.window_max) return false;
  const std::uint32_t d = find_dest(t.key, t.key_hash);
  return d == kNone || dests_[d].in_flight < cfg_.window_per_dest_max;
}

std::uint32_t TransactionManager::in_flight_to(const MadBuf& req) const noexcept {
  const DestKey k = key_of(req);
  const std::uint32_t d = find_dest(k, hash_of(k));
  return d == kNone ? 0 : dests_[d].in_flight;
}

// ---- wait queue ------------------------------------------------------------

void TransactionManager::queue_push(std::uint32_t slot) noexcept {
  Txn& t = txns_[slot];
  t.prev = queue_tail_;
  t.next = kNone;
  if (queue_tail_ != kNone) {
    txns_[queue_tail_].next = slot;
  } else {
    queue_head_ = slot;
  }
  queue_tail_ = slot;
  ++queue_len_;
}

void TransactionManager::queue_unlink(std::uint32_t slot) noexcept {
  Txn& t = txns_[slot];
  (t.prev != kNone ? txns_[t.prev].next : queue_head_) = t.next;
  (t.next != kNone ? txns_[t.next].prev : queue_tail_) = t.prev;
  t.prev = t.next = kNone;
  --queue_len_;
}

// ---- life of a transaction -------------------------------------------------

std::uint64_t TransactionManager::wire_tid(const Txn& t) const noexcept {
  return (t.req.hdr().tid.get() & 0xffffffff00000000ull) | t.tid_low;
}

bool TransactionManager::transmit(Txn& t, Nanos now_ns) noexcept {
  t.req.resp_timeout_ms = static_cast<std::uint32_t>(t.timeout_ns / kNanosPerMilli);
  ++t.attempts;
  t.last_sent_ns = now_ns;
  timers_.push(static_cast<std::uint32_t>(&t - txns_.data()), now_ns + t.timeout_ns);
  if (!tx_.send(t.req)) {
    ++counters_.send_failed;
    return false;
  }
  ++counters_.sent;
  return true;
}

TxnStatus TransactionManager::submit(const MadBuf& req, RequestOptions opts, std::uint32_t& slot_out) noexcept {
  if (shutting_down_) return TxnStatus::kCancelled;
  if (free_head_ == kNone) {
    ++counters_.queue_full;
    return TxnStatus::kQueueFull;
  }
  const std::uint32_t slot = free_head_;
  Txn& t = txns_[slot];
  t.req = req;
  t.opts = opts;
  t.opts.backoff_factor = std::max<std::uint8_t>(opts.backoff_factor, 1);
  t.timeout_ns = std::min<Nanos>(std::max<std::uint32_t>(opts.timeout_ms, 1), opts.timeout_max_ms) * kNanosPerMilli;
  t.generation = (t.generation + 1) & generation_mask_;
  t.tid_low = make_tid_low(cfg_.core_id, (t.generation << slot_bits_) | slot);
  t.req.hdr().tid = wire::be64::from(wire_tid(t));
  t.key = key_of(req);
  t.key_hash = hash_of(t.key);
  t.attempts = 0;
  t.awaiter = nullptr;
  t.cb = nullptr;
  t.user = nullptr;

  if (queue_len_ == 0 && window_open(t)) {
    free_head_ = t.next_free;
    t.state = State::kInFlight;
    ++dest_count(t);
    ++in_flight_;
    if (!transmit(t, clock_.now_ns())) {
      retire(slot);
      return TxnStatus::kSendFailed;
    }
  } else if (queue_len_ < cfg_.queue_max) {
    free_head_ = t.next_free;
    t.state = State::kQueued;
    queue_push(slot);
    ++counters_.queued;
  } else {
    ++counters_.queue_full;
    return TxnStatus::kQueueFull;
  }
  slot_out = slot;
  return TxnStatus::kOk;
}

void TransactionManager::retire(std::uint32_t slot) noexcept {
  Txn& t = txns_[slot];
  if (t.state == State::kInFlight) {
    if (timers_.contains(slot)) timers_.remove(slot);
    dest_release(t);
    --in_flight_;
  } else if (t.state == State::kQueued) {
    queue_unlink(slot);
  }
  t.state = State::kFree;
  t.awaiter = nullptr;
  t.cb = nullptr;
  t.mark = false;
  t.next_free = free_head_;
  free_head_ = slot;
}

void TransactionManager::complete(std::uint32_t slot, TxnStatus status, const MadBuf* resp, Nanos now_ns) noexcept {
  Txn& t = txns_[slot];
  RequestAwaiter* const aw = t.awaiter;
  const TxnCallback cb = t.cb;
  void* const user = t.user;
  switch (status) {
    case TxnStatus::kOk: ++counters_.matched; break;
    case TxnStatus::kTimeout: ++counters_.timed_out; break;
    case TxnStatus::kCancelled: ++counters_.cancelled; break;
    default: break;
  }
  TxnResult local;
  TxnResult& r = aw != nullptr ? aw->result_ : local;
  r.status = status;
  r.attempts = t.attempts;
  r.tid = wire_tid(t);
  r.rtt_ns = resp != nullptr ? now_ns - t.last_sent_ns : 0;
  if (resp != nullptr) r.response = *resp;
  retire(slot);  // before calling out: the callee may submit again
  if (aw != nullptr) {
    aw->slot_ = kNone;
    if (aw->ctx_ != nullptr) {
      detail::post_resume(*aw->ctx_, aw->handle_);
    } else {
      aw->handle_.resume();  // a task not run by a scheduler: nothing else would resume it
    }
  } else if (cb != nullptr) {
    cb(user, r);
  }
}

void TransactionManager::dispatch(Nanos now_ns) noexcept {
  std::uint32_t i = queue_head_;
  while (i != kNone && in_flight_ < cfg_.window_max) {
    Txn& t = txns_[i];
    const std::uint32_t next = t.next;
    if (!window_open(t)) {
      i = next;  // its destination is busy; later requests to others may go
      continue;
    }
    queue_unlink(i);
    t.state = State::kInFlight;
    ++dest_count(t);
    ++in_flight_;
    if (!transmit(t, now_ns)) {
      complete(i, TxnStatus::kSendFailed, nullptr, now_ns);
      i = queue_head_;  // the completion may have changed the queue
      continue;
    }
    i = next;
  }
}

std::size_t TransactionManager::poll(Nanos now_ns) noexcept {
  std::size_t work = 0;
  while (!timers_.empty() && timers_.top_deadline_ns() <= now_ns) {
    const std::uint32_t slot = timers_.top_id();
    timers_.remove(slot);
    Txn& t = txns_[slot];
    ++work;
    if (t.attempts <= t.opts.retries) {
      t.timeout_ns = std::min<Nanos>(t.timeout_ns * t.opts.backoff_factor,
                                     Nanos{t.opts.timeout_max_ms} * kNanosPerMilli);
      ++counters_.retried;
      transmit(t, now_ns);  // a refused re-send still counts: the next timeout retries it
    } else {
      complete(slot, TxnStatus::kTimeout, nullptr, now_ns);
    }
  }
  const std::uint32_t before = in_flight_;
  dispatch(now_ns);
  if (in_flight_ > before) work += in_flight_ - before;
  return work;
}

bool TransactionManager::on_response(const MadBuf& resp) noexcept {
  const wire::MadHeader& h = resp.hdr();
  const auto low = static_cast<std::uint32_t>(h.tid.get());
  const std::uint32_t slot = low & ((1u << slot_bits_) - 1);
  const bool is_response = h.is_response() || h.method == wire::method::kTrapRepress;
  if (!is_response || tid_core(low) != cfg_.core_id || slot >= txns_.size() ||
      txns_[slot].state != State::kInFlight || txns_[slot].tid_low != low ||
      txns_[slot].req.hdr().mgmt_class != h.mgmt_class) {
    ++counters_.unmatched;
    return false;
  }
  complete(slot, TxnStatus::kOk, &resp, clock_.now_ns());
  return true;
}

bool TransactionManager::cancel(std::uint64_t tid) noexcept {
  const auto low = static_cast<std::uint32_t>(tid);
  const std::uint32_t slot = low & ((1u << slot_bits_) - 1);
  if (slot >= txns_.size() || txns_[slot].state == State::kFree || txns_[slot].tid_low != low) return false;
  complete(slot, TxnStatus::kCancelled, nullptr, clock_.now_ns());
  return true;
}

std::size_t TransactionManager::resend_all(std::span<std::uint64_t> tids_out) noexcept {
  std::size_t n = 0;
  const Nanos now_ns = clock_.now_ns();
  for (std::uint32_t slot = 0; slot < txns_.size(); ++slot) {
    Txn& t = txns_[slot];
    if (t.state != State::kInFlight) continue;
    // Same TID, fresh timer; the retry budget is kept for real losses.
    t.last_sent_ns = now_ns;
    timers_.push(slot, now_ns + t.timeout_ns);
    if (tx_.send(t.req)) {
      ++counters_.sent;
    } else {
      ++counters_.send_failed;
    }
    ++counters_.resent;
    if (n < tids_out.size()) tids_out[n] = wire_tid(t);
    ++n;
  }
  return n;
}

std::size_t TransactionManager::fail_all(TxnStatus why, std::span<std::uint64_t> tids_out) noexcept {
  // Mark first: a completion callback may submit new requests into freed
  // slots, and those are not part of this failure.
  for (Txn& t : txns_) t.mark = t.state != State::kFree;
  std::size_t n = 0;
  const Nanos now_ns = clock_.now_ns();
  for (std::uint32_t slot = 0; slot < txns_.size(); ++slot) {
    Txn& t = txns_[slot];
    if (!t.mark || t.state == State::kFree) continue;
    t.mark = false;
    if (n < tids_out.size()) tids_out[n] = wire_tid(t);
    ++n;
    ++counters_.failed_by[static_cast<std::size_t>(why)];
    complete(slot, why, nullptr, now_ns);
  }
  return n;
}

// ---- coroutine and callback front ends ---------------------------------------

TxnStatus TransactionManager::request(const MadBuf& req, RequestOptions opts, TxnCallback cb, void* user) noexcept {
  std::uint32_t slot = kNone;
  const TxnStatus s = submit(req, opts, slot);
  if (s == TxnStatus::kOk) {
    txns_[slot].cb = cb;
    txns_[slot].user = user;
  }
  return s;
}

bool TransactionManager::start_await(RequestAwaiter& a, std::coroutine_handle<> h) noexcept {
  a.handle_ = h;
  if (a.ctx_ != nullptr && a.ctx_->cancel_requested) {
    a.result_.status = TxnStatus::kCancelled;
    return false;
  }
  std::uint32_t slot = kNone;
  const TxnStatus s = submit(*a.req_, a.opts_, slot);
  if (s != TxnStatus::kOk) {
    a.result_.status = s;
    return false;
  }
  txns_[slot].awaiter = &a;
  a.slot_ = slot;
  if (a.ctx_ != nullptr) {
    a.ctx_->hook = &a;
    a.ctx_->resume_point = h;
  }
  return true;
}

void TransactionManager::cancel_await(detail::CancelHook* hook) noexcept {
  auto* a = static_cast<RequestAwaiter*>(hook);
  TransactionManager& m = *a->mgr_;
  m.retire(a->slot_);
  a->slot_ = kNone;
  a->result_.status = TxnStatus::kCancelled;
  ++m.counters_.cancelled;
}

void TransactionManager::abandon(RequestAwaiter& a) noexcept {
  retire(a.slot_);
  a.slot_ = kNone;
  ++counters_.cancelled;
}

TransactionManager::RequestAwaiter::~RequestAwaiter() {
  // The frame is being destroyed while the request is outstanding (its
  // scheduler shut down): forget the transaction, resume nothing.
  if (slot_ != kNone) mgr_->abandon(*this);
}

}  // namespace madengine
