// The performance manager on ibsim: what it read of every linked port
// equals what perfquery reads of the same port (PortCounters, and
// PortCountersExtended with -x). ibsim's error counters stay as set (the
// console's PerformanceSet gives some ports non-zero ones): compared
// exactly. Its data and packet counters move with every MAD that crosses a
// port (perfquery's own among them), so the node is stopped first and
// perfquery's figure is at least ours, by no more than the MADs that could
// have crossed the port since: the rest of the manager's last round, the
// SM's last light sweep and perfquery's queries (each a request and an answer).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "node/internal_node.hpp"
#include "perfmgr/perf_manager.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using perfmgr::Counter;

// "Name:.......value" lines of perfquery's output.
std::map<std::string, std::uint64_t> fields(const std::string& out) {
  std::map<std::string, std::uint64_t> m;
  static const std::regex line(R"(^(\w+):\.*(0x[0-9a-fA-F]+|\d+)$)");
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) {
    std::smatch mm;
    if (std::regex_match(l, mm, line)) m[mm[1]] = std::stoull(mm[2], nullptr, 0);
  }
  return m;
}

TEST(PerfMgrIbsim, ReadingsEqualPerfquery) {
  IbsimFabric fabric(ibsim::topology_path("ft2x4.topo"), {.console = true});
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  // Error counters perfquery and the manager must both see.
  for (const char* set : {R"(PerformanceSet "L2"[3] PortCounters.SymbolErrorCounter=7)",
                          R"(PerformanceSet "H5"[1] PortCounters.PortRcvErrors=3)",
                          R"(PerformanceSet "P1"[2] PortCounters.LinkDownedCounter=2)",
                          R"(PerformanceSet "H3"[1] PortCounters.PortXmitDiscards=11)"})
    fabric.console(set);
  fabric.attach_self("H1");
  node::InternalOptions o;
  o.perfmgr.enabled = true;
  o.perfmgr.interval_ms = 300;
  node::InternalNode n(ibsim::MadengineRig::config(1), {}, o);
  n.start();
  ASSERT_TRUE(n.sm().wait_subnet_up(60s));
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while ((!n.perfmgr()->table() || n.perfmgr()->table()->round < 2) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(20ms);
  n.stop();  // the manager sends nothing more: only perfquery's MADs move the counters now
  const auto table = n.perfmgr()->table();
  ASSERT_TRUE(table && table->round >= 2);
  ASSERT_EQ(table->ports.size(), 8u + 16u + 8u);
  const perfmgr::PerfMgrCounters pc = n.perfmgr()->counters();
  const std::uint64_t since_read = pc.mads / pc.rounds + n.sm().status().last_light_smps;
  std::uint64_t queries = 0, nonzero = 0;
  for (const perfmgr::PortPerf& p : table->ports) {
    SCOPED_TRACE(fmt::format("{} port {} (lid {})", p.description, p.port_num, p.lid));
    const auto basic = fabric.run(fmt::format("perfquery {} {}", p.lid, p.port_num), "H2", 60s);
    const auto ext = fabric.run(fmt::format("perfquery -x {} {}", p.lid, p.port_num), "H2", 60s);
    ASSERT_EQ(basic.exit_code, 0) << basic.err;
    ASSERT_EQ(ext.exit_code, 0) << ext.err;
    queries += 2;
    const auto b = fields(basic.out), x = fields(ext.out);
    EXPECT_TRUE(p.extended);  // ibsim's PMAs advertise IsExtendedWidthSupported
    for (std::size_t i = perfmgr::kFirstError; i < perfmgr::kCounters; ++i) {
      const char* name = perfmgr::iba_name(static_cast<Counter>(i));
      ASSERT_TRUE(b.contains(name)) << name << "\n" << basic.out;
      EXPECT_EQ(p.raw[i], b.at(name)) << name;
      nonzero += p.raw[i] != 0;
    }
    // ibsim counts a MAD's data as 72 words on every port it crosses; the
    // 64-bit counters perfquery -x reads now are ours plus the MADs that
    // crossed since (at most perfquery's own queries, request and answer).
    for (const Counter c : {Counter::kXmitData, Counter::kRcvData, Counter::kXmitPkts, Counter::kRcvPkts}) {
      const char* name = perfmgr::iba_name(c);
      ASSERT_TRUE(x.contains(name)) << name << "\n" << ext.out;
      const std::uint64_t per_mad = c == Counter::kXmitData || c == Counter::kRcvData ? 72 : 1;
      EXPECT_GE(x.at(name), at(p.raw, c)) << name;
      EXPECT_LE(x.at(name) - at(p.raw, c), 2 * (since_read + queries) * per_mad) << name;
    }
  }
  EXPECT_EQ(nonzero, 4u);  // the four counters set on the console
}

}  // namespace
}  // namespace madengine
