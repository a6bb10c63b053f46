// How an idle core waits and how producers wake it: the CoreWaker's eventfd,
// the ppoll() on it and the transports' wait fds, or a transport's own wait
// (SoleWait), bounded by the core's next deadline.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <thread>

#include "engine/core_parts.hpp"
#include "engine/transaction.hpp"

namespace madengine {

namespace {

// The longest wait a transport takes alone (a SoleWait's unit may be the
// millisecond): how late a core waiting there sees a ring push or stop(),
// whatever block_max_us says (see block()).
constexpr Nanos kSoleWaitMaxNs = 2 * kNanosPerMilli;

// While other cores hand this one MADs (an SM on another core sending its
// SMPs through our transport), a wait in the transport alone would hold each
// hand-over up to a millisecond: the core naps on its eventfd instead, at
// most kHandOverNapNs, and reads the transport between naps, until no MAD
// has been handed over for kHandOverHotNs.
constexpr Nanos kHandOverHotNs = 5 * kNanosPerMilli;
constexpr Nanos kHandOverNapNs = 50 * kNanosPerMicro;

}  // namespace

CoreWaker::CoreWaker() : event_fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (event_fd < 0) throw std::system_error(errno, std::generic_category(), "CoreWaker: eventfd");
}

CoreWaker::~CoreWaker() { ::close(event_fd); }

void CoreWaker::wake() noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only if the counter is near 2^64: the core is awake-pending anyway.
  [[maybe_unused]] const ssize_t n = ::write(event_fd, &one, sizeof(one));
}

void Core::wake() noexcept { shared_.wakers[id_]->wake(); }

void CoreWaker::wake_if_sleeping() noexcept {
  // An RMW, not a load: it pairs with the exchange in Core::block(). The two
  // are ordered on `sleeping`: if ours comes first, its release publishes our
  // push to the core's re-check; if the core's comes first, we read its 1.
  // (A fence pair would do the same, but TSan cannot check fences.)
  if (sleeping.fetch_add(0, std::memory_order_acq_rel) != 0) wake();
}

// ---- blocking idle -----------------------------------------------------------
// An idle core blocks in ppoll() on its eventfd and its transports' wait fds
// until the earliest poller deadline or the cap. Producers wake it through
// CoreWaker. A transport whose wait fd cannot join the set (a SoleWait:
// the umad transport under ibsim) takes the whole wait itself, until the
// same deadline but kSoleWaitMaxNs (2 ms) at most; the core sees ring
// pushes and stop() when that wait ends. A MAD ends it at once, so a query
// costs the core one wake-up; work from other threads waits up to 2 ms.
// (A watcher thread waiting on such an fd to wake the core's eventfd cost
// a second thread two wake-ups per query.)

Nanos Core::idle_timeout_ns() const noexcept {
  Nanos t = Nanos{shared_.backoff.block_max_us} * kNanosPerMicro;
  if (pollers_.empty() && managed_.empty()) return t;
  const Nanos now = shared_.clock->now_ns();
  auto bound = [&](Nanos deadline) {
    if (deadline >= 0) t = std::min(t, deadline - now);
  };
  for (const ManagedTxn& m : managed_)
    if (!m.paused) bound(m.txn->next_deadline_ns());
  for (const Poller* p : pollers_) bound(p->next_deadline_ns());
  return t;
}

void Core::block(const std::atomic<bool>& stop) noexcept {
  const IdleBackoff& bo = shared_.backoff;
  CoreWaker& w = *shared_.wakers[id_];
  // MADs waiting for tx room or ring room announce nothing when room appears:
  // nap and retry instead of blocking.
  bool backlog = tx_len_ != 0 || handoff_pending_ != 0;
  for (const LocalTransport& lt : local_) backlog = backlog || lt.pending_len != 0;
  if (backlog) {
    std::this_thread::sleep_for(std::chrono::microseconds(bo.sleep_us));
    return;
  }
  const Nanos timeout_ns = idle_timeout_ns();
  if (timeout_ns <= 0) return;  // a deadline is due: poll again

  pollfds_[0] = pollfd{w.event_fd, POLLIN, 0};
  nfds_t n = 1;
  SoleWait* alone = nullptr;
  for (LocalTransport& lt : local_) {
    if (lt.lost) continue;
    if (lt.sole != nullptr && lt.sole->waits_alone()) {
      alone = lt.sole;
      continue;
    }
    const int fd = lt.transport->wait_fd();
    if (fd < 0) continue;
    pollfds_[n++] = pollfd{fd, POLLIN, 0};
  }
  // In a transport's own wait `sleeping` stays 0: producers cannot end that
  // wait, so they need not write the eventfd; the rings are drained when it ends.
  Nanos wait_ns = timeout_ns;
  if (alone != nullptr && handed_over_ns_ >= 0 && shared_.clock->now_ns() - handed_over_ns_ < kHandOverHotNs) {
    alone = nullptr;
    wait_ns = std::min(timeout_ns, kHandOverNapNs);
  }
  const bool sole = alone != nullptr;

  // Pairs with the RMW in CoreWaker::wake_if_sleeping(): a push we do not
  // see below is followed by a producer that reads our 1. The re-check
  // drains the rings (a dequeue, not rte_ring_count(), whose plain read of
  // the producer's tail TSan rightly reports); what it finds is work done.
  if (!sole) w.sleeping.exchange(1, std::memory_order_acq_rel);
  if (stop.load(std::memory_order_acquire) || drain_inbound() != 0) {
    if (!sole) w.sleeping.store(0, std::memory_order_release);
    idle_streak_ = 0;
    return;
  }
  bump(counters_->idle_blocks);
  int r = 0;
  if (sole) {
    r = alone->wait_alone(std::min(timeout_ns, kSoleWaitMaxNs));
  } else {
    const timespec ts{static_cast<time_t>(wait_ns / kNanosPerSecond), static_cast<long>(wait_ns % kNanosPerSecond)};
    r = ::ppoll(pollfds_.data(), n, &ts, nullptr);
    w.sleeping.store(0, std::memory_order_release);
  }
  events_due_ = true;  // the life cycle runs after every wait, not every 64 loops
  // Back to the blocking point at once if the next iteration finds nothing:
  // the spin was spent before this wait (and is not judged again).
  idle_streak_ = kStreakAfterWait;
  if (r <= 0) {
    bump(counters_->idle_wake_timeout);
    return;
  }
  if (sole) {
    bump(counters_->idle_wake_fd);
    return;
  }
  if ((pollfds_[0].revents & POLLIN) != 0) {
    std::uint64_t v = 0;
    [[maybe_unused]] const ssize_t got = ::read(w.event_fd, &v, sizeof(v));  // reset the count
    bump(counters_->idle_wake_event);
  }
  for (nfds_t i = 1; i < n; ++i) {
    if (pollfds_[i].revents != 0) {
      bump(counters_->idle_wake_fd);
      break;
    }
  }
}

}  // namespace madengine
