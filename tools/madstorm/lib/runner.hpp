// One storm from start to report, on any Transport: hosts (given, a file or
// the SA), workload, Storm (with an oracle when given), a common start time,
// summary on stdout, optional SVG and HTML; returns the JSON and the figures.
// The CLI's umad, verbs and embedded targets all use it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/hosts.hpp"
#include "lib/path_oracle.hpp"
#include "lib/report.hpp"
#include "lib/storm.hpp"

namespace madstorm {

struct RunRequest {
  RunInfo info;                  // label, transport name, storm and workload configuration (sa.lid set), wall info
  std::vector<Host> hosts;       // non-empty: these hosts (e.g. from the fabric), no discovery
  std::string hosts_file;        // else, non-empty: read them from this file; else ask the SA
  std::string save_hosts;        // non-empty: write the hosts found, in hosts_file's format
  DiscoverOptions discover{};
  PathOracle* oracle = nullptr;  // checks every PathRecord answer (not owned)
  std::int64_t start_at_unix_ns = 0;  // non-zero: the storm starts at this wall-clock instant
  std::string plot_path;         // empty: no SVG
  std::string html_path;         // empty: no HTML
  bool progress = false;         // live progress line on stdout (callers check isatty)
  std::FILE* out = stdout;       // the summary table
};

struct RunOutput {
  nlohmann::json json;
  StormResult result;
  std::uint64_t planned = 0;  // queries the pattern plans (0: unbounded or repeating)
};

// Throws std::invalid_argument / std::runtime_error on bad configuration or
// unreadable files; nullopt with `error` when the SA cannot be used.
// `on_storm` (if set) sees the Storm before it runs (for request_stop()).
std::optional<RunOutput> run_storm(const RunRequest& req, madengine::Transport& transport,
                                   const madengine::Clock& clock, const std::function<void(Nanos)>& idle,
                                   std::string& error, const std::function<void(Storm*)>& on_storm = {});

// CLOCK_REALTIME in nanoseconds since the epoch.
std::int64_t wall_now_ns() noexcept;
// Sleeps until the wall clock reaches `unix_ns` (at once if it has); returns
// how late the start was, in ns (>= 0).
std::int64_t sleep_until_wall(std::int64_t unix_ns) noexcept;

}  // namespace madstorm
