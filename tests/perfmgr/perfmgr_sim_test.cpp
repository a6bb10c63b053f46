// The performance manager on the sim's PMAs (pump mode, deterministic): its
// readings equal the simulated counters, injected errors give changes and
// one event per episode, OpenSM's clear rule clears a counter near
// saturation, a PMA without PortCountersExtended is read through its 32-bit
// counters, the metrics and admin commands name ports through the node
// name map, a reload retunes the interval and thresholds, pauses and
// resumes, and reads slow down while the SA answers a query storm.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "node/internal_node.hpp"
#include "perfmgr/perf_manager.hpp"
#include "service/admin.hpp"
#include "service/metrics.hpp"
#include "sim/fabric.hpp"

namespace madengine::perfmgr {
namespace {

constexpr Nanos kStepNs = 10 * kNanosPerMicro;

class PerfSim : public ::testing::Test {
 protected:
  void SetUp() override {
    map_ = std::filesystem::temp_directory_path() / fmt::format("madengine-perfmgr-{}.map", ::getpid());
    node::NodeConfig c;
    c.transport.kind = node::TransportKind::kSim;
    c.transport.topology = MADENGINE_TEST_TOPOLOGY_DIR "/ft2x4.topo";
    c.transport.sim_node = "H1";
    c.engine.cores = 1;
    c.engine.pin = false;
    c.log.level = "warn";
    node::InternalOptions o;
    o.perfmgr.enabled = true;
    o.perfmgr.interval_ms = 1000;
    o.perfmgr.node_name_map = map_.string();
    o.on_port_alarm = [this](const PortAlarm& a) { alarms_.push_back(a); };
    // The name map is written once the sim's GUIDs are known: a first node only reads them.
    {
      node::InternalNode probe(c);
      leaf_ = probe.fabric()->find_node("L1");
      leaf_guid_ = probe.fabric()->node_guid(leaf_);
    }
    std::ofstream(map_) << "# test map\n" << fmt::format("0x{:016x} \"leaf\\A 1\"  # a backslash to escape\n", leaf_guid_);
    node_ = std::make_unique<node::InternalNode>(c, node::NodeHooks{}, o);
    f_ = node_->fabric();
    h8_ = f_->find_node("H8");
    f_->set_pma_extended(h8_, false);
    ASSERT_TRUE(node_->wait_subnet_up(std::chrono::milliseconds(20'000)));
  }
  void TearDown() override {
    node_.reset();
    std::filesystem::remove(map_);
  }
  // Pumps (delivering events) until the manager completed `round`.
  bool until_round(std::uint64_t round) {
    const Nanos end = f_->now_ns() + 30 * Nanos{1'000'000'000};
    while (f_->now_ns() < end) {
      node_->dispatch_events();
      const auto t = node_->perfmgr()->table();
      if (t && t->round >= round) return true;
      node_->pump(kStepNs);
    }
    return false;
  }
  std::uint64_t round() const { return node_->perfmgr()->table() ? node_->perfmgr()->table()->round : 0; }
  const PortPerf* port(std::uint64_t guid, std::uint8_t num) const {
    table_ = node_->perfmgr()->table();
    for (const PortPerf& p : table_->ports)
      if (p.node_guid == guid && p.port_num == num) return &p;
    return nullptr;
  }

  std::filesystem::path map_;
  std::unique_ptr<node::InternalNode> node_;
  sim::Fabric* f_ = nullptr;
  std::uint32_t leaf_ = 0, h8_ = 0;
  std::uint64_t leaf_guid_ = 0;
  std::vector<PortAlarm> alarms_;
  mutable std::shared_ptr<const PerfTable> table_;
};

TEST_F(PerfSim, ReadingsEqualTheSimulatedCounters) {
  ASSERT_TRUE(until_round(2));
  const auto t = node_->perfmgr()->table();
  // Every linked port: 8 hosts, 4 leaves x 4 ports, 2 spines x 4 ports.
  EXPECT_EQ(t->ports.size(), 8u + 16u + 8u);
  for (const PortPerf& p : t->ports) {
    std::uint32_t n = 0;
    while (n < f_->node_count() && f_->node_guid(n) != p.node_guid) ++n;
    ASSERT_LT(n, f_->node_count());
    const sim::SimPortCounters& c = f_->port_counters(f_->port(n, p.port_num));
    SCOPED_TRACE(fmt::format("{} port {}", f_->description(n), p.port_num));
    EXPECT_EQ(p.extended, n != h8_);
    EXPECT_EQ(at(p.raw, Counter::kSymbolErrors), c.symbol_errors);
    EXPECT_EQ(at(p.raw, Counter::kRcvErrors), c.rcv_errors);
    EXPECT_EQ(at(p.raw, Counter::kLinkDowned), c.link_downed);
    EXPECT_EQ(at(p.raw, Counter::kXmitDiscards), c.xmit_discards);
    // Traffic went on after the read (the manager's own MADs among it):
    // what it read is at most what the port holds now, and not nothing.
    const std::uint64_t xmit = p.extended ? c.ext_xmit_pkts : c.xmit_pkts;
    const std::uint64_t rcv_data = p.extended ? c.ext_rcv_data : c.rcv_data;
    EXPECT_GT(at(p.raw, Counter::kXmitPkts), 0u);
    EXPECT_LE(at(p.raw, Counter::kXmitPkts), xmit);
    EXPECT_LE(at(p.raw, Counter::kRcvData), rcv_data);
    EXPECT_EQ(at(p.raw, Counter::kRcvData) % sim::kMadDataWords, 0u);
    EXPECT_EQ(p.reads, 2u);
    EXPECT_GT(p.interval_s, 0.5);
  }
  EXPECT_TRUE(alarms_.empty());
  const PerfMgrCounters pc = node_->perfmgr()->counters();
  EXPECT_EQ(pc.failed, 0u);
  EXPECT_EQ(pc.rounds, 2u);
  EXPECT_EQ(pc.cpi_reads, 8u + 6u);  // once per node
}

TEST_F(PerfSim, InjectedErrorsGiveChangesAndOneEventPerEpisode) {
  ASSERT_TRUE(until_round(1));
  const sim::PortIdx up = f_->port(leaf_, 3);  // L1's first uplink
  f_->add_port_counter(up, sim::PortCounter::kSymbolErrors, 25);
  f_->add_port_counter(up, sim::PortCounter::kLinkErrorRecovery, 1);
  // The round in progress may have read the port already: two more rounds see it.
  ASSERT_TRUE(until_round(round() + 2));
  ASSERT_EQ(alarms_.size(), 1u);
  const PortAlarm& a = alarms_[0];
  EXPECT_EQ(a.node_guid, leaf_guid_);
  EXPECT_EQ(a.port_num, 3);
  EXPECT_EQ(a.name, "leaf\\A 1");
  EXPECT_EQ(a.counters, (1u << 0) | (1u << 1));  // SymbolErrorCounter, LinkErrorRecoveryCounter
  EXPECT_EQ(at(a.change, Counter::kSymbolErrors), 25u);
  const PortPerf* p = port(leaf_guid_, 3);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(at(p->total, Counter::kSymbolErrors), 25u);
  EXPECT_EQ(at(p->raw, Counter::kSymbolErrors), 25u);
  const std::uint16_t leaf_lid = p->lid;
  // Quiet rounds: no new event; a new rise is a new episode.
  ASSERT_TRUE(until_round(round() + 2));
  EXPECT_EQ(alarms_.size(), 1u);
  f_->add_port_counter(up, sim::PortCounter::kSymbolErrors, 40);
  ASSERT_TRUE(until_round(round() + 2));
  ASSERT_EQ(alarms_.size(), 2u);
  EXPECT_EQ(at(alarms_[1].change, Counter::kSymbolErrors), 40u);
  EXPECT_EQ(at(port(leaf_guid_, 3)->total, Counter::kSymbolErrors), 65u);

  // The metrics and the admin socket name the port through the node name map.
  service::MetricsRenderer renderer(*node_);
  const std::string text = renderer.render();
  const std::string labels = fmt::format("node=\"leaf\\\\A 1\",guid=\"0x{:016x}\",port=\"3\"", leaf_guid_);
  EXPECT_NE(text.find("madengine_port_errors_total{" + labels + ",counter=\"symbol_errors\"} 65\n"), std::string::npos)
      << text.substr(text.find("madengine_port_errors_total"), 600);
  EXPECT_NE(text.find("madengine_port_xmit_bytes_total{" + labels + "} "), std::string::npos);
  EXPECT_NE(text.find("madengine_perfmgr_ports_dropped 0\n"), std::string::npos);
  service::AdminCommands admin(*node_);
  const nlohmann::json e = admin.handle(nlohmann::json{{"cmd", "errors"}});
  ASSERT_TRUE(e.value("ok", false)) << e.dump();
  ASSERT_EQ(e["ports"].size(), 1u) << e.dump();
  EXPECT_EQ(e["ports"][0]["name"], "leaf\\A 1");
  EXPECT_EQ(e["ports"][0]["counters"]["SymbolErrorCounter"], 65);
  const nlohmann::json q = admin.handle(nlohmann::json{{"cmd", "querylid"}, {"lid", leaf_lid}});
  ASSERT_TRUE(q.value("ok", false)) << q.dump();
  EXPECT_EQ(q["name"], "leaf\\A 1");
  EXPECT_EQ(q["counters"].size(), 4u);  // every linked port of the switch
}

// SIGHUP's [perfmgr]: the interval and thresholds reach the running
// manager; the keys it cannot change while it runs are named.
TEST_F(PerfSim, ReloadRetunesIntervalAndThresholdsAndNamesTheRest) {
  ASSERT_TRUE(until_round(1));
  PerfMgrConfig fresh = node_->perfmgr()->config();
  const node::InternalNode::ReloadResult same = node_->reload_perfmgr(fresh);
  EXPECT_TRUE(same.applied.empty());
  EXPECT_TRUE(same.restart_needed.empty());
  fresh.interval_ms = 3000;
  fresh.thresholds.symbol_errors = 100;
  fresh.outstanding_max = 8;
  fresh.node_name_map = "/etc/opensm/ib-node-name-map";
  const node::InternalNode::ReloadResult r = node_->reload_perfmgr(fresh);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"perfmgr: interval_ms 1000 -> 3000, thresholds"}));
  EXPECT_EQ(r.restart_needed, (std::vector<std::string>{"perfmgr.outstanding_max", "perfmgr.node_name_map"}));
  // Rounds start 3 s apart from the round under way on, their reads spread
  // over 3 s: the ends of two rounds after the one under way are 3 s apart.
  ASSERT_TRUE(until_round(round() + 1));
  ASSERT_TRUE(until_round(round() + 1));
  const Nanos first = node_->perfmgr()->table()->round_end_ns;
  ASSERT_TRUE(until_round(round() + 1));
  const Nanos second = node_->perfmgr()->table()->round_end_ns;
  EXPECT_NEAR(static_cast<double>(second - first) / 1e9, 3.0, 0.25);
  // 25 symbol errors are below the new threshold of 100: no event; 150 are above it.
  const sim::PortIdx up = f_->port(leaf_, 3);
  f_->add_port_counter(up, sim::PortCounter::kSymbolErrors, 25);
  ASSERT_TRUE(until_round(round() + 2));
  EXPECT_TRUE(alarms_.empty());
  f_->add_port_counter(up, sim::PortCounter::kSymbolErrors, 150);
  ASSERT_TRUE(until_round(round() + 2));
  ASSERT_EQ(alarms_.size(), 1u);
  EXPECT_EQ(at(alarms_[0].change, Counter::kSymbolErrors), 150u);
}

// SIGHUP's perfmgr.enabled pauses and resumes a running manager: paused it
// sends nothing for several intervals; resumed, its rounds go on and a
// round's length counts reading time, not the pause.
TEST_F(PerfSim, ReloadPausesAndResumes) {
  ASSERT_TRUE(until_round(1));
  PerfMgrConfig fresh = node_->perfmgr()->config();
  fresh.enabled = false;
  node::InternalNode::ReloadResult r = node_->reload_perfmgr(fresh);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"perfmgr: paused"}));
  EXPECT_TRUE(r.restart_needed.empty());
  node_->pump(kStepNs);  // the command runs on the manager's core
  const Nanos settle_end = f_->now_ns() + 100 * kNanosPerMilli;  // answers in flight come back
  while (f_->now_ns() < settle_end) node_->pump(kStepNs);
  const std::uint64_t mads = node_->perfmgr()->counters().mads;
  const std::uint64_t rounds = round();
  const Nanos end = f_->now_ns() + 5 * kNanosPerSecond;  // five intervals
  while (f_->now_ns() < end) node_->pump(kStepNs);
  EXPECT_EQ(node_->perfmgr()->counters().mads, mads);
  EXPECT_EQ(round(), rounds);
  fresh.enabled = true;
  r = node_->reload_perfmgr(fresh);
  EXPECT_EQ(r.applied, (std::vector<std::string>{"perfmgr: resumed"}));
  ASSERT_TRUE(until_round(rounds + 2));
  EXPECT_GT(node_->perfmgr()->counters().mads, mads);
  EXPECT_LT(node_->perfmgr()->counters().last_round_s, 1.5);
}

// While the SA receives more than sa_busy_qps requests a second, reads go
// at a quarter pace (a round takes four intervals); when the storm ends,
// at full pace again.
TEST_F(PerfSim, YieldsToAQueryStorm) {
  ASSERT_TRUE(until_round(1));
  const sim::Fabric* f = f_;
  // 5,000 requests a simulated second: over the default 1,000.
  node_->perfmgr()->set_sa_load([f] { return static_cast<std::uint64_t>(f->now_ns() / 200'000); });
  ASSERT_TRUE(until_round(round() + 2));  // a round begun busy, then one wholly busy
  EXPECT_NEAR(node_->perfmgr()->counters().last_round_s, 4.0, 0.3);
  EXPECT_GT(node_->perfmgr()->counters().yield_ns, 3 * kNanosPerSecond);
  node_->perfmgr()->set_sa_load([] { return std::uint64_t{42}; });  // the storm is over
  ASSERT_TRUE(until_round(round() + 2));
  EXPECT_NEAR(node_->perfmgr()->counters().last_round_s, 1.0, 0.1);
}

TEST_F(PerfSim, ClearsACounterNearSaturationAndKeepsTheTotal) {
  ASSERT_TRUE(until_round(1));
  const sim::PortIdx down = f_->port(leaf_, 1);
  f_->add_port_counter(down, sim::PortCounter::kRcvErrors, 0xc000);  // three quarters of 16 bits
  ASSERT_TRUE(until_round(round() + 2));
  EXPECT_EQ(f_->port_counters(down).rcv_errors, 0u);  // cleared by the manager's Set
  const PortPerf* p = port(leaf_guid_, 1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->clears, 1u);
  EXPECT_EQ(at(p->total, Counter::kRcvErrors), 0xc000u);
  EXPECT_EQ(at(p->raw, Counter::kRcvErrors), 0u);
  EXPECT_GT(f_->port_counters(down).ext_rcv_pkts, 0u);  // 64-bit counters are never cleared
  ASSERT_EQ(alarms_.size(), 1u);                         // PortRcvErrors past its threshold too
  EXPECT_EQ(node_->perfmgr()->counters().clears, 1u);
}

}  // namespace
}  // namespace madengine::perfmgr
