// Twenty failovers on ibsim (label ibsim): two madengine daemons, the
// executable on H1 and on H2, poll each other at 100 ms x 3 and the standby
// copies the master's SA state every 200 ms. Before each failover a client
// on H3 registers one more ServiceRecord at the master; the master is then
// killed (SIGKILL) at a drawn instant 0.4-1.4 s later, whatever its
// standby is doing. Every takeover must vouch with its copy (no
// reregistration asked), `saquery SR` on H3 must list every service
// registered so far, and no LID may move. The killed daemon comes back as
// the new standby, ranked below the new master (same priority when its
// GUID is higher, one lower otherwise), so the next failover has a standby.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "conformance.hpp"
#include "daemon_process.hpp"
#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa_records.hpp"
#include "umad_sa_client.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::wait_until;
namespace scm = wire::service_record_cm;

constexpr int kFailovers = 20;
constexpr std::uint64_t kServiceIdBase = 0x0010'0000'00fa'0000ull;

// The lines of `log` about the SA state handed on.
std::string state_lines(const std::string& log) {
  std::istringstream in(log);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.find("replica") != std::string::npos || line.find("journal") != std::string::npos ||
        line.find("sm/ha") != std::string::npos || line.find("takeover") != std::string::npos)
      out += line + "\n";
  return out;
}

std::string names_in(const std::string& saquery) {
  std::istringstream in(saquery);
  std::string out;
  for (std::string line; std::getline(in, line);)
    if (line.find("ServiceName") != std::string::npos || line.find("ServiceID") != std::string::npos) out += line + "\n";
  return out;
}

std::string service_name(int n) { return "ha.failover." + std::to_string(n); }

// Run only as a child of the test below: registers service N (infinite
// lease) for this port at the SA our port points at.
TEST(HaFailoverIbsimChild, RegisterService) {
  const char* n_env = std::getenv("MADENGINE_HA_FAILOVER_SERVICE");
  if (n_env == nullptr) GTEST_SKIP() << "runs only as a child of HaFailoverIbsim";
  const int n = std::atoi(n_env);
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  const LocalPort lp = t.local_port();
  ASSERT_NE(lp.sm_lid, 0);
  wire::ServiceRecord r{};
  r.service_id = wire::be64::from(kServiceIdBase + static_cast<std::uint64_t>(n));
  r.service_gid = {wire::be64::from(lp.subnet_prefix), wire::be64::from(lp.port_guid)};
  r.service_pkey = wire::be16::from(0xffff);
  r.service_lease = wire::be32::from(wire::kServiceLeaseInfinite);
  r.set_name(service_name(n));
  const wire::SaMad sa = wire::make_sa_request(
      wire::method::kSet, wire::sa_attr::kServiceRecord, 0x00000000'6b6b0000ull + static_cast<std::uint64_t>(n),
      scm::kServiceId | scm::kServiceGid | scm::kServicePKey | scm::kServiceLease | scm::kServiceName, r);
  const int status = ibsim::umad_sa_request(t, sa);
  t.close();
  ASSERT_NE(status, -1) << "the SA did not answer the ServiceRecord Set";
  EXPECT_EQ(status, 0);
}

// One of the two daemons (daemon_process.hpp), with its port GUID and the
// priority of its current start.
struct Sm {
  const char* host;
  std::string name;
  std::uint64_t guid = 0;
  int priority = 0;
  ibsim::DaemonProcess d;
  std::string log() const { return d.log(); }
  bool logged(const std::string& what) const { return d.logged(what); }
  bool start(const IbsimFabric& f, int prio) {
    priority = prio;
    return d.start(f, host,
                   "priority = " + std::to_string(prio) +
                       "\nsweep_interval_ms = 1000\nha_poll_interval_ms = 100\nha_poll_retries = 3\n"
                       "ha_replica_interval_ms = 200\n",
                   name);
  }
  void kill() { d.kill(); }
};

std::uint64_t port_guid(const IbsimFabric& f, const std::string& host) {
  const auto r = f.run("ibstat -p", host, 10s);
  return std::strtoull(r.out.c_str(), nullptr, 16);
}

TEST(HaFailoverIbsim, TwentyFailoversKeepEveryService) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"), ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  Sm a{.host = "H1", .name = "smA"};
  Sm b{.host = "H2", .name = "smB"};
  a.guid = port_guid(fabric, "H1");
  b.guid = port_guid(fabric, "H2");
  ASSERT_NE(a.guid, 0u);
  ASSERT_NE(b.guid, 0u);

  int master_priority = 15;
  ASSERT_TRUE(a.start(fabric, master_priority));
  ASSERT_TRUE(wait_until([&] { return a.logged("sm: subnet up"); }, 60s)) << a.log();
  const std::string lids_before = ibsim::topology_lids(fabric, "H3");
  ASSERT_FALSE(lids_before.empty());
  Sm* master = &a;
  Sm* standby = &b;
  // Ranked below the master: the same priority loses on a higher GUID (IBA 14.4.1.1).
  const auto below = [&](const Sm& s) { return s.guid > master->guid ? master_priority : master_priority - 1; };
  ASSERT_TRUE(standby->start(fabric, below(*standby)));

  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_ms(400, 1400);
  std::string kill_delays;
  for (int i = 0; i < kFailovers; ++i) {
    SCOPED_TRACE("failover " + std::to_string(i));
    ASSERT_TRUE(wait_until([&] { return standby->logged("-> STANDBY"); }, 60s)) << standby->log();
    // One more service at the master.
    const std::string self = std::filesystem::read_symlink("/proc/self/exe");
    const auto reg = fabric.run("MADENGINE_HA_FAILOVER_SERVICE=" + std::to_string(i) + " '" + self +
                                    "' --gtest_filter=HaFailoverIbsimChild.RegisterService",
                                "H3", 60s);
    ASSERT_EQ(reg.exit_code, 0) << reg.out << reg.err << master->log();
    const int delay = delay_ms(rng);
    kill_delays += std::to_string(delay) + " ";
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    master->kill();
    ASSERT_TRUE(wait_until([&] { return standby->logged("sm: subnet up"); }, 60s)) << standby->log();
    EXPECT_TRUE(standby->logged("sm: takeover: SA state from the last replica")) << standby->log();
    EXPECT_FALSE(standby->logged("clients are asked to reregister")) << standby->log();
    // Every service registered so far, at the new master.
    const auto sr = fabric.run("saquery SR", "H3", 20s);
    for (int n = 0; n <= i; ++n)
      EXPECT_NE(sr.out.find(service_name(n) + "\n"), std::string::npos)
          << service_name(n) << " is gone after failover " << i << "; the new master's log:\n"
          << state_lines(standby->log()) << "the old master's:\n" << state_lines(master->log()) << "saquery SR:\n"
          << names_in(sr.out) << sr.err;
    EXPECT_EQ(ibsim::topology_lids(fabric, "H3"), lids_before);
    if (::testing::Test::HasFailure()) break;
    // The killed one comes back as the standby.
    std::swap(master, standby);
    master_priority = master->priority;
    ASSERT_TRUE(standby->start(fabric, below(*standby)));
  }
  std::printf("kill delays after each registration (ms): %s\n", kill_delays.c_str());
}

}  // namespace
}  // namespace madengine
