// LID assignment: unique aligned LIDs, stable across restarts and re-sweeps,
// deterministic conflict resolution, and a guid2lid file that names bad lines.
#include "sm/lids/lid_assign.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "fabric_builders.hpp"

namespace madengine::sm {
namespace {

using testing::fat_tree2;

std::map<std::uint64_t, std::uint16_t> lids_by_guid(const fabric::Fabric& f) {
  std::map<std::uint64_t, std::uint16_t> out;
  for (auto e : f.end_ports()) out[end_port_guid(f, e)] = f.lid_of(e);
  return out;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("madengine_" + name + "_" + std::to_string(::getpid()))).string();
}

TEST(LidAssign, FreshFabricGetsUniqueAlignedLids) {
  for (std::uint8_t lmc : {0, 1, 2}) {
    auto f = fat_tree2(6, 3, 5);
    Guid2Lid map;
    const auto rep = assign_lids(f, map, lmc);
    EXPECT_EQ(rep.assigned_new, f.end_ports().size());
    std::set<std::uint16_t> used;
    for (auto e : f.end_ports()) {
      const bool sw = f.nodes[e.node].is_switch();
      const unsigned count = sw ? 1 : 1u << lmc;
      const auto base = f.lid_of(e);
      ASSERT_NE(base, 0);
      EXPECT_EQ(base % count, 0u) << "LMC block not aligned";
      for (unsigned i = 0; i < count; ++i) EXPECT_TRUE(used.insert(static_cast<std::uint16_t>(base + i)).second);
    }
  }
}

TEST(LidAssign, RestartWithTheFileKeepsEveryLid) {
  auto f = fat_tree2(4, 2, 4);
  Guid2Lid map;
  assign_lids(f, map, 0);
  const auto before = lids_by_guid(f);
  const auto path = temp_path("g2l");
  Guid2LidError err;
  ASSERT_TRUE(save_guid2lid(path, map, err)) << err.what;

  // A restarted SM discovers the nodes in another order and has only the file.
  auto g = fat_tree2(4, 2, 4);
  std::reverse(g.nodes.begin(), g.nodes.end());
  for (auto& n : g.nodes)
    for (auto& p : n.ports)
      if (p.linked()) p.peer = static_cast<fabric::NodeId>(g.nodes.size() - 1 - p.peer);
  Guid2Lid loaded;
  ASSERT_TRUE(load_guid2lid(path, loaded, err)) << err.what;
  const auto rep = assign_lids(g, loaded, 0);
  EXPECT_EQ(rep.assigned_new, 0u);
  EXPECT_EQ(rep.kept_from_map, g.end_ports().size());
  EXPECT_EQ(lids_by_guid(g), before);
  std::remove(path.c_str());
}

TEST(LidAssign, NewPortDoesNotRenumberOthers) {
  auto f = fat_tree2(2, 1, 2);
  Guid2Lid map;
  assign_lids(f, map, 0);
  const auto before = lids_by_guid(f);
  // Plug a new host with a GUID lower than everyone's into a free port.
  const auto host = testing::add_ca(f, 0x1);
  auto& leaf = f.nodes[1];
  leaf.ports.resize(leaf.ports.size() + 1);
  f.link(1, static_cast<std::uint8_t>(leaf.ports.size() - 1), host, 1);
  const auto rep = assign_lids(f, map, 0);
  EXPECT_EQ(rep.assigned_new, 1u);
  auto after = lids_by_guid(f);
  for (auto [guid, lid] : before) EXPECT_EQ(after[guid], lid) << std::hex << guid;
}

TEST(LidAssign, AdoptsCurrentLidsOfASubnetTakenOver) {
  auto f = fat_tree2(2, 1, 2);
  const auto ports = f.end_ports();
  std::vector<std::uint16_t> current(ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) current[i] = static_cast<std::uint16_t>(100 + 7 * i);
  Guid2Lid map;
  const auto rep = assign_lids(f, map, 0, current);
  EXPECT_EQ(rep.kept_current, ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) EXPECT_EQ(f.lid_of(ports[i]), current[i]);
}

TEST(LidAssign, ConflictsResolvedDeterministically) {
  auto f = fat_tree2(2, 1, 2);
  const auto ports = f.end_ports();
  // Two ports claim LID 5 in the current state: the lower GUID keeps it.
  std::vector<std::uint16_t> current(ports.size(), 0);
  current[0] = 5;
  current[1] = 5;
  Guid2Lid map;
  const auto rep = assign_lids(f, map, 0, current);
  EXPECT_EQ(rep.conflicts, 1u);
  const auto g0 = end_port_guid(f, ports[0]), g1 = end_port_guid(f, ports[1]);
  EXPECT_EQ(f.lid_of(g0 < g1 ? ports[0] : ports[1]), 5);
  EXPECT_NE(f.lid_of(g0 < g1 ? ports[1] : ports[0]), 5);
  // The same input gives the same answer every time.
  auto f2 = fat_tree2(2, 1, 2);
  Guid2Lid map2;
  assign_lids(f2, map2, 0, current);
  EXPECT_EQ(lids_by_guid(f), lids_by_guid(f2));
}

// Within a mastership the map decides: a port that missed our Set (it still
// carries an older LID) is given the map's LID again.
TEST(LidAssign, WithinAMastershipTheMapBeatsACurrentLid) {
  auto f = fat_tree2(2, 1, 2);
  Guid2Lid map;
  assign_lids(f, map, 0);
  const auto want = lids_by_guid(f);
  const auto ports = f.end_ports();
  std::vector<std::uint16_t> current(ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) current[i] = f.lid_of(ports[i]);
  current[0] = 200;  // a Set that never arrived
  const auto rep = assign_lids(f, map, 0, current, LidPreference::kMap);
  EXPECT_EQ(rep.kept_from_map, ports.size());
  EXPECT_EQ(lids_by_guid(f), want);
}

// A new mastership keeps the LIDs another master gave ports since our map
// was written (OpenSM drops its map when it comes out of standby): ports
// that stayed keep the LIDs clients know them by, and the map numbers only
// the ports that carry none.
TEST(LidAssign, ANewMastershipKeepsLidsAnInterimMasterGave) {
  auto f = fat_tree2(2, 1, 2);
  Guid2Lid map;
  assign_lids(f, map, 0);
  const auto ports = f.end_ports();
  std::vector<std::uint16_t> current(ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) current[i] = static_cast<std::uint16_t>(100 + i);  // renumbered
  current[1] = 0;  // reset since: carries none
  const std::uint16_t mapped1 = map.at(end_port_guid(f, ports[1])).min_lid;
  const auto rep = assign_lids(f, map, 0, current, LidPreference::kCurrent);
  EXPECT_EQ(rep.kept_current, ports.size() - 1);
  EXPECT_EQ(rep.kept_from_map, 1u);
  EXPECT_EQ(rep.assigned_new, 0u);
  for (std::size_t i = 0; i < ports.size(); ++i)
    EXPECT_EQ(f.lid_of(ports[i]), i == 1 ? mapped1 : current[i]) << i;
  // The map follows: a later sweep of the same mastership keeps them.
  for (std::size_t i = 0; i < ports.size(); ++i) EXPECT_EQ(map.at(end_port_guid(f, ports[i])).min_lid, f.lid_of(ports[i]));
}

// Two subnets joined, their LIDs collide. Within a mastership, a port
// carrying the LID our map gives it keeps it and the other part's port is
// renumbered, whatever the GUIDs; a new mastership sides with the other SM's
// numbering, which is newer than our map (a port that still carries our old
// LID missed that SM's Set).
TEST(LidAssign, CollisionsWithinAMastershipAndAtItsStart) {
  auto f = fat_tree2(2, 1, 2);
  const auto ports = f.end_ports();
  ASSERT_GE(ports.size(), 2u);
  const std::uint64_t lo = end_port_guid(f, ports[0]), hi = end_port_guid(f, ports[1]);
  const std::size_t ours = lo < hi ? 1 : 0, theirs = 1 - ours;  // ours has the higher GUID
  Guid2Lid map;
  map[end_port_guid(f, ports[ours])] = {7, 7};
  std::vector<std::uint16_t> current(ports.size(), 0);
  current[ours] = 7;
  current[theirs] = 7;
  for (const LidPreference p : {LidPreference::kMap, LidPreference::kCurrent}) {
    Guid2Lid m = map;
    const auto rep = assign_lids(f, m, 0, current, p);
    const std::size_t keeps = p == LidPreference::kMap ? ours : theirs;
    EXPECT_EQ(f.lid_of(ports[keeps]), 7);
    EXPECT_NE(f.lid_of(ports[1 - keeps]), 7);
    EXPECT_EQ(rep.conflicts, 1u);
  }
}

// A port the sweep did not find (a mute SMA) still carries its LID: no
// other port is given it, not even one that carries it (the map wins).
TEST(LidAssign, AnAbsentPortKeepsItsLid) {
  auto f = fat_tree2(2, 1, 2);
  const auto ports = f.end_ports();
  Guid2Lid map;
  map[0xabcdefull] = {3, 3};  // not in this fabric
  std::vector<std::uint16_t> current(ports.size(), 0);
  current[0] = 3;
  assign_lids(f, map, 0, current, LidPreference::kMap);
  for (auto e : ports) EXPECT_NE(f.lid_of(e), 3);
  // A new mastership leaves a port that carries it alone, but gives it to no one else.
  auto g = fat_tree2(2, 1, 2);
  Guid2Lid m2;
  m2[0xabcdefull] = {3, 3};
  const auto rep = assign_lids(g, m2, 0, current, LidPreference::kCurrent);
  EXPECT_EQ(g.lid_of(ports[0]), 3);
  EXPECT_EQ(rep.kept_current, 1u);
  for (std::size_t i = 1; i < ports.size(); ++i) EXPECT_NE(g.lid_of(ports[i]), 3);
}

// OpenSM 3.3.23's own file (as it wrote it on ibsim: hex LIDs, a blank line
// after every entry) is read as it is, and ours is written the same way.
TEST(Guid2LidFile, ReadsAndWritesOpenSmsFormat) {
  const auto path = temp_path("osm_g2l");
  const std::string osm = "0x0002c90300000003 0x0037 0x0037\n\n0x0000000000200000 0x0002 0x0002\n\n";
  std::ofstream(path) << osm;
  Guid2Lid map;
  Guid2LidError err;
  ASSERT_TRUE(load_guid2lid(path, map, err)) << err.line << ": " << err.what;
  ASSERT_EQ(map.size(), 2u);
  EXPECT_EQ(map.at(0x0002c90300000003ull), (LidRange{0x37, 0x37}));
  EXPECT_EQ(map.at(0x200000ull), (LidRange{2, 2}));
  // Written back: OpenSM's lines (ordered by GUID).
  ASSERT_TRUE(save_guid2lid(path, map, err)) << err.what;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "0x0000000000200000 0x0002 0x0002\n\n0x0002c90300000003 0x0037 0x0037\n\n");
  // Decimal LIDs (earlier madengine files) too; a leading zero is not octal.
  std::ofstream(path) << "0x10 010 011\n0x11 0x0a 0x0b\n";
  ASSERT_TRUE(load_guid2lid(path, map, err)) << err.what;
  EXPECT_EQ(map.at(0x10), (LidRange{10, 11}));
  EXPECT_EQ(map.at(0x11), (LidRange{10, 11}));
  std::remove(path.c_str());
}

// The fabric the file describes is its first entry, a line of its own and
// a blank line (OpenSM's reader takes "#fabric" as a key it drops, then
// reads every entry after it); a file without it names no fabric.
TEST(Guid2LidFile, NamesItsFabricInALineOpenSmPassesOver) {
  const auto path = temp_path("fabric_g2l");
  const Guid2Lid map{{0x0002c90300000003ull, LidRange{0x37, 0x37}}};
  const sa::FabricIdentity fabric{.sm_port_guid = 0x0002c90300000001ull, .subnet_prefix = 0xfe80000000000000ull};
  Guid2LidError err;
  ASSERT_TRUE(save_guid2lid(path, map, err, fabric)) << err.what;
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "#fabric sm_port_guid 0x0002c90300000001 subnet_prefix 0xfe80000000000000\n\n"
            "0x0002c90300000003 0x0037 0x0037\n\n");
  Guid2Lid back;
  sa::FabricIdentity read_back;
  ASSERT_TRUE(load_guid2lid(path, back, err, &read_back)) << err.line << ": " << err.what;
  EXPECT_EQ(back, map);
  EXPECT_EQ(read_back, fabric);
  // OpenSM's file: no fabric named.
  std::ofstream(path) << "0x0002c90300000003 0x0037 0x0037\n\n";
  ASSERT_TRUE(load_guid2lid(path, back, err, &read_back));
  EXPECT_FALSE(read_back.known());
  // A damaged fabric line is named, not taken for a comment.
  for (const std::string bad : {"#fabric sm_port_guid 0x1\n", "#fabric sm_port_guid zz subnet_prefix 0xfe80\n",
                                "#fabric sm_port_guid 0x1 subnet_prefix 0x2 more\n"}) {
    std::ofstream(path) << "0x10 1 1\n\n" << bad;
    EXPECT_FALSE(load_guid2lid(path, back, err, &read_back)) << bad;
    EXPECT_EQ(err.line, 3) << bad;
  }
  std::remove(path.c_str());
}

TEST(Guid2LidFile, BadLinesAreNamed) {
  const auto path = temp_path("bad_g2l");
  struct Case {
    std::string text;
    int line;
    std::string fragment;
  };
  for (const Case& c : {Case{"0x10 1 1\nnonsense 1 1\n", 2, "not a GUID"},
                        Case{"# comment\n\n0x10 1\n", 3, "expected"},
                        Case{"0x10 5 4\n", 1, "not a unicast range"},
                        Case{"0x10 1 1\n0x10 2 2\n", 2, "twice"},
                        Case{"0x10 1 1 extra\n", 1, "unexpected"},
                        Case{"0x10 0xzz 1\n", 1, "expected"},
                        Case{"0x10 0x10000 0x10000\n", 1, "expected"}}) {
    std::ofstream(path) << c.text;
    Guid2Lid map;
    Guid2LidError err;
    EXPECT_FALSE(load_guid2lid(path, map, err)) << c.text;
    EXPECT_EQ(err.line, c.line) << c.text;
    EXPECT_NE(err.what.find(c.fragment), std::string::npos) << err.what;
  }
  std::remove(path.c_str());
  Guid2Lid map;
  Guid2LidError err;
  EXPECT_TRUE(load_guid2lid(path + ".missing", map, err)) << "a missing file is a first start";
  EXPECT_TRUE(map.empty());
}

}  // namespace
}  // namespace madengine::sm
