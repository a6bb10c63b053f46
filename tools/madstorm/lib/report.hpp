// What madstorm tells its user: the summary table, the JSON document
// (schema "madstorm/1"), the SVG plot (latency histogram and throughput over
// time, drawn by hand) and the side-by-side ratios of two runs.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/storm.hpp"
#include "lib/workload.hpp"

namespace madstorm {

struct RunInfo {
  std::string label;      // e.g. "opensm", "madengine"
  std::string transport;  // "umad", "sim"
  StormConfig storm{};
  WorkloadConfig workload{};
};

// Every figure of a run; parse it back with the same field names.
nlohmann::json to_json(const RunInfo& info, const StormResult& r);
void print_summary(std::FILE* out, const RunInfo& info, const StormResult& r);
// Throws std::runtime_error if the file cannot be written.
void write_svg(const std::string& path, const RunInfo& info, const StormResult& r);
// Side by side: each figure of `a` and `b` and the ratio b / a.
void print_compare(std::FILE* out, const nlohmann::json& a, const nlohmann::json& b);

}  // namespace madstorm
