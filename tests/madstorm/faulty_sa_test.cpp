// madstorm against the faulty SA of faulty_sa.hpp: every wrong answer lands
// in its counter, GetTable through RMPP, the open-loop schedule, bad bounds,
// a transport that refuses everything.
#include "faulty_sa.hpp"

#include "lib/report.hpp"

namespace madstorm {
namespace {

using namespace faulty;
namespace wire = madengine::wire;

TEST(FaultySa, EveryWrongAnswerLandsInItsCounter) {
  const auto hosts = make_hosts(12);
  madengine::ManualClock clock(1'000'000);
  FaultySa sa(clock, hosts, true);
  const WorkloadConfig wc{.pattern = Pattern::kJobStart};
  Workload w(wc, hosts);
  const StormConfig cfg = base_config();
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();

  // What the SA's rule says each query gets.
  std::array<std::uint64_t, kFaults> want{};
  std::uint64_t dups = 0;
  Workload again(wc, hosts);
  Query q;
  while (again.next(q)) {
    const auto s = hosts[q.src].lid, d = hosts[q.dst].lid;
    ++want[static_cast<std::size_t>(fault_of(s, d))];
    dups += duplicated(s, d) ? 1 : 0;
  }
  const auto n = [&](Fault f) { return want[static_cast<std::size_t>(f)]; };
  const auto e = [&](ErrorKind k) { return r.counters.error_by[static_cast<std::size_t>(k)]; };
  const StormCounters& c = r.counters;
  for (int f = 0; f < kFaults; ++f) EXPECT_GT(want[static_cast<std::size_t>(f)], 0u) << "fault " << f << " never tried";
  EXPECT_EQ(c.issued, 12u * 11u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(c.answered, n(Fault::kNone));
  EXPECT_EQ(e(ErrorKind::kWrongRecord), n(Fault::kWrongRecord));
  EXPECT_EQ(e(ErrorKind::kBadStatus), n(Fault::kBadStatus));
  EXPECT_EQ(e(ErrorKind::kWrongAttr), n(Fault::kWrongAttr));
  EXPECT_EQ(e(ErrorKind::kWrongMethod), n(Fault::kWrongMethod));
  EXPECT_EQ(e(ErrorKind::kMalformed), n(Fault::kMalformed));
  EXPECT_EQ(e(ErrorKind::kRmppAborted), 0u);
  EXPECT_EQ(c.errors, n(Fault::kWrongRecord) + n(Fault::kBadStatus) + n(Fault::kWrongAttr) + n(Fault::kWrongMethod) +
                          n(Fault::kMalformed));
  // Silence and wrong TIDs both end in a timeout after 1 + retries sends;
  // each wrong-TID send drew one stray answer.
  EXPECT_EQ(c.timeouts, n(Fault::kSilent) + n(Fault::kWrongTid));
  EXPECT_EQ(c.unmatched, 3 * n(Fault::kWrongTid));
  EXPECT_EQ(c.resent, 2 * (n(Fault::kSilent) + n(Fault::kWrongTid)));
  // BUSY: asked 1 + busy_retries times, then counted as BUSY.
  EXPECT_EQ(c.busy, n(Fault::kBusy));
  EXPECT_EQ(c.busy_answers, 3 * n(Fault::kBusy));
  EXPECT_EQ(c.late, dups);
  EXPECT_EQ(sa.requests, c.sent);
  EXPECT_EQ(r.latency.count(), c.answered);
  EXPECT_LE(r.window_peak, cfg.window_max);

  // The JSON says the same, field by field.
  const auto j = to_json(RunInfo{.label = "faulty", .transport = "test", .storm = cfg, .workload = wc}, r);
  EXPECT_EQ(j["counts"]["issued"], c.issued);
  EXPECT_EQ(j["counts"]["timeouts"], c.timeouts);
  EXPECT_EQ(j["counts"]["error_kinds"]["wrong_record"], e(ErrorKind::kWrongRecord));
  EXPECT_EQ(j["counts"]["unmatched"], c.unmatched);
  EXPECT_EQ(j["counts_add_up"], true);
}

TEST(FaultySa, GetTableThroughRmppAndALyingTable) {
  const auto hosts = make_hosts(40);  // 40 x 64 bytes: 12 RMPP segments
  madengine::ManualClock clock(1'000'000);
  FaultySa sa(clock, hosts, false);
  sa.bad_table_slid = hosts[5].lid;
  Workload w(WorkloadConfig{.pattern = Pattern::kGetTable}, hosts);
  Storm storm(base_config(), sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  const StormCounters& c = r.counters;
  EXPECT_EQ(c.issued, 40u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_EQ(c.answered, 39u);
  EXPECT_EQ(c.error_by[static_cast<std::size_t>(ErrorKind::kWrongRecord)], 1u);
  EXPECT_EQ(c.rmpp_transfers, 40u);
  EXPECT_EQ(c.records, 39u * 40u);
  EXPECT_EQ(c.timeouts, 0u);
}

TEST(FaultySa, OpenLoopIssuesOnScheduleAndCountsLatencyFromIt) {
  const auto hosts = make_hosts(8);
  madengine::ManualClock clock(5'000'000);
  FaultySa sa(clock, hosts, false);
  Workload w(WorkloadConfig{.pattern = Pattern::kRandomPairs, .seed = 9}, hosts);
  StormConfig cfg = base_config();
  cfg.rate_qps = 2000;
  cfg.duration_ms = 500;
  cfg.warmup_ms = 100;
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  EXPECT_EQ(r.counters.warmup_issued, 200u);
  EXPECT_EQ(r.counters.issued, 1000u);
  EXPECT_EQ(r.counters.answered, 1000u);
  EXPECT_NEAR(r.issue_rate_qps(), 2000.0, 1.0);
  EXPECT_EQ(r.schedule_lag.max(), 0u);
  // 100 ms buckets: 200 issues in each.
  ASSERT_EQ(r.series.size(), 5u);
  for (const auto& b : r.series) EXPECT_EQ(b.issued, 200u);
}

TEST(FaultySa, NodeRecordStormAndBadBounds) {
  const auto hosts = make_hosts(10);
  madengine::ManualClock clock(1);
  FaultySa sa(clock, hosts, false);
  Workload w(WorkloadConfig{.pattern = Pattern::kNodeRecord}, hosts);
  StormConfig cfg = base_config();
  cfg.queries_max = 300;
  {
    Storm storm(cfg, sa, clock, hosts, w);
    storm.set_idle(idle_for(clock));
    const StormResult r = storm.run();
    EXPECT_EQ(r.counters.issued, 300u);
    EXPECT_EQ(r.counters.answered, 300u);
    EXPECT_EQ(r.counters.issued_by[static_cast<std::size_t>(QueryKind::kNodeRecord)], 300u);
  }
  StormConfig bad = cfg;
  bad.window_max = 0;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
  bad = cfg;
  bad.sa.lid = 0;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
  bad = cfg;
  bad.rate_qps = -1;
  EXPECT_THROW(Storm(bad, sa, clock, hosts, w), std::invalid_argument);
}

TEST(FaultySa, ATransportThatRefusesEverythingEndsInTimeouts) {
  const auto hosts = make_hosts(6);
  madengine::ManualClock clock(1);
  FaultySa sa(clock, hosts, false);
  sa.refuse_tx = true;
  Workload w(WorkloadConfig{.pattern = Pattern::kJobStart}, hosts);
  Storm storm(base_config(), sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  const StormResult r = storm.run();
  EXPECT_EQ(r.counters.issued, 30u);
  EXPECT_EQ(r.counters.timeouts, 30u);
  EXPECT_TRUE(r.counts_add_up());
  EXPECT_GT(r.counters.tx_stalls, 0u);
  EXPECT_EQ(sa.requests, 0u);
}

}  // namespace
}  // namespace madstorm
