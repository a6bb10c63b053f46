// osmtest, OpenSM's own SA test client, against OpenSM 3.3.23 and against
// madengine on ft2x4 (conformance.hpp: each SM on its own bare fabric,
// madengine from OpenSM's guid2lid), OpenSM and osmtest over the RMPP layer.
// `osmtest -f c` writes an inventory from whole GetTables (nodes, ports,
// every path, links); `-f v` checks it record by record with Gets and
// GetTables; `-f s` and `-f m` add ServiceRecords with leases and the
// multicast rules, `-f a` all of them and a wrong SM_Key. Both SAs must
// pass c, v and m with the same inventory, and s must end against
// madengine as it ends against OpenSM.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "conformance.hpp"
#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::MadengineRig;

constexpr const char* kClientHost = "H2";

// "DEFINE_NODE" ... lines of an inventory, counted by kind.
std::map<std::string, int> inventory_counts(const std::string& text) {
  std::map<std::string, int> n;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("DEFINE_", 0) == 0) ++n[line.substr(0, line.find_first_of(" \t"))];
  return n;
}

std::string counts_text(const std::map<std::string, int>& n) {
  std::string s;
  for (const auto& [k, v] : n) s += k + " " + std::to_string(v) + "\n";
  return s;
}

// How one osmtest flow ended: its exit status and its last TEST line
// ("TEST \"Multicast\" PASS"; osmtest prints one per flow).
struct Ending {
  int exit_code = -1;
  std::string test_line;
  bool operator==(const Ending&) const = default;
};

Ending ending_of(const ibsim::RunResult& r) {
  Ending e{r.exit_code, {}};
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (line.find("TEST \"") != std::string::npos) e.test_line = line.substr(line.find("TEST \""));
  return e;
}

// The flows compared: c (inventory), v (validate it), s (services) and m
// (multicast). `a` (v, a wrong SM_Key ignored, s, m) runs against madengine
// only: against OpenSM it hung to its time limit in 2 of 4 loaded runs
// (its MultiPathRecord answers timing out; docs/sa.md). Not f (a stress of
// 100,000 queries) nor q (docs/sa.md).
constexpr const char* kFlows[] = {"v", "s", "m"};

struct Flows {
  ibsim::RunResult create;
  std::map<std::string, ibsim::RunResult> run;
  std::string inventory;
};

// `osmtest -f c`, then each of kFlows on `f`, each once; stdout line-buffered
// so a flow that is killed at its time limit still shows how far it got.
Flows run_osmtest(const IbsimFabric& f) {
  Flows r;
  const std::string inv = f.work_dir() + "/osmtest.inventory";
  r.create = f.run("stdbuf -oL osmtest -f c -i " + inv, kClientHost, 60s);
  r.inventory = ibsim::conformance::read_text(inv);
  for (const char* flow : kFlows)
    r.run[flow] = f.run(std::string("stdbuf -oL osmtest -f ") + flow + " -i " + inv, kClientHost, 90s);
  return r;
}

// `osmtest -f a` against `f`.
ibsim::RunResult run_all_validations(const IbsimFabric& f) {
  return f.run("stdbuf -oL osmtest -f a -i " + f.work_dir() + "/osmtest.inventory", kClientHost, 90s);
}

std::string tail(const std::string& s) { return s.substr(s.size() > 20000 ? s.size() - 20000 : 0); }

void expect_passed(const Flows& r, const char* who) {
  EXPECT_EQ(r.create.exit_code, 0) << who << " -f c:\n" << r.create.out << r.create.err;
  EXPECT_NE(r.create.out.find("TEST \"Create Inventory\" PASS"), std::string::npos) << who << "\n" << r.create.out;
  for (const char* flow : {"v", "m"}) {
    const ibsim::RunResult& x = r.run.at(flow);
    EXPECT_EQ(x.exit_code, 0) << who << " -f " << flow << ":\n" << tail(x.out) << x.err;
    EXPECT_NE(x.out.find("ALL TESTS PASS"), std::string::npos) << who << " -f " << flow << ":\n" << tail(x.out);
  }
}

TEST(OsmtestIbsim, FlowsEndAgainstMadengineAsAgainstOpenSm) {
  SKIP_WITHOUT_SHIM();
  const std::string topo = ibsim::topology_path("ft2x4.topo");
  Flows osm;
  const auto o = ibsim::conformance::run_opensm(
      topo, "H1", kClientHost, {}, {}, [&osm](const IbsimFabric& f) { osm = run_osmtest(f); },
      ibsim::conformance::kLayered);
  ASSERT_TRUE(o.ok) << o.error;
  expect_passed(osm, "OpenSM");

  IbsimFabric fabric(topo, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, "H1", o.guid2lid)) << me.error;
  const Flows ours = run_osmtest(fabric);
  expect_passed(ours, "madengine");

  // Every flow ends as it does against OpenSM: s stops where
  // osmtest 3.3.23 finds its own ServiceData8 mismatch (it fails there
  // against OpenSM too), the others pass.
  for (const char* flow : kFlows) {
    const Ending theirs = ending_of(osm.run.at(flow)), mine = ending_of(ours.run.at(flow));
    std::printf("osmtest -f %s: OpenSM exit %d \"%s\", madengine exit %d \"%s\"\n", flow, theirs.exit_code,
                theirs.test_line.c_str(), mine.exit_code, mine.test_line.c_str());
    EXPECT_FALSE(theirs.test_line.empty()) << "OpenSM -f " << flow << ":\n" << tail(osm.run.at(flow).out);
    EXPECT_EQ(mine, theirs) << "-f " << flow << ", madengine:\n" << tail(ours.run.at(flow).out);
    // Where both fail, they fail at the same step: the ServiceRecord whose
    // data fields osmtest reads back unlike it sent them (docs/sa.md).
    if (theirs.exit_code != 0) {
      for (const Flows* side : std::initializer_list<const Flows*>{&osm, &ours}) {
        EXPECT_NE(side->run.at(flow).out.find("Data mismatch in service_data8"), std::string::npos)
            << (side == &osm ? "OpenSM" : "madengine") << " -f " << flow << ":\n" << tail(side->run.at(flow).out);
      }
    }
  }
  // -f a against madengine: validation and the wrong SM_Key (discarded,
  // osmtest waits for its time-out) pass; it stops where -f s stops.
  const ibsim::RunResult all = run_all_validations(fabric);
  EXPECT_EQ(ending_of(all).exit_code, ending_of(ours.run.at("s")).exit_code) << tail(all.out);
  EXPECT_EQ(all.out.find("ERR 0147"), std::string::npos) << "the wrong SM_Key was answered:\n" << tail(all.out);
  EXPECT_NE(all.out.find("Data mismatch in service_data8"), std::string::npos) << tail(all.out);
  const auto a = inventory_counts(osm.inventory), b = inventory_counts(ours.inventory);
  std::printf("osmtest inventory, OpenSM:\n%smadengine:\n%s", counts_text(a).c_str(), counts_text(b).c_str());
  EXPECT_EQ(a, b);
  // ft2x4: 14 nodes, 38 ports (switch ports too), every pair of its 14 end ports, 32 link ends.
  EXPECT_EQ(a.count("DEFINE_NODE") ? a.at("DEFINE_NODE") : 0, 14);
  EXPECT_EQ(a.count("DEFINE_PATH") ? a.at("DEFINE_PATH") : 0, 196);
}

}  // namespace
}  // namespace madengine
