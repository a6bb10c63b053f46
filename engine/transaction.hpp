// The per-core transaction manager: owns the low 32 bits of every TID this
// core sends (core id, slot generation, slot; the high half belongs to the
// kernel/umad agent and is ignored when matching), windows of requests in
// flight (per destination and in all), a bounded wait queue, timeouts with
// retries and back-off, and matching of responses. Tasks
// `co_await txn.request(mad, opts)`; other code passes a callback.
// Single-threaded (owner core only); all tables sized at start-up.
#pragma once

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "engine/dispatch.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/poller.hpp"
#include "engine/scheduler.hpp"
#include "engine/task.hpp"
#include "engine/tx_sink.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine {

enum class TxnStatus : std::uint8_t {
  kOk,          // a response matched
  kTimeout,     // no response after every retry
  kCancelled,   // the awaiting task was cancelled, or the manager shut down
  kDeviceLost,  // failed by fail_all() when the port or device went away
  kQueueFull,   // window and wait queue full: back-pressure, nothing was sent
  kSendFailed,  // the first transmission was refused by the TxSink
};
inline constexpr std::size_t kTxnStatusCount = 6;
const char* to_string(TxnStatus s) noexcept;

struct RequestOptions {
  std::uint32_t timeout_ms = 200;  // first attempt; OpenSM's transaction_timeout default
  std::uint8_t retries = 3;        // re-sends after the first attempt; OpenSM's default
  std::uint8_t backoff_factor = 1; // each retry waits factor x the previous timeout
  std::uint32_t timeout_max_ms = 10'000;  // bound on the backed-off timeout
};

struct TxnResult {
  TxnStatus status = TxnStatus::kOk;
  std::uint8_t attempts = 0;  // transmissions made (retries + 1 when all were sent)
  std::uint64_t tid = 0;      // the wire TID the request carried
  Nanos rtt_ns = 0;           // response time after the last transmission (kOk only)
  MadBuf response{};          // valid when status == kOk
  explicit operator bool() const noexcept { return status == TxnStatus::kOk; }
};

// Non-coroutine completion: called exactly once unless request() refused the
// request up front (then its return value is the result).
using TxnCallback = void (*)(void* user, const TxnResult& result) noexcept;

struct TransactionConfig {
  std::uint8_t core_id = 0;                // the top kTidCoreBits of every TID's low half (dispatch.hpp)
  std::uint32_t window_max = 256;          // requests in flight on this core
  std::uint32_t window_per_dest_max = 4;   // in flight to one LID or one DR path
  std::uint32_t queue_max = 4096;          // requests waiting for a window
};

struct TxnCounters {
  std::uint64_t sent = 0;       // transmissions, retries included
  std::uint64_t retried = 0;
  std::uint64_t timed_out = 0;
  std::uint64_t matched = 0;
  std::uint64_t unmatched = 0;  // responses with an unknown, stale (duplicate) or foreign TID, or the wrong class
  std::uint64_t queued = 0;     // requests that had to wait for a window
  std::uint64_t queue_full = 0;
  std::uint64_t send_failed = 0;  // TxSink refusals (first attempt fails the request; later ones wait for the timer)
  std::uint64_t cancelled = 0;
  std::uint64_t resent = 0;     // re-sent by resend_all()
  std::array<std::uint64_t, kTxnStatusCount> failed_by{};  // failed by fail_all(), per reason
};

class TransactionManager final : public Poller {
 public:
  // Throws std::invalid_argument on a bad configuration (start-up only).
  TransactionManager(const Clock& clock, TxSink& tx, TransactionConfig cfg = {});
  // Completes everything outstanding with kCancelled (awaiting tasks resume
  // through their scheduler; callbacks are called).
  ~TransactionManager() override;
  TransactionManager(const TransactionManager&) = delete;
  TransactionManager& operator=(const TransactionManager&) = delete;

  class RequestAwaiter;
  // `co_await txn.request(mad, opts)` -> TxnResult. The request is copied
  // when the await begins; its TID's low 32 bits are replaced by ours.
  RequestAwaiter request(const MadBuf& req, RequestOptions opts = {}) noexcept;
  // Callback form. Returns kOk if the request was accepted (the callback
  // will run), otherwise the immediate failure (no callback).
  TxnStatus request(const MadBuf& req, RequestOptions opts, TxnCallback cb, void* user) noexcept;

  // Withdraws a request by its wire TID (as a TxnResult or the sink saw it):
  // it completes with kCancelled now and a late response is ignored. False if
  // no request with that TID is outstanding.
  bool cancel(std::uint64_t tid) noexcept;

  // Offers a received MAD; true if it completed one of our transactions.
  bool on_response(const MadBuf& resp) noexcept;

  // Timeouts and retries due at now_ns, then queued requests that fit a window.
  std::size_t poll(Nanos now_ns) noexcept override;
  // The earliest retry or timeout, or -1 if nothing is in flight (queued
  // requests wait for a window, which only a response or a timeout frees).
  Nanos next_deadline_ns() const noexcept override { return timers_.empty() ? -1 : timers_.top_deadline_ns(); }

  // Device life cycle. resend_all re-sends every request in flight with its
  // TID and restarts its timer; fail_all completes every request in flight or
  // queued with `why`. Each writes the TIDs it acted on to `tids_out` (as
  // many as fit) and returns how many it acted on.
  std::size_t resend_all(std::span<std::uint64_t> tids_out = {}) noexcept;
  std::size_t fail_all(TxnStatus why, std::span<std::uint64_t> tids_out = {}) noexcept;

  const TxnCounters& counters() const noexcept { return counters_; }
  std::uint32_t in_flight() const noexcept { return in_flight_; }
  std::uint32_t queued() const noexcept { return queue_len_; }
  std::uint32_t in_flight_to(const MadBuf& req) const noexcept;
  std::uint8_t core_id() const noexcept { return cfg_.core_id; }
  // The core a TID (low half) belongs to: lets a dispatcher route responses.
  // Same layout as the Dispatcher's tid_core(), which it delegates to.
  static std::uint8_t core_of_tid(std::uint64_t tid) noexcept {
    return static_cast<std::uint8_t>(tid_core(tid));
  }

  class RequestAwaiter : detail::CancelHook {
   public:
    RequestAwaiter(const RequestAwaiter&) = delete;
    RequestAwaiter& operator=(const RequestAwaiter&) = delete;
    ~RequestAwaiter();
    bool await_ready() const noexcept { return false; }
    template <typename P>
    bool await_suspend(std::coroutine_handle<P> h) noexcept {
      ctx_ = detail::context_of(h);
      return mgr_->start_await(*this, h);
    }
    TxnResult await_resume() noexcept { return std::move(result_); }

   private:
    friend class TransactionManager;
    RequestAwaiter(TransactionManager& m, const MadBuf& req, RequestOptions opts) noexcept
        : mgr_(&m), req_(&req), opts_(opts) {
      cancel_fn = &TransactionManager::cancel_await;
    }
    TransactionManager* mgr_;
    const MadBuf* req_;
    RequestOptions opts_;
    detail::TaskContext* ctx_ = nullptr;
    std::coroutine_handle<> handle_{};
    std::uint32_t slot_ = 0xffffffffu;  // while pending
    TxnResult result_{};
  };

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  enum class State : std::uint8_t { kFree, kQueued, kInFlight };

  // Window key: the DLID, or for a directed-route SMP the LID it is sent to
  // plus the whole initial path (one switch's ports are distinct destinations).
  struct DestKey {
    std::uint16_t lid = 0;
    std::uint8_t hops = 0;
    std::array<std::uint8_t, wire::kDrHopsMax + 1> path{};
    bool operator==(const DestKey&) const noexcept = default;
  };
  struct DestEntry {
    DestKey key;
    std::uint64_t hash = 0;
    std::uint32_t in_flight = 0;  // 0 = empty bucket
  };
  struct Txn {
    MadBuf req;
    RequestOptions opts;
    DestKey key;
    std::uint64_t key_hash = 0;
    Nanos last_sent_ns = 0;
    Nanos timeout_ns = 0;  // current (backed-off) timeout
    std::uint32_t tid_low = 0;
    std::uint32_t generation = 0;
    std::uint32_t prev = kNone, next = kNone;  // wait-queue links
    std::uint32_t next_free = kNone;
    std::uint8_t attempts = 0;
    State state = State::kFree;
    bool mark = false;  // fail_all: part of this failure
    RequestAwaiter* awaiter = nullptr;
    TxnCallback cb = nullptr;
    void* user = nullptr;
  };

  TxnStatus submit(const MadBuf& req, RequestOptions opts, std::uint32_t& slot_out) noexcept;
  bool start_await(RequestAwaiter& a, std::coroutine_handle<> h) noexcept;
  static void cancel_await(detail::CancelHook* hook) noexcept;
  void abandon(RequestAwaiter& a) noexcept;

  static DestKey key_of(const MadBuf& req) noexcept;
  static std::uint64_t hash_of(const DestKey& k) noexcept;
  std::uint32_t find_dest(const DestKey& k, std::uint64_t hash) const noexcept;
  std::uint32_t& dest_count(const Txn& t) noexcept;
  void dest_release(const Txn& t) noexcept;
  bool window_open(const Txn& t) const noexcept;
  bool transmit(Txn& t, Nanos now_ns) noexcept;
  void dispatch(Nanos now_ns) noexcept;
  void queue_push(std::uint32_t slot) noexcept;
  void queue_unlink(std::uint32_t slot) noexcept;
  // Removes the transaction from every table and frees its slot.
  void retire(std::uint32_t slot) noexcept;
  void complete(std::uint32_t slot, TxnStatus status, const MadBuf* resp, Nanos now_ns) noexcept;
  std::uint64_t wire_tid(const Txn& t) const noexcept;

  const Clock& clock_;
  TxSink& tx_;
  TransactionConfig cfg_;
  std::uint32_t slot_bits_ = 0;
  std::uint32_t generation_mask_ = 0;
  std::vector<Txn> txns_;
  std::vector<DestEntry> dests_;  // open addressing, power-of-two size >= 2 x window_max
  DeadlineHeap timers_;
  std::uint32_t free_head_ = kNone;
  std::uint32_t queue_head_ = kNone, queue_tail_ = kNone, queue_len_ = 0;
  std::uint32_t in_flight_ = 0;
  bool shutting_down_ = false;
  TxnCounters counters_;
};

inline TransactionManager::RequestAwaiter TransactionManager::request(const MadBuf& req,
                                                                      RequestOptions opts) noexcept {
  return RequestAwaiter(*this, req, opts);
}

}  // namespace madengine
