// The storm's issue/receive loop: the schedule (closed or open loop, or
// per source), bursts out and in, timeouts and back-offs, progress, and
// the figures at the end.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "lib/storm_impl.hpp"

namespace madstorm {

StormResult Storm::Impl::run(const std::function<void(Nanos)>& idle,
                             const std::function<void(const Progress&)>& progress, Nanos progress_interval_ns,
                             const std::atomic<bool>& stop_requested) {
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  RunState r;
  r.start = clock.now_ns();
  const Nanos warmup_ns = static_cast<Nanos>(cfg.warmup_ms) * madengine::kNanosPerMilli;
  result.measure_start_ns = r.start + warmup_ns;
  r.measure_end = cfg.duration_ms != 0
                      ? result.measure_start_ns + static_cast<Nanos>(cfg.duration_ms) * madengine::kNanosPerMilli
                      : 0;
  r.open_loop = cfg.rate_qps > 0;
  r.period_ns = r.open_loop ? 1e9 / cfg.rate_qps : 0.0;
  r.next_progress = r.start + progress_interval_ns;
  r.next_events_ns = r.start;
  r.last_prog_ns = r.start;

  for (;;) {
    const Nanos now = clock.now_ns();
    std::size_t work = receive(now);
    work += expire(now);
    work += issue(r, now, stop_requested);
    flush_tx();  // one flush per turn
    if (progress && now >= r.next_progress) report_progress(r, now, progress_interval_ns, progress);
    // Queued RMPP ACKs of finished queries are not waited for: a transport
    // that refuses for good must not keep the storm from ending.
    if (r.exhausted && in_flight == 0) break;
    if (now >= r.next_events_ns) watch_device(r, now);
    if ((work == 0 || tx_len != 0) && idle) wait_idle(r, now, idle);
  }

  if (result.end_ns == 0) result.end_ns = clock.now_ns();
  result.series.resize(used_buckets);
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  result.cpu_user_s = cpu_seconds(ru1.ru_utime) - cpu_seconds(ru0.ru_utime);
  result.cpu_sys_s = cpu_seconds(ru1.ru_stime) - cpu_seconds(ru0.ru_stime);
  return std::move(result);
}

std::size_t Storm::Impl::receive(Nanos now) {
  std::size_t work = 0;
  for (std::size_t round = 0; round < 4; ++round) {
    const std::span<MadBuf*> burst(rx_ptrs.data(), kRxBurst);
    const std::size_t n = ports != nullptr ? ports->rx_burst_at(burst, std::span<std::uint32_t>(rx_at))
                                           : transport.rx_burst(burst);
    for (std::size_t k = 0; k < n; ++k) on_rx(rx_bufs[k], now, ports != nullptr ? rx_at[k] : kNoHost);
    work += n;
    if (n < kRxBurst) break;
  }
  rmpp.poll(now);
  return work;
}

std::size_t Storm::Impl::expire(Nanos now) {
  std::size_t work = 0;
  while (inflight_list.head != kNone && slots[inflight_list.head].due_ns <= now) {
    const std::uint32_t i = inflight_list.head;
    if (slots[i].attempts <= cfg.retry.retries) {
      ++result.counters.resent;
      transmit(i, now);
    } else {
      finish(i, Outcome::kTimeout, now);
    }
    ++work;
  }
  while (backoff_list.head != kNone && slots[backoff_list.head].due_ns <= now) {
    const std::uint32_t i = backoff_list.head;
    slots[i].gen = (slots[i].gen + 1) & gen_mask;
    slots[i].attempts = 0;
    transmit(i, now);
    ++work;
  }
  return work;
}

std::size_t Storm::Impl::issue(RunState& r, Nanos now, const std::atomic<bool>& stop_requested) {
  std::size_t work = 0;
  r.next_due = -1;
  while (!r.exhausted) {
    if (stop_requested.load(std::memory_order_relaxed)) {
      r.exhausted = true;
      result.stopped_early = true;
      break;
    }
    if (!r.have_pending) {
      if (cfg.queries_max != 0 && result.counters.issued >= cfg.queries_max) {
        r.exhausted = true;
        break;
      }
      if (by_source) {
        if (ready_count == 0) {
          r.exhausted = sources_left == 0;  // else every source waits for its window
          break;
        }
        pending_source = ready[ready_head];
        workload.query_of(pending_source, cursor[pending_source] % workload.per_source_total(), r.pending);
      } else if (!workload.next(r.pending)) {
        r.exhausted = true;
        break;
      }
      r.have_pending = true;
    }
    const Nanos sched = r.open_loop ? r.start + static_cast<Nanos>(static_cast<double>(r.issued_all) * r.period_ns) : now;
    if (r.measure_end != 0 && sched >= r.measure_end) {
      r.exhausted = true;
      break;
    }
    if (sched > now) {
      r.next_due = sched;
      break;
    }
    if (in_flight >= cfg.window_max || per_host[r.pending.src] >= per_host_window[r.pending.src] ||
        (r.pending.barrier && in_flight != 0) || free_head == kNone)
      break;  // held back by a window: its latency keeps counting from `sched`
    issue_one(r, sched, now);
    ++work;
  }
  return work;
}

void Storm::Impl::issue_one(RunState& r, Nanos sched, Nanos now) {
  const std::uint32_t i = free_head;
  Slot& s = slots[i];
  free_head = s.next_free;
  s.q = r.pending;
  r.have_pending = false;
  s.measured = sched >= result.measure_start_ns;
  s.sched_ns = sched;
  s.first_sent_ns = now;
  s.gen = (s.gen + 1) & gen_mask;
  s.attempts = 0;
  s.busy_count = 0;
  Storm::build_request(cfg, hosts, s.q, s.req);
  ++per_host[s.q.src];
  if (by_source) took_from_source(pending_source);  // after the count: it decides whether the source has room
  ++in_flight;
  ++r.issued_all;
  result.window_peak = std::max(result.window_peak, in_flight);
  if (s.measured) {
    StormCounters& c = result.counters;
    if (c.issued == 0) result.first_issue_ns = now;
    result.last_issue_ns = now;
    ++c.issued;
    ++c.issued_by[static_cast<std::size_t>(s.q.kind)];
    ++result.series[bucket_of(now)].issued;
    used_buckets = std::max(used_buckets, bucket_of(now) + 1);
    if (r.open_loop) result.schedule_lag.record(now - sched);
  } else {
    ++result.counters.warmup_issued;
  }
  if (!r.open_loop) s.sched_ns = now;
  transmit(i, now);
}

void Storm::Impl::report_progress(RunState& r, Nanos now, Nanos progress_interval_ns,
                                  const std::function<void(const Progress&)>& progress) {
  Progress p;
  p.now_ns = now;
  p.since_start_ns = now - r.start;
  p.issued = result.counters.issued;
  p.answered = result.counters.answered;
  p.failed = result.counters.busy + result.counters.timeouts + result.counters.errors;
  p.in_flight = in_flight;
  p.rate_qps = static_cast<double>(p.answered - r.last_prog_answered) / (static_cast<double>(now - r.last_prog_ns) / 1e9);
  const std::uint64_t goal = cfg.queries_max != 0 ? cfg.queries_max : workload.total();
  if (r.measure_end != 0) p.eta_s = std::max<double>(0.0, static_cast<double>(r.measure_end - now) / 1e9);
  else if (goal != 0 && p.rate_qps > 0) p.eta_s = static_cast<double>(goal - std::min(goal, measured_done)) / p.rate_qps;
  r.last_prog_answered = p.answered;
  r.last_prog_ns = now;
  r.next_progress = now + progress_interval_ns;
  progress(p);
}

void Storm::Impl::watch_device(RunState& r, Nanos now) {
  if (transport.poll_events() == madengine::DeviceEvent::kDeviceLost) {
    ++result.counters.device_lost;
    r.exhausted = true;
    result.stopped_early = true;
  }
  r.next_events_ns = now + madengine::kNanosPerMilli;
}

void Storm::Impl::wait_idle(const RunState& r, Nanos now, const std::function<void(Nanos)>& idle) {
  Nanos deadline = now + kIdleWaitMaxNs;
  if (r.next_due >= 0) deadline = std::min(deadline, r.next_due);
  if (inflight_list.head != kNone) deadline = std::min(deadline, slots[inflight_list.head].due_ns);
  if (backoff_list.head != kNone) deadline = std::min(deadline, slots[backoff_list.head].due_ns);
  // The transport was full: back off a little so whatever drains it
  // (ibsim on a shared core, the kernel) gets the CPU.
  if (tx_len != 0) deadline = std::min(deadline, now + kTxStallBackoffNs);
  if (deadline > now) idle(deadline);
}

}  // namespace madstorm
