// PerfManager: the SM's performance manager (IBA 16.1, OpenSM's perfmgr).
// Every interval it reads ClassPortInfo (once per node), PortCounters and,
// where the PMA has them, PortCountersExtended of every linked port of the
// current epoch (switch ports by the switch's LID, CA ports by their own),
// the reads spread evenly over the interval with a bound on MADs in flight,
// so the SA and the SM never see a burst. Each reading gives the port's
// change and rates, clears 32-bit counters near saturation (OpenSM's rule;
// 64-bit ones are never cleared) and reports a port whose errors rise past
// a threshold once. Runs on one engine core as a Poller with its own
// TransactionManager; the table it publishes is read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/dispatch.hpp"
#include "engine/engine.hpp"
#include "engine/poller.hpp"
#include "engine/transaction.hpp"
#include "perfmgr/node_name_map.hpp"
#include "perfmgr/perf_config.hpp"
#include "perfmgr/port_stats.hpp"
#include "sa/snapshot.hpp"

namespace madengine::perfmgr {

// A port whose errors rose past a threshold (logged once; an event).
struct PortAlarm {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint8_t port_num = 0;
  std::uint16_t lid = 0;
  bool is_switch = false;
  std::string name;          // node name map, else NodeDescription
  std::uint32_t counters = 0;  // bit i: Counter kFirstError + i reached its threshold
  CounterSet change{};       // since the previous read
  CounterSet raw{};          // as the port holds them now
  double interval_s = 0;
};

struct PerfMgrCounters {
  std::uint64_t rounds = 0;
  std::uint64_t mads = 0;         // PerfMgt requests submitted (retries are the transaction manager's)
  std::uint64_t cpi_reads = 0;    // ClassPortInfo Gets
  std::uint64_t failed = 0;       // requests that timed out or got an error status
  std::uint64_t port_reads = 0;   // readings completed
  std::uint64_t clears = 0;       // PortCounters Sets (OpenSM's clear rule)
  std::uint64_t alarms = 0;       // threshold reports
  std::uint64_t cpu_ns = 0;       // time on the core spent issuing and handling (steady clock)
  std::uint64_t slice_max_ns = 0; // the longest the manager held its core at once
  std::uint64_t yield_ns = 0;     // time read at a quarter pace for the SA (PerfMgrConfig::sa_busy_qps)
  std::uint64_t last_round_ports = 0;
  double last_round_s = 0;        // engine-clock length of the last round
};

class PerfManager final : public Poller {
 public:
  using AlarmFn = std::function<void(const PortAlarm&)>;
  // Registers its transaction manager (on `port_num`'s life cycle) and
  // itself on `core`; the node routes class 0x04 responses to
  // on_response() on that core (response_hook). Throws on a bad config.
  PerfManager(Engine& engine, std::uint16_t core, std::uint8_t port_num, const sa::SnapshotStore& store,
              PerfMgrConfig cfg, NodeNameMap names, AlarmFn on_alarm);
  ~PerfManager() override;
  PerfManager(const PerfManager&) = delete;
  PerfManager& operator=(const PerfManager&) = delete;

  // The core: a PerfMgt response (true if ours).
  bool on_response(const MadBuf& buf) noexcept;
  std::size_t poll(Nanos now_ns) noexcept override;
  Nanos next_deadline_ns() const noexcept override;

  // Any thread: the table of the last completed round (null before the
  // first) and the counters as the core last copied them.
  std::shared_ptr<const PerfTable> table() const;
  PerfMgrCounters counters() const;
  const NodeNameMap& names() const noexcept { return names_; }
  const PerfMgrConfig& config() const noexcept { return cfg_; }
  std::uint16_t core() const noexcept { return core_; }

  // The core only (SIGHUP, posted there): the settings that can change
  // while the manager runs. The interval counts from the start of the
  // round under way (a shorter one may start the next round as soon as
  // this one ends); the reads left in the round keep their spacing; the
  // thresholds apply from the next reading, the timeout and retries from
  // the next request. The rest of PerfMgrConfig is fixed at construction.
  // sa_busy_qps from the next probe. Every other field of `fresh` is ignored.
  void retune(const PerfMgrConfig& fresh) noexcept;

  // The core only (SIGHUP, posted there): pause or resume. Paused, the
  // manager starts no read (answers to reads in flight are still taken);
  // resumed, its schedule goes on where it stopped, every time in it moved
  // by the pause, so a round's length counts reading time only.
  void set_enabled(bool on) noexcept;

  // The SA's requests received so far (any counter that only grows), read
  // on the core every kLoadProbeNs: the manager yields while it grows faster
  // than sa_busy_qps. Unset: never yields. On the core, or before it runs.
  void set_sa_load(std::function<std::uint64_t()> requests_received);

  // A response hook for the core's chain: class 0x04 responses here, the rest to `next` (may be null).
  std::unique_ptr<MadHandler> response_hook(MadHandler* next);

 private:
  struct Target {  // a port of the round (its names wait in ports_)
    std::uint64_t node_guid = 0;
    std::uint16_t lid = 0;
    std::uint8_t port_num = 0;
    // The reading in progress.
    std::uint8_t waiting = 0;  // responses still due
    bool ext = false, xmit_wait = false, failed = false;
    wire::PortCounters pc{};
    wire::PortCountersExtended pce{};
  };
  enum class CpiState : std::uint8_t { kUnknown, kPending, kKnown };
  struct NodeCpi {
    CpiState state = CpiState::kUnknown;
    std::uint16_t cap = 0;
    std::vector<std::uint32_t> waiting;  // targets waiting for the answer
  };
  struct Request {  // one request's context (the transaction callback's user)
    PerfManager* self = nullptr;
    std::uint32_t target = 0;
    std::uint16_t attr = 0;
    bool clear = false;
    std::uint32_t next_free = 0;
  };
  struct Kept {  // a port between rounds (the core's)
    PortPerf perf;
    std::uint64_t round = 0;  // the last round that listed it
  };
  // A round: its ports listed from the epoch, read at a steady pace, then
  // the table built and published; listing and publishing run in slices of
  // this many nodes or ports, so no poll holds the core for long.
  enum class Phase : std::uint8_t { kIdle, kListing, kReading, kPublishing };
  static constexpr std::size_t kSliceNodes = 128;
  static constexpr std::size_t kSlicePorts = 512;
  static constexpr Nanos kLoadProbeNs = 100'000'000;  // the SA's rate, every 100 ms
  static constexpr Nanos kBusyStretch = 4;             // read spacing while the SA is busy

  static void on_done(void* user, const TxnResult& r) noexcept;
  void done(Request& rq, const TxnResult& r) noexcept;
  bool start_round(Nanos now_ns);
  std::size_t list_slice(Nanos now_ns);
  std::size_t publish_slice(Nanos now_ns);
  std::size_t shed_retired() noexcept;
  void probe_sa(Nanos now_ns) noexcept;
  void issue(std::uint32_t t) noexcept;
  void send_counters(std::uint32_t t) noexcept;
  bool send(std::uint32_t t, std::uint16_t attr, std::uint8_t method, std::uint16_t select, std::uint8_t select2) noexcept;
  void finalize(std::uint32_t t, Nanos now_ns) noexcept;
  void copy_counters() noexcept;

  Engine& engine_;
  std::uint16_t core_;
  std::uint8_t port_num_;
  const sa::SnapshotStore& store_;
  PerfMgrConfig cfg_;
  NodeNameMap names_;
  AlarmFn on_alarm_;
  const Clock& clock_;
  std::unique_ptr<TransactionManager> txn_;
  RequestOptions opts_;

  // The core's.
  std::vector<Target> targets_;
  std::uint32_t next_target_ = 0;
  std::uint32_t open_ = 0;  // requests submitted, not completed
  Phase phase_ = Phase::kIdle;
  std::size_t cursor_ = 0;                         // the node (listing) or target (publishing) next
  std::shared_ptr<const sa::Snapshot> listing_;    // the epoch being listed
  std::shared_ptr<PerfTable> building_, published_, retired_;
  bool paused_ = false;
  Nanos paused_at_ns_ = 0;
  Nanos last_copy_ns_ = 0;
  std::function<std::uint64_t()> sa_load_;
  Nanos probe_ns_ = -1;
  std::uint64_t probe_count_ = 0;
  bool sa_busy_ = false;
  std::uint64_t round_epoch_ = 0;
  Nanos round_start_ns_ = 0, next_issue_ns_ = 0, spacing_ns_ = 0, next_round_ns_ = 0;
  std::unordered_map<std::uint64_t, NodeCpi> cpi_;
  std::unordered_map<std::uint64_t, Kept> ports_;  // node GUID << 8 | port
  std::unordered_map<std::uint64_t, Kept>::iterator forget_;  // publishing: the next port to keep or forget
  std::vector<Request> requests_;
  std::uint32_t free_request_ = 0;
  PerfMgrCounters counters_;

  mutable std::mutex mu_;
  std::shared_ptr<const PerfTable> table_;  // guarded by mu_
  PerfMgrCounters shared_counters_;         // guarded by mu_
};

}  // namespace madengine::perfmgr
