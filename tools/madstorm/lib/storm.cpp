// Storm: the issue/receive loop, the in-flight table with its timer lists,
// and the checks every answer goes through.
#include "lib/storm.hpp"

#include <sys/resource.h>

#include <optional>
#include <string>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/rmpp.hpp"
#include "engine/tx_sink.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/mc_member_record.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "lib/requester_ports.hpp"

namespace madstorm {

namespace wire = madengine::wire;
using madengine::MadBuf;

const char* to_string(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::kBadStatus: return "bad_status";
    case ErrorKind::kWrongMethod: return "wrong_method";
    case ErrorKind::kWrongAttr: return "wrong_attr";
    case ErrorKind::kWrongRecord: return "wrong_record";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kRmppAborted: return "rmpp_aborted";
    case ErrorKind::kWrongPath: return "wrong_path";
    case ErrorKind::kMisdirected: return "misdirected";
  }
  return "unknown";
}

double StormResult::elapsed_s() const noexcept {
  if (counters.issued == 0) return 0.0;
  return end_ns > first_issue_ns ? static_cast<double>(end_ns - first_issue_ns) / 1e9 : 0.0;
}
double StormResult::throughput_qps() const noexcept {
  const double e = elapsed_s();
  return e > 0 ? static_cast<double>(counters.answered) / e : 0.0;
}
double StormResult::throughput_without_oracle_qps() const noexcept {
  const double e = elapsed_s() - static_cast<double>(counters.oracle_ns) / 1e9;
  return e > 0 ? static_cast<double>(counters.answered) / e : 0.0;
}
double StormResult::issue_rate_qps() const noexcept {
  if (counters.issued < 2 || last_issue_ns <= first_issue_ns) return 0.0;
  return static_cast<double>(counters.issued - 1) / (static_cast<double>(last_issue_ns - first_issue_ns) / 1e9);
}

namespace {

// TID low 32 bits: slot in bits 0-19, generation in bits 20-31. The high 32
// bits belong to the transport (ib_umad and ibsim replace them).
// The low 32 bits of a TID (the only ones that come back: the kernel and
// umad2sim own the high half) are a generation above the slot index. The slot
// field is only as wide as the window needs, so a slot's TIDs repeat only
// after 2^(32 - slot bits) queries: an SA keeps answers for retried TIDs
// (madengine 2 s, SaServerConfig::dedup_ttl_ns) and would take a new query
// that reuses a recent TID for a retry of the old one.
constexpr unsigned kSlotBitsMax = 20;
constexpr unsigned slot_bits_for(std::uint32_t window) noexcept {
  unsigned b = 1;
  while (b < kSlotBitsMax && (1u << b) < window) ++b;
  return b;
}
constexpr std::uint64_t kTidHigh = std::uint64_t{kStormTidTag} << 32;
constexpr std::size_t kRxBurst = 32;
constexpr std::size_t kCtlQueueMax = 256;  // RMPP ACKs waiting for the transport
constexpr Nanos kTxStallBackoffNs = 50 * madengine::kNanosPerMicro;
// Bound on one idle wait when nothing is due sooner. Well above a
// millisecond: an idle callback that can only block in whole milliseconds
// (poll() on the umad fd) would otherwise always see less than one left and
// fall back to short naps, spinning while it waits for an answer.
constexpr Nanos kIdleWaitMaxNs = 10 * madengine::kNanosPerMilli;

// IPoIB broadcast group of the default partition (RFC 4391): ff12:401b:ffff::ffff:ffff.
wire::Gid ipoib_broadcast_mgid() noexcept {
  wire::Gid g{};
  g.prefix = wire::be64::from(0xff12401bffff0000ull);
  g.guid = wire::be64::from(0x00000000ffffffffull);
  return g;
}

wire::Gid gid_of(std::uint64_t prefix, std::uint64_t guid) noexcept {
  wire::Gid g{};
  g.prefix = wire::be64::from(prefix);
  g.guid = wire::be64::from(guid);
  return g;
}

std::uint8_t method_of(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kPathTable: return wire::method::kGetTable;
    case QueryKind::kMcJoin: return wire::method::kSet;
    case QueryKind::kMcLeave: return wire::method::kDelete;
    default: return wire::method::kGet;
  }
}

std::uint16_t attr_of(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kNodeRecord: return wire::sa_attr::kNodeRecord;
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: return wire::sa_attr::kMcMemberRecord;
    default: return wire::sa_attr::kPathRecord;
  }
}

// The response method for a request method (IBA 15.4: Set answers with GetResp).
std::uint8_t response_method_of(std::uint8_t m) noexcept {
  return m == wire::method::kSet ? wire::method::kGetResp : static_cast<std::uint8_t>(m | wire::method::kResponse);
}

std::size_t record_size(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kNodeRecord: return sizeof(wire::NodeRecord);
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: return sizeof(wire::McMemberRecord);
    default: return sizeof(wire::PathRecord);
  }
}

double cpu_seconds(const timeval& tv) noexcept {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

}  // namespace

void Storm::build_request(const StormConfig& cfg, std::span<const Host> hosts, const Query& q, MadBuf& out) noexcept {
  wire::SaMad sa{};
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = method_of(q.kind);
  sa.hdr.attr_id = wire::be16::from(attr_of(q.kind));
  const Host& src = hosts[q.src];
  const Host& dst = hosts[q.dst];
  const std::uint64_t prefix = cfg.sa.subnet_prefix;
  switch (q.kind) {
    case QueryKind::kPathRecord:
    case QueryKind::kPathTable: {
      wire::PathRecord pr{};
      std::uint64_t cm = 0;
      if (cfg.by_gid) {
        pr.sgid = gid_of(prefix, src.port_guid);
        cm |= wire::path_record_cm::kSGid;
      } else {
        pr.slid = wire::be16::from(src.lid);
        cm |= wire::path_record_cm::kSLid;
      }
      if (q.kind == QueryKind::kPathRecord) {
        if (cfg.by_gid) {
          pr.dgid = gid_of(prefix, dst.port_guid);
          cm |= wire::path_record_cm::kDGid;
        } else {
          pr.dlid = wire::be16::from(dst.lid);
          cm |= wire::path_record_cm::kDLid;
        }
      }
      sa.comp_mask = wire::be64::from(cm);
      wire::encode(pr, std::span<std::uint8_t>(sa.data));
      break;
    }
    case QueryKind::kNodeRecord: {
      wire::NodeRecord nr{};
      nr.lid = wire::be16::from(dst.lid);
      sa.comp_mask = wire::be64::from(wire::node_record_cm::kLid);
      wire::encode(nr, std::span<std::uint8_t>(sa.data));
      break;
    }
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: {
      wire::McMemberRecord mc{};
      const bool mgid_set = cfg.sa.mgid.prefix.get() != 0 || cfg.sa.mgid.guid.get() != 0;
      mc.mgid = mgid_set ? cfg.sa.mgid : ipoib_broadcast_mgid();
      mc.port_gid = gid_of(prefix, src.port_guid);
      mc.set_join_state(wire::join_state::kFullMember);
      // The requester stands in for the host whose PortGID it names (IBA 15.2.5.17: ProxyJoin).
      mc.set_proxy_join(true);
      sa.comp_mask = wire::be64::from(wire::mc_member_record_cm::kMGid | wire::mc_member_record_cm::kPortGid |
                                      wire::mc_member_record_cm::kJoinState);
      wire::encode(mc, std::span<std::uint8_t>(sa.data));
      break;
    }
  }
  wire::encode(sa, std::span<std::uint8_t>(out.mad.bytes));
  out.len = wire::kMadSize;
  out.addr = madengine::MadAddr{};
  out.addr.lid = cfg.sa.lid;
  out.addr.remote_qpn = 1;
  out.addr.qkey = madengine::kGsiQkey;
  out.addr.sl = cfg.sa.sl;
  out.addr.pkey_index = cfg.sa.pkey_index;
  out.resp_timeout_ms = cfg.retry.timeout_ms;
}

struct Storm::Impl final : madengine::TxSink {
  enum class State : std::uint8_t { kFree, kInFlight, kBackoff };
  enum class ListId : std::uint8_t { kNone, kInFlight, kBackoff };
  static constexpr std::uint32_t kNone = 0xffffffffu;

  struct Slot {
    MadBuf req;
    Query q;
    Nanos sched_ns = 0;       // when the schedule said to issue (open loop) or first send
    Nanos first_sent_ns = 0;
    Nanos due_ns = 0;         // timeout (in flight) or end of back-off
    std::uint32_t gen = 0;
    std::uint32_t done_gen = 0xffffffffu;  // generation last finished in this slot (late answers); above any gen
    std::uint32_t prev = kNone, next = kNone;
    std::uint32_t next_free = kNone;
    std::uint8_t attempts = 0;
    std::uint8_t busy_count = 0;
    State state = State::kFree;
    ListId list = ListId::kNone;
    bool measured = false;
    bool queued = false;  // its request sits in tx_queue
  };
  struct List {
    std::uint32_t head = kNone, tail = kNone;
  };
  enum class Verdict : std::uint8_t { kOk, kBusy, kError };

  Impl(const StormConfig& c, madengine::Transport& t, const madengine::Clock& clk, std::span<const Host> h,
       Workload& w)
      : cfg(c), transport(t), clock(clk), hosts(h), workload(w), slots(c.window_max),
        per_host(h.size(), 0), per_host_window(h.size(), static_cast<std::uint16_t>(c.window_per_host_max)),
        ports(dynamic_cast<madstorm::RequesterPorts*>(&t)), rmpp(clk, *this, &Impl::on_rmpp_done, this, rmpp_config(c)) {
    for (const auto& [host, window] : c.window_overrides) {
      if (host >= h.size() || window == 0 || window > 0xffff)
        throw std::invalid_argument("window override for host " + std::to_string(host) + ": host must be below " +
                                    std::to_string(h.size()) + " and window 1..65535");
      per_host_window[host] = static_cast<std::uint16_t>(window);
    }
    if (ports != nullptr) {
      const auto r = ports->requesters();
      bool same = r.size() == h.size();
      for (std::size_t i = 0; same && i < h.size(); ++i) same = r[i].lid == h[i].lid;
      if (!same) throw std::invalid_argument("the storm's hosts are not the transport's requesters");
    }
    result.per_host_ports = ports != nullptr;
    if (by_source) {
      const auto n = static_cast<std::uint32_t>(w.sources());
      ready.resize(n);
      in_ready.assign(n, 0);
      cursor.assign(n, 0);
      source_of_host.assign(h.size(), kNone);
      for (std::uint32_t k = 0; k < n; ++k) source_of_host[w.source_host(k)] = k;
      for (std::uint32_t i = 0; i < n; ++i) push_ready(w.turn(i));
      sources_left = w.per_source_total() != 0 ? n : 0;
    }
    result.busy_answers_by_host.assign(h.size(), 0);
    for (std::uint32_t i = 0; i < slots.size(); ++i) slots[i].next_free = i + 1 < slots.size() ? i + 1 : kNone;
    free_head = 0;
    tx_queue.resize(c.window_max + kCtlQueueMax);
    ctl_bufs.resize(kCtlQueueMax);
    rx_bufs.resize(kRxBurst);
    for (std::size_t i = 0; i < kRxBurst; ++i) rx_ptrs[i] = &rx_bufs[i];
    result.series.assign(c.buckets_max, SeriesBucket{});
    result.bucket_ns = c.bucket_ns;
    result.hosts = h.size();
  }

  static madengine::RmppConfig rmpp_config(const StormConfig& c) {
    madengine::RmppConfig r;
    // Finished transfers linger (to re-ACK a lost final ACK) and hold their
    // slot meanwhile: room for a window of active ones plus the lingering.
    r.transfers_max = c.rmpp_transfers_max != 0 ? c.rmpp_transfers_max : std::clamp<std::uint32_t>(2 * c.window_max, 4, 512);
    r.segments_max = c.rmpp_segments_max;
    const Nanos timeout_ns = static_cast<Nanos>(c.retry.timeout_ms) * madengine::kNanosPerMilli;
    r.total_timeout_ns = timeout_ns * (c.retry.retries + 1);
    r.linger_ns = std::min<Nanos>(r.linger_ns, timeout_ns);
    return r;
  }

  // TxSink for the RMPP receiver's ACKs: copied into a small ring.
  bool send(const MadBuf& buf) noexcept override {
    if (ctl_count == kCtlQueueMax || tx_len == tx_queue.size()) return false;
    MadBuf& b = ctl_bufs[ctl_next];
    ctl_next = (ctl_next + 1) % kCtlQueueMax;
    ++ctl_count;
    b = buf;
    // An ACK leaves from the host whose query the transfer answers.
    const std::uint32_t slot = static_cast<std::uint32_t>(buf.hdr().tid.get()) & ((1u << slot_bits) - 1);
    tx_queue[tx_len++] = {&b, kNone, slot < slots.size() ? slots[slot].q.src : 0};
    return true;
  }

  // ---- lists ----
  List& list_of(ListId id) noexcept { return id == ListId::kInFlight ? inflight_list : backoff_list; }
  void unlink(std::uint32_t i) noexcept {
    Slot& s = slots[i];
    if (s.list == ListId::kNone) return;
    List& l = list_of(s.list);
    if (s.prev != kNone) slots[s.prev].next = s.next; else l.head = s.next;
    if (s.next != kNone) slots[s.next].prev = s.prev; else l.tail = s.prev;
    s.prev = s.next = kNone;
    s.list = ListId::kNone;
  }
  // Every entry of a list has the same delay, so appending keeps it sorted by due time.
  void append(std::uint32_t i, ListId id) noexcept {
    unlink(i);
    Slot& s = slots[i];
    List& l = list_of(id);
    s.list = id;
    s.prev = l.tail;
    s.next = kNone;
    if (l.tail != kNone) slots[l.tail].next = i; else l.head = i;
    l.tail = i;
  }

  // ---- sending ----
  void transmit(std::uint32_t i, Nanos now) noexcept {
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

  void flush_tx() noexcept {
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

  // ---- completion ----
  std::size_t bucket_of(Nanos t) const noexcept {
    const Nanos rel = t - result.measure_start_ns;
    if (rel <= 0) return 0;
    return std::min<std::size_t>(static_cast<std::size_t>(rel / cfg.bucket_ns), cfg.buckets_max - 1);
  }

  enum class Outcome : std::uint8_t { kAnswered, kBusy, kTimeout, kError };
  void finish(std::uint32_t i, Outcome o, Nanos now, ErrorKind ek = ErrorKind::kMalformed) noexcept {
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

  // A TID back to its slot: kNone for an answer that matches nothing in flight.
  std::uint32_t match(std::uint64_t tid) noexcept {
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

  // The slot a TID names if that query is in flight; counts nothing.
  std::uint32_t in_flight_slot(std::uint64_t tid) const noexcept {
    const auto low = static_cast<std::uint32_t>(tid);
    const std::uint32_t i = low & ((1u << slot_bits) - 1);
    return i < slots.size() && slots[i].state == State::kInFlight && slots[i].gen == low >> slot_bits ? i : kNone;
  }

  bool gid_is(const wire::Gid& g, std::uint64_t guid) const noexcept {
    return g.prefix.get() == cfg.sa.subnet_prefix && g.guid.get() == guid;
  }

  // The oracle's view of a PathRecord that names the right ends.
  bool path_ok(const wire::PathRecord& pr) noexcept {
    if (oracle == nullptr) return true;
    const auto t0 = std::chrono::steady_clock::now();
    const PathCheck c = oracle->check(pr);
    StormCounters& k = result.counters;
    k.oracle_ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
    ++k.oracle_checked;
    if (c.verdict != PathVerdict::kUnreached && c.verdict != PathVerdict::kUnknownEnd)
      ++k.oracle_hops[std::min<std::size_t>(c.hops, kPathHopsMax)];
    if (c.verdict == PathVerdict::kOk) return true;
    ++k.oracle_wrong_by[static_cast<std::size_t>(c.verdict)];
    return false;
  }

  // Checks one record against the query it answers: nullopt when right.
  std::optional<ErrorKind> check_record(const Slot& s, std::span<const std::uint8_t> rec) noexcept {
    const Host& src = hosts[s.q.src];
    const Host& dst = hosts[s.q.dst];
    switch (s.q.kind) {
      case QueryKind::kPathRecord:
      case QueryKind::kPathTable: {
        const auto pr = wire::decode<wire::PathRecord>(rec);
        if (!pr) return ErrorKind::kWrongRecord;
        if (pr->slid.get() != src.lid || !gid_is(pr->sgid, src.port_guid)) return ErrorKind::kWrongRecord;
        if (s.q.kind == QueryKind::kPathTable ? pr->dlid.get() == 0
                                              : pr->dlid.get() != dst.lid || !gid_is(pr->dgid, dst.port_guid))
          return ErrorKind::kWrongRecord;
        if (!path_ok(*pr)) return ErrorKind::kWrongPath;
        return std::nullopt;
      }
      case QueryKind::kNodeRecord: {
        const auto nr = wire::decode<wire::NodeRecord>(rec);
        if (nr && nr->lid.get() == dst.lid && nr->node_info.port_guid.get() == dst.port_guid) return std::nullopt;
        return ErrorKind::kWrongRecord;
      }
      case QueryKind::kMcJoin:
      case QueryKind::kMcLeave: {
        const auto mc = wire::decode<wire::McMemberRecord>(rec);
        if (!mc) return ErrorKind::kWrongRecord;
        const auto want = wire::decode<wire::McMemberRecord>(
            std::span<const std::uint8_t>(s.req.mad.bytes).subspan(wire::kSaHeaderSize));
        if (!want || !(mc->mgid == want->mgid) || !gid_is(mc->port_gid, src.port_guid)) return ErrorKind::kWrongRecord;
        // A join answers with the group (MLID set) and our join state (IBA 15.2.5.17.1).
        if (s.q.kind == QueryKind::kMcJoin &&
            (mc->mlid.get() < 0xc000 || (mc->join_state() & wire::join_state::kFullMember) == 0))
          return ErrorKind::kWrongRecord;
        return std::nullopt;
      }
    }
    return ErrorKind::kWrongRecord;
  }

  // The header checks shared by single answers and reassembled tables.
  Verdict check_header(const Slot& s, const wire::SaMad& m, ErrorKind& ek) const noexcept {
    if (wire::validate(m) != wire::MadError::kOk) {
      ek = ErrorKind::kMalformed;
      return Verdict::kError;
    }
    const std::uint16_t st = m.hdr.status.get();
    if ((st & wire::status::kBusy) != 0) return Verdict::kBusy;
    if (m.hdr.method != response_method_of(s.req.hdr().method)) {
      ek = ErrorKind::kWrongMethod;
      return Verdict::kError;
    }
    if (m.hdr.attr_id.get() != s.req.hdr().attr_id.get()) {
      ek = ErrorKind::kWrongAttr;
      return Verdict::kError;
    }
    if (st != wire::status::kOk) {
      ek = ErrorKind::kBadStatus;
      return Verdict::kError;
    }
    return Verdict::kOk;
  }

  void on_busy(std::uint32_t i, Nanos now) noexcept {
    Slot& s = slots[i];
    ++result.counters.busy_answers;
    ++result.busy_answers_by_host[s.q.src];
    if (s.busy_count >= cfg.retry.busy_retries) {
      finish(i, Outcome::kBusy, now);
      return;
    }
    ++s.busy_count;
    // The next attempt is a new transaction: a late answer to this one must not complete it.
    s.done_gen = s.gen;
    s.state = State::kBackoff;
    s.due_ns = now + busy_backoff_ns;
    append(i, ListId::kBackoff);
  }

  void on_single(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept {
    const std::uint32_t i = match(buf.hdr().tid.get());
    if (i == kNone) return;
    const auto m = wire::decode<wire::SaMad>(std::span<const std::uint8_t>(buf.mad.bytes));
    Slot& s = slots[i];
    if (ports != nullptr && at != s.q.src) {
      finish(i, Outcome::kError, now, ErrorKind::kMisdirected);
      return;
    }
    ErrorKind ek{};
    switch (check_header(s, *m, ek)) {
      case Verdict::kBusy: on_busy(i, now); return;
      case Verdict::kError: finish(i, Outcome::kError, now, ek); return;
      case Verdict::kOk: break;
    }
    if (s.q.kind == QueryKind::kPathTable) {
      // IBA 15.4: a GetTableResp always travels as RMPP, even in one MAD.
      finish(i, Outcome::kError, now, ErrorKind::kMalformed);
      return;
    }
    // Senders may trim a MAD to its used bytes (OpenSM under umad2sim sends
    // 120 for a PathRecord): the record itself must be there.
    if (buf.len < wire::kSaHeaderSize + record_size(s.q.kind)) {
      finish(i, Outcome::kError, now, ErrorKind::kMalformed);
      return;
    }
    if (const auto bad = check_record(s, std::span<const std::uint8_t>(m->data))) {
      finish(i, Outcome::kError, now, *bad);
      return;
    }
    finish(i, Outcome::kAnswered, now);
  }

  static void on_rmpp_done(void* user, const madengine::RmppRecvDone& d) noexcept {
    static_cast<Impl*>(user)->rmpp_done(d);
  }
  void rmpp_done(const madengine::RmppRecvDone& d) noexcept {
    const Nanos now = clock.now_ns();
    const std::uint32_t i = match(d.key.tid);
    if (i == kNone) return;
    if (d.outcome != madengine::RmppOutcome::kDone || d.first == nullptr) {
      finish(i, Outcome::kError, now, ErrorKind::kRmppAborted);
      return;
    }
    ++result.counters.rmpp_transfers;
    Slot& s = slots[i];
    const auto m = wire::decode<wire::SaMad>(std::span<const std::uint8_t>(d.first->mad.bytes));
    ErrorKind ek{};
    switch (check_header(s, *m, ek)) {
      case Verdict::kBusy: on_busy(i, now); return;
      case Verdict::kError: finish(i, Outcome::kError, now, ek); return;
      case Verdict::kOk: break;
    }
    const std::uint16_t aoff = m->attr_offset.get();
    const std::size_t rec_size = record_size(s.q.kind);
    const std::size_t n = wire::table_record_count(d.payload.size(), aoff);
    if (wire::table_stride(aoff) < rec_size || (n == 0 && !d.payload.empty() && aoff == 0)) {
      finish(i, Outcome::kError, now, ErrorKind::kMalformed);
      return;
    }
    if (s.q.kind != QueryKind::kPathTable && n != 1) {
      // A Get answered through RMPP must still carry exactly one record.
      finish(i, Outcome::kError, now, ErrorKind::kWrongRecord);
      return;
    }
    for (std::size_t r = 0; r < n; ++r) {
      if (const auto bad = check_record(s, *wire::table_record_bytes(d.payload, aoff, r))) {
        finish(i, Outcome::kError, now, *bad);
        return;
      }
    }
    if (n == 0) {  // every host has at least a path to itself and its peers
      finish(i, Outcome::kError, now, ErrorKind::kWrongRecord);
      return;
    }
    result.counters.records += n;
    finish(i, Outcome::kAnswered, now);
  }

  void on_rx(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept {
    const auto& h = buf.hdr();
    if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || !h.is_response() ||
        buf.len < wire::kMadHeaderSize + wire::kRmppHeaderSize) {
      ++result.counters.not_sa;
      return;
    }
    const auto& rm = buf.as<wire::SaMad>().rmpp;
    if (rm.active() && rm.version != 1) {
      // Flagged RMPP but not a segment (umad2sim hands on the first 256
      // bytes of OpenSM's multi-MAD answers like this): a broken answer.
      const std::uint32_t i = match(h.tid.get());
      if (i != kNone) finish(i, Outcome::kError, now, ErrorKind::kMalformed);
      return;
    }
    if (rm.active()) {
      // A segment at another host's port fails its query at once.
      if (const std::uint32_t i = in_flight_slot(h.tid.get()); ports != nullptr && i != kNone && at != slots[i].q.src) {
        finish(i, Outcome::kError, now, ErrorKind::kMisdirected);
        return;
      }
      // Segments of one of our transfers (or of a stale one: the receiver
      // ACKs and delivers it, and the match then counts it as late).
      rmpp.on_mad(buf);
      return;
    }
    on_single(buf, now, at);
  }

  // ---- sources issuing on their own (Workload::per_source) ----
  bool source_has_more(std::uint32_t t) const noexcept {
    return workload.config().repeat || cursor[t] < workload.per_source_total();
  }
  void push_ready(std::uint32_t t) noexcept {
    ready[(ready_head + ready_count++) % ready.size()] = t;
    in_ready[t] = 1;
  }
  // The source at the front of the ring issued a query: it goes to the back
  // while it has room and queries, else leaves the ring until one of its
  // queries finishes.
  void took_from_source(std::uint32_t t) noexcept {
    ++cursor[t];
    ready_head = (ready_head + 1) % static_cast<std::uint32_t>(ready.size());
    --ready_count;
    in_ready[t] = 0;
    const std::uint32_t host = workload.source_host(t);
    if (!source_has_more(t)) --sources_left;
    else if (per_host[host] < per_host_window[host]) push_ready(t);
  }
  void source_may_go(std::uint32_t t) noexcept {
    if (t == kNone || in_ready[t] != 0 || !source_has_more(t)) return;
    const std::uint32_t host = workload.source_host(t);
    if (per_host[host] < per_host_window[host]) push_ready(t);
  }

  // ---- the loop ----
  StormResult run(const std::function<void(Nanos)>& idle, const std::function<void(const Progress&)>& progress,
                  Nanos progress_interval_ns, const std::atomic<bool>& stop_requested) {
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

  struct TxEntry {
    MadBuf* buf = nullptr;
    std::uint32_t slot = kNone;  // kNone: an RMPP ACK from ctl_bufs
    std::uint32_t from = 0;      // the host it leaves from (RequesterPorts)
  };

  StormConfig cfg;
  madengine::Transport& transport;
  const madengine::Clock& clock;
  std::span<const Host> hosts;
  Workload& workload;
  std::vector<Slot> slots;
  const unsigned slot_bits = slot_bits_for(cfg.window_max);
  const std::uint32_t gen_mask = (1u << (32 - slot_bits)) - 1;
  std::vector<std::uint16_t> per_host;
  std::vector<std::uint16_t> per_host_window;
  RequesterPorts* ports = nullptr;  // the transport, when it sends as each host
  PathOracle* oracle = nullptr;
  // Workload::per_source: the ring of sources that may issue (room in their
  // window, queries left), each source's next query, hosts to sources.
  const bool by_source = workload.per_source();
  std::vector<std::uint32_t> ready;
  std::uint32_t ready_head = 0, ready_count = 0;
  std::vector<std::uint8_t> in_ready;
  std::vector<std::uint64_t> cursor;
  std::vector<std::uint32_t> source_of_host;
  std::uint64_t sources_left = 0;
  std::uint32_t pending_source = 0;
  madengine::RmppReceiver rmpp;
  std::uint32_t free_head = kNone;
  std::uint32_t in_flight = 0;
  List inflight_list, backoff_list;
  std::vector<TxEntry> tx_queue;
  std::size_t tx_len = 0;
  std::vector<MadBuf> ctl_bufs;
  std::size_t ctl_next = 0, ctl_count = 0;
  std::vector<MadBuf> rx_bufs;
  std::array<MadBuf*, kRxBurst> rx_ptrs{};
  std::array<std::uint32_t, kRxBurst> rx_at{};
  Nanos timeout_ns = static_cast<Nanos>(cfg.retry.timeout_ms) * madengine::kNanosPerMilli;
  Nanos busy_backoff_ns = static_cast<Nanos>(cfg.retry.busy_backoff_ms) * madengine::kNanosPerMilli;
  std::uint64_t measured_done = 0;
  std::size_t used_buckets = 0;
  StormResult result;
};

Storm::Storm(const StormConfig& cfg, madengine::Transport& transport, const madengine::Clock& clock,
             std::span<const Host> hosts, Workload& workload) {
  if (cfg.window_max == 0 || cfg.window_max > (1u << kSlotBitsMax))
    throw std::invalid_argument("window must be 1.." + std::to_string(1u << kSlotBitsMax));
  if (cfg.window_per_host_max == 0 || cfg.window_per_host_max > 0xffff)
    throw std::invalid_argument("per-host window must be 1..65535");
  if (cfg.retry.timeout_ms == 0) throw std::invalid_argument("timeout must be at least 1 ms");
  if (cfg.sa.lid == 0 || cfg.sa.lid >= 0xc000) throw std::invalid_argument("SA LID " + std::to_string(cfg.sa.lid) + " is not a unicast LID");
  if (!(cfg.rate_qps >= 0) || !std::isfinite(cfg.rate_qps)) throw std::invalid_argument("rate must be >= 0");
  if (cfg.bucket_ns <= 0 || cfg.buckets_max == 0) throw std::invalid_argument("bad time-series bounds");
  if (hosts.empty()) throw std::invalid_argument("no hosts");
  for (const Host& h : hosts)
    if (h.lid == 0 || h.lid >= 0xc000) throw std::invalid_argument("host with LID " + std::to_string(h.lid) + " is not addressable");
  impl_ = std::make_unique<Impl>(cfg, transport, clock, hosts, workload);
}

Storm::~Storm() = default;

void Storm::set_oracle(PathOracle* oracle) noexcept {
  if (impl_) {
    impl_->oracle = oracle;
    impl_->result.oracle = oracle != nullptr;
  }
}

StormResult Storm::run() {
  if (!impl_) throw std::logic_error("Storm::run called twice");
  StormResult r = impl_->run(idle_, progress_, progress_interval_ns_, stop_requested_);
  impl_.reset();
  return r;
}

}  // namespace madstorm
