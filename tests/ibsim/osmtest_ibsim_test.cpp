// osmtest, OpenSM's own SA test client, against OpenSM 3.3.23 and against
// madengine on ft2x4 (conformance.hpp: each SM on its own bare fabric,
// madengine from OpenSM's guid2lid), OpenSM and osmtest over the RMPP layer.
// `osmtest -f c` writes an inventory from whole GetTables (nodes, ports,
// every path, links); `-f v` checks it record by record with Gets and
// GetTables; `-f s` and `-f m` add ServiceRecords with leases and the
// multicast rules, `-f a` all of them and a wrong SM_Key, `-f q` every
// port's SL2VL and VLArb records, `-f f` floods the SA with queries. Every
// flow must pass against both SAs, with the same inventory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

using FlowList = std::vector<std::string>;

struct Flows {
  ibsim::RunResult create;
  std::map<std::string, ibsim::RunResult> run;
  std::string inventory;
};

// `osmtest -f c`, then each of `flows` on `f`, each once; stdout line-buffered
// so a flow that is killed at its time limit still shows how far it got.
Flows run_osmtest(const IbsimFabric& f, const FlowList& flows) {
  Flows r;
  const std::string inv = f.work_dir() + "/osmtest.inventory";
  r.create = f.run("stdbuf -oL osmtest -f c -i " + inv, kClientHost, 60s);
  r.inventory = ibsim::conformance::read_text(inv);
  for (const std::string& flow : flows)
    r.run[flow] = f.run("stdbuf -oL osmtest -f " + flow + " -i " + inv, kClientHost, flow == "f" ? 300s : 90s);
  return r;
}

std::string tail(const std::string& s) { return s.substr(s.size() > 20000 ? s.size() - 20000 : 0); }

void expect_passed(const Flows& r, const FlowList& flows, const char* who) {
  EXPECT_EQ(r.create.exit_code, 0) << who << " -f c:\n" << r.create.out << r.create.err;
  EXPECT_NE(r.create.out.find("TEST \"Create Inventory\" PASS"), std::string::npos) << who << "\n" << r.create.out;
  for (const std::string& flow : flows) {
    const ibsim::RunResult& x = r.run.at(flow);
    EXPECT_EQ(x.exit_code, 0) << who << " -f " << flow << ":\n" << tail(x.out) << x.err;
    const std::string line = ending_of(x).test_line;
    EXPECT_EQ(line.substr(line.size() > 5 ? line.size() - 5 : 0), " PASS") << who << " -f " << flow << ":\n" << tail(x.out);
  }
}

// osmtest's flows against OpenSM, then against madengine on a fresh fabric
// with OpenSM's LIDs: every flow passes on both, ends alike, and both
// inventories count the same.
void expect_flows_pass_on_both(const FlowList& flows) {
  const std::string topo = ibsim::topology_path("ft2x4.topo");
  Flows osm;
  const auto o = ibsim::conformance::run_opensm(
      topo, "H1", kClientHost, {}, {}, [&](const IbsimFabric& f) { osm = run_osmtest(f, flows); },
      ibsim::conformance::kLayered);
  ASSERT_TRUE(o.ok) << o.error;
  expect_passed(osm, flows, "OpenSM");

  IbsimFabric fabric(topo, ibsim::conformance::kLayered);
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  MadengineRig me;
  // -f q asks for every switch port's SL2VL and VLArb tables, which the SM
  // reads only when told to (docs/sa.md).
  ASSERT_TRUE(me.start_from_opensm_lids(fabric, "H1", o.guid2lid, MadengineRig::opensm_keyed(),
                                        [](sm::SmConfig& c) { c.read_switch_port_tables = true; }))
      << me.error;
  const Flows ours = run_osmtest(fabric, flows);
  expect_passed(ours, flows, "madengine");

  for (const std::string& flow : flows) {
    const Ending theirs = ending_of(osm.run.at(flow)), mine = ending_of(ours.run.at(flow));
    std::printf("osmtest -f %s: OpenSM exit %d \"%s\", madengine exit %d \"%s\"\n", flow.c_str(),
                theirs.exit_code, theirs.test_line.c_str(), mine.exit_code, mine.test_line.c_str());
    EXPECT_EQ(mine, theirs) << "-f " << flow << ", madengine:\n" << tail(ours.run.at(flow).out);
  }
  // The wrong SM_Key of -f a is discarded by both (osmtest waits for its time-out).
  if (osm.run.count("a")) {
    for (const Flows* side : std::initializer_list<const Flows*>{&osm, &ours})
      EXPECT_EQ(side->run.at("a").out.find("ERR 0147"), std::string::npos)
          << (side == &osm ? "OpenSM" : "madengine") << ": the wrong SM_Key was answered:\n"
          << tail(side->run.at("a").out);
  }
  const auto a = inventory_counts(osm.inventory), b = inventory_counts(ours.inventory);
  std::printf("osmtest inventory, OpenSM:\n%smadengine:\n%s", counts_text(a).c_str(), counts_text(b).c_str());
  EXPECT_EQ(a, b);
  // ft2x4: 14 nodes, 38 ports (switch ports too), every pair of its 14 end ports, 32 link ends.
  EXPECT_EQ(a.count("DEFINE_NODE") ? a.at("DEFINE_NODE") : 0, 14);
  EXPECT_EQ(a.count("DEFINE_PATH") ? a.at("DEFINE_PATH") : 0, 196);
}

// Every flow but c (the inventory, written first) and f: v (validate it),
// a (v, a wrong SM_Key ignored, s, m), s (services), m (multicast), q
// (SL2VL and VLArb tables). Each flow is a new osmtest process on the same
// node, so one flow's late answers meet the next one's requests.
TEST(OsmtestIbsim, EveryFlowPassesAgainstMadengineAsAgainstOpenSm) {
  SKIP_WITHOUT_SHIM();
  expect_flows_pass_on_both({"v", "a", "s", "m", "q"});
}

// f: osmtest's default stress, 100,000 single-MAD queries.
TEST(OsmtestIbsim, StressFlowPassesAgainstMadengineAsAgainstOpenSm) {
  SKIP_WITHOUT_SHIM();
  expect_flows_pass_on_both({"f"});
}

}  // namespace
}  // namespace madengine
