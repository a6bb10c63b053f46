// The world one scenario runs in (private to the runner): the simulated
// fabric, one node (SM + SA + HA + journal) per SM slot, the clients, the
// fault schedule and what the checks remember (LIDs at the first
// publication, deaths of masters, disturbed intervals).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/clients.hpp"
#include "lib/runner.hpp"
#include "node/fault_points.hpp"
#include "node/control.hpp"
#include "sim/fabric.hpp"
#include "sim/faults/smp_loss.hpp"

namespace madsim {

// How long two masters may share a fabric (two subnets joined, a handover
// under way) before it is a violation: a heavy sweep plus the HA polling budget.
inline constexpr Nanos kDualMasterMaxNs = 6 * madengine::kNanosPerSecond;
// After a fault, clients' queries may go unanswered this long.
inline constexpr Nanos kDisturbanceTailNs = 3 * madengine::kNanosPerSecond;
// A registration acknowledged this shortly before its master died may be
// missing from the next master's replica or journal.
inline constexpr Nanos kAtRiskNs = 1500 * madengine::kNanosPerMilli;
// After the scenario: how long the fabric may take to settle, and how long
// the master must stay unchanged to count as settled.
inline constexpr Nanos kSettleMaxNs = 40 * madengine::kNanosPerSecond;
inline constexpr Nanos kSettledForNs = 2 * madengine::kNanosPerSecond;
inline constexpr Nanos kSampleNs = 10 * madengine::kNanosPerMilli;  // continuous checks
inline constexpr Nanos kStepNs = madengine::kNanosPerMilli;          // clock step when nothing is due

class World {
 public:
  World(const Scenario& s, const RunOptions& o, RunResult& out);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  void run();

 private:
  struct Slot {
    unsigned index = 0;
    std::uint32_t node = 0;
    std::uint8_t priority = 0;
    std::string dir;
    std::unique_ptr<madengine::node::ControlledNode> n;
    bool crash_pending = false;
    Nanos restart_at = -1;
    Nanos journal_written_ns = -1;  // sim time of its last complete journal write
    unsigned starts = 0;
    madengine::wire::SmState state = madengine::wire::SmState::kNotActive;
  };

  Nanos now() const noexcept { return fabric_.now_ns(); }
  void start_sm(Slot& slot);
  void kill_sm(Slot& slot, const std::string& why, bool restart, Nanos back_after_ns);
  bool alive(const Slot& slot) const noexcept;
  std::size_t step();
  void apply_timed_faults();
  void on_phase(unsigned slot, madengine::node::SmPhase p);
  void on_transition(unsigned slot, madengine::wire::SmState from, madengine::wire::SmState to);
  bool on_durable(const std::string& path, madengine::DurableStep step);
  void sample();
  void fault(const std::string& text);
  void disturb(Nanos from_ns, Nanos until_ns);
  // A fault under way until `until_ns` (a link back up, the last of an SMA's
  // resets, an SM restarted): the fabric is not quiet before.
  void fault_until(Nanos until_ns) noexcept { faults_over_ns_ = std::max(faults_over_ns_, until_ns); }
  bool excused(Nanos from_ns, Nanos until_ns) const noexcept;
  bool at_risk(Nanos acked_ns) const noexcept;
  // Node -> component id over links that are up (dead nodes: their own).
  std::vector<std::uint32_t> components() const;
  // Whether the master of `node`'s subnet has published its (ACTIVE) port.
  bool published_by_master(const std::vector<std::uint32_t>& comp, std::uint32_t node) const;
  bool settled();

  // Invariants (checks.cpp).
  void violate(const std::string& invariant, const std::string& detail);
  void check_all();
  void check_component(const std::vector<std::uint32_t>& comp_of, std::uint32_t comp, Slot& master);
  void check_ports(const std::vector<std::uint32_t>& nodes);
  void check_lids_kept(const std::vector<std::uint32_t>& nodes);
  void check_lft_walk(const std::vector<std::uint32_t>& nodes);
  void check_paths(const std::vector<std::uint32_t>& nodes, const std::vector<std::uint32_t>& comp_of, std::uint32_t comp,
                   Slot& master);
  void check_sa_state(Slot& master, const std::vector<std::uint32_t>& comp_of, std::uint32_t comp);
  void check_queries();
  void check_partitions(const std::vector<std::uint32_t>& nodes);
  void check_m_keys(const std::vector<std::uint32_t>& nodes, const Slot& master);
  void check_channel_dependencies(const std::vector<std::uint32_t>& nodes, Slot& master);
  void write_partitions(const std::vector<PartitionDraw>& parts);
  void take_baseline(Slot& master);

  const Scenario& s_;
  RunOptions o_;
  RunResult& r_;
  madengine::sim::Fabric fabric_;
  madengine::sim::SmpLoss loss_;
  std::vector<Slot> sms_;
  std::unique_ptr<Clients> clients_;
  std::vector<bool> fired_;        // by fault
  std::vector<bool> touched_;      // by node: reset, killed or cabled anew (its LIDs may change)
  std::unordered_map<std::uint64_t, std::uint16_t> baseline_;  // port GUID -> LID at the first publication
  bool baseline_taken_ = false;
  std::vector<std::pair<Nanos, Nanos>> disturbed_;
  std::vector<Nanos> master_deaths_;
  Nanos dual_since_ = -1;
  bool dual_reported_ = false;
  Nanos next_sample_ = 0;
  std::uint64_t settle_print_ = 0;  // masters' sweep and epoch counts, last seen
  Nanos settle_since_ = 0;
  Nanos faults_over_ns_ = 0;        // every fault fired so far has ended by then
  bool joined_ = false;
  bool checking_ = false;  // after the scenario: the settle and the checks
  bool inspecting_ = false;  // the checks: phase-triggered faults no longer fire
  const std::vector<PartitionDraw>* partitions_ = nullptr;  // in force
  std::string partitions_file_;  // "" without partitions
  madengine::DurableWriteObserver observer_;
  std::string dir_;
  bool own_dir_ = false;
};

}  // namespace madsim
