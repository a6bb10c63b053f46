// SA state across a madengine failover on ibsim (label ibsim): a madengine
// master (the `madengine` executable, on H1) and a madengine standby (a
// Daemon in this process, on H2); a client on H3 registers a ServiceRecord
// through umad (one MAD each way through the shim); the master is killed;
// the standby takes over with the record it replicated and answers the
// client's ServiceRecord GetTable (`saquery SR`) with it; LIDs unchanged; the
// new master does not ask clients to reregister.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/sm.hpp"
#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "umad_sa_client.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::topology_lids;
using ibsim::wait_until;
namespace scm = wire::service_record_cm;

constexpr const char* kServiceName = "ha.ibsim.state";
constexpr std::uint64_t kServiceId = 0x0010'0000'00ab'cdefull;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Run only as a child of the test below (skipped otherwise): registers a
// ServiceRecord (lease 600 s) for this port at the SA our port points at,
// with our own timer (the shim never reports a send timeout).
TEST(HaStateIbsimChild, RegisterService) {
  if (std::getenv("MADENGINE_HA_STATE_CHILD") == nullptr) GTEST_SKIP() << "runs only as a child of HaStateIbsim";
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  const LocalPort lp = t.local_port();
  ASSERT_NE(lp.sm_lid, 0);
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(kServiceId);
  r.service_gid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
  r.service_pkey = wire::be16::from(0xffff);
  r.service_lease = wire::be32::from(600);
  r.set_name(kServiceName);
  const wire::SaMad sa = wire::make_sa_request(
      wire::method::kSet, wire::sa_attr::kServiceRecord, 0x00000000'6a6a0001ull,
      scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease | scm::kServiceName, r);
  const int status = ibsim::umad_sa_request(t, sa);
  t.close();
  ASSERT_NE(status, -1) << "the SA did not answer the ServiceRecord Set";
  EXPECT_EQ(status, 0);
}

TEST(HaStateIbsim, StandbyTakesOverWithTheMastersServiceRecord) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  const std::string dir = fabric.work_dir();
  std::filesystem::create_directories(dir + "/master");
  {
    std::ofstream cfg(dir + "/master/madengine.toml");
    cfg << "[engine]\ncores = 1\npin = false\nidle = \"block\"\n[transport]\nkind = \"umad\"\n"
        << "[sm]\npriority = 10\nguid2lid = \"" << dir << "/master/guid2lid\"\nsweep_interval_ms = 1000\n"
        << "ha_poll_interval_ms = 100\nha_poll_retries = 3\nha_replica_interval_ms = 200\n"
        << "[sa]\njournal = \"" << dir << "/master/sa.journal\"\n[log]\nlevel = \"info\"\n";
  }
  // The master: the madengine executable in the background on H1.
  const IbsimFabric::Background bg =
      fabric.start_background(std::string("\"") + MADENGINE_BIN + "\" -c master/madengine.toml", "master/log", "H1");
  const pid_t master = bg.pid();
  ASSERT_GT(master, 0);
  ASSERT_TRUE(wait_until([&] { return read_file(dir + "/master/log").find("sm: subnet up") != std::string::npos; }, 60s))
      << dir << ": " << read_file(dir + "/master/log");

  // The standby: a Daemon in this process on H2.
  fabric.attach_self("H2");
  node::NodeConfig c;
  c.transport.kind = node::TransportKind::kUmad;
  c.engine.cores = 1;
  c.engine.pin = false;
  // Both SMs block when idle (the default), with a 300 ms polling budget.
  // With a watcher thread between the shim and the core, wake-ups cost
  // several scheduler hops and at load 10 made 3 of 4 runs miss the budget;
  // since the core waits inside the shim itself, 12 of 12 runs passed (6 of
  // them with two CPU hogs and a CI build running).
  c.engine.idle = "block";
  c.sm.priority = 2;
  c.sm.guid2lid = dir + "/standby-guid2lid";
  c.sa.journal = dir + "/standby-sa.journal";
  c.sm.sweep_interval_ms = 1000;
  c.sm.ha_poll_interval_ms = 100;
  c.sm.ha_poll_retries = 3;
  c.sm.ha_replica_interval_ms = 200;
  node::InternalNode standby(c);
  standby.start();
  sm::SubnetManager& sm = standby.sm();
  ASSERT_TRUE(sm.wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kStandby; }, 60s));

  // The client on H3 registers at the master.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const auto reg = fabric.run("MADENGINE_HA_STATE_CHILD=1 '" + self + "' --gtest_filter=HaStateIbsimChild.RegisterService",
                              "H3", 60s);
  ASSERT_EQ(reg.exit_code, 0) << reg.out << reg.err;
  // The LIDs before the kill, read before the last replica rounds so the
  // kill follows a fresh round.
  const std::string lids_before = topology_lids(fabric, "H3");
  ASSERT_FALSE(lids_before.empty()) << "ibnetdiscover gave nothing";
  // A round that started after the registration has completed (the one in
  // flight at that moment may not have it).
  const std::uint64_t complete = sm.status().replica.complete;
  ASSERT_TRUE(sm.wait_for([&](const sm::SmStatus& s) { return s.replica.complete >= complete + 2; }, 30s))
      << "rounds " << sm.status().replica.rounds << " failed " << sm.status().replica.failed << " timed out "
      << sm.status().replica.timed_out;

  {
    const sm::SmStatus s = sm.status();
    std::printf("replica rounds %llu complete %llu failed %llu timed out %llu, last %lld us, longest %lld us\n",
                static_cast<unsigned long long>(s.replica.rounds), static_cast<unsigned long long>(s.replica.complete),
                static_cast<unsigned long long>(s.replica.failed), static_cast<unsigned long long>(s.replica.timed_out),
                static_cast<long long>(s.replica.last_round_us), static_cast<long long>(s.replica.max_round_us));
  }
  ::kill(master, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(sm.wait_for([](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.epoch != 0; }, 60s));
  const auto published = std::chrono::steady_clock::now();
  ASSERT_TRUE(sm.wait_for(
      [](const sm::SmStatus& s) { return s.state == wire::SmState::kMaster && s.subnet_up; }, 60s));
  // Reported for docs/perf/ha.md, not checked (wall time on a shared machine).
  std::printf("failover on ibsim (100 ms x 3 polls): first publication %lld ms, subnet up %lld ms after the kill\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(published - killed).count()),
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed).count()));
  const sm::SmStatus st = sm.status();
  EXPECT_EQ(st.sa_state_handed_on, 1u) << "replica rounds " << st.replica.rounds << " complete " << st.replica.complete
                                       << " failed " << st.replica.failed << " timed out " << st.replica.timed_out;
  EXPECT_EQ(st.vouched_masterships, 1u);
  EXPECT_EQ(st.reregister_masterships, 0u);
  EXPECT_EQ(st.last_heavy.bringup.client_reregisters, 0u);
  EXPECT_EQ(st.last_heavy.lids_new, 0u);

  // The client's GetTable (saquery SR) reaches the new master and shows the record.
  std::string sr;
  for (int attempt = 0; attempt < 3 && sr.find(kServiceName) == std::string::npos; ++attempt) {
    const auto r = fabric.run("saquery SR", "H3", 10s);
    sr = "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") + "\n" + r.out + r.err;
    std::printf("saquery SR, attempt %d:\n%s\n", attempt, sr.c_str());
  }
  EXPECT_NE(sr.find(kServiceName), std::string::npos) << sr;
  EXPECT_NE(sr.find("0x0010000000abcdef"), std::string::npos) << sr;
  EXPECT_EQ(topology_lids(fabric, "H3"), lids_before);
  standby.stop();
}

}  // namespace
}  // namespace madengine
