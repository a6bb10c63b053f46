// madstorm against madengine's daemon on the simulated fabric (label sim):
// the oracle's LFT walks are the fabric's own forwarding (same hops, same
// arrival port), it refuses each wrong PathRecord field, every PathRecord of
// a job start and every record of a GetTable storm is checked against it, a
// planted wrong answer fails the strict verdict, and with each host sending
// from its own port the SA's per-requester share gives BUSY to a greedy host
// only, where one port for all hosts makes them one requester.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <vector>

#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"
#include "lib/fabric_hosts.hpp"
#include "lib/fabric_oracle.hpp"
#include "lib/report.hpp"
#include "lib/storm.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "sim/fabric.hpp"
#include "sim/sim_transport.hpp"

namespace madstorm {
namespace {

namespace md = madengine::node;
namespace wire = madengine::wire;
using madengine::MadBuf;

std::unique_ptr<md::InternalNode> bring_up(const std::string& spec, unsigned requester_share = 0) {
  md::NodeConfig cfg;
  cfg.transport.kind = md::TransportKind::kSim;
  cfg.transport.generate = spec;
  cfg.engine.cores = 1;
  cfg.engine.pin = false;
  cfg.sm.guid2lid.clear();
  cfg.sa.journal.clear();
  if (requester_share != 0) cfg.sa.requester_share_max = requester_share;
  cfg.log.level = "warn";
  auto d = std::make_unique<md::InternalNode>(cfg);
  EXPECT_TRUE(d->wait_subnet_up(std::chrono::milliseconds(60'000)));
  return d;
}

// The storm's transport on every host port, opened once the ports know their SM.
std::unique_ptr<FabricHostsTransport> hosts_of(md::InternalNode& d) {
  auto t = std::make_unique<FabricHostsTransport>(*d.fabric());
  EXPECT_TRUE(t->open(madengine::AgentSpec{.gsi_client = true}));
  for (int i = 0; i < 1000 && t->local_port().sm_lid == 0; ++i) {
    d.pump();
    t->poll_events();
  }
  EXPECT_NE(t->local_port().sm_lid, 0);
  return t;
}

StormConfig storm_config(std::uint16_t sa_lid) {
  StormConfig c;
  c.sa.lid = sa_lid;
  c.window_max = 64;
  c.window_per_host_max = 4;
  return c;
}

StormResult storm(md::InternalNode& d, madengine::Transport& t, const std::vector<Host>& hosts, const StormConfig& cfg,
                  const WorkloadConfig& wc, PathOracle* oracle) {
  Workload w(wc, hosts);
  madengine::SteadyClock clock;
  Storm s(cfg, t, clock, hosts, w);
  s.set_idle([&d](Nanos) { d.pump(); });
  s.set_oracle(oracle);
  return s.run();
}

// A storm of `pattern` on ft2:8 with every PathRecord checked by the oracle
// (and, when asked, one answer planted wrong).
struct OracleRun {
  std::unique_ptr<md::InternalNode> daemon;
  StormResult result;
  std::uint64_t planted = 0;
};
OracleRun oracle_storm(Pattern pattern, PlantedFault plant = PlantedFault::kNone, std::uint64_t nth = 1) {
  OracleRun run;
  run.daemon = bring_up("ft2:8");
  auto t = hosts_of(*run.daemon);
  t->plant(plant, nth);
  FabricOracle oracle(*run.daemon->fabric());
  run.result = storm(*run.daemon, *t, t->hosts(), storm_config(t->local_port().sm_lid),
                     WorkloadConfig{.pattern = pattern}, &oracle);
  run.planted = t->planted();
  return run;
}

wire::Gid gid(std::uint64_t guid) { return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(guid)}; }

TEST(EmbeddedOracle, WalksAreTheFabricsOwnForwarding) {
  auto d = bring_up("ft2:8");
  auto t = hosts_of(*d);
  madengine::sim::Fabric& f = *d->fabric();
  FabricOracle oracle(f);
  const auto& hosts = t->hosts();
  ASSERT_EQ(hosts.size(), 32u);
  f.run_until(f.now_ns() + madengine::kNanosPerMilli);  // nothing of the SM's left in flight
  std::uint64_t tid = 1;
  for (std::uint32_t i = 0; i < hosts.size(); ++i) {
    for (std::uint32_t j = 0; j < hosts.size(); ++j) {
      if (i == j) continue;
      // A GSI response from host i to host j's LID, as the SA's answers travel.
      MadBuf b;
      auto& h = b.hdr();
      h.base_version = 1;
      h.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
      h.class_version = wire::kSaClassVersion;
      h.method = wire::method::kGetResp;
      h.tid = wire::be64::from(std::uint64_t{kStormTidTag} << 32 | tid++);
      b.addr.lid = hosts[j].lid;
      b.addr.remote_qpn = 1;
      b.addr.qkey = madengine::kGsiQkey;
      MadBuf* p = &b;
      const std::uint32_t from = i;
      const std::uint64_t before = f.counters().link_traversals;
      ASSERT_EQ(t->tx_burst_from(std::span<MadBuf* const>(&p, 1), std::span<const std::uint32_t>(&from, 1)), 1u);
      const std::uint64_t crossed = f.counters().link_traversals - before;
      f.run_until(f.now_ns() + madengine::kNanosPerMicro * 10);
      MadBuf in;
      MadBuf* q = &in;
      std::uint32_t at = kNoHost;
      ASSERT_EQ(t->rx_burst_at(std::span<MadBuf*>(&q, 1), std::span<std::uint32_t>(&at, 1)), 1u) << i << " -> " << j;
      EXPECT_EQ(at, j);
      const auto w = oracle.walk(oracle.port_of_lid(hosts[i].lid), hosts[j].lid);
      EXPECT_TRUE(w.reached) << i << " -> " << j;
      EXPECT_EQ(w.hops, crossed) << i << " -> " << j;
    }
  }
  EXPECT_LE(oracle.walks(), 12u * 32u);  // cached per (source switch, LID)
}

TEST(EmbeddedPorts, OneEndpointAtManyPortsSendsOnlyFromItsOwn) {
  auto d = bring_up("ft2:8");
  madengine::sim::Fabric& f = *d->fabric();
  auto t = hosts_of(*d);
  FabricOracle oracle(f);
  const madengine::sim::PortIdx p0 = oracle.port_of_lid(t->hosts()[0].lid);
  const madengine::sim::PortIdx p1 = oracle.port_of_lid(t->hosts()[1].lid);
  const madengine::sim::PortIdx sw = f.port(f.node_of(f.peer(p0)), 1);  // a switch port: not a host's
  EXPECT_THROW(f.attach_ports(std::vector<madengine::sim::PortIdx>{p0, sw}, madengine::AgentSpec{.gsi_client = true}, 8, 0),
               std::invalid_argument);
  const auto e = f.attach_ports(std::vector<madengine::sim::PortIdx>{p1}, madengine::AgentSpec{.gsi_client = true}, 8, 0);
  MadBuf b;
  b.hdr().mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  b.addr.lid = t->hosts()[2].lid;
  EXPECT_FALSE(f.send_from(e, p0, b));  // not one of its ports
  EXPECT_TRUE(f.send_from(e, p1, b));
  f.detach(e);
  EXPECT_FALSE(f.send_from(e, p1, b));
  // The storm's endpoint lost nothing by the other's coming and going: it still sends from every host.
  MadBuf* p = &b;
  const std::uint32_t from = 3;
  EXPECT_EQ(t->tx_burst_from(std::span<MadBuf* const>(&p, 1), std::span<const std::uint32_t>(&from, 1)), 1u);
}

TEST(EmbeddedOracle, RefusesEachWrongField) {
  auto d = bring_up("ft2:8");
  madengine::sim::Fabric& f = *d->fabric();
  auto t = hosts_of(*d);
  const Host& a = t->hosts()[0];
  const Host& b = t->hosts()[20];
  FabricOracle oracle(f);
  const auto w = oracle.walk(oracle.port_of_lid(a.lid), b.lid);
  ASSERT_TRUE(w.reached);
  wire::PathRecord good{};
  good.slid = wire::be16::from(a.lid);
  good.dlid = wire::be16::from(b.lid);
  good.sgid = gid(a.port_guid);
  good.dgid = gid(b.port_guid);
  good.pkey = wire::be16::from(0xffff);
  good.set_mtu(w.mtu);
  std::uint8_t code = 2;
  while (code <= madengine::wire::rate_code::kMax && rate_code_x10(code) != w.rate_x10) ++code;
  ASSERT_LE(code, 22) << "the walk's rate has a code";
  good.set_rate(code);
  good.set_reversible(true);
  EXPECT_EQ(oracle.check(good).verdict, PathVerdict::kOk);
  EXPECT_EQ(oracle.check(good).hops, w.hops);

  auto verdict = [&](auto change) {
    wire::PathRecord r = good;
    change(r);
    return oracle.check(r).verdict;
  };
  EXPECT_EQ(verdict([&](wire::PathRecord& r) { r.set_mtu(static_cast<std::uint8_t>(w.mtu - 1)); }), PathVerdict::kMtu);
  EXPECT_EQ(verdict([&](wire::PathRecord& r) { r.set_mtu(static_cast<std::uint8_t>(w.mtu + 1)); }), PathVerdict::kMtu);
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.set_rate(2); }), PathVerdict::kRate);  // 2.5 Gb/s
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.set_rate(0); }), PathVerdict::kRate);
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.pkey = wire::be16::from(0x8001); }), PathVerdict::kPKey);
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.pkey = wire::be16::from(0x7fff); }), PathVerdict::kOk);  // limited meets full
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.set_sl(1); }), PathVerdict::kSl);  // this SA reports no QoS
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.set_hop_limit(64); }), PathVerdict::kHopLimit);
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.set_hop_limit(1); }), PathVerdict::kOk);
  EXPECT_EQ(verdict([&](wire::PathRecord& r) { r.dgid = gid(a.port_guid); }), PathVerdict::kUnknownEnd);
  EXPECT_EQ(verdict([](wire::PathRecord& r) { r.dlid = wire::be16::from(0xbfff); }), PathVerdict::kUnknownEnd);

  // Without the SL-0 rule, an SL counts if the path has a data VL for it: the
  // default SL2VL maps SL14 to VL14, beyond the 8 operational VLs.
  FabricOracle any_sl(f, FabricOracleConfig{.expect_sl0 = false});
  EXPECT_EQ(any_sl.check(good).verdict, PathVerdict::kOk);
  wire::PathRecord sl1 = good;
  sl1.set_sl(1);
  EXPECT_EQ(any_sl.check(sl1).verdict, PathVerdict::kOk);
  wire::PathRecord sl14 = good;
  sl14.set_sl(14);
  EXPECT_EQ(any_sl.check(sl14).verdict, PathVerdict::kSl);

  // A link of the walk down: the DLID is not reached; the path back from b
  // fails the same way, so "reversible" is refused for a path into b too.
  const madengine::sim::PortIdx b_port = oracle.port_of_lid(b.lid);
  f.link_down(b_port);
  FabricOracle after(f);
  EXPECT_EQ(after.check(good).verdict, PathVerdict::kUnreached);
  EXPECT_FALSE(after.walk(b_port, a.lid).reached);
}

TEST(EmbeddedOracle, EveryPathRecordOfAJobStartIsChecked) {
  const OracleRun run = oracle_storm(Pattern::kJobStart);
  const StormResult& r = run.result;
  const StormCounters& c = r.counters;
  EXPECT_EQ(c.issued, 32u * 31u);
  EXPECT_EQ(c.answered, c.issued);
  EXPECT_EQ(c.errors, 0u);
  EXPECT_EQ(c.oracle_checked, c.issued);
  // The oracle's time is measured apart: without it the run is faster.
  EXPECT_GT(c.oracle_ns, 0u);
  EXPECT_GT(r.throughput_without_oracle_qps(), r.throughput_qps());
  // ft2:8: 4 hosts a leaf; the same leaf is 2 links away, any other leaf 4.
  EXPECT_EQ(c.oracle_hops[2], 32u * 3u);
  EXPECT_EQ(c.oracle_hops[4], 32u * 28u);
  EXPECT_TRUE(r.per_host_ports);
  EXPECT_TRUE(strict_problems(r, 32u * 31u).empty());
  EXPECT_EQ(run.daemon->sa().counters().total().dropped, 0u);
}

TEST(EmbeddedOracle, EveryRecordOfAGetTableStormIsChecked) {
  const OracleRun run = oracle_storm(Pattern::kGetTable);
  const StormResult& r = run.result;
  const StormCounters& c = r.counters;
  EXPECT_EQ(c.issued, 32u);
  EXPECT_EQ(c.answered, 32u) << "errors: " << c.errors << ", wrong paths: " << c.oracle_checked;
  EXPECT_GE(c.records, 32u * 32u);  // every host's path to every CA at least
  EXPECT_EQ(c.oracle_checked, c.records);
  EXPECT_TRUE(strict_problems(r, 32).empty());
}

TEST(EmbeddedOracle, APlantedWrongAnswerFailsTheStrictVerdict) {
  const OracleRun run = oracle_storm(Pattern::kJobStart, PlantedFault::kRate, 100);
  const StormResult& r = run.result;
  EXPECT_EQ(run.planted, 1u);
  EXPECT_EQ(r.counters.errors, 1u);
  EXPECT_EQ(r.counters.oracle_wrong_by[static_cast<std::size_t>(PathVerdict::kRate)], 1u);
  const auto problems = strict_problems(r, 32u * 31u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rate=1"), std::string::npos) << problems[0];
}

// The SA lets each requester (LID, QPN) queue 2 queries. Host 5 keeps 16 in
// flight, every other host 1.
StormConfig greedy_config(std::uint16_t sa_lid) {
  StormConfig c = storm_config(sa_lid);
  c.window_max = 256;
  c.window_per_host_max = 1;
  c.window_overrides = {{5, 16}};
  c.retry = RetryPolicy{.timeout_ms = 2000, .retries = 3, .busy_backoff_ms = 1, .busy_retries = 100};
  return c;
}

TEST(EmbeddedRequesters, OneGreedyHostGetsBusyOthersDoNot) {
  auto d = bring_up("ft2:8", 2);
  auto t = hosts_of(*d);
  const StormResult r = storm(*d, *t, t->hosts(), greedy_config(t->local_port().sm_lid),
                              WorkloadConfig{.pattern = Pattern::kJobStart}, nullptr);
  EXPECT_EQ(r.counters.answered, 32u * 31u);
  EXPECT_EQ(r.counters.busy, 0u);  // every BUSY query got through on a later try
  EXPECT_GT(r.busy_answers_by_host[5], 0u) << "peak " << r.window_peak;
  for (std::uint32_t h = 0; h < r.busy_answers_by_host.size(); ++h) {
    if (h != 5) {
      EXPECT_EQ(r.busy_answers_by_host[h], 0u) << "host " << h;
    }
  }
  EXPECT_EQ(d->sa().counters().total().busy, r.counters.busy_answers);
}

TEST(EmbeddedRequesters, OnePortForAllHostsMakesThemOneRequester) {
  auto d = bring_up("ft2:8", 2);
  auto hosts_t = hosts_of(*d);
  const std::vector<Host> hosts = hosts_t->hosts();
  hosts_t->close();
  madengine::sim::Fabric& f = *d->fabric();
  std::uint32_t node = f.node_count();
  while (node-- > 0 && f.is_switch(node)) {
  }
  madengine::sim::SimTransport one(f, node, 1, "sim");
  ASSERT_TRUE(one.open(madengine::AgentSpec{.gsi_client = true}));
  const StormResult r = storm(*d, one, hosts, greedy_config(hosts_t->local_port().sm_lid),
                              WorkloadConfig{.pattern = Pattern::kJobStart}, nullptr);
  EXPECT_FALSE(r.per_host_ports);
  EXPECT_EQ(r.counters.answered, 32u * 31u);
  std::size_t busy_hosts = 0;
  for (const std::uint32_t n : r.busy_answers_by_host) busy_hosts += n != 0 ? 1 : 0;
  EXPECT_GT(busy_hosts, 1u) << "the SA saw one requester, so polite hosts share the greedy one's BUSY";
}

}  // namespace
}  // namespace madstorm
