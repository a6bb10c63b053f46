// `madstorm merge`: the JSON results of several madstorm processes (one per
// host of a multi-host run, each a shard of the requesters) read back and
// combined into one run: counts summed, latency histograms merged bucket by
// bucket, throughput over time aligned on the wall clock.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/report.hpp"
#include "lib/storm.hpp"

namespace madstorm {

struct ParsedRun {
  RunInfo info;
  StormResult result;  // times are wall-clock nanoseconds (CLOCK_REALTIME)
  std::string source;  // the file, for messages
};

// A madstorm/2 result back into figures. Throws std::runtime_error naming
// `source` and the field on anything missing or malformed (a madstorm/1 file
// has no histogram buckets and cannot be merged).
ParsedRun parse_run(const nlohmann::json& j, const std::string& source);

struct MergedRun {
  RunInfo info;
  StormResult result;
  std::vector<std::string> notes;  // e.g. shards missing or repeated
};

// Throws std::runtime_error if the runs cannot be one storm (different
// patterns, host counts, shard counts or time-series resolutions).
MergedRun merge_runs(std::span<const ParsedRun> runs);

// to_json of the merged run plus "merged": the files, their hosts and shards, notes.
nlohmann::json merged_json(const MergedRun& m, std::span<const ParsedRun> runs);

}  // namespace madstorm
