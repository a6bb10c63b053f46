// One storm from start to report, on any Transport: hosts (file or SA),
// workload, Storm, summary on stdout, optional SVG; returns the JSON. The
// CLI's umad target uses it, and so can the daemon's embedded (sim) target.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/hosts.hpp"
#include "lib/report.hpp"
#include "lib/storm.hpp"

namespace madstorm {

struct RunRequest {
  RunInfo info;                  // label, transport name, storm and workload configuration (sa.lid set)
  std::string hosts_file;        // empty: ask the SA
  std::string save_hosts;        // non-empty: write the hosts found, in hosts_file's format
  DiscoverOptions discover{};
  std::string plot_path;         // empty: no SVG
  bool progress = false;         // live progress line on stdout (callers check isatty)
  std::FILE* out = stdout;       // the summary table
};

// Throws std::invalid_argument / std::runtime_error on bad configuration or
// unreadable files; nullopt with `error` when the SA cannot be used.
// `on_storm` (if set) sees the Storm before it runs (for request_stop()).
std::optional<nlohmann::json> run_storm(const RunRequest& req, madengine::Transport& transport,
                                        const madengine::Clock& clock, const std::function<void(Nanos)>& idle,
                                        std::string& error, const std::function<void(Storm*)>& on_storm = {});

}  // namespace madstorm
