// madstorm's command line: every option, how they are registered with CLI11,
// and what is derived from them after parsing (pattern, mix, shard, from the
// launcher's environment when --shard is not given, the common start time,
// per-host windows, the planted fault). Kept out of main() so it is tested.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/planted_fault.hpp"
#include "lib/storm.hpp"
#include "lib/workload.hpp"

namespace madstorm {

enum class TransportKind : std::uint8_t { kUmad, kVerbs };

struct Options {
  std::string transport = "umad";  // umad | verbs (--embedded ignores it)
  TransportKind transport_kind = TransportKind::kUmad;
  std::string ca;                  // umad: HCA name; verbs: device name
  int port = 0;                    // HCA port (0: the first / port 1 for verbs)
  int sa_lid = 0, sa_lid2 = 0;
  int sl = 0;
  std::string pattern = "job-start";
  bool by_gid = false;
  std::string hosts_file;
  std::string save_hosts;
  std::string mix = "pr:8,nr:1";
  std::string shard;               // i/n; empty: from the launcher's environment, else 0/1
  std::string shard_source;        // where the shard came from (reports)
  std::vector<std::string> host_windows;  // IDX:N
  StormConfig storm{};
  WorkloadConfig workload{};
  std::string json_path, plot_path, html_path, label;
  bool compare = false;
  std::string between_cmd;
  bool pause = false;
  std::string label2 = "B";
  std::vector<std::string> compare_files;
  bool no_progress = false;
  unsigned retries = 3, busy_retries = 3;
  std::string start_at;            // --start-at as given
  std::int64_t start_at_unix_ns = 0;
  bool strict = false;
  std::string embedded;            // a sim fabric spec: run madengine SM+SA in this process
  unsigned embedded_cores = 1;
  unsigned embedded_sa_share = 0;  // 0: the daemon's default requester share
  std::string embedded_metrics;    // HOST:PORT: the embedded madengine serves its metrics there
  bool no_oracle = false;
  std::string plant;               // FIELD[:N]
  PlantedFault plant_fault = PlantedFault::kNone;
  std::uint64_t plant_nth = 1;
  std::string discover = "auto";
  bool mads_cut_short = false;     // the umad port is ibsim's umad2sim (see DiscoverOptions)
};

// Registers the storm's options (everything but the merge subcommand).
void add_options(CLI::App& app, Options& o);

// Reads an environment variable (nullptr when unset); std::getenv in main().
using EnvLookup = std::function<const char*(const char*)>;

// Derives the configuration from the parsed strings. `now_unix_ns` anchors
// a relative --start-at. Throws std::invalid_argument with a message naming
// the option on anything malformed.
void finish_options(Options& o, const EnvLookup& env, std::int64_t now_unix_ns);

struct Shard {
  std::uint32_t index = 0, count = 1;
  std::string source;  // "--shard", "SLURM_PROCID/SLURM_NTASKS", "PMI_RANK/PMI_SIZE", ...
};
// "i/n" with i < n; nullopt otherwise.
std::optional<Shard> parse_shard(std::string_view s);
// The share of a process a launcher started: SLURM_PROCID/SLURM_NTASKS,
// PMI_RANK/PMI_SIZE, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, first found.
// nullopt when none is set; throws std::invalid_argument when one is set but
// malformed (rank not below size).
std::optional<Shard> shard_from_env(const EnvLookup& env);

// A wall-clock instant, in ns since the epoch: "2026-12-01T10:00:00[.25][Z|+01:00]"
// (ISO 8601), "@1764583200[.5]" (Unix seconds) or "+30[.5]" (seconds from
// `now_unix_ns`). nullopt on anything else.
std::optional<std::int64_t> parse_start_at(std::string_view s, std::int64_t now_unix_ns);

}  // namespace madstorm
