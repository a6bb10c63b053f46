// The Storm with a transport that sends as each host (RequesterPorts) and a
// PathOracle, against the faulty SA in ManualClock time: every query leaves
// from its own host, an answer at another host's port is misdirected, an
// oracle refusal is a wrong answer, a host with a bigger window runs ahead of
// polite ones without holding them up, and the strict verdict lists it all.
#include <gtest/gtest.h>

#include <map>

#include "faulty_sa.hpp"
#include "lib/report.hpp"
#include "lib/requester_ports.hpp"

namespace madstorm {
namespace {

using namespace faulty;

// The faulty SA (without faults) behind a transport that knows which host
// sends each request and says which host each answer reached.
class PortsSa final : public madengine::Transport, public RequesterPorts {
 public:
  PortsSa(const madengine::Clock& clock, std::vector<Host> hosts) : hosts_(std::move(hosts)), sa_(clock, hosts_, false) {}
  std::string_view name() const noexcept override { return "ports-sa"; }
  bool open(const madengine::AgentSpec&) override { return true; }
  void close() noexcept override {}
  const madengine::LocalPort& local_port() const noexcept override { return sa_.local_port(); }
  madengine::DeviceEvent poll_events() noexcept override { return madengine::DeviceEvent::kNone; }
  std::size_t tx_burst(std::span<MadBuf* const>) noexcept override {
    ++plain_sends;  // the storm must not use the one-port path
    return 0;
  }
  std::size_t rx_burst(std::span<MadBuf*>) noexcept override { return 0; }

  std::span<const Host> requesters() const noexcept override { return hosts_; }
  std::size_t tx_burst_from(std::span<MadBuf* const> bufs, std::span<const std::uint32_t> from) noexcept override {
    std::map<std::uint32_t, std::uint32_t> burst;
    for (std::size_t i = 0; i < bufs.size(); ++i) {
      const auto pr = wire::decode<wire::PathRecord>(
          std::span<const std::uint8_t>(bufs[i]->mad.bytes).subspan(wire::kSaHeaderSize));
      if (pr->slid.get() != hosts_[from[i]].lid) ++wrong_source;  // the request names its sender
      ++sent_from[from[i]];
      ++burst[from[i]];
    }
    for (const auto& [h, n] : burst) peak_burst[h] = std::max(peak_burst[h], n);
    return sa_.tx_burst(bufs);
  }
  std::size_t rx_burst_at(std::span<MadBuf*> bufs, std::span<std::uint32_t> at) noexcept override {
    const std::size_t n = sa_.rx_burst(bufs);
    for (std::size_t i = 0; i < n; ++i) {
      const auto pr = wire::decode<wire::PathRecord>(
          std::span<const std::uint8_t>(bufs[i]->mad.bytes).subspan(wire::kSaHeaderSize));
      std::uint32_t h = 0;
      while (h < hosts_.size() && hosts_[h].lid != pr->slid.get()) ++h;
      at[i] = h < hosts_.size() ? h : kNoHost;
      // One answer goes astray: the answer for (misdirect_slid, misdirect_dlid) reaches host 0.
      if (pr->slid.get() == misdirect_slid && pr->dlid.get() == misdirect_dlid) at[i] = 0;
    }
    return n;
  }

  std::map<std::uint32_t, std::uint32_t> sent_from, peak_burst;
  std::uint64_t wrong_source = 0, plain_sends = 0;
  std::uint16_t misdirect_slid = 0, misdirect_dlid = 0;

 private:
  std::vector<Host> hosts_;
  FaultySa sa_;
};

// Refuses every path to one DLID as if its MTU were wrong; counts the rest.
struct StubOracle final : PathOracle {
  std::uint16_t bad_dlid = 0;
  std::uint64_t seen = 0;
  PathCheck check(const wire::PathRecord& rec) noexcept override {
    ++seen;
    return PathCheck{rec.dlid.get() == bad_dlid ? PathVerdict::kMtu : PathVerdict::kOk, 4};
  }
};

StormResult run(PortsSa& sa, const std::vector<Host>& hosts, const StormConfig& cfg, madengine::ManualClock& clock,
                PathOracle* oracle = nullptr) {
  Workload w(WorkloadConfig{.pattern = Pattern::kJobStart}, hosts);
  Storm storm(cfg, sa, clock, hosts, w);
  storm.set_idle(idle_for(clock));
  storm.set_oracle(oracle);
  return storm.run();
}

TEST(RequesterStorm, EveryQueryLeavesFromItsOwnHost) {
  const auto hosts = make_hosts(10);
  madengine::ManualClock clock(1'000'000);
  PortsSa sa(clock, hosts);
  const StormResult r = run(sa, hosts, base_config(), clock);
  EXPECT_TRUE(r.per_host_ports);
  EXPECT_EQ(r.counters.answered, 90u);
  EXPECT_EQ(r.counters.errors, 0u);
  EXPECT_EQ(sa.wrong_source, 0u);
  EXPECT_EQ(sa.plain_sends, 0u);
  for (std::uint32_t h = 0; h < hosts.size(); ++h) {
    EXPECT_EQ(sa.sent_from[h], 9u) << "host " << h;
  }
}

TEST(RequesterStorm, AnAnswerAtAnotherHostsPortIsMisdirected) {
  const auto hosts = make_hosts(6);
  madengine::ManualClock clock(1'000'000);
  PortsSa sa(clock, hosts);
  sa.misdirect_slid = hosts[3].lid;
  sa.misdirect_dlid = hosts[5].lid;
  const StormResult r = run(sa, hosts, base_config(), clock);
  EXPECT_EQ(r.counters.errors, 1u);
  EXPECT_EQ(r.counters.error_by[static_cast<std::size_t>(ErrorKind::kMisdirected)], 1u);
  EXPECT_EQ(r.counters.answered, 29u);
  EXPECT_TRUE(r.counts_add_up());
}

TEST(RequesterStorm, OracleRefusalsAreWrongPathsAndFailTheStrictCheck) {
  const auto hosts = make_hosts(8);
  madengine::ManualClock clock(1'000'000);
  PortsSa sa(clock, hosts);
  StubOracle oracle;
  oracle.bad_dlid = hosts[2].lid;
  const StormResult r = run(sa, hosts, base_config(), clock, &oracle);
  const StormCounters& c = r.counters;
  EXPECT_TRUE(r.oracle);
  EXPECT_EQ(oracle.seen, 56u);
  EXPECT_EQ(c.oracle_checked, 56u);
  EXPECT_EQ(c.oracle_wrong_by[static_cast<std::size_t>(PathVerdict::kMtu)], 7u);  // every other host asks for host 2 once
  EXPECT_EQ(c.error_by[static_cast<std::size_t>(ErrorKind::kWrongPath)], 7u);
  EXPECT_EQ(c.oracle_hops[4], 56u);
  EXPECT_EQ(c.answered, 49u);
  const auto problems = strict_problems(r, 56);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("7 wrong answers (wrong_path=7), the oracle found: mtu=7"), std::string::npos) << problems[0];
  const auto j = to_json(RunInfo{}, r);
  EXPECT_EQ(j["oracle"]["checked"], 56);
  EXPECT_EQ(j["oracle"]["wrong_by"]["mtu"], 7);
  EXPECT_EQ(j["counts"]["error_kinds"]["wrong_path"], 7);
}

TEST(RequesterStorm, AGreedyHostRunsAheadWithoutHoldingUpPoliteOnes) {
  const auto hosts = make_hosts(12);
  madengine::ManualClock clock(1'000'000);
  PortsSa sa(clock, hosts);
  StormConfig cfg = base_config();
  cfg.window_max = 64;
  cfg.window_per_host_max = 1;
  cfg.window_overrides = {{0, 8}};
  const StormResult r = run(sa, hosts, cfg, clock);
  EXPECT_EQ(r.counters.answered, 132u);
  // The first burst: host 0 fills its window of 8, every other host sends one.
  EXPECT_EQ(sa.peak_burst[0], 8u);
  for (std::uint32_t h = 1; h < hosts.size(); ++h) {
    EXPECT_EQ(sa.peak_burst[h], 1u) << "host " << h;
  }
  cfg.window_overrides = {{12, 8}};
  Workload w(WorkloadConfig{.pattern = Pattern::kJobStart}, hosts);
  EXPECT_THROW(Storm(cfg, sa, clock, hosts, w), std::invalid_argument);
}

TEST(RequesterStorm, StrictVerdictNamesWhatIsMissing) {
  StormResult r;
  r.counters.issued = 10;
  r.counters.answered = 6;
  r.counters.timeouts = 2;
  r.counters.busy = 1;
  r.counters.unmatched = 3;
  const auto p = strict_problems(r, 12);
  // counts (6 + 0 + 2 + 1 != 10), timeouts, BUSY, issued vs planned, unmatched.
  ASSERT_EQ(p.size(), 5u);
  EXPECT_NE(p[0].find("do not add up"), std::string::npos);
  EXPECT_NE(p[1].find("2 queries timed out"), std::string::npos);
  EXPECT_NE(p[2].find("1 query still BUSY"), std::string::npos);
  EXPECT_NE(p[3].find("10 queries issued, 12 planned"), std::string::npos);
  EXPECT_NE(p[4].find("3 answers matched no query"), std::string::npos);
}

}  // namespace
}  // namespace madstorm
