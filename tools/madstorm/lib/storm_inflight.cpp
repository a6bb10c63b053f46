// The storm's in-flight table: slots on two lists kept in due-time order
// (in flight, backing off after BUSY), the transmit queue, completion and
// its counters, and the sources that issue on their own.
#include <algorithm>

#include "lib/storm_impl.hpp"

namespace madstorm {

void Storm::Impl::unlink(std::uint32_t i) noexcept {
  Slot& s = slots[i];
  if (s.list == ListId::kNone) return;
  List& l = list_of(s.list);
  if (s.prev != kNone) slots[s.prev].next = s.next; else l.head = s.next;
  if (s.next != kNone) slots[s.next].prev = s.prev; else l.tail = s.prev;
  s.prev = s.next = kNone;
  s.list = ListId::kNone;
}

void Storm::Impl::append(std::uint32_t i, ListId id) noexcept {
  unlink(i);
  Slot& s = slots[i];
  List& l = list_of(id);
  s.list = id;
  s.prev = l.tail;
  s.next = kNone;
  if (l.tail != kNone) slots[l.tail].next = i; else l.head = i;
  l.tail = i;
}

void Storm::Impl::transmit(std::uint32_t i, Nanos now) noexcept {
  Slot& s = slots[i];
  const std::uint64_t tid = kTidHigh | (std::uint64_t{s.gen} << slot_bits) | i;
  s.req.hdr().tid = wire::be64::from(tid);
  // One queue entry per slot at most: a re-send of a request the
  // transport has not taken yet is the same transmission.
  if (!s.queued) {
    if (tx_len < tx_queue.size()) {
      tx_queue[tx_len++] = {&s.req, i, s.q.src};
      s.queued = true;
      ++result.counters.sent;
    } else {
      ++result.counters.tx_dropped;  // cannot happen: the queue holds every slot plus the ACKs
    }
  }
  ++s.attempts;
  s.state = State::kInFlight;
  s.due_ns = now + timeout_ns;
  append(i, ListId::kInFlight);
}

void Storm::Impl::flush_tx() noexcept {
  if (tx_len == 0) return;
  std::array<MadBuf*, 64> ptrs;
  std::array<std::uint32_t, 64> from;
  std::size_t done = 0;
  while (done < tx_len) {
    const std::size_t n = std::min(ptrs.size(), tx_len - done);
    for (std::size_t k = 0; k < n; ++k) {
      ptrs[k] = tx_queue[done + k].buf;
      from[k] = tx_queue[done + k].from;
    }
    const std::span<MadBuf* const> burst(ptrs.data(), n);
    const std::size_t sent = ports != nullptr ? ports->tx_burst_from(burst, std::span<const std::uint32_t>(from.data(), n))
                                              : transport.tx_burst(burst);
    for (std::size_t k = 0; k < sent; ++k) {
      const std::uint32_t slot = tx_queue[done + k].slot;
      if (slot == kNone) --ctl_count;
      else slots[slot].queued = false;
    }
    done += sent;
    if (sent < n) {
      ++result.counters.tx_stalls;
      break;
    }
  }
  // Keep what the transport did not take, in order, for the next turn.
  std::copy(tx_queue.begin() + static_cast<std::ptrdiff_t>(done),
            tx_queue.begin() + static_cast<std::ptrdiff_t>(tx_len), tx_queue.begin());
  tx_len -= done;
}

void Storm::Impl::finish(std::uint32_t i, Outcome o, Nanos now, ErrorKind ek) noexcept {
  Slot& s = slots[i];
  unlink(i);
  if (s.queued) {  // never taken by the transport (it refused for the whole retry time)
    const auto end = std::remove_if(tx_queue.begin(), tx_queue.begin() + static_cast<std::ptrdiff_t>(tx_len),
                                    [i](const TxEntry& e) { return e.slot == i; });
    tx_len = static_cast<std::size_t>(end - tx_queue.begin());
    s.queued = false;
  }
  if (s.measured) {
    StormCounters& c = result.counters;
    SeriesBucket& b = result.series[bucket_of(now)];
    used_buckets = std::max(used_buckets, bucket_of(now) + 1);
    switch (o) {
      case Outcome::kAnswered:
        ++c.answered;
        ++c.answered_by[static_cast<std::size_t>(s.q.kind)];
        ++b.answered;
        result.latency.record(now - s.sched_ns);
        b.latency_max_us = std::max(b.latency_max_us, static_cast<std::uint32_t>((now - s.sched_ns) / 1000));
        break;
      case Outcome::kBusy: ++c.busy; ++b.failed; break;
      case Outcome::kTimeout: ++c.timeouts; ++b.failed; break;
      case Outcome::kError:
        ++c.errors;
        ++c.error_by[static_cast<std::size_t>(ek)];
        ++b.failed;
        break;
    }
    result.end_ns = std::max(result.end_ns, now);
    ++measured_done;
  }
  --per_host[s.q.src];
  --in_flight;
  if (by_source) source_may_go(source_of_host[s.q.src]);
  s.done_gen = s.gen;
  s.state = State::kFree;
  s.next_free = free_head;
  free_head = i;
}

std::uint32_t Storm::Impl::match(std::uint64_t tid) noexcept {
  const auto low = static_cast<std::uint32_t>(tid);
  const std::uint32_t i = low & ((1u << slot_bits) - 1), gen = low >> slot_bits;
  if (i < slots.size()) {
    const Slot& s = slots[i];
    if (s.state == State::kInFlight && s.gen == gen) return i;
    if (s.done_gen == gen || (s.state == State::kBackoff && s.gen == gen)) {
      ++result.counters.late;
      return kNone;
    }
  }
  ++result.counters.unmatched;
  return kNone;
}

void Storm::Impl::took_from_source(std::uint32_t t) noexcept {
  ++cursor[t];
  ready_head = (ready_head + 1) % static_cast<std::uint32_t>(ready.size());
  --ready_count;
  in_ready[t] = 0;
  const std::uint32_t host = workload.source_host(t);
  if (!source_has_more(t)) --sources_left;
  else if (per_host[host] < per_host_window[host]) push_ready(t);
}

}  // namespace madstorm
