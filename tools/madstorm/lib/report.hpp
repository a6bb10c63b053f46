// What madstorm tells its user: the summary table, the JSON document
// (schema "madstorm/2"), the SVG plot (latency histogram and throughput over
// time, drawn by hand), the HTML report, the side-by-side ratios of two runs
// and the strict verdict.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/storm.hpp"
#include "lib/workload.hpp"

namespace madstorm {

// Where and when a run happened, for merging runs of several hosts.
struct WallInfo {
  std::int64_t start_unix_ns = 0;     // the measurement's start, wall clock (CLOCK_REALTIME)
  std::int64_t start_at_unix_ns = 0;  // the common start asked for (--start-at), 0 if none
  std::string host;                   // host name
  std::string shard_source;           // where the shard came from: "--shard", "SLURM_PROCID/SLURM_NTASKS", ...
};

struct RunInfo {
  std::string label;      // e.g. "opensm", "madengine"
  std::string transport;  // "umad", "sim", "sim-hosts", "verbs-ud"
  StormConfig storm{};
  WorkloadConfig workload{};
  WallInfo wall{};
};

// Every figure of a run (schema madstorm/2: the madstorm/1 fields plus the
// histograms bucket by bucket, the oracle, BUSY by host and the wall clock,
// so that runs of several hosts can be merged); parse_run() reads it back.
nlohmann::json to_json(const RunInfo& info, const StormResult& r);
void print_summary(std::FILE* out, const RunInfo& info, const StormResult& r);
// The SVG (latency histogram, throughput over time) as text, and as a file.
// write_* throw std::runtime_error if the file cannot be written.
std::string svg_plot(const RunInfo& info, const StormResult& r);
void write_svg(const std::string& path, const RunInfo& info, const StormResult& r);
// One self-contained HTML page: the summary tables, the oracle, BUSY by
// host, and the plots inline; `parts` (merged runs) adds a row per part.
void write_html(const std::string& path, const RunInfo& info, const StormResult& r,
                std::span<const nlohmann::json> parts = {});

// What makes a run fail a strict check (scripts/main.sh): counts that do not
// add up, wrong answers, timeouts, final BUSY, queries lost or not issued
// (`planned` != 0: the pattern's count), answers to no query, PathRecords
// the oracle did not check. Empty when the run is clean.
std::vector<std::string> strict_problems(const StormResult& r, std::uint64_t planned);
// Side by side: each figure of `a` and `b` and the ratio b / a.
void print_compare(std::FILE* out, const nlohmann::json& a, const nlohmann::json& b);

}  // namespace madstorm
