// Every host of a 648-host fat tree joins its four IPoIB groups and
// subscribes, then leaves, joins again and subscribes again, from four
// requester processes at once (madstorm's rereg-join and rereg patterns),
// through ibsim's shim on both sides: every query is answered. The daemon
// answers in bursts; under the shim a write that waits for ibsim holds the
// lock the shim's receiver needs, and ibsim, blocked on our full queue,
// then never reads it (engine/umad/umad_shim.hpp). The deadlock shows when
// every process runs as a real-time thread (as the storm benchmarks run
// them): the test runs so, alone (SERIAL). Without the transport's wait for
// room it failed one run in three (3,283 of 5,832 answered in 60 s), the
// benchmark four in six; with it, none of eight.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ibsim_harness.hpp"
#include "sim/topology.hpp"
#include "storm_rig.hpp"

namespace madengine::testing {
namespace {

using namespace std::chrono_literals;

TEST(JoinStormIbsim, EveryJoinLeaveAndSubscriptionOfAWholeFabricIsAnswered) {
  // ibsim, the daemon and madstorm inherit it.
  const sched_param rt{.sched_priority = 5};
  if (::sched_setscheduler(0, SCHED_FIFO, &rt) != 0) GTEST_SKIP() << "needs SCHED_FIFO (root)";
  StormFabric sf;
  ASSERT_TRUE(parse_storm_fabric("ft2:36", sf));
  const std::string dir = std::filesystem::temp_directory_path() / ("join-storm-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string topo = dir + "/fabric.topo";
  sim::save_topology(sf.topo, topo);
  ibsim::IbsimFabric fabric(topo, {.start_timeout = 60s});
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  const std::string config = dir + "/madengine.toml", log = dir + "/madengine.log";
  std::ofstream(config) << "[transport]\nkind = \"umad\"\n[sm]\nguid2lid = \"" << dir
                        << "/guid2lid\"\n[sa]\njournal = \"\"\n[log]\nlevel = \"info\"\nfile = \"" << log << "\"\n";
  DaemonOnIbsim daemon(fabric, MADENGINE_BIN, dir, config, log, sf.sm_host);
  ASSERT_TRUE(daemon.ok()) << daemon.error();
  ASSERT_TRUE(daemon.wait_log("sm: subnet up", 1, 120s)) << daemon.log();

  // Four requesters spread over the fabric, none on the SM's host.
  std::vector<std::string> cas;
  for (const auto& n : sf.topo.nodes)
    if (!n.is_switch() && n.id != sf.sm_host) cas.push_back(n.id);
  std::vector<std::string> at;
  for (std::size_t i = 0; i < 4; ++i) at.push_back(cas[cas.size() - 1 - i * (cas.size() / 4)]);
  const std::string hosts = dir + "/hosts";
  const auto found = fabric.run(std::string(MADSTORM_BIN) + " -n 1 --no-progress --save-hosts " + hosts, at[0], 120s);
  ASSERT_TRUE(std::filesystem::exists(hosts)) << found.out << found.err;

  // A storm takes well under a second; the deadlock made it take minutes.
  const ShardedStorm join = run_sharded_storm(fabric, MADSTORM_BIN, at, hosts, "rereg-join", dir + "/join", 60s);
  EXPECT_EQ(join.sum.issued, 648u * 5u);  // four groups and a subscription a host
  EXPECT_TRUE(join.ok) << join.sum.answered << " of " << join.sum.issued << " answered";
  EXPECT_EQ(join.sum.busy + join.sum.errors, 0u);
  const ShardedStorm rejoin = run_sharded_storm(fabric, MADSTORM_BIN, at, hosts, "rereg", dir + "/rereg", 60s);
  EXPECT_EQ(rejoin.sum.issued, 648u * 9u);  // four leaves, four joins, a subscription
  EXPECT_TRUE(rejoin.ok) << rejoin.sum.answered << " of " << rejoin.sum.issued << " answered";
  EXPECT_EQ(rejoin.sum.busy + rejoin.sum.errors, 0u);
  EXPECT_EQ(count_of(daemon.log(), "watchdog"), 0u) << daemon.log();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace madengine::testing
