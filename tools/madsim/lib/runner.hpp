// Runs one scenario: the fabric, the SMs (the whole node assembly: SM, SA,
// HA, journal), the clients and the faults on the simulator's clock, one
// thread, then lets the fabric settle and checks the invariants. The result
// carries every violation (invariant, time, the fault it followed) and the
// trace digest that a replay of the same seed must reproduce.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/scenario.hpp"
#include "lib/trace.hpp"

namespace madsim {

struct RunOptions {
  bool sm_logs = false;   // the SMs' own logs at info (else warnings only)
  std::string work_dir;   // where each SM keeps guid2lid and its journal; empty: a fresh folder under /tmp
  bool keep_work_dir = false;
};

struct Violation {
  std::string invariant;   // e.g. "one-master", "lft-walk"
  Nanos at_ns = 0;
  std::string detail;
  std::string after_event; // the trace entry (the last fault) after which it broke
};

struct RunStats {
  Nanos sim_ns = 0;
  std::uint64_t queries = 0, answered = 0, busy = 0, excused = 0, lost = 0, refused = 0;
  std::uint64_t refused_quiet = 0;  // SA errors no fault or design explains
  std::uint64_t heavy_sweeps = 0, takeovers = 0, kills = 0, restarts = 0;
  std::uint64_t smp_dropped = 0;
  std::uint64_t lft_pairs = 0, paths_checked = 0;
  bool settled = false;
};

struct RunResult {
  std::vector<Violation> violations;
  std::uint64_t digest = 0;
  RunStats stats;
  Trace trace;
  bool ok() const noexcept { return violations.empty(); }
};

RunResult run_scenario(const Scenario& s, const RunOptions& opts = {});

// The single command that replays `s` exactly.
std::string replay_command(const Scenario& s);

}  // namespace madsim
