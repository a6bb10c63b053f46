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
  const Nanos start = clock.now_ns();
  const Nanos warmup_ns = static_cast<Nanos>(cfg.warmup_ms) * madengine::kNanosPerMilli;
  result.measure_start_ns = start + warmup_ns;
  const Nanos measure_end = cfg.duration_ms != 0
                                ? result.measure_start_ns + static_cast<Nanos>(cfg.duration_ms) * madengine::kNanosPerMilli
                                : 0;
  const bool open_loop = cfg.rate_qps > 0;
  const double period_ns = open_loop ? 1e9 / cfg.rate_qps : 0.0;
  std::uint64_t issued_all = 0;
  Query pending{};
  bool have_pending = false, exhausted = false;
  Nanos next_progress = start + progress_interval_ns;
  Nanos next_events_ns = start;
  std::uint64_t last_prog_answered = 0;
  Nanos last_prog_ns = start;

  for (;;) {
    Nanos now = clock.now_ns();
    std::size_t work = 0;

    // 1. Answers.
    for (std::size_t round = 0; round < 4; ++round) {
      const std::span<MadBuf*> burst(rx_ptrs.data(), kRxBurst);
      const std::size_t n = ports != nullptr ? ports->rx_burst_at(burst, std::span<std::uint32_t>(rx_at))
                                             : transport.rx_burst(burst);
      for (std::size_t k = 0; k < n; ++k) on_rx(rx_bufs[k], now, ports != nullptr ? rx_at[k] : kNoHost);
      work += n;
      if (n < kRxBurst) break;
    }
    rmpp.poll(now);

    // 2. Timeouts: re-send with the same TID, or give up.
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
    // 3. BUSY back-offs that are over: ask again under a new TID.
    while (backoff_list.head != kNone && slots[backoff_list.head].due_ns <= now) {
      const std::uint32_t i = backoff_list.head;
      slots[i].gen = (slots[i].gen + 1) & gen_mask;
      slots[i].attempts = 0;
      transmit(i, now);
      ++work;
    }

    // 4. New queries, as the schedule and the windows allow.
    Nanos next_due = -1;
    while (!exhausted) {
      if (stop_requested.load(std::memory_order_relaxed)) {
        exhausted = true;
        result.stopped_early = true;
        break;
      }
      if (!have_pending) {
        if (cfg.queries_max != 0 && result.counters.issued >= cfg.queries_max) {
          exhausted = true;
          break;
        }
        if (by_source) {
          if (ready_count == 0) {
            exhausted = sources_left == 0;  // else every source waits for its window
            break;
          }
          pending_source = ready[ready_head];
          workload.query_of(pending_source, cursor[pending_source] % workload.per_source_total(), pending);
        } else if (!workload.next(pending)) {
          exhausted = true;
          break;
        }
        have_pending = true;
      }
      const Nanos sched = open_loop ? start + static_cast<Nanos>(static_cast<double>(issued_all) * period_ns) : now;
      if (measure_end != 0 && sched >= measure_end) {
        exhausted = true;
        break;
      }
      if (sched > now) {
        next_due = sched;
        break;
      }
      if (in_flight >= cfg.window_max || per_host[pending.src] >= per_host_window[pending.src] ||
          (pending.barrier && in_flight != 0) || free_head == kNone)
        break;  // held back by a window: its latency keeps counting from `sched`
      const std::uint32_t i = free_head;
      Slot& s = slots[i];
      free_head = s.next_free;
      s.q = pending;
      have_pending = false;
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
      ++issued_all;
      result.window_peak = std::max(result.window_peak, in_flight);
      if (s.measured) {
        StormCounters& c = result.counters;
        if (c.issued == 0) result.first_issue_ns = now;
        result.last_issue_ns = now;
        ++c.issued;
        ++c.issued_by[static_cast<std::size_t>(s.q.kind)];
        ++result.series[bucket_of(now)].issued;
        used_buckets = std::max(used_buckets, bucket_of(now) + 1);
        if (open_loop) result.schedule_lag.record(now - sched);
      } else {
        ++result.counters.warmup_issued;
      }
      if (!open_loop) s.sched_ns = now;
      transmit(i, now);
      ++work;
    }

    // 5. One flush per turn.
    flush_tx();

    if (progress && now >= next_progress) {
      Progress p;
      p.now_ns = now;
      p.since_start_ns = now - start;
      p.issued = result.counters.issued;
      p.answered = result.counters.answered;
      p.failed = result.counters.busy + result.counters.timeouts + result.counters.errors;
      p.in_flight = in_flight;
      p.rate_qps = static_cast<double>(p.answered - last_prog_answered) / (static_cast<double>(now - last_prog_ns) / 1e9);
      const std::uint64_t goal = cfg.queries_max != 0 ? cfg.queries_max : workload.total();
      if (measure_end != 0) p.eta_s = std::max<double>(0.0, static_cast<double>(measure_end - now) / 1e9);
      else if (goal != 0 && p.rate_qps > 0) p.eta_s = static_cast<double>(goal - std::min(goal, measured_done)) / p.rate_qps;
      last_prog_answered = p.answered;
      last_prog_ns = now;
      next_progress = now + progress_interval_ns;
      progress(p);
    }

    // Queued RMPP ACKs of finished queries are not waited for: a transport
    // that refuses for good must not keep the storm from ending.
    if (exhausted && in_flight == 0) break;

    if (now >= next_events_ns) {
      if (transport.poll_events() == madengine::DeviceEvent::kDeviceLost) {
        // Nothing more can be asked; what is in flight runs out its timers.
        ++result.counters.device_lost;
        exhausted = true;
        result.stopped_early = true;
      }
      next_events_ns = now + madengine::kNanosPerMilli;
    }

    if ((work == 0 || tx_len != 0) && idle) {
      Nanos deadline = now + kIdleWaitMaxNs;
      if (next_due >= 0) deadline = std::min(deadline, next_due);
      if (inflight_list.head != kNone) deadline = std::min(deadline, slots[inflight_list.head].due_ns);
      if (backoff_list.head != kNone) deadline = std::min(deadline, slots[backoff_list.head].due_ns);
      // The transport was full: back off a little so whatever drains it
      // (ibsim on a shared core, the kernel) gets the CPU.
      if (tx_len != 0) deadline = std::min(deadline, now + kTxStallBackoffNs);
      if (deadline > now) idle(deadline);
    }
  }

  if (result.end_ns == 0) result.end_ns = clock.now_ns();
  result.series.resize(used_buckets);
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  result.cpu_user_s = cpu_seconds(ru1.ru_utime) - cpu_seconds(ru0.ru_utime);
  result.cpu_sys_s = cpu_seconds(ru1.ru_stime) - cpu_seconds(ru0.ru_stime);
  return std::move(result);
}

}  // namespace madstorm
