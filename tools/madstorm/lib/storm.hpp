// The storm engine: issues a Workload's queries to one SA through any
// Transport (umad on a fabric or ibsim, verbs, the sim in process), open loop
// on a schedule or closed loop, with per-host and total windows, fixed
// timeouts with retries and BUSY back-off, and checks every answer (and each
// PathRecord against a PathOracle when one is set). A transport that is also
// RequesterPorts sends each query from its host's own port. Single-threaded;
// all tables are sized at construction, nothing allocates while it runs.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "lib/histogram.hpp"
#include "lib/path_oracle.hpp"
#include "lib/workload.hpp"
#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/engine/transport.hpp"

namespace madstorm {

using madengine::Nanos;

// The high 32 bits of every TID the storm sends ("mstm", for captures). The
// kernel and umad2sim replace them; the sim keeps them and uses them to give
// answers to the storm's endpoint on a port it shares (sim::Fabric::attach_ports).
inline constexpr std::uint32_t kStormTidTag = 0x6d73746d;

// How a client waits for an answer, as the kernel's SA client and ibacm do:
// a fixed timeout and N re-sends with the same TID; a BUSY answer waits
// busy_backoff_ms and asks again (a new TID), at most busy_retries times.
struct RetryPolicy {
  std::uint32_t timeout_ms = 1000;
  std::uint8_t retries = 3;
  std::uint32_t busy_backoff_ms = 100;
  std::uint8_t busy_retries = 3;
};

// Where the SA is and how to address it.
struct SaTarget {
  std::uint16_t lid = 0;
  std::uint8_t sl = 0;
  std::uint16_t pkey_index = 0;
  std::uint64_t subnet_prefix = madengine::wire::kDefaultSubnetPrefix;
  madengine::wire::Gid mgid{};  // multicast group for joins (default: IPoIB broadcast, P_Key 0xffff)
};

struct StormConfig {
  SaTarget sa{};
  bool by_gid = false;                 // PathRecords name hosts by SGID/DGID instead of SLID/DLID
  std::uint32_t window_max = 64;       // queries in flight in all
  std::uint32_t window_per_host_max = 4;  // in flight per emulated requester (SGID/SLID)
  // (host index, window): hosts that keep more (or fewer) queries in flight
  // than window_per_host_max, e.g. one greedy client among polite ones.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> window_overrides;
  double rate_qps = 0;                 // open loop at this rate; 0 = closed loop
  std::uint64_t queries_max = 0;       // measured queries to issue (0 = the workload's total or the duration)
  std::uint32_t duration_ms = 0;       // measured time (0 = until queries_max or the workload ends)
  std::uint32_t warmup_ms = 0;         // queries scheduled before this are issued but not counted
  RetryPolicy retry{};
  Nanos bucket_ns = 100 * madengine::kNanosPerMilli;  // time-series resolution
  std::uint32_t buckets_max = 36'000;  // time-series length (one hour at 100 ms)
  // Multi-MAD answers: segments per transfer (220 bytes each; 512 hold a
  // table of 1,760 PathRecords) and transfers at once (0: twice the window, at most 512).
  std::uint32_t rmpp_segments_max = 512;
  std::uint32_t rmpp_transfers_max = 0;
};

// Why an answer was counted as an error.
enum class ErrorKind : std::uint8_t {
  kBadStatus,    // non-zero MAD/SA status other than BUSY
  kWrongMethod,  // not the response method of the request
  kWrongAttr,    // not the attribute asked for
  kWrongRecord,  // decoded, but the record does not answer the query
  kMalformed,    // bad versions, short record, bad attribute offset
  kRmppAborted,  // a multi-MAD answer that did not complete
  kWrongPath,    // a PathRecord the fabric itself contradicts (the PathOracle)
  kMisdirected,  // the answer reached another host's port than the requester's
};
inline constexpr std::size_t kErrorKindCount = 8;
const char* to_string(ErrorKind k) noexcept;

struct StormCounters {
  // Every measured query ends in exactly one of answered, busy, timeouts, errors.
  std::uint64_t issued = 0;
  std::uint64_t answered = 0;
  std::uint64_t busy = 0;        // still BUSY after busy_retries
  std::uint64_t timeouts = 0;    // no answer after retries
  std::uint64_t errors = 0;
  std::array<std::uint64_t, kErrorKindCount> error_by{};
  std::array<std::uint64_t, kQueryKindCount> issued_by{};
  std::array<std::uint64_t, kQueryKindCount> answered_by{};
  // Events, not outcomes.
  std::uint64_t sent = 0;             // transmissions handed to the transport queue (re-sends included)
  std::uint64_t resent = 0;           // timeout re-sends
  std::uint64_t busy_answers = 0;     // BUSY answers seen (each re-asked or final)
  std::uint64_t unmatched = 0;        // answers whose TID matches no query of ours
  std::uint64_t late = 0;             // answers to a query already finished (duplicate or after its timeout)
  std::uint64_t not_sa = 0;           // received MADs that are not SA responses
  std::uint64_t records = 0;          // records received in GetTable answers
  std::uint64_t rmpp_transfers = 0;   // multi-MAD answers reassembled
  std::uint64_t warmup_issued = 0;    // issued during warm-up, not counted above
  std::uint64_t tx_stalls = 0;        // tx bursts that took fewer MADs than offered
  std::uint64_t tx_dropped = 0;       // attempts not sent: the tx queue was full (they time out or re-send)
  std::uint64_t device_lost = 0;      // the transport reported the port or device lost
  // The PathOracle's share: PathRecords it checked (table records included),
  // why it refused some, and the hop counts of the walks that reached.
  std::uint64_t oracle_checked = 0;
  std::uint64_t oracle_ns = 0;  // wall time spent in the oracle's checks (in-process runs pay it on the SA's thread)
  std::array<std::uint64_t, kPathVerdictCount> oracle_wrong_by{};
  std::array<std::uint64_t, kPathHopsMax + 1> oracle_hops{};
};

// One time-series bucket (bucket_ns wide, from the measurement start).
struct SeriesBucket {
  std::uint32_t issued = 0;
  std::uint32_t answered = 0;
  std::uint32_t failed = 0;  // busy + timeouts + errors completed in the bucket
  std::uint32_t latency_max_us = 0;  // worst latency of the answers completed in the bucket: when a stall happened
};

struct StormResult {
  StormCounters counters;
  LatencyHistogram latency;       // answered queries: answer time - scheduled time (open loop) or first send
  LatencyHistogram schedule_lag;  // open loop: first send - scheduled time
  Nanos measure_start_ns = 0;     // after warm-up
  Nanos first_issue_ns = 0;       // first measured query's send
  Nanos last_issue_ns = 0;        // last measured query's send
  Nanos end_ns = 0;               // when the last measured query finished
  Nanos bucket_ns = 0;
  std::vector<SeriesBucket> series;
  double cpu_user_s = 0, cpu_sys_s = 0;  // this process, during run()
  std::uint64_t hosts = 0;
  std::uint32_t window_peak = 0;
  bool per_host_ports = false;    // each query left from its host's own port (RequesterPorts)
  bool oracle = false;            // PathRecords were checked against the fabric
  std::vector<std::uint32_t> busy_answers_by_host;  // BUSY answers each host's queries drew
  bool stopped_early = false;     // request_stop() or the device was lost: fewer queries than planned
  bool counts_add_up() const noexcept {
    const auto& c = counters;
    return c.issued == c.answered + c.busy + c.timeouts + c.errors;
  }
  double elapsed_s() const noexcept;       // first issue to last completion
  double throughput_qps() const noexcept;  // answered / elapsed
  // Answered / (elapsed - the oracle's checks): the SA's own rate when the
  // checks run in the same process (--embedded), the oracle's cost apart.
  double throughput_without_oracle_qps() const noexcept;
  double issue_rate_qps() const noexcept;  // measured issues / (last - first issue)
};

// Live figures for a progress line, passed about once a second.
struct Progress {
  Nanos now_ns = 0;
  Nanos since_start_ns = 0;
  std::uint64_t issued = 0, answered = 0, failed = 0;
  std::uint32_t in_flight = 0;
  double rate_qps = 0;        // answers per second over the last interval
  double eta_s = -1;          // -1 when unknown
};

class Storm {
 public:
  // `hosts` and `workload` must outlive the storm; the transport must be
  // open (gsi_client). Throws std::invalid_argument on bad bounds.
  Storm(const StormConfig& cfg, madengine::Transport& transport, const madengine::Clock& clock,
        std::span<const Host> hosts, Workload& workload);
  ~Storm();
  Storm(const Storm&) = delete;
  Storm& operator=(const Storm&) = delete;

  // How to pass idle time when nothing is due before `deadline_ns` (poll a
  // umad fd, step a simulator). Default: return at once (busy polling).
  void set_idle(std::function<void(Nanos deadline_ns)> idle) { idle_ = std::move(idle); }
  // Checks every PathRecord answer against `oracle` (not owned; must outlive run()).
  void set_oracle(PathOracle* oracle) noexcept;
  void set_progress(std::function<void(const Progress&)> cb, Nanos interval_ns = madengine::kNanosPerSecond) {
    progress_ = std::move(cb);
    progress_interval_ns_ = interval_ns;
  }
  // Stops issuing at the next loop turn (signal handler: set a flag, call this).
  void request_stop() noexcept { stop_requested_.store(true, std::memory_order_relaxed); }

  // Runs the storm to its end: every issued query answered or failed.
  StormResult run();

  // The per-query request, for tests and tools that want to see it.
  static void build_request(const StormConfig& cfg, std::span<const Host> hosts, const Query& q,
                            madengine::MadBuf& out) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::function<void(Nanos)> idle_;
  std::function<void(const Progress&)> progress_;
  Nanos progress_interval_ns_ = madengine::kNanosPerSecond;
  std::atomic<bool> stop_requested_{false};  // set from a signal handler or another thread
};

}  // namespace madstorm
