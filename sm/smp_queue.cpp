// SmpQueue (see smp_queue.hpp): callbacks from the transaction manager refill
// the window from the FIFO, so a sweep keeps window_smps_max SMPs in flight
// without a barrier between its phases.
#include "sm/smp_queue.hpp"

#include <algorithm>
#include <cstring>

#include "madengine/wire/codec.hpp"

namespace madengine::sm {

MadBuf make_dr_request(std::uint8_t method, std::uint16_t attr_id, std::uint32_t attr_mod,
                       const wire::DrPath& path, std::uint8_t port_num, std::span<const std::uint8_t> data,
                       std::uint64_t m_key) noexcept {
  MadBuf b{};
  wire::DrSmp smp = wire::make_dr_smp(method, attr_id, attr_mod, 0, path, m_key);
  if (!data.empty()) std::memcpy(smp.data.data(), data.data(), std::min(data.size(), smp.data.size()));
  b.as<wire::DrSmp>() = smp;
  b.len = wire::kMadSize;
  b.addr.lid = wire::kPermissiveLid;
  b.addr.port_num = port_num;
  return b;
}

MadBuf make_lid_request(std::uint8_t method, std::uint16_t attr_id, std::uint32_t attr_mod, std::uint16_t dlid,
                        std::uint8_t port_num, std::span<const std::uint8_t> data, std::uint64_t m_key) noexcept {
  MadBuf b{};
  wire::Smp smp{};
  smp.hdr = wire::make_smp_header(wire::MgmtClass::kSubnLid, method, attr_id, attr_mod, 0);
  smp.m_key = wire::be64::from(m_key);
  if (!data.empty()) std::memcpy(smp.data.data(), data.data(), std::min(data.size(), smp.data.size()));
  b.as<wire::Smp>() = smp;
  b.len = wire::kMadSize;
  b.addr.lid = dlid;
  b.addr.port_num = port_num;
  return b;
}

bool smp_response_ok(const TxnResult& r) noexcept {
  if (!r) return false;
  const auto& h = r.response.hdr();
  if (h.method != wire::method::kGetResp) return false;
  return (h.status.get() & 0x7fff) == wire::status::kOk;  // bit 15 is a DR SMP's D bit
}

std::span<const std::uint8_t> smp_data(const MadBuf& b) noexcept {
  return std::span<const std::uint8_t>(b.mad.bytes).subspan(offsetof(wire::Smp, data), wire::kSmpDataSize);
}

SmpQueue::SmpQueue(TransactionManager& txn, std::uint32_t window_smps_max, RequestOptions opts,
                   std::uint32_t window_per_dest_max)
    : txn_(txn), window_smps_max_(std::max<std::uint32_t>(window_smps_max, 1)), opts_(opts),
      per_dest_max_(std::max<std::uint32_t>(window_per_dest_max, 1)) {
  slots_.resize(window_smps_max_);
  for (std::uint32_t i = 0; i < slots_.size(); ++i) {
    slots_[i].queue = this;
    slots_[i].next_free = i + 1;
  }
}

void SmpQueue::submit(const MadBuf& req, Done done) {
  ++submitted_;
  pending_.emplace_back(req, std::move(done));
  pump();
}

std::uint64_t SmpQueue::dest_hash(const MadBuf& req) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  const auto mix = [&h](std::uint8_t b) { h = (h ^ b) * 0x100000001b3ull; };
  mix(static_cast<std::uint8_t>(req.addr.lid >> 8));
  mix(static_cast<std::uint8_t>(req.addr.lid));
  if (req.hdr().klass() == wire::MgmtClass::kSubnDirected) {
    const auto& smp = req.as<wire::DrSmp>();
    const std::uint8_t hops = std::min(smp.hop_count(), wire::kDrHopsMax);
    mix(hops);
    for (std::uint8_t i = 1; i <= hops; ++i) mix(smp.initial_path[i]);
  }
  return h ^ (h >> 29);
}

// The next SMP whose destination window has room (and its destination
// hash): first one that waited for a destination which has since completed
// an SMP, then the FIFO (and the feeder), setting aside SMPs whose
// destination is full.
bool SmpQueue::next_sendable(Entry& out, std::uint64_t& out_dest) {
  const auto take_parked = [&](std::unordered_map<std::uint64_t, std::deque<Entry>>::iterator it) {
    out_dest = it->first;
    out = std::move(it->second.front());
    it->second.pop_front();
    --parked_count_;
    if (it->second.empty()) parked_.erase(it);
  };
  while (!ready_.empty()) {
    const std::uint64_t dest = ready_.front();
    ready_.pop_front();
    const auto it = parked_.find(dest);
    if (it == parked_.end()) continue;
    // Destinations can share a hash: the front may be another's, still full.
    if (txn_.in_flight_to(it->second.front().first) >= per_dest_max_) continue;
    take_parked(it);
    return true;
  }
  for (;;) {
    while (pending_.empty() && parked_count_ < kParkedMax && feeder_ && !feed_later_) {
      if (!feeder_()) break;
      feed_later_ = ++feeds_ >= kFeedsPerPump;
    }
    if (pending_.empty() || parked_count_ >= kParkedMax) break;
    Entry& e = pending_.front();
    const std::uint64_t dest = dest_hash(e.first);
    const auto it = parked_.find(dest);
    // Behind SMPs already waiting for the same destination, or its window full: aside.
    if (it == parked_.end() && txn_.in_flight_to(e.first) < per_dest_max_) {
      out_dest = dest;
      out = std::move(e);
      pending_.pop_front();
      return true;
    }
    parked_[dest].push_back(std::move(e));
    pending_.pop_front();
    ++parked_count_;
  }
  if (in_flight_ != 0 || parked_.empty()) return false;  // a completion of ours makes room
  // Nothing of ours in flight will ready a destination (its window is held
  // by another user of the transaction manager, or a hash it shares): send
  // one anyway; the transaction manager queues it for its window.
  take_parked(parked_.begin());
  return true;
}

void SmpQueue::pump() noexcept {
  if (pumping_) return;  // a synchronous failure below re-enters through its callback
  pumping_ = true;
  feed_later_ = false;
  feeds_ = 0;
  Entry e;
  std::uint64_t dest = 0;
  while (in_flight_ < window_smps_max_ && !closed_) {
    if (!next_sendable(e, dest)) break;
    const std::uint32_t slot = free_head_;
    Slot& s = slots_[slot];
    free_head_ = s.next_free;
    s.done = std::move(e.second);
    s.dest = dest;
    const MadBuf& req = e.first;
    ++in_flight_;
    const TxnStatus st = txn_.request(req, opts_, &SmpQueue::on_complete, &s);
    if (st != TxnStatus::kOk) {
      TxnResult r;
      r.status = st;
      on_complete(&s, r);
    }
  }
  pumping_ = false;
  maybe_wake();
}

std::size_t SmpQueue::poll(Nanos) noexcept {
  if (!feed_later_ || pumping_) return 0;
  pump();
  return 1;
}

void SmpQueue::on_complete(void* user, const TxnResult& r) noexcept {
  auto* s = static_cast<Slot*>(user);
  SmpQueue& q = *s->queue;
  Done done = std::move(s->done);
  s->done = nullptr;
  const auto slot = static_cast<std::uint32_t>(s - q.slots_.data());
  s->next_free = q.free_head_;
  q.free_head_ = slot;
  --q.in_flight_;
  if (q.closed_) return;
  if (q.parked_.contains(s->dest)) q.ready_.push_back(s->dest);
  if (!smp_response_ok(r)) ++q.failed_;
  if (done) done(r);  // may submit more
  q.pump();
}

void SmpQueue::maybe_wake() noexcept {
  if (!idle() || !waiter_) return;
  const std::coroutine_handle<> h = std::exchange(waiter_, {});
  detail::TaskContext* ctx = std::exchange(waiter_ctx_, nullptr);
  if (ctx != nullptr) {
    detail::post_resume(*ctx, h);
  } else {
    h.resume();
  }
}

}  // namespace madengine::sm
