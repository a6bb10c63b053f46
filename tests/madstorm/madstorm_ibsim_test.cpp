// madstorm against OpenSM's SA on ibsim (a 32-host fat tree): discovery by
// NodeRecord GetTable over RMPP, storms whose counts add up, an open-loop
// rate held to its target by madstorm's own issue times, and the tool itself
// writing a JSON that parses back with every field.
#include <gtest/gtest.h>

#include <poll.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "lib/hosts.hpp"
#include "lib/merge.hpp"
#include "lib/report.hpp"
#include "lib/storm.hpp"
#include "lib/workload.hpp"

namespace madstorm {
namespace {

using namespace std::chrono_literals;
using madengine::ibsim::IbsimFabric;

constexpr std::size_t kHosts = 32;

std::string topo(const char* name) { return std::string(MADSTORM_TOPOLOGY_DIR) + "/" + name; }

// OpenSM up on the fat tree, this process attached as H1 with a GSI client.
struct OpenSmFixture {
  IbsimFabric fabric{topo("ft32.topo")};
  madengine::SteadyClock clock;
  std::unique_ptr<madengine::UmadTransport> t;
  std::function<void(Nanos)> idle;
  SaTarget sa;

  ::testing::AssertionResult start() {
    if (!fabric.ok()) return ::testing::AssertionFailure() << fabric.error();
    if (!fabric.start_opensm(0, "H1")) return ::testing::AssertionFailure() << "OpenSM did not start";
    if (!fabric.wait_subnet_up(90s)) return ::testing::AssertionFailure() << fabric.opensm_log();
    fabric.attach_self("H1");
    t = std::make_unique<madengine::UmadTransport>(madengine::UmadConfig{}, clock);
    if (!t->open(madengine::AgentSpec{.gsi_client = true})) return ::testing::AssertionFailure() << t->last_error();
    sa.lid = t->local_port().sm_lid;
    sa.subnet_prefix = t->local_port().subnet_prefix;
    if (sa.lid == 0) return ::testing::AssertionFailure() << "no SM LID";
    idle = [this](Nanos deadline) {
      const Nanos left = deadline - clock.now_ns();
      pollfd p{t->fd(), POLLIN, 0};
      ::poll(&p, 1, left >= madengine::kNanosPerMilli ? static_cast<int>(left / madengine::kNanosPerMilli) : 0);
    };
    return ::testing::AssertionSuccess();
  }

  std::vector<Host> discover() {
    std::string err;
    auto hosts = discover_hosts(*t, clock, sa, idle, DiscoverOptions{}, err);
    EXPECT_EQ(hosts.size(), kHosts) << err;
    return hosts;
  }

  StormResult storm(const StormConfig& base, const WorkloadConfig& wc, const std::vector<Host>& hosts) {
    StormConfig cfg = base;
    cfg.sa = sa;
    Workload w(wc, hosts);
    Storm s(cfg, *t, clock, hosts, w);
    s.set_idle(idle);
    return s.run();
  }
};

void expect_clean(const StormResult& r, std::uint64_t issued) {
  const StormCounters& c = r.counters;
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(c.issued, issued);
  EXPECT_EQ(c.issued, c.answered + c.busy + c.timeouts + c.errors);
  EXPECT_EQ(c.errors, 0u) << "wrong answers from OpenSM: " << to_json(RunInfo{}, r)["counts"].dump();
  EXPECT_EQ(c.answered, issued);
  EXPECT_EQ(r.latency.count(), c.answered);
}

TEST(MadstormIbsim, JobStartByLidAndByGidAgainstOpenSm) {
  SKIP_WITHOUT_SHIM();
  OpenSmFixture f;
  ASSERT_TRUE(f.start());
  const auto hosts = f.discover();
  ASSERT_EQ(hosts.size(), kHosts);
  EXPECT_TRUE(std::any_of(hosts.begin(), hosts.end(),
                          [&](const Host& h) { return h.port_guid == f.t->local_port().port_guid; }));
  StormConfig cfg;
  cfg.window_max = 32;
  const auto by_lid = f.storm(cfg, WorkloadConfig{.pattern = Pattern::kJobStart}, hosts);
  expect_clean(by_lid, kHosts * (kHosts - 1));
  cfg.by_gid = true;
  const auto by_gid = f.storm(cfg, WorkloadConfig{.pattern = Pattern::kRestart, .seed = 4}, hosts);
  expect_clean(by_gid, kHosts * (kHosts - 1));
}

TEST(MadstormIbsim, GetTableNodeRecordAndMulticastAgainstOpenSm) {
  SKIP_WITHOUT_SHIM();
  OpenSmFixture f;
  ASSERT_TRUE(f.start());
  const auto hosts = f.discover();
  ASSERT_EQ(hosts.size(), kHosts);
  StormConfig cfg;
  cfg.window_max = 8;
  // umad2sim does not segment OpenSM's multi-MAD answers: each comes as the
  // first 256 bytes flagged RMPP with version 0. madstorm must call every
  // one of them malformed (on a real HCA the kernel segments, and they pass).
  const auto table = f.storm(cfg, WorkloadConfig{.pattern = Pattern::kGetTable}, hosts);
  EXPECT_TRUE(table.counts_add_up());
  EXPECT_EQ(table.counters.issued, kHosts);
  EXPECT_EQ(table.counters.error_by[static_cast<std::size_t>(ErrorKind::kMalformed)], kHosts);
  EXPECT_EQ(table.counters.answered, 0u);
  cfg.queries_max = 200;
  expect_clean(f.storm(cfg, WorkloadConfig{.pattern = Pattern::kNodeRecord}, hosts), 200);
  cfg.queries_max = 0;
  const auto mc = f.storm(cfg, WorkloadConfig{.pattern = Pattern::kMcastJoin}, hosts);
  // OpenSM takes the proxy joins and leaves of the IPoIB broadcast group.
  expect_clean(mc, 2 * kHosts);
  std::printf("mcast storm against OpenSM: %s\n", to_json(RunInfo{}, mc)["counts"].dump().c_str());
}

TEST(MadstormIbsim, OpenLoopRateHeldFromOwnIssueTimes) {
  SKIP_WITHOUT_SHIM();
  OpenSmFixture f;
  ASSERT_TRUE(f.start());
  const auto hosts = f.discover();
  ASSERT_EQ(hosts.size(), kHosts);
  StormConfig cfg;
  cfg.rate_qps = 300;
  cfg.duration_ms = 3000;
  cfg.warmup_ms = 300;
  cfg.window_max = 256;
  cfg.window_per_host_max = 64;
  const auto r = f.storm(cfg, WorkloadConfig{.pattern = Pattern::kRandomPairs, .seed = 11}, hosts);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(r.counters.errors, 0u);
  // The schedule fixes the count exactly; the issue times (madstorm's own
  // clock readings at each send) must keep to it within 10 %.
  EXPECT_EQ(r.counters.issued, 900u);
  EXPECT_NEAR(r.issue_rate_qps(), 300.0, 30.0);
  EXPECT_EQ(r.schedule_lag.count(), r.counters.issued);
  std::uint64_t series_issued = 0;
  for (const auto& b : r.series) series_issued += b.issued;
  EXPECT_EQ(series_issued, r.counters.issued);
}

// The tool, run as a client of the fabric: its JSON parses back complete.
TEST(MadstormIbsim, ToolWritesCompleteJson) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(topo("ft32.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(0, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(90s)) << fabric.opensm_log();
  const std::string json = fabric.work_dir() + "/storm.json", svg = fabric.work_dir() + "/storm.svg";
  const auto run = fabric.run(std::string(MADSTORM_BIN) + " --pattern job-start --window 16 --label opensm --json " +
                                  json + " --plot " + svg,
                              "H2", 120s);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("latency us"), std::string::npos) << run.out;
  std::ifstream in(json);
  ASSERT_TRUE(in);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("schema"), "madstorm/2");
  EXPECT_EQ(j.at("label"), "opensm");
  EXPECT_EQ(j.at("transport"), "umad");
  for (const char* k : {"pattern", "by_gid", "hosts", "shard", "seed", "sa_lid", "window_max", "window_per_host_max",
                        "rate_qps", "open_loop", "queries_max", "duration_ms", "warmup_ms", "timeout_ms", "retries",
                        "busy_backoff_ms", "busy_retries"})
    EXPECT_TRUE(j.at("config").contains(k)) << k;
  EXPECT_EQ(j["config"]["hosts"], kHosts);
  const auto& c = j.at("counts");
  for (const char* k : {"issued", "answered", "busy", "timeouts", "errors", "sent", "resent", "busy_answers",
                        "unmatched", "late", "not_sa", "records", "rmpp_transfers", "warmup_issued", "tx_stalls", "tx_dropped",
                        "device_lost"})
    EXPECT_TRUE(c.at(k).is_number_unsigned()) << k;
  for (std::size_t k = 0; k < kErrorKindCount; ++k)
    EXPECT_TRUE(c.at("error_kinds").contains(to_string(static_cast<ErrorKind>(k))));
  EXPECT_EQ(c["issued"], kHosts * (kHosts - 1));
  EXPECT_EQ(c["issued"].get<std::uint64_t>(), c["answered"].get<std::uint64_t>() + c["busy"].get<std::uint64_t>() +
                                                  c["timeouts"].get<std::uint64_t>() + c["errors"].get<std::uint64_t>());
  EXPECT_EQ(j.at("counts_add_up"), true);
  for (const char* k : {"count", "mean_us", "min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"})
    EXPECT_TRUE(j.at("latency").at(k).is_number()) << k;
  const auto& l = j["latency"];
  EXPECT_LE(l["min_us"].get<double>(), l["p50_us"].get<double>());
  EXPECT_LE(l["p50_us"].get<double>(), l["p99_us"].get<double>());
  EXPECT_LE(l["p99_us"].get<double>(), l["max_us"].get<double>());
  for (const char* k : {"elapsed_s", "throughput_qps", "issue_rate_qps", "cpu_user_s", "cpu_sys_s", "cpu_us_per_query",
                        "window_peak"})
    EXPECT_TRUE(j.at("timing").at(k).is_number()) << k;
  EXPECT_GT(j["timing"]["throughput_qps"].get<double>(), 0.0);
  EXPECT_FALSE(j.at("series").at("buckets").empty());
  // What a merge needs: the wall clock, the histogram buckets; no oracle outside --embedded.
  EXPECT_GT(j.at("wall").at("start_unix_ns").get<std::int64_t>(), 0);
  EXPECT_EQ(j.at("latency_histogram").at("count"), j["latency"]["count"]);
  EXPECT_TRUE(j.at("oracle").is_null());
  EXPECT_EQ(j.at("requesters").at("per_host_ports"), false);
  const ParsedRun back = parse_run(j, json);
  EXPECT_EQ(back.result.counters.answered, c["answered"].get<std::uint64_t>());
  std::ifstream s(svg);
  std::string text((std::istreambuf_iterator<char>(s)), {});
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace madstorm
