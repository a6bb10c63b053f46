// Two running subnets joined (label ibsim), for every pairing of SMs:
// OpenSM and madengine (the executables, defaults but the priority), the
// higher (15) in subnet A, the lower (10) in B, each brought up from bare
// ibsim. Both number their subnets alike (LIDs 1-3), as separate SMs do.
// Two seconds after both are up, ibsim's console links the two switches; the
// test waits until there is one master (the higher, as the SM LID of a port
// in each subnet names it), every LID is unique and a route crosses from A
// to B (ibtracert), and prints how long that took (wall clock, to the check
// that saw it; a check runs sminfo, ibnetdiscover and ibtracert through the
// shim). The figures go to docs/perf/ha.md; a join over 2 s fails.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "ibsim_harness.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::wait_until;

enum class Kind { kOpenSm, kMadengine };
const char* name(Kind k) { return k == Kind::kOpenSm ? "OpenSM" : "madengine"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An SM process on `host` of `f`, in dir/<label>, its pid in dir/<label>/pid.
struct SmProcess {
  Kind kind;
  std::string dir;
  pid_t pid = -1;
  bool start(const IbsimFabric& f, Kind k, int priority, const char* host, const std::string& label) {
    kind = k;
    dir = f.work_dir() + "/" + label;
    std::filesystem::create_directories(dir);
    std::string cmd;
    if (k == Kind::kOpenSm) {
      cmd = "OSM_TMP_DIR=" + dir + " OSM_CACHE_DIR=" + dir + " exec opensm -f " + dir + "/log -e -d 2 -p " +
            std::to_string(priority);
    } else {
      std::ofstream(dir + "/madengine.toml") << "[engine]\npin = false\n[transport]\nkind = \"umad\"\n[sm]\npriority = "
                                              << priority << "\nguid2lid = \"" << dir << "/guid2lid\"\n[sa]\njournal = \"\"\n"
                                              << "[log]\nfile = \"" << dir << "/log\"\n";
      cmd = "exec \"" + std::string(MADENGINE_BIN) + "\" -c " + dir + "/madengine.toml";
    }
    const auto r = f.run("setsid sh -c 'echo $$ > " + dir + "/pid; " + cmd + "' </dev/null >" + dir +
                             "/out 2>&1 & while [ ! -s " + dir + "/pid ]; do sleep 0.01; done",
                         host, 10s);
    pid = static_cast<pid_t>(std::atoi(read_file(dir + "/pid").c_str()));
    return r.exit_code == 0 && pid > 0;
  }
  bool up() const {
    return read_file(dir + "/log").find(kind == Kind::kOpenSm ? "SUBNET UP" : "sm: subnet up") != std::string::npos;
  }
  ~SmProcess() {
    if (pid > 0) ::kill(pid, SIGKILL);
  }
};

// `sminfo` on `host`: the GUID of the master its port names ("" if none answers).
std::string master_seen_from(const IbsimFabric& f, const char* host) {
  const auto r = f.run("sminfo", host, 5s);  // "sminfo: sm lid 1 sm guid 0x100001, activity ... SMINFO_MASTER"
  if (r.exit_code != 0 || r.out.find("SMINFO_MASTER") == std::string::npos) return {};
  const auto at = r.out.find("sm guid ");
  if (at == std::string::npos) return {};
  return r.out.substr(at + 8, r.out.find(',', at) - at - 8);
}

// Each node's LID by name, as `ibnetdiscover -p` from `host` sees them
// (lines "CA 3 1 0x... 4x SDR - SW 2 2 0x... ( 'HA2' - 'SA' )"); empty if
// a node is missing, has LID 0 or shares its LID with another.
std::map<std::string, int> unique_lids(const IbsimFabric& f, const char* host) {
  const auto r = f.run("ibnetdiscover -p", host, 10s);
  if (r.exit_code != 0) return {};
  std::map<std::string, int> by_name;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string type;
    int lid = 0;
    if (!(w >> type >> lid) || (type != "CA" && type != "SW")) continue;
    const auto q = line.find("( '");
    if (q == std::string::npos) continue;  // an unlinked switch port: no names
    const std::string name = line.substr(q + 3, line.find('\'', q + 3) - q - 3);
    by_name[name] = lid;
  }
  std::set<int> lids;
  for (const auto& [name, lid] : by_name)
    if (lid == 0 || !lids.insert(lid).second) return {};
  return by_name.size() == 6 ? by_name : std::map<std::string, int>{};
}

// A route from HA2 to HB2 through the LFTs (ibtracert walks them).
bool routes_across(const IbsimFabric& f, const std::map<std::string, int>& lids) {
  const auto t = f.run("ibtracert " + std::to_string(lids.at("HA2")) + " " + std::to_string(lids.at("HB2")), "HA2", 5s);
  return t.exit_code == 0 && t.out.find("To ca") != std::string::npos && t.out.find("\"HB2\"") != std::string::npos;
}

struct Pairing {
  Kind high, low;
};

class HaJoinIbsim : public ::testing::TestWithParam<Pairing> {};

TEST_P(HaJoinIbsim, TwoRunningSubnetsEndWithOneMaster) {
  SKIP_WITHOUT_SHIM();
  const Pairing p = GetParam();
  IbsimFabric fabric(ibsim::topology_path("two_subnets.topo"), {.console = true});
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  SmProcess high, low;
  ASSERT_TRUE(high.start(fabric, p.high, 15, "HA1", "high"));
  ASSERT_TRUE(low.start(fabric, p.low, 10, "HB1", "low"));
  ASSERT_TRUE(wait_until([&] { return high.up() && low.up(); }, 120s))
      << "high:\n" << read_file(high.dir + "/log") << "\nlow:\n" << read_file(low.dir + "/log");
  const std::string high_guid = master_seen_from(fabric, "HA2");
  ASSERT_FALSE(high_guid.empty());
  ASSERT_FALSE(master_seen_from(fabric, "HB2").empty());

  // Running subnets: each master past its first sweeps (OpenSM may miss a
  // link made within ~0.1 s of its SUBNET UP and then never sweeps again).
  std::this_thread::sleep_for(2s);
  ASSERT_TRUE(fabric.console("Link \"SA\"[3] \"SB\"[3]"));
  const auto t0 = std::chrono::steady_clock::now();
  const bool both_opensm = p.high == Kind::kOpenSm && p.low == Kind::kOpenSm;
  std::string last;  // what the last check saw, for a failure message
  const bool joined = wait_until(
      [&] {
        const std::string a = master_seen_from(fabric, "HA2"), b = master_seen_from(fabric, "HB2");
        last = "master seen from HA2 '" + a + "', from HB2 '" + b + "'";
        if (a != high_guid || b != high_guid) return false;
        const auto lids = unique_lids(fabric, "HA2");
        last += lids.empty() ? ", LIDs not unique:\n" + fabric.run("ibnetdiscover -p", "HA2", 10s).out : ", no route across";
        return !lids.empty() && routes_across(fabric, lids);
      },
      both_opensm ? 10s : 60s, 50ms);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("join %s(15) + %s(10): %s %.2f s wall (load %s)\n", name(p.high), name(p.low),
              joined ? "one master, unique LIDs, routes across after" : "NOT joined within", took,
              read_file("/proc/loadavg").c_str());
  // OpenSM over OpenSM is the reference, and on ibsim it sometimes never
  // joins: both subnets numbered the same LIDs, so the higher OpenSM's trap
  // 144 to the lower's SM LID reaches itself, ibsim swallows the repress and
  // its sweep waits on that trap for good (docs/perf/ha.md).
  if (both_opensm && !joined) GTEST_SKIP() << "OpenSM over OpenSM did not join in 10 s: " << last;
  EXPECT_TRUE(joined) << last << "\nhigh:\n" << read_file(high.dir + "/log") << "\nlow:\n" << read_file(low.dir + "/log");
  // Joins take 0.1-0.3 s here (docs/perf/ha.md); the bound is the target,
  // far from that noise. The 60 s above only guards against a hang.
  EXPECT_LE(took, 2.0) << "the join took " << took << " s";
}

INSTANTIATE_TEST_SUITE_P(Pairings, HaJoinIbsim,
                         ::testing::Values(Pairing{Kind::kOpenSm, Kind::kOpenSm}, Pairing{Kind::kMadengine, Kind::kOpenSm},
                                           Pairing{Kind::kOpenSm, Kind::kMadengine},
                                           Pairing{Kind::kMadengine, Kind::kMadengine}),
                         [](const auto& param_info) {
                           return std::string(name(param_info.param.high)) + "Over" + name(param_info.param.low);
                         });

}  // namespace
}  // namespace madengine
