// The SM's SMP pipeline: a window of SMPs in flight over the core's
// TransactionManager (which adds the per-destination bound, timeouts and
// retries), a FIFO of SMPs waiting for the window, completion callbacks, and
// an awaitable that resumes the sweep task once everything has completed.
// An SMP whose destination window is full waits aside, so the window fills
// with SMPs to other destinations (a switch's 200 LFT blocks would otherwise
// hold 64 places for the 4 its destination window lets out).
#pragma once

#include <coroutine>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "madengine/engine/mad_buf.hpp"
#include "engine/poller.hpp"
#include "engine/task.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine::sm {

// Builds a directed-route SMP along `path`, sent from local port `port_num`;
// `data` (up to 64 bytes) is copied into the SMP's data field.
MadBuf make_dr_request(std::uint8_t method, std::uint16_t attr_id, std::uint32_t attr_mod,
                       const wire::DrPath& path, std::uint8_t port_num,
                       std::span<const std::uint8_t> data = {}, std::uint64_t m_key = 0) noexcept;

// Builds a LID-routed SMP to `dlid` (IBA 14.2.1.1): forwarded by the
// switches' LFTs, so only the destination's SMA handles it, where a DR SMP
// is handled by the SMA of every switch on its path.
MadBuf make_lid_request(std::uint8_t method, std::uint16_t attr_id, std::uint32_t attr_mod, std::uint16_t dlid,
                        std::uint8_t port_num, std::span<const std::uint8_t> data = {}, std::uint64_t m_key = 0) noexcept;

// The data field of an SMP response (LID-routed or directed) and its status
// without the D bit; nullopt-like false when the MAD is not a good response.
bool smp_response_ok(const TxnResult& r) noexcept;
std::span<const std::uint8_t> smp_data(const MadBuf& b) noexcept;

// A Poller of the SM's core: a feeder that found little to send (a re-route
// in which most switches' blocks are unchanged) stops after kFeedsPerPump
// calls and goes on at the core's next iteration, so the core receives and
// answers in between instead of diffing the whole fabric in one stretch.
class SmpQueue final : public Poller {
 public:
  static constexpr std::uint32_t kFeedsPerPump = 32;

  using Done = std::function<void(const TxnResult&)>;

  // window_smps_max: SMPs handed to the transaction manager at once;
  // window_per_dest_max: the transaction manager's bound per destination
  // (TransactionConfig), which SMPs that would wait for it wait aside here.
  SmpQueue(TransactionManager& txn, std::uint32_t window_smps_max, RequestOptions opts,
           std::uint32_t window_per_dest_max = TransactionConfig{}.window_per_dest_max);
  SmpQueue(const SmpQueue&) = delete;
  SmpQueue& operator=(const SmpQueue&) = delete;

  // Queues `req`; `done` runs exactly once with its result (on the owner core).
  void submit(const MadBuf& req, Done done);

  // Called whenever the FIFO is empty and the window has room: it submits
  // more (a producer that generates work lazily) and returns false once it
  // has nothing left. nullptr: none.
  void set_feeder(std::function<bool()> feeder) {
    feeder_ = std::move(feeder);
    pump();
  }

  // After close(), completions are dropped (the SM is being destroyed).
  void close() noexcept { closed_ = true; }

  // Nothing queued, set aside, in flight, or left for the feeder to go on with.
  bool idle() const noexcept { return in_flight_ == 0 && pending_.empty() && parked_count_ == 0 && !feed_later_; }
  std::uint32_t in_flight() const noexcept { return in_flight_; }
  // Requests submitted since construction (retries are the transaction
  // manager's and are not counted here).
  std::uint64_t submitted() const noexcept { return submitted_; }
  std::uint64_t failed() const noexcept { return failed_; }

  // Poller: goes on feeding where a pump stopped at its budget.
  std::size_t poll(Nanos now_ns) noexcept override;
  Nanos next_deadline_ns() const noexcept override { return feed_later_ ? 0 : -1; }

  // `co_await q.drained()`: resumes when no SMP is queued or in flight.
  class DrainAwaiter {
   public:
    explicit DrainAwaiter(SmpQueue& q) noexcept : q_(&q) {}
    bool await_ready() const noexcept { return q_->idle(); }
    template <typename P>
    void await_suspend(std::coroutine_handle<P> h) noexcept {
      q_->waiter_ = h;
      q_->waiter_ctx_ = detail::context_of(h);
    }
    void await_resume() const noexcept {}

   private:
    SmpQueue* q_;
  };
  DrainAwaiter drained() noexcept { return DrainAwaiter(*this); }

 private:
  using Entry = std::pair<MadBuf, Done>;
  struct Slot {
    SmpQueue* queue = nullptr;
    Done done;
    std::uint64_t dest = 0;  // dest_hash() of the request
    std::uint32_t next_free = 0;
  };
  // SMPs waiting aside for their destination's window, beyond which the
  // feeder is not asked for more: a few thousand SMPs, a few MB.
  static constexpr std::size_t kParkedMax = 4096;

  // The destination as the transaction manager's window sees it (the DLID,
  // and a DR SMP's initial path), hashed: SMPs to one destination share it.
  static std::uint64_t dest_hash(const MadBuf& req) noexcept;
  static void on_complete(void* user, const TxnResult& r) noexcept;
  void pump() noexcept;
  bool next_sendable(Entry& out, std::uint64_t& out_dest);
  void maybe_wake() noexcept;

  TransactionManager& txn_;
  std::uint32_t window_smps_max_;
  RequestOptions opts_;
  std::uint32_t per_dest_max_;
  std::deque<Entry> pending_;
  std::unordered_map<std::uint64_t, std::deque<Entry>> parked_;  // by destination hash, each in FIFO order
  std::deque<std::uint64_t> ready_;  // destinations that completed an SMP while others waited for them
  std::size_t parked_count_ = 0;
  std::function<bool()> feeder_;
  std::vector<Slot> slots_;
  std::uint32_t free_head_ = 0;
  std::uint32_t in_flight_ = 0;
  std::uint64_t submitted_ = 0;
  std::uint64_t failed_ = 0;
  bool closed_ = false;
  bool pumping_ = false;
  bool feed_later_ = false;  // the feeder has more, and waits for the next poll
  std::uint32_t feeds_ = 0;  // feeder calls in this pump
  std::coroutine_handle<> waiter_{};
  detail::TaskContext* waiter_ctx_ = nullptr;
};

}  // namespace madengine::sm
