// The device life cycle on a core: what its transports report (lost, back,
// port changed) is acted on by the owner core and published; every core's
// transaction managers and listeners act on what they see published.
#include <algorithm>

#include "engine/core_parts.hpp"
#include "engine/transaction.hpp"

namespace madengine {

// ---- device life cycle -------------------------------------------------------
// The transport's owner core acts on what its transport reports and publishes
// it (TransportLife); every core with transaction managers or listeners then
// acts on what it sees published, on its own thread, so managers stay
// single-threaded and no core touches another's transport.

void Core::drop_held(LocalTransport& lt) noexcept {
  MadPool& pool = *shared_.pool;
  pool.free_bulk(id_, std::span<MadBuf* const>(lt.spare.data(), lt.spare_len));
  lt.spare_len = 0;
  if (lt.pending_len != 0) {
    bump(counters_->tx_device_lost, lt.pending_len);
    pool.free_bulk(id_, std::span<MadBuf* const>(lt.pending.data(), lt.pending_len));
    lt.pending_len = 0;
  }
}

void Core::on_device_event(LocalTransport& lt, DeviceEvent ev) noexcept {
  TransportLife& life = *shared_.life[lt.index];
  const std::uint32_t epoch = life.epoch.load(std::memory_order_relaxed);  // we are its only writer
  switch (ev) {
    case DeviceEvent::kDeviceLost:
      bump(counters_->device_lost);
      if (lt.lost) break;
      lt.lost = true;
      drop_held(lt);
      // release: the watchers' acquire sees the transport stopped first.
      life.epoch.store(epoch + 1, std::memory_order_release);
      break;
    case DeviceEvent::kDeviceBack:
      bump(counters_->device_back);
      // A return without a loss we saw still means MADs may have been lost
      // in between: move the epoch on (by 2, staying even) so managers re-send.
      life.epoch.store(epoch + (lt.lost ? 1 : 2), std::memory_order_release);
      lt.lost = false;
      break;
    case DeviceEvent::kPortChanged:
    case DeviceEvent::kNone:
      break;
  }
  {
    const std::lock_guard<std::mutex> g(life.mu);
    life.last = PortEvent{shared_.transports[lt.index].port_num, ev, lt.transport->local_port()};
  }
  life.seq.fetch_add(1, std::memory_order_release);  // pairs with the acquire in watch_transports()
}

void Core::report(const TxnReport& r) noexcept {
  for (LifecycleListener* l : listeners_) l->on_txn_report(r);
}

std::size_t Core::watch_transports(Nanos now_ns) noexcept {
  std::size_t work = 0;
  bool paused_changed = false;
  for (std::size_t i = 0; i < watch_.size(); ++i) {
    TransportLife& life = *shared_.life[i];
    Watch& w = watch_[i];
    const std::uint8_t port = shared_.transports[i].port_num;
    auto uses = [port](const ManagedTxn& m) { return m.port_num == kAnyPort || m.port_num == port; };

    const std::uint32_t seq = life.seq.load(std::memory_order_acquire);
    if (seq != w.seq_seen && !listeners_.empty()) {
      PortEvent ev;
      {
        const std::lock_guard<std::mutex> g(life.mu);
        ev = life.last;
      }
      for (LifecycleListener* l : listeners_) l->on_port_event(ev);
      ++work;
    }
    w.seq_seen = seq;

    const std::uint32_t epoch = life.epoch.load(std::memory_order_acquire);
    if (epoch != w.epoch_seen) {
      paused_changed = true;
      ++work;
      if ((epoch & 1u) != 0) {
        // Lost. A device that returned less than device_wait_ns ago and is
        // gone again is flapping: one outage, the wait is not restarted (or a
        // flapping device would keep its requests forever).
        // (Lost before, lost now: it came back and went again between two looks.)
        const bool flapping = (w.epoch_seen & 1u) != 0 ||
                              (w.returned && now_ns - w.back_since_ns < shared_.device_wait_ns);
        if (!flapping) w.lost_since_ns = now_ns;
      } else {
        w.back_since_ns = now_ns;
        w.returned = true;
        // Back: every request in flight through it may have been lost with
        // the device; re-send each with its TID and a fresh timer.
        for (ManagedTxn& m : managed_) {
          if (!uses(m)) continue;
          const std::size_t n = m.txn->resend_all(std::span<std::uint64_t>(report_tids_));
          if (n == 0) continue;
          bump(counters_->txn_resent, n);
          report(TxnReport{port, id_, true, TxnStatus::kOk, n,
                           std::span<const std::uint64_t>(report_tids_.data(), std::min(n, report_tids_.size()))});
        }
      }
      w.epoch_seen = epoch;
    }
    if ((epoch & 1u) != 0 && now_ns - w.lost_since_ns >= shared_.device_wait_ns) {
      for (ManagedTxn& m : managed_) {
        if (!uses(m) || m.txn->in_flight() + m.txn->queued() == 0) continue;
        const std::size_t n = m.txn->fail_all(TxnStatus::kDeviceLost, std::span<std::uint64_t>(report_tids_));
        if (n == 0) continue;
        ++work;
        bump(counters_->txn_failed_device, n);
        report(TxnReport{port, id_, false, TxnStatus::kDeviceLost, n,
                         std::span<const std::uint64_t>(report_tids_.data(), std::min(n, report_tids_.size()))});
      }
    }
  }
  if (paused_changed) {
    for (ManagedTxn& m : managed_) {
      m.paused = false;
      for (std::size_t i = 0; i < watch_.size(); ++i) {
        const std::uint8_t port = shared_.transports[i].port_num;
        if ((watch_[i].epoch_seen & 1u) != 0 && (m.port_num == kAnyPort || m.port_num == port)) m.paused = true;
      }
    }
  }
  return work;
}

std::size_t Core::poll_events() noexcept {
  std::size_t events = 0;
  for (LocalTransport& lt : local_) {
    const DeviceEvent ev = lt.transport->poll_events();
    if (ev == DeviceEvent::kNone) continue;
    ++events;
    on_device_event(lt, ev);
  }
  if (events != 0) bump(counters_->device_events, events);
  if (!managed_.empty() || !listeners_.empty()) events += watch_transports(shared_.clock->now_ns());
  return events;
}

}  // namespace madengine
