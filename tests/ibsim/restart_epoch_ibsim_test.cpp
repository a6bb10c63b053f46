// Warm restart from the persisted epoch (label ibsim): the madengine
// executable brings a fat tree up from bare ibsim and writes its epoch; it
// is SIGKILLed and started again with the same state files, and this
// process (an ibsim client on another host) gets a PathRecord and a
// NodeRecord identical to those before the kill, before the restarted
// daemon's first sweep has published anything (its log says when it did).
#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <string>

#include "daemon_process.hpp"
#include "ibsim_harness.hpp"
#include "sa_probe.hpp"
#include "sim/generators.hpp"
#include "sim/topology.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::DaemonProcess;
using ibsim::IbsimFabric;
using ibsim::wait_until;

// "YYYY-mm-dd HH:MM:SS.mmm" in local time, as the daemon's log stamps its lines.
std::string log_stamp(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03d", buf, static_cast<int>(ms % 1000));
  return out;
}

// The stamp of the first line holding `needle` ("" if none).
std::string stamp_of(const std::string& log, const std::string& needle) {
  const auto at = log.find(needle);
  if (at == std::string::npos) return {};
  const auto begin = log.rfind('\n', at);
  return log.substr(begin == std::string::npos ? 0 : begin + 1, 23);
}

TEST(RestartEpochIbsim, RestartAnswersAsBeforeTheKillBeforeItsFirstSweepPublishes) {
  SKIP_WITHOUT_SHIM();
  const sim::Topology topo = sim::make_fat_tree_2level({.k = 24});  // 288 hosts, 36 switches
  std::string hosts[2];
  for (const auto& n : topo.nodes)
    if (!n.is_switch()) (hosts[0].empty() ? hosts[0] : hosts[1]) = n.id;  // the first and the last host
  const std::string topo_path = ::testing::TempDir() + "/restart-epoch-" + std::to_string(::getpid()) + ".topo";
  sim::save_topology(topo, topo_path);
  IbsimFabric fabric(topo_path);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  DaemonProcess sm;
  ASSERT_TRUE(sm.start(fabric, hosts[0].c_str()));
  ASSERT_TRUE(wait_until([&] { return sm.logged("sm: subnet up"); }, 120s)) << sm.log();
  ASSERT_TRUE(wait_until([&] { return sm.logged("sa epoch " + sm.dir + "/sa-epoch: epoch"); }, 30s)) << sm.log();

  fabric.attach_self(hosts[1]);
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  const LocalPort lp = t.local_port();
  ASSERT_NE(lp.sm_lid, 0);
  testing::SaProbe probe(t);
  const wire::SaMad path = testing::path_record_get(lp.lid, lp.sm_lid);
  const wire::SaMad node = testing::node_record_get(lp.sm_lid);
  const auto path_before = probe.ask(path);
  const auto node_before = probe.ask(node);
  ASSERT_TRUE(path_before && node_before);
  ASSERT_EQ(path_before->status, 0);
  ASSERT_EQ(node_before->status, 0);

  sm.kill();
  ASSERT_TRUE(sm.start(fabric, hosts[0].c_str()));
  std::chrono::steady_clock::time_point at{};
  std::uint64_t wrong = 0, not_ready = 0;
  if (!testing::wait_for_answer(probe, path, *path_before, 2ms, 60s, at, wrong, not_ready)) {
    const auto now = probe.ask(path);
    FAIL() << wrong << " answers differed, " << not_ready << " were errors; now "
           << (now ? testing::differences(*now, *path_before) : std::string("no answer")) << "\n" << sm.log();
  }
  const std::string answered_at = log_stamp(std::chrono::system_clock::now());
  const auto node_after = probe.ask(node);
  ASSERT_TRUE(node_after.has_value());
  EXPECT_EQ(*node_after, *node_before);
  EXPECT_EQ(wrong, 0u) << "answers that differ from before the kill";

  ASSERT_TRUE(wait_until([&] { return sm.logged("sm: subnet up"); }, 120s)) << sm.log();
  const std::string log = sm.log();
  EXPECT_NE(log.find("of the last run published"), std::string::npos) << log;
  // The first sweep's first publication: early (LIDs unchanged), else at subnet up.
  std::string published = stamp_of(log, "SA answering from epoch");
  if (published.empty()) published = stamp_of(log, "sm: subnet up");
  ASSERT_FALSE(published.empty()) << log;
  EXPECT_LT(answered_at, published) << "answered at " << answered_at << ", the first sweep published at " << published
                                    << "\n" << log;
  // LIDs kept: the port's LID and the SM LID as before.
  const auto path_again = probe.ask(path);
  ASSERT_TRUE(path_again.has_value());
  EXPECT_EQ(*path_again, *path_before);
  t.close();
}

}  // namespace
}  // namespace madengine
