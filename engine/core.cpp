// The worker core's poll loop. Every array it touches is sized in the
// constructor from the pool bounds; an iteration only moves buffer pointers
// between them, the rings and the transports, in bursts. Device events are
// core_lifecycle.cpp, waking and blocking core_idle.cpp.
#include "engine/core.hpp"

#include "engine/core_parts.hpp"
#include "engine/transaction.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

namespace madengine {

namespace {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr std::uint32_t kEventPollLoops = 64;  // poll_events() once per this many iterations

}  // namespace



Core::Core(std::uint16_t id, CoreShared& shared)
    : id_(id), shared_(shared), counters_(std::make_unique<Counters>()) {
  const PoolBounds& b = shared.pool->bounds();
  if (id >= shared.cores) throw std::invalid_argument("Core: id out of range");
  local_.reserve(b.transports_per_core_max);
  handoff_slots_ = b.rx_burst_max * b.transports_per_core_max;
  handoff_.resize(std::size_t{shared.cores} * handoff_slots_);
  handoff_len_.resize(shared.cores);
  tx_queue_.resize(b.tx_queue_depth);
  rx_burst_max_ = b.rx_burst_max;
  batch_.resize(std::max(b.rx_burst_max, b.tx_queue_depth));
  pollfds_.resize(std::size_t{b.transports_per_core_max} + 1);
  set_spin_budget(shared.backoff.spin_loops_max);
}

Core::~Core() = default;

void Core::add_transport(std::uint16_t transport_index) {
  const PoolBounds& b = shared_.pool->bounds();
  if (local_.size() >= b.transports_per_core_max)
    throw std::invalid_argument("Core::add_transport: more than transports_per_core_max transports on one core");
  LocalTransport lt;
  lt.transport = shared_.transports.at(transport_index).transport;
  lt.index = transport_index;
  lt.sole = dynamic_cast<SoleWait*>(lt.transport);
  lt.spare.resize(b.rx_burst_max);
  lt.pending.resize(b.tx_queue_depth);
  local_.push_back(std::move(lt));
}

void Core::add_poller(Poller& poller) {
  for (const ManagedTxn& m : managed_)
    if (static_cast<Poller*>(m.txn) == &poller)
      throw std::invalid_argument("Core::add_poller: already added as a transaction manager");
  pollers_.push_back(&poller);
}

void Core::add_transaction_manager(TransactionManager& txn, std::uint16_t port_num) {
  for (const Poller* p : pollers_)
    if (p == static_cast<Poller*>(&txn))
      throw std::invalid_argument("Core::add_transaction_manager: already added as a Poller (it would run while the device is lost)");
  for (const ManagedTxn& m : managed_)
    if (m.txn == &txn) throw std::invalid_argument("Core::add_transaction_manager: added twice");
  if (port_num != kAnyPort && port_num > 0xff) throw std::invalid_argument("Core::add_transaction_manager: bad port");
  managed_.push_back(ManagedTxn{&txn, port_num, false});
  report_tids_.resize(kReportTidsMax);
}

void Core::add_listener(LifecycleListener& listener) { listeners_.push_back(&listener); }

void Core::on_transport_added() {
  watch_.emplace_back();
  // Start from the transport's current state (it may already be lost).
  watch_.back().epoch_seen = shared_.life.back()->epoch.load(std::memory_order_acquire) & ~1u;
}

bool Core::send(const MadBuf& buf) noexcept {
  if (tx_len_ == tx_queue_.size()) {
    bump(counters_->tx_full);
    return false;
  }
  MadBuf* copy = shared_.pool->alloc(id_);
  if (copy == nullptr) {
    bump(counters_->tx_full);
    return false;
  }
  *copy = buf;
  tx_queue_[tx_len_++] = copy;
  return true;
}

bool Core::keep(MadBuf& buf) noexcept {
  if (&buf != lent_ || lent_kept_ || kept_ >= shared_.pool->bounds().handler_kept_max) return false;
  lent_kept_ = true;
  ++kept_;
  return true;
}

bool Core::send_kept(MadBuf& buf) noexcept {
  if (tx_len_ == tx_queue_.size()) {
    bump(counters_->tx_full);
    return false;
  }
  tx_queue_[tx_len_++] = &buf;
  --kept_;
  return true;
}

void Core::free_kept(MadBuf& buf) noexcept {
  shared_.pool->free(id_, &buf);
  --kept_;
}

bool Core::run_handler(MadHandler& h, MadBuf* buf) noexcept {
  lent_ = buf;
  h.on_mad(*buf, *this);
  bump(counters_->handled);
  const bool kept = lent_kept_;
  lent_ = nullptr;
  lent_kept_ = false;
  return kept;
}

void Core::count_no_handler(const MadBuf& buf) noexcept {
  bump(counters_->no_handler);
  if (buf.len < wire::kMadHeaderSize) return;
  const auto& h = buf.hdr();
  const std::uint64_t key = (std::uint64_t{h.mgmt_class} << 24 | std::uint64_t{h.method} << 16 | h.attr_id.get()) + 1;
  std::size_t i = (key * 0x9e3779b97f4a7c15ull) >> 58;  // top 6 bits: 64 buckets
  for (std::size_t probe = 0; probe < kNoHandlerBuckets; ++probe, i = (i + 1) % kNoHandlerBuckets) {
    const std::uint64_t k = counters_->bucket_key[i].load(std::memory_order_relaxed);
    if (k == key) {
      bump(counters_->bucket_count[i]);
      return;
    }
    if (k == 0) {
      counters_->bucket_key[i].store(key, std::memory_order_relaxed);
      bump(counters_->bucket_count[i]);
      return;
    }
  }
  bump(counters_->bucket_other);
}

void Core::deliver(MadBuf* buf) noexcept {
  const Dispatcher& d = *shared_.dispatcher;
  MadHandler* h = buf->hdr().is_response() ? d.response_hook(id_) : d.handler_for(*buf);
  if (h != nullptr) {
    if (run_handler(*h, buf)) return;
  } else {
    count_no_handler(*buf);
  }
  shared_.pool->free(id_, buf);
}

// An iteration longer than this: a core is held by work of its own.
constexpr Nanos kHeldNs = kNanosPerMilli;

bool Core::held(std::uint16_t core) const noexcept {
  const Nanos since = shared_.wakers[core]->busy_since_ns.load(std::memory_order_relaxed);
  return since >= 0 && shared_.clock->now_ns() - since > kHeldNs;
}

void Core::classify(MadBuf* buf, bool backlog) noexcept {
  const Route r = shared_.dispatcher->route(*buf);
  switch (r.verdict) {
    case DispatchVerdict::kMalformed:
      bump(counters_->malformed);
      break;
    case DispatchVerdict::kNoHandler:
      count_no_handler(*buf);
      if (shared_.answer_unsupported && !buf->hdr().is_response() && answer_unsupported(*buf, *this))
        bump(counters_->unsupported_sent);
      break;
    case DispatchVerdict::kHandler:
    case DispatchVerdict::kResponse:
      if (r.core == id_ || (r.any_core && (!backlog || held(r.core)))) {
        if (run_handler(*r.handler, buf)) return;
        break;
      }
      // handoff_ has room: rx runs only when every staging array is empty and
      // one pass receives at most rx_burst_max per transport.
      handoff_[std::size_t{r.core} * handoff_slots_ + handoff_len_[r.core]++] = buf;
      ++handoff_pending_;
      return;
  }
  shared_.pool->free(id_, buf);
}

std::size_t Core::rx_transports() noexcept {
  std::size_t got = 0;
  MadPool& pool = *shared_.pool;
  for (LocalTransport& lt : local_) {
    if (lt.lost) continue;  // its buffers went back to the pool with the device
    if (!make_tx_room()) break;
    const auto want = static_cast<std::uint32_t>(lt.spare.size());
    if (lt.spare_len < want) {
      const std::span<MadBuf*> hole(lt.spare.data() + lt.spare_len, want - lt.spare_len);
      if (pool.alloc_bulk(id_, hole)) {
        lt.spare_len = want;
      } else {
        bump(counters_->rx_alloc_failures);
        while (lt.spare_len < want) {
          MadBuf* b = pool.alloc(id_);
          if (b == nullptr) break;
          lt.spare[lt.spare_len++] = b;
        }
      }
    }
    if (lt.lost || lt.spare_len == 0) continue;
    std::size_t n = lt.transport->rx_burst(std::span<MadBuf*>(lt.spare.data(), lt.spare_len));
    n = std::min<std::size_t>(n, lt.spare_len);
    // A full burst: the transport queued more than one burst takes while the
    // core worked, so spread handlers (OwnerSelector::spread_by) go to their
    // owners. Anything less, this core keeps up.
    const bool backlog = n >= lt.spare.size();
    for (std::size_t i = 0; i < n; ++i) classify(lt.spare[i], backlog);
    // Unused spares move to the front for the next burst.
    std::copy(lt.spare.begin() + static_cast<std::ptrdiff_t>(n),
              lt.spare.begin() + static_cast<std::ptrdiff_t>(lt.spare_len), lt.spare.begin());
    lt.spare_len -= static_cast<std::uint32_t>(n);
    got += n;
  }
  if (got != 0) bump(counters_->rx, got);
  return got;
}

std::size_t Core::flush_handoffs() noexcept {
  std::size_t moved = 0;
  for (std::uint16_t dst = 0; dst < shared_.cores; ++dst) {
    const std::uint32_t len = handoff_len_[dst];
    if (len == 0) continue;
    MadBuf** base = &handoff_[std::size_t{dst} * handoff_slots_];
    const std::size_t n = shared_.rx_ring(id_, dst)->enqueue_burst(std::span<MadBuf* const>(base, len));
    if (n != len) {
      // Back-pressure: keep the rest, stop receiving until it fits.
      bump(counters_->ring_full);
      std::copy(base + n, base + len, base);
    }
    handoff_len_[dst] = static_cast<std::uint32_t>(len - n);
    handoff_pending_ -= n;
    moved += n;
    if (n != 0) shared_.wakers[dst]->wake_if_sleeping();
  }
  if (moved != 0) bump(counters_->handed_off, moved);
  return moved;
}

bool Core::make_tx_room() noexcept {
  // Every MAD handled here may answer once: keep room for a whole burst of
  // answers before taking a burst in, or leave the burst where it is.
  if (tx_queue_.size() - tx_len_ < rx_burst_max_) early_tx_work_ += flush_tx();
  return tx_queue_.size() - tx_len_ >= rx_burst_max_;
}

std::size_t Core::drain_inbound() noexcept {
  std::size_t work = 0;
  for (std::uint16_t src = 0; src < shared_.cores; ++src) {
    if (src == id_) continue;
    if (!make_tx_room()) break;
    const std::size_t n = shared_.rx_ring(src, id_)->dequeue_burst(std::span<MadBuf*>(batch_.data(), rx_burst_max_));
    for (std::size_t i = 0; i < n; ++i) deliver(batch_[i]);
    work += n;
  }
  if (local_.empty()) return work;
  for (std::uint16_t src = 0; src < shared_.cores; ++src) {
    if (src == id_) continue;
    // Take only what every local transport's backlog can hold, so nothing
    // dequeued has to be dropped.
    std::size_t room = batch_.size();
    for (const LocalTransport& lt : local_) room = std::min<std::size_t>(room, lt.pending.size() - lt.pending_len);
    if (room == 0) break;
    const std::size_t n = shared_.tx_ring(src, id_)->dequeue_burst(std::span<MadBuf*>(batch_.data(), room));
    if (n != 0) handed_over_ns_ = shared_.clock->now_ns();
    for (std::size_t i = 0; i < n; ++i) {
      MadBuf* b = batch_[i];
      const std::int16_t idx = shared_.port_to_transport[b->addr.port_num];
      LocalTransport* lt = nullptr;
      for (LocalTransport& l : local_)
        if (l.index == idx) lt = &l;
      if (lt == nullptr) {
        bump(counters_->tx_no_route);
        shared_.pool->free(id_, b);
        continue;
      }
      lt->pending[lt->pending_len++] = b;
    }
    work += n;
  }
  return work;
}

std::size_t Core::flush_tx() noexcept {
  std::size_t work = 0;
  MadPool& pool = *shared_.pool;
  // 1. Sort the tx queue: local transports' backlogs, or (kept in tx_queue_)
  //    MADs for another core's transport.
  std::uint32_t keep = 0;
  for (std::uint32_t i = 0; i < tx_len_; ++i) {
    MadBuf* b = tx_queue_[i];
    const std::int16_t idx = shared_.port_to_transport[b->addr.port_num];
    if (idx < 0) {
      bump(counters_->tx_no_route);
      pool.free(id_, b);
      continue;
    }
    const TransportSlot& slot = shared_.transports[static_cast<std::size_t>(idx)];
    if (slot.core != id_) {
      tx_queue_[keep++] = b;
      continue;
    }
    LocalTransport* lt = nullptr;
    for (LocalTransport& l : local_)
      if (l.index == idx) lt = &l;
    if (lt != nullptr && lt->pending_len < lt->pending.size()) {
      lt->pending[lt->pending_len++] = b;
    } else {
      tx_queue_[keep++] = b;  // backlog full: retry next iteration
    }
  }
  tx_len_ = keep;
  // 2. MADs for other cores' transports: one burst per destination ring.
  if (tx_len_ != 0 && shared_.cores > 1) {
    for (std::uint16_t dst = 0; dst < shared_.cores; ++dst) {
      if (dst == id_) continue;
      std::size_t n = 0;
      keep = 0;
      for (std::uint32_t i = 0; i < tx_len_; ++i) {
        MadBuf* b = tx_queue_[i];
        const auto idx = static_cast<std::size_t>(shared_.port_to_transport[b->addr.port_num]);
        if (shared_.transports[idx].core == dst) {
          batch_[n++] = b;
        } else {
          tx_queue_[keep++] = b;
        }
      }
      if (n == 0) continue;
      const std::size_t sent = shared_.tx_ring(id_, dst)->enqueue_burst(std::span<MadBuf* const>(batch_.data(), n));
      if (sent != n) bump(counters_->ring_full);
      for (std::size_t i = sent; i < n; ++i) tx_queue_[keep++] = batch_[i];
      tx_len_ = keep;
      work += sent;
      if (sent != 0) shared_.wakers[dst]->wake_if_sleeping();
    }
  }
  // 3. One tx burst per local transport.
  for (LocalTransport& lt : local_) {
    if (lt.pending_len == 0) continue;
    if (lt.lost) {
      // No device to send on: the requests among them are re-sent by their
      // transaction managers when it is back, or failed after device_wait_ms.
      bump(counters_->tx_device_lost, lt.pending_len);
      pool.free_bulk(id_, std::span<MadBuf* const>(lt.pending.data(), lt.pending_len));
      lt.pending_len = 0;
      continue;
    }
    std::size_t n = lt.transport->tx_burst(std::span<MadBuf* const>(lt.pending.data(), lt.pending_len));
    n = std::min<std::size_t>(n, lt.pending_len);
    if (n != 0) {
      pool.free_bulk(id_, std::span<MadBuf* const>(lt.pending.data(), n));
      bump(counters_->tx, n);
    }
    if (n != lt.pending_len) {
      bump(counters_->tx_busy);
      std::copy(lt.pending.begin() + static_cast<std::ptrdiff_t>(n),
                lt.pending.begin() + static_cast<std::ptrdiff_t>(lt.pending_len), lt.pending.begin());
    }
    lt.pending_len -= static_cast<std::uint32_t>(n);
    work += n;
  }
  return work;
}


std::size_t Core::poll_once() noexcept {
  const std::uint64_t loop = counters_->loops.load(std::memory_order_relaxed);
  bump(counters_->loops);
  std::size_t work = drain_inbound();  // owners first, so rings drain before we add to them
  if (handoff_pending_ != 0) work += flush_handoffs();
  if (handoff_pending_ == 0) {
    work += rx_transports();
    if (handoff_pending_ != 0) flush_handoffs();
  }
  if (!pollers_.empty() || !managed_.empty()) {
    const Nanos now = shared_.clock->now_ns();
    if (busy_since_ns_ >= 0) note_busy_loop(now - busy_since_ns_);
    busy_since_ns_ = now;
    shared_.wakers[id_]->busy_since_ns.store(now, std::memory_order_relaxed);
    // A paused manager's timers wait with it: its requests are neither retried
    // into a lost device nor timed out; the life cycle re-sends or fails them.
    for (ManagedTxn& m : managed_)
      if (!m.paused) work += m.txn->poll(now);
    for (Poller* p : pollers_) work += p->poll(now);
  }
  work += flush_tx() + early_tx_work_;
  early_tx_work_ = 0;
  if (loop % kEventPollLoops == 0 || events_due_) {
    events_due_ = false;
    work += poll_events();
  }
  if (work == 0) {
    bump(counters_->idle_loops);
    busy_since_ns_ = -1;  // a block may follow: the next gap is not work
    shared_.wakers[id_]->busy_since_ns.store(-1, std::memory_order_relaxed);
  }
  return work;
}

void Core::note_busy_loop(Nanos ns) noexcept {
  const auto n = static_cast<std::uint64_t>(ns);
  if (n > counters_->busy_loop_max_ns.load(std::memory_order_relaxed))
    counters_->busy_loop_max_ns.store(n, std::memory_order_relaxed);
  if (n > static_cast<std::uint64_t>(kNanosPerMilli)) bump(counters_->busy_loops_over_1ms);
}

void Core::run(const std::atomic<bool>& stop) noexcept {
  const IdleBackoff& bo = shared_.backoff;
  // acquire: pairs with the release store in Engine::stop().
  const bool adapt = bo.mode == IdleMode::kBlock;
  const std::uint32_t spin_min = std::min(bo.spin_loops_min, bo.spin_loops_max);
  set_spin_budget(bo.spin_loops_max);
  while (!stop.load(std::memory_order_acquire)) {
    if (poll_once() != 0) {
      if (adapt && idle_streak_ != 0 && idle_streak_ <= spin_budget_)  // the spin caught this work
        set_spin_budget(std::min(bo.spin_loops_max, std::max(1u, spin_budget_ * 2)));
      idle_streak_ = 0;
      continue;
    }
    ++idle_streak_;
    if (idle_streak_ <= spin_budget_) {
      cpu_relax();
    } else if (adapt) {
      if (idle_streak_ == spin_budget_ + 1) set_spin_budget(std::max(spin_min, spin_budget_ / 2));  // it did not
      block(stop);
    } else if (idle_streak_ <= bo.spin_loops_max + bo.yield_loops_max) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(bo.sleep_us));
    }
  }
  release();
}


void Core::release() noexcept {
  MadPool& pool = *shared_.pool;
  for (std::uint16_t dst = 0; dst < shared_.cores; ++dst) {
    pool.free_bulk(id_, std::span<MadBuf* const>(&handoff_[std::size_t{dst} * handoff_slots_], handoff_len_[dst]));
    handoff_len_[dst] = 0;
  }
  handoff_pending_ = 0;
  pool.free_bulk(id_, std::span<MadBuf* const>(tx_queue_.data(), tx_len_));
  tx_len_ = 0;
  for (LocalTransport& lt : local_) {
    pool.free_bulk(id_, std::span<MadBuf* const>(lt.spare.data(), lt.spare_len));
    lt.spare_len = 0;
    pool.free_bulk(id_, std::span<MadBuf* const>(lt.pending.data(), lt.pending_len));
    lt.pending_len = 0;
  }
  pool.flush_cache(id_);
}

CoreSnapshot Core::snapshot() const {
  CoreSnapshot s;
  s.core = id_;
  const Counters& c = *counters_;
  auto rd = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  s.counters = CoreCounters{rd(c.rx),         rd(c.tx),           rd(c.handled),          rd(c.handed_off),
                            rd(c.ring_full),  rd(c.no_handler),   rd(c.malformed),        rd(c.unsupported_sent),
                            rd(c.tx_full),    rd(c.tx_busy),      rd(c.tx_no_route),      rd(c.rx_alloc_failures),
                            rd(c.device_events), rd(c.device_lost), rd(c.device_back), rd(c.tx_device_lost),
                            rd(c.txn_resent),  rd(c.txn_failed_device), rd(c.idle_loops), rd(c.loops),
                            rd(c.idle_blocks), rd(c.idle_wake_event), rd(c.idle_wake_fd), rd(c.idle_wake_timeout),
                            rd(c.busy_loop_max_ns), rd(c.busy_loops_over_1ms)};
  for (std::size_t i = 0; i < kNoHandlerBuckets; ++i) {
    const std::uint64_t k = rd(c.bucket_key[i]);
    if (k == 0) continue;
    const std::uint64_t key = k - 1;
    s.no_handler.push_back(NoHandlerBucket{static_cast<std::uint8_t>(key >> 24), static_cast<std::uint8_t>(key >> 16),
                                           static_cast<std::uint16_t>(key), rd(c.bucket_count[i])});
  }
  s.no_handler_other = rd(c.bucket_other);
  s.spin_budget = spin_budget_seen_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace madengine
