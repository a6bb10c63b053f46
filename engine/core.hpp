// A worker core: one thread running a poll loop over the transports it owns
// (rx burst -> classify -> run here or hand to the owner core through a
// per-pair SPSC ring), the inbound rings, its Pollers, and one tx burst per
// transport. It is the TxSink and CoreContext of the code that runs on it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <poll.h>

#include "madengine/engine/clock.hpp"
#include "engine/dispatch.hpp"
#include "engine/lifecycle.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/mad_pool.hpp"
#include "engine/poller.hpp"
#include "engine/ring.hpp"
#include "madengine/engine/transport.hpp"
#include "engine/tx_sink.hpp"

namespace madengine {

using CoreRing = Ring<MadBuf, RingMode::kSpsc>;

// Per-core counters; each is written by its core only.
struct CoreCounters {
  std::uint64_t rx = 0;            // MADs received from this core's transports
  std::uint64_t tx = 0;            // MADs this core's transports accepted
  std::uint64_t handled = 0;       // MADs run by a handler or response hook here
  std::uint64_t handed_off = 0;    // received here, sent to their owner core
  std::uint64_t ring_full = 0;     // hand-off attempts that found a ring full (back-pressure)
  std::uint64_t no_handler = 0;    // requests with no handler, responses with no hook
  std::uint64_t malformed = 0;     // too short or bad base version
  std::uint64_t unsupported_sent = 0;  // unsupported-method/attribute answers queued
  std::uint64_t tx_full = 0;       // send() refused: tx queue full or pool empty
  std::uint64_t tx_busy = 0;       // tx_burst calls that left MADs for the next iteration
  std::uint64_t tx_no_route = 0;   // MADs for a port no transport serves (dropped, counted)
  std::uint64_t rx_alloc_failures = 0;
  std::uint64_t device_events = 0;    // events the transports reported (any kind)
  std::uint64_t device_lost = 0;      // kDeviceLost on this core's transports
  std::uint64_t device_back = 0;      // kDeviceBack on this core's transports
  std::uint64_t tx_device_lost = 0;   // MADs dropped because their transport's device was lost
  std::uint64_t txn_resent = 0;       // requests re-sent by this core's managers after kDeviceBack
  std::uint64_t txn_failed_device = 0;  // requests failed with kDeviceLost after device_wait_ms
  std::uint64_t idle_loops = 0;    // iterations that did no work
  std::uint64_t loops = 0;
  std::uint64_t idle_blocks = 0;        // blocking waits entered (IdleMode::kBlock)
  std::uint64_t idle_wake_event = 0;    // ... ended by this core's eventfd (a ring push, stop())
  std::uint64_t idle_wake_fd = 0;       // ... ended by a transport's wait_fd()
  std::uint64_t idle_wake_timeout = 0;  // ... ended by a deadline or the cap
  // Iterations that did work, from one clock read to the next (the core's
  // clock, read once an iteration where pollers run): a core held up by its
  // own work (a long handler or poller) shows here, not in answer latency.
  std::uint64_t busy_loop_max_ns = 0;
  std::uint64_t busy_loops_over_1ms = 0;
};

// One (class, method, attribute) bucket of MADs nobody handled.
struct NoHandlerBucket {
  std::uint8_t mgmt_class = 0;
  std::uint8_t method = 0;
  std::uint16_t attr_id = 0;
  std::uint64_t count = 0;
};

struct CoreSnapshot {
  std::uint16_t core = 0;
  CoreCounters counters;
  std::vector<NoHandlerBucket> no_handler;  // buckets beyond the table land in no_handler_other
  std::uint64_t no_handler_other = 0;
  std::uint32_t spin_budget = 0;  // idle iterations it spins before its next wait (IdleBackoff)
};

// kBlock: after a short spin an idle core blocks in ppoll() on its
// transports' wait_fd()s and its eventfd until a MAD, a ring push, a timer
// deadline or stop(); it costs no CPU while idle. kSpin: spin, yield, then
// sleep_us naps: lowest wake-up latency on dedicated cores, but an idle core
// takes CPU from whatever shares it (ibsim, the other cores).
enum class IdleMode : std::uint8_t { kBlock, kSpin };

// How a core waits when an iteration found nothing to do; any work resets it.
struct IdleBackoff {
  IdleMode mode = IdleMode::kBlock;
  // Idle iterations with a pause before yielding or blocking. kBlock adapts
  // the spin between spin_loops_min and this: halved each time a spin ends
  // in a wait, doubled each time work arrives during one. Spinning pays
  // only when the next MAD comes sooner than a wake-up would take (a storm),
  // and costs a query's CPU several times over when it does not (window 1).
  std::uint32_t spin_loops_max = 256;
  std::uint32_t spin_loops_min = 8;
  std::uint32_t yield_loops_max = 256;  // kSpin: then this many with a yield
  std::uint32_t sleep_us = 50;          // kSpin: then naps this long; kBlock: the nap while tx waits
  // kBlock: the longest one wait lasts, whatever the deadlines say, so the
  // life cycle (poll_events) and pollers without a deadline still run.
  std::uint32_t block_max_us = 2000;
};

// How a producer wakes a blocked core. The core sets `sleeping`, re-checks
// its rings, then blocks on `event_fd`; a producer that pushed into one of
// its rings writes `event_fd` only if it sees `sleeping` (both sides use a
// read-modify-write on the flag, which orders the push against it: no lost
// wake-up, no syscall while the core is busy).
struct alignas(kCacheLineBytes) CoreWaker {
  std::atomic<std::uint32_t> sleeping{0};  // 1 while the core is in (or about to enter) its wait
  // The start of the core's current busy iteration (a core with pollers
  // only); -1 while it idles. A core with a backlog spreads nothing to a
  // core whose iteration has lasted over a millisecond (an SM's sweep phase
  // on its core): it answers such MADs itself.
  std::atomic<Nanos> busy_since_ns{-1};
  int event_fd = -1;
  CoreWaker();   // throws std::system_error if no eventfd can be made
  ~CoreWaker();
  CoreWaker(const CoreWaker&) = delete;
  CoreWaker& operator=(const CoreWaker&) = delete;
  // After a push into this core's ring: wakes it if it sleeps. Any thread.
  void wake_if_sleeping() noexcept;
  // Wakes it unconditionally (stop()).
  void wake() noexcept;
};

// A transport as the engine knows it: its owner core and the port it serves
// (outgoing MADs pick their transport by MadAddr::port_num).
struct TransportSlot {
  Transport* transport = nullptr;
  std::uint16_t core = 0;
  std::uint8_t port_num = 1;
};

// What all cores share, fixed before they start.
struct CoreShared {
  MadPool* pool = nullptr;
  const Dispatcher* dispatcher = nullptr;
  const Clock* clock = nullptr;
  std::uint16_t cores = 1;
  // [from * cores + to]; the diagonal is empty. rx: requests and responses to
  // their owner; tx: MADs for a transport owned by another core.
  std::vector<std::unique_ptr<CoreRing>> rx_mesh;
  std::vector<std::unique_ptr<CoreRing>> tx_mesh;
  std::vector<TransportSlot> transports;
  std::array<std::int16_t, 256> port_to_transport{};  // -1: no transport
  // [transport index]: life-cycle state, written by the transport's core.
  std::vector<std::unique_ptr<TransportLife>> life;
  std::vector<std::unique_ptr<CoreWaker>> wakers;  // [core]
  Nanos device_wait_ns = 10 * kNanosPerSecond;  // then requests through a lost device fail
  bool answer_unsupported = false;
  IdleBackoff backoff;

  CoreRing* rx_ring(std::uint16_t from, std::uint16_t to) const noexcept { return rx_mesh[from * cores + to].get(); }
  CoreRing* tx_ring(std::uint16_t from, std::uint16_t to) const noexcept { return tx_mesh[from * cores + to].get(); }
};

class Core final : public CoreContext, public TxSink {
 public:
  Core(std::uint16_t id, CoreShared& shared);
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;
  ~Core() override;

  // Setup, before the core runs. Throws if the core already has
  // transports_per_core_max transports.
  void add_transport(std::uint16_t transport_index);
  void add_poller(Poller& poller);
  // A transaction manager whose TxSink is this core: polled here like a
  // Poller, but paused while a device it sends through is lost, its requests
  // re-sent when the device is back or failed (kDeviceLost) after
  // device_wait_ns. `port_num` names the transport it uses (kAnyPort: every
  // one). Throws std::invalid_argument if it is already a Poller here.
  void add_transaction_manager(TransactionManager& txn, std::uint16_t port_num = kAnyPort);
  // Called on this core's thread with port events and transaction reports.
  void add_listener(LifecycleListener& listener);
  // The engine added transport shared.transports.back(): watch its life.
  void on_transport_added();

  // One iteration of the poll loop; returns the work it did (0 = idle).
  // Called only from this core's thread (or, in tests, a single thread
  // driving every core in turn).
  std::size_t poll_once() noexcept;
  // Polls until `stop` is set, backing off when idle, then releases every
  // buffer this core holds (release()).
  void run(const std::atomic<bool>& stop) noexcept;
  // Frees every buffer the core holds (staging, spares, tx queues) and
  // flushes its pool cache. Rings are drained by the engine once all cores stopped.
  void release() noexcept;

  // CoreContext
  std::uint16_t core_id() const noexcept override { return id_; }
  TxSink& tx() noexcept override { return *this; }
  const Clock& clock() const noexcept override { return *shared_.clock; }
  MadPool& pool() noexcept override { return *shared_.pool; }
  bool keep(MadBuf& buf) noexcept override;
  bool send_kept(MadBuf& buf) noexcept override;
  void free_kept(MadBuf& buf) noexcept override;
  // Buffers this core's handlers keep now (CoreContext::keep).
  std::uint32_t kept() const noexcept { return kept_; }

  // TxSink: copies `buf` into a pool buffer queued for the next tx flush.
  // Call it only on this core's thread.
  bool send(const MadBuf& buf) noexcept override;

  // Readable from any thread while the core runs.
  CoreSnapshot snapshot() const;
  // Ends a blocking wait of this core's thread at once (a compute job done,
  // see offload.hpp); a core that is not waiting returns from its next wait.
  // Any thread.
  void wake() noexcept;

 private:
  struct Counters;        // atomics, one writer
  struct LocalTransport;  // an owned transport with its rx spares and tx backlog

  std::size_t rx_transports() noexcept;
  std::size_t flush_handoffs() noexcept;
  std::size_t drain_inbound() noexcept;
  std::size_t flush_tx() noexcept;
  bool make_tx_room() noexcept;
  std::size_t poll_events() noexcept;
  void on_device_event(LocalTransport& lt, DeviceEvent ev) noexcept;
  void drop_held(LocalTransport& lt) noexcept;
  std::size_t watch_transports(Nanos now_ns) noexcept;
  void report(const TxnReport& r) noexcept;
  // `backlog`: it came in a full receive burst (see OwnerSelector::spread_by).
  bool held(std::uint16_t core) const noexcept;  // another core long in one iteration
  void classify(MadBuf* buf, bool backlog) noexcept;
  void deliver(MadBuf* buf) noexcept;
  // Runs `h` on the lent `buf`; true if the handler kept it.
  bool run_handler(MadHandler& h, MadBuf* buf) noexcept;
  void count_no_handler(const MadBuf& buf) noexcept;
  Nanos idle_timeout_ns() const noexcept;
  void block(const std::atomic<bool>& stop) noexcept;
  void note_busy_loop(Nanos ns) noexcept;
  void set_spin_budget(std::uint32_t loops) noexcept {
    spin_budget_ = loops;
    spin_budget_seen_.store(loops, std::memory_order_relaxed);
  }

  const std::uint16_t id_;
  CoreShared& shared_;
  std::unique_ptr<Counters> counters_;
  std::vector<LocalTransport> local_;
  std::vector<Poller*> pollers_;
  // Life cycle (core.cpp, "device life cycle"): managers paused while a
  // device they use is lost, listeners, what this core last saw of each transport.
  struct ManagedTxn {
    TransactionManager* txn = nullptr;
    std::uint16_t port_num = kAnyPort;
    bool paused = false;
  };
  struct Watch {
    std::uint32_t epoch_seen = 0;
    std::uint32_t seq_seen = 0;
    Nanos lost_since_ns = 0;  // start of the current outage
    Nanos back_since_ns = 0;  // last return; meaningful once `returned`
    bool returned = false;
  };
  std::vector<ManagedTxn> managed_;
  std::vector<LifecycleListener*> listeners_;
  std::vector<Watch> watch_;
  std::vector<std::uint64_t> report_tids_;  // kReportTidsMax once a manager is added
  // All sized at construction; the loop only moves pointers within them.
  // Per destination core: MADs received here waiting to enter its rx ring
  // (handoff_[dst * handoff_slots_ ...], handoff_len_[dst] of them).
  std::vector<MadBuf*> handoff_;
  std::vector<std::uint32_t> handoff_len_;
  std::uint32_t handoff_slots_ = 0;
  std::size_t handoff_pending_ = 0;
  std::vector<MadBuf*> tx_queue_;  // tx_len_ of tx_queue_depth, filled by send()
  std::uint32_t tx_len_ = 0;
  std::vector<MadBuf*> batch_;     // scratch for draining inbound rings
  std::uint32_t rx_burst_max_ = 0;
  MadBuf* lent_ = nullptr;     // the buffer on_mad is running on
  bool lent_kept_ = false;     // ... and its handler kept it
  std::uint32_t kept_ = 0;     // kept buffers handlers hold (<= handler_kept_max)
  std::size_t early_tx_work_ = 0;  // MADs sent by flushes that made room mid-iteration
  std::uint32_t idle_streak_ = 0;
  Nanos handed_over_ns_ = -1;  // when another core last handed us MADs to send (-1: never)
  Nanos busy_since_ns_ = -1;  // the clock read of the last iteration that did work; -1: it did none
  std::uint32_t spin_budget_ = 0;  // kBlock: the current spin (see IdleBackoff)
  std::atomic<std::uint32_t> spin_budget_seen_{0};  // its copy for snapshot()
  bool events_due_ = false;  // poll_events() on the next iteration (after a wait)
  std::vector<pollfd> pollfds_;  // eventfd + transports_per_core_max
};

}  // namespace madengine
