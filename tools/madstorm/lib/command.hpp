// What madstorm's two executables share once the command line is parsed:
// madstorm (a client on umad or verbs) and madstorm-embedded (--embedded:
// madengine in process). The run request from the options, one reported
// storm, the JSON file and the exit status.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/options.hpp"
#include "lib/runner.hpp"
#include "madengine/engine/clock.hpp"
#include "madengine/engine/transport.hpp"

namespace madstorm {

// The options' storm, workload, hosts and discovery, aimed at `sa_lid`.
RunRequest base_request(const Options& o, const madengine::Transport& t, std::uint16_t sa_lid, const std::string& label);

// One storm (run_storm); an error goes to stderr. While it runs,
// stop_running_storm() ends it early (SIGINT, SIGTERM).
std::optional<RunOutput> run_reported(const RunRequest& req, madengine::Transport& t, const madengine::Clock& clock,
                                      const std::function<void(Nanos)>& idle);
// Async-signal-safe: only stores to an atomic.
void stop_running_storm() noexcept;

// Nothing when `path` is empty; throws std::runtime_error when it cannot be written.
void write_json(const std::string& path, const nlohmann::json& j);

// Exit status: 3 on wrong answers; with --strict, 4 on anything else not as
// planned (each problem on stderr, one line each).
int verdict(const Options& o, const std::vector<const RunOutput*>& runs, std::vector<std::string> problems);

}  // namespace madstorm
