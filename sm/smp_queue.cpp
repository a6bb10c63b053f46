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

SmpQueue::SmpQueue(TransactionManager& txn, std::uint32_t window_smps_max, RequestOptions opts)
    : txn_(txn), window_smps_max_(std::max<std::uint32_t>(window_smps_max, 1)), opts_(opts) {
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

void SmpQueue::pump() noexcept {
  if (pumping_) return;  // a synchronous failure below re-enters through its callback
  pumping_ = true;
  feed_later_ = false;
  std::uint32_t feeds = 0;
  while (in_flight_ < window_smps_max_ && !closed_) {
    while (pending_.empty() && feeder_ && !feed_later_) {
      if (!feeder_()) break;
      feed_later_ = ++feeds >= kFeedsPerPump;
    }
    if (pending_.empty()) break;  // no producer, it is exhausted, or it waits for the next poll
    const std::uint32_t slot = free_head_;
    Slot& s = slots_[slot];
    free_head_ = s.next_free;
    s.done = std::move(pending_.front().second);
    const MadBuf req = pending_.front().first;
    pending_.pop_front();
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
