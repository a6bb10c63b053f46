// Storm's private parts (Storm::Impl and the TID and request shorthands),
// shared by the files that hold its roles: storm.cpp (set-up, requests),
// storm_inflight.cpp, storm_answers.cpp and storm_loop.cpp.
#pragma once

#include <sys/time.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/rmpp.hpp"
#include "engine/tx_sink.hpp"
#include "lib/requester_ports.hpp"
#include "madengine/wire/sa/inform_info.hpp"
#include "lib/storm.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/mc_member_record.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"

namespace madstorm {

namespace wire = madengine::wire;
using madengine::MadBuf;

// TID low 32 bits: slot in bits 0-19, generation in bits 20-31. The high 32
// bits belong to the transport (ib_umad and ibsim replace them).
// The low 32 bits of a TID (the only ones that come back: the kernel and
// umad2sim own the high half) are a generation above the slot index. The slot
// field is only as wide as the window needs, so a slot's TIDs repeat only
// after 2^(32 - slot bits) queries: an SA keeps answers for retried TIDs
// (madengine 2 s, SaServerConfig::dedup_ttl_ns) and would take a new query
// that reuses a recent TID for a retry of the old one.
inline constexpr unsigned kSlotBitsMax = 20;
constexpr unsigned slot_bits_for(std::uint32_t window) noexcept {
  unsigned b = 1;
  while (b < kSlotBitsMax && (1u << b) < window) ++b;
  return b;
}
inline constexpr std::uint64_t kTidHigh = std::uint64_t{kStormTidTag} << 32;
inline constexpr std::size_t kRxBurst = 32;
inline constexpr std::size_t kCtlQueueMax = 256;  // RMPP ACKs waiting for the transport
inline constexpr Nanos kTxStallBackoffNs = 50 * madengine::kNanosPerMicro;
// Bound on one idle wait when nothing is due sooner. Well above a
// millisecond: an idle callback that can only block in whole milliseconds
// (poll() on the umad fd) would otherwise always see less than one left and
// fall back to short naps, spinning while it waits for an answer.
inline constexpr Nanos kIdleWaitMaxNs = 10 * madengine::kNanosPerMilli;

// The Q_Key IPoIB gives the groups it creates (OpenSM's default for the
// broadcast group; Linux IPoIB copies the broadcast group's).
inline constexpr std::uint32_t kIpoibQkey = 0x0b1b;

// IPoIB broadcast group of the default partition (RFC 4391): ff12:401b:ffff::ffff:ffff.
inline wire::Gid ipoib_broadcast_mgid() noexcept {
  wire::Gid g{};
  g.prefix = wire::be64::from(0xff12401bffff0000ull);
  g.guid = wire::be64::from(0x00000000ffffffffull);
  return g;
}

// Group `group` (kReregGroups) of the host with port GUID `guid`: the
// broadcast group, IPv4 all-hosts ff12:401b:ffff::1, IPv6 all-nodes
// ff12:601b:ffff::1 and the solicited-node group ff12:601b:ffff::1:ffXX:XXXX
// of the host's low 24 GUID bits (RFC 4391, RFC 4291).
inline wire::Gid ipoib_group_mgid(std::uint8_t group, std::uint64_t guid) noexcept {
  wire::Gid g{};
  switch (group) {
    case 0: return ipoib_broadcast_mgid();
    case 1:
      g.prefix = wire::be64::from(0xff12401bffff0000ull);
      g.guid = wire::be64::from(1);
      return g;
    case 2:
      g.prefix = wire::be64::from(0xff12601bffff0000ull);
      g.guid = wire::be64::from(1);
      return g;
    default:
      g.prefix = wire::be64::from(0xff12601bffff0000ull);
      g.guid = wire::be64::from(0x00000001ff000000ull | (guid & 0xffffff));
      return g;
  }
}

inline wire::Gid gid_of(std::uint64_t prefix, std::uint64_t guid) noexcept {
  wire::Gid g{};
  g.prefix = wire::be64::from(prefix);
  g.guid = wire::be64::from(guid);
  return g;
}

inline std::uint8_t method_of(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kPathTable: return wire::method::kGetTable;
    case QueryKind::kMcJoin: return wire::method::kSet;
    case QueryKind::kMcLeave: return wire::method::kDelete;
    case QueryKind::kInformSub: return wire::method::kSet;
    default: return wire::method::kGet;
  }
}

inline std::uint16_t attr_of(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kNodeRecord: return wire::sa_attr::kNodeRecord;
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: return wire::sa_attr::kMcMemberRecord;
    case QueryKind::kInformSub: return wire::sa_attr::kInformInfo;
    default: return wire::sa_attr::kPathRecord;
  }
}

// The response method for a request method (IBA 15.4: Set answers with GetResp).
inline std::uint8_t response_method_of(std::uint8_t m) noexcept {
  return m == wire::method::kSet ? wire::method::kGetResp : static_cast<std::uint8_t>(m | wire::method::kResponse);
}

inline std::size_t record_size(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kNodeRecord: return sizeof(wire::NodeRecord);
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: return sizeof(wire::McMemberRecord);
    case QueryKind::kInformSub: return sizeof(wire::InformInfo);
    default: return sizeof(wire::PathRecord);
  }
}

inline double cpu_seconds(const timeval& tv) noexcept {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
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
  enum class Outcome : std::uint8_t { kAnswered, kBusy, kTimeout, kError };
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

  // ---- set-up (storm.cpp) ----
  Impl(const StormConfig& c, madengine::Transport& t, const madengine::Clock& clk, std::span<const Host> h,
       Workload& w);
  static madengine::RmppConfig rmpp_config(const StormConfig& c);
  // TxSink for the RMPP receiver's ACKs: copied into a small ring.
  bool send(const MadBuf& buf) noexcept override;

  // ---- the in-flight table: lists, sending, completion, sources (storm_inflight.cpp) ----
  List& list_of(ListId id) noexcept { return id == ListId::kInFlight ? inflight_list : backoff_list; }
  void unlink(std::uint32_t i) noexcept;
  // Every entry of a list has the same delay, so appending keeps it sorted by due time.
  void append(std::uint32_t i, ListId id) noexcept;
  void transmit(std::uint32_t i, Nanos now) noexcept;
  void flush_tx() noexcept;
  std::size_t bucket_of(Nanos t) const noexcept {
    const Nanos rel = t - result.measure_start_ns;
    if (rel <= 0) return 0;
    return std::min<std::size_t>(static_cast<std::size_t>(rel / cfg.bucket_ns), cfg.buckets_max - 1);
  }
  void finish(std::uint32_t i, Outcome o, Nanos now, ErrorKind ek = ErrorKind::kMalformed) noexcept;
  // A TID back to its slot: kNone for an answer that matches nothing in flight.
  std::uint32_t match(std::uint64_t tid) noexcept;
  // The slot a TID names if that query is in flight; counts nothing.
  std::uint32_t in_flight_slot(std::uint64_t tid) const noexcept {
    const auto low = static_cast<std::uint32_t>(tid);
    const std::uint32_t i = low & ((1u << slot_bits) - 1);
    return i < slots.size() && slots[i].state == State::kInFlight && slots[i].gen == low >> slot_bits ? i : kNone;
  }
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
  void took_from_source(std::uint32_t t) noexcept;
  void source_may_go(std::uint32_t t) noexcept {
    if (t == kNone || in_ready[t] != 0 || !source_has_more(t)) return;
    const std::uint32_t host = workload.source_host(t);
    if (per_host[host] < per_host_window[host]) push_ready(t);
  }

  // ---- answers and their checks (storm_answers.cpp) ----
  bool gid_is(const wire::Gid& g, std::uint64_t guid) const noexcept {
    return g.prefix.get() == cfg.sa.subnet_prefix && g.guid.get() == guid;
  }
  // The oracle's view of a PathRecord that names the right ends.
  bool path_ok(const wire::PathRecord& pr) noexcept;
  // Checks one record against the query it answers: nullopt when right.
  std::optional<ErrorKind> check_record(const Slot& s, std::span<const std::uint8_t> rec) noexcept;
  // The header checks shared by single answers and reassembled tables.
  Verdict check_header(const Slot& s, const wire::SaMad& m, ErrorKind& ek) const noexcept;
  void on_busy(std::uint32_t i, Nanos now) noexcept;
  void on_single(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept;
  static void on_rmpp_done(void* user, const madengine::RmppRecvDone& d) noexcept {
    static_cast<Impl*>(user)->rmpp_done(d);
  }
  void rmpp_done(const madengine::RmppRecvDone& d) noexcept;
  void on_rx(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept;

  // ---- the issue/receive loop (storm_loop.cpp) ----
  // Where one run stands: its schedule, the query drawn but not yet issued,
  // and when progress and device events are next due.
  struct RunState {
    Nanos start = 0;
    Nanos measure_end = 0;  // 0: the run ends with the workload, not a duration
    bool open_loop = false;
    double period_ns = 0;   // open loop: between two scheduled queries
    std::uint64_t issued_all = 0;  // warm-up included: the schedule's count
    Query pending{};
    bool have_pending = false, exhausted = false;
    Nanos next_due = -1;    // the next scheduled query the schedule held back (-1: none)
    Nanos next_progress = 0;
    Nanos next_events_ns = 0;
    std::uint64_t last_prog_answered = 0;
    Nanos last_prog_ns = 0;
  };
  StormResult run(const std::function<void(Nanos)>& idle, const std::function<void(const Progress&)>& progress,
                  Nanos progress_interval_ns, const std::atomic<bool>& stop_requested);
  // Answers in bursts, then the RMPP receiver's timers.
  std::size_t receive(Nanos now);
  // Timeouts re-sent (same TID) or given up, BUSY back-offs asked again (new TID).
  std::size_t expire(Nanos now);
  // New queries, as the schedule and the windows allow.
  std::size_t issue(RunState& r, Nanos now, const std::atomic<bool>& stop_requested);
  // The query drawn into a free slot and sent (its schedule time `sched`).
  void issue_one(RunState& r, Nanos sched, Nanos now);
  void report_progress(RunState& r, Nanos now, Nanos progress_interval_ns,
                       const std::function<void(const Progress&)>& progress);
  // A lost device ends the issuing; what is in flight runs out its timers.
  void watch_device(RunState& r, Nanos now);
  // Nothing to do (or the transport full): the caller's idle until the next deadline.
  void wait_idle(const RunState& r, Nanos now, const std::function<void(Nanos)>& idle);
};

}  // namespace madstorm
