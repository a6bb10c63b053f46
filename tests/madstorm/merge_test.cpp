// madstorm merge: two shards of a storm against the faulty SA merge into the
// counts of one run of the whole storm; a result survives its JSON; series
// of runs that started apart line up on the wall clock; what is not one
// storm, or not a madstorm/2 result, is refused with the file and field.
#include <gtest/gtest.h>

#include "faulty_sa.hpp"
#include "lib/merge.hpp"
#include "lib/report.hpp"

namespace madstorm {
namespace {

using namespace faulty;

constexpr std::int64_t kWallBase = 1'764'583'200'000'000'000;  // 2025-12-01T10:00:00Z

// One run of the job-start storm against the faulty SA, shard i of n, as the JSON a host would write.
nlohmann::json shard_run(std::uint32_t i, std::uint32_t n, std::int64_t wall_start_ns) {
  const auto hosts = make_hosts(12);
  madengine::ManualClock clock(1'000'000);
  FaultySa sa(clock, hosts, true);
  const WorkloadConfig wc{.pattern = Pattern::kJobStart, .shard_index = i, .shard_count = n};
  Workload w(wc, hosts);
  const StormConfig cfg = base_config();
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  RunInfo info{.label = "faulty", .transport = "test", .storm = cfg, .workload = wc};
  info.wall = WallInfo{.start_unix_ns = wall_start_ns, .host = "node" + std::to_string(i), .shard_source = "--shard"};
  return to_json(info, r);
}

TEST(Merge, TwoShardsEqualOneRunsCounts) {
  const nlohmann::json one = shard_run(0, 1, kWallBase);
  const std::vector<ParsedRun> parts = {parse_run(shard_run(0, 2, kWallBase), "a.json"),
                                        parse_run(shard_run(1, 2, kWallBase + 50'000), "b.json")};
  const MergedRun m = merge_runs(parts);
  EXPECT_TRUE(m.notes.empty());
  const nlohmann::json merged = merged_json(m, parts);
  // Every count, error kind and query kind, event counters included.
  EXPECT_EQ(merged["counts"], one["counts"]);
  EXPECT_EQ(merged["counts_add_up"], true);
  EXPECT_EQ(merged["latency"]["count"], one["latency"]["count"]);
  EXPECT_EQ(merged["requesters"]["busy_answers_by_host"], one["requesters"]["busy_answers_by_host"]);
  EXPECT_EQ(merged["config"]["hosts"], 12);
  EXPECT_EQ(merged["merged"]["runs"], 2);
  EXPECT_EQ(merged["merged"]["parts"][1]["host"], "node1");
  EXPECT_GT(one["counts"]["errors"].get<int>(), 0);  // the faulty SA's wrong answers are in there
  std::uint64_t issued = 0;
  for (const auto& b : merged["series"]["buckets"]) issued += b[0].get<std::uint64_t>();
  EXPECT_EQ(issued, one["counts"]["issued"].get<std::uint64_t>());
}

TEST(Merge, AResultSurvivesItsJson) {
  const nlohmann::json j = shard_run(0, 1, kWallBase);
  const ParsedRun p = parse_run(j, "run.json");
  const nlohmann::json again = to_json(p.info, p.result);
  for (const char* key : {"counts", "latency", "latency_histogram", "schedule_lag_histogram", "series", "timing",
                          "requesters", "oracle", "counts_add_up", "wall"})
    EXPECT_EQ(again[key], j[key]) << key;
}

TEST(Merge, SeriesLineUpOnTheWallClock) {
  ParsedRun a = parse_run(shard_run(0, 2, kWallBase), "a.json");
  ParsedRun b = parse_run(shard_run(1, 2, kWallBase), "b.json");
  // Pretend b started 300 ms (three 100 ms buckets) after a.
  b.result.measure_start_ns += 300'000'000;
  b.result.first_issue_ns += 300'000'000;
  b.result.last_issue_ns += 300'000'000;
  b.result.end_ns += 300'000'000;
  a.result.series = {{10, 10, 0, 900}};
  b.result.series = {{5, 4, 1, 250}, {7, 7, 0, 40}};
  const std::vector<ParsedRun> parts = {a, b};
  const MergedRun m = merge_runs(parts);
  ASSERT_EQ(m.result.series.size(), 5u);
  EXPECT_EQ(m.result.series[0].issued, 10u);
  EXPECT_EQ(m.result.series[1].issued, 0u);
  EXPECT_EQ(m.result.series[3].answered, 4u);
  EXPECT_EQ(m.result.series[3].failed, 1u);
  EXPECT_EQ(m.result.series[3].latency_max_us, 250u);  // a bucket's worst answer survives the merge
  EXPECT_EQ(m.result.series[0].latency_max_us, 900u);
  EXPECT_EQ(m.result.series[4].issued, 7u);
  EXPECT_EQ(m.result.end_ns, b.result.end_ns);
}

TEST(Merge, NotesMissingAndRepeatedShards) {
  const std::vector<ParsedRun> parts = {parse_run(shard_run(1, 3, kWallBase), "b.json"),
                                        parse_run(shard_run(1, 3, kWallBase), "b2.json")};
  const MergedRun m = merge_runs(parts);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_NE(m.notes[0].find("shard 1 appears twice"), std::string::npos);
  EXPECT_NE(m.notes[1].find("missing: 0, 2"), std::string::npos);
}

TEST(Merge, RefusesWhatIsNotOneStormOrNotMadstorm2) {
  nlohmann::json j = shard_run(0, 2, kWallBase);
  nlohmann::json other = j;
  other["config"]["pattern"] = "restart";
  std::vector<ParsedRun> parts = {parse_run(j, "a.json"), parse_run(other, "b.json")};
  EXPECT_THROW(merge_runs(parts), std::runtime_error);
  nlohmann::json old = j;
  old["schema"] = "madstorm/1";
  EXPECT_THROW(parse_run(old, "old.json"), std::runtime_error);
  nlohmann::json broken = j;
  broken["counts"].erase("timeouts");
  try {
    parse_run(broken, "broken.json");
    FAIL() << "a result without counts.timeouts was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("timeouts"), std::string::npos) << e.what();
  }
  nlohmann::json liar = j;
  liar["latency_histogram"]["min_ns"] = 1;  // not in the lowest bucket
  if (liar["latency_histogram"]["buckets"].empty()) GTEST_SKIP() << "no answers to check against";
  EXPECT_THROW(parse_run(liar, "liar.json"), std::runtime_error);
  EXPECT_THROW(merge_runs(std::span<const ParsedRun>()), std::runtime_error);
}

}  // namespace
}  // namespace madstorm
