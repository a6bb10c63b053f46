// osmtest, OpenSM's own SA test client, against OpenSM 3.3.23 and against
// madengine on ft2x4 (conformance.hpp: each SM on its own bare fabric,
// madengine from OpenSM's guid2lid), OpenSM and osmtest over the RMPP layer.
// `osmtest -f c` writes an inventory from whole GetTables (nodes, ports,
// every path, links); `osmtest -f v` checks it record by record with Gets
// and GetTables. Both SAs must pass both flows with the same inventory.
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

struct Flows {
  ibsim::RunResult create, validate;
  std::string inventory;
};

// `osmtest -f c` then `-f v` on `f`, each once.
Flows run_osmtest(const IbsimFabric& f) {
  Flows r;
  const std::string inv = f.work_dir() + "/osmtest.inventory";
  r.create = f.run("osmtest -f c -i " + inv, kClientHost, 60s);
  r.inventory = ibsim::conformance::read_text(inv);
  r.validate = f.run("osmtest -f v -i " + inv, kClientHost, 90s);
  return r;
}

void expect_passed(const Flows& r, const char* who) {
  EXPECT_EQ(r.create.exit_code, 0) << who << " -f c:\n" << r.create.out << r.create.err;
  EXPECT_NE(r.create.out.find("TEST \"Create Inventory\" PASS"), std::string::npos) << who << "\n" << r.create.out;
  EXPECT_EQ(r.validate.exit_code, 0) << who << " -f v:\n" << r.validate.out << r.validate.err;
  EXPECT_NE(r.validate.out.find("ALL TESTS PASS"), std::string::npos)
      << who << " -f v:\n" << r.validate.out.substr(r.validate.out.size() > 20000 ? r.validate.out.size() - 20000 : 0);
}

TEST(OsmtestIbsim, CreateAndValidatePassAgainstOpenSmAndMadengine) {
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

  const auto a = inventory_counts(osm.inventory), b = inventory_counts(ours.inventory);
  std::printf("osmtest inventory, OpenSM:\n%smadengine:\n%s", counts_text(a).c_str(), counts_text(b).c_str());
  EXPECT_EQ(a, b);
  // ft2x4: 14 nodes, 38 ports (switch ports too), every pair of its 14 end ports, 32 link ends.
  EXPECT_EQ(a.count("DEFINE_NODE") ? a.at("DEFINE_NODE") : 0, 14);
  EXPECT_EQ(a.count("DEFINE_PATH") ? a.at("DEFINE_PATH") : 0, 196);
}

}  // namespace
}  // namespace madengine
