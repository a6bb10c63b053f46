// Topology reader, writer and generators: every ibsim example parses, GUIDs
// follow ibsim's allocation, errors name the line, and write/parse round-trips.
#include "sim/topology.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "sim/generators.hpp"

using namespace madengine::sim;

namespace {

// Compares everything a topology file can express.
void expect_same(const Topology& a, const Topology& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const TopoNode& x = a.nodes[i];
    const TopoNode& y = b.nodes[i];
    SCOPED_TRACE(x.id);
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.num_ports, y.num_ports);
    EXPECT_EQ(x.description, y.description);
    EXPECT_EQ(x.node_guid, y.node_guid);
    EXPECT_EQ(x.system_guid, y.system_guid);
    EXPECT_EQ(x.vendor_id, y.vendor_id);
    EXPECT_EQ(x.device_id, y.device_id);
    EXPECT_EQ(x.enhanced_port0, y.enhanced_port0);
    for (std::size_t p = 1; p < x.ports.size(); ++p) {
      EXPECT_EQ(x.ports[p].peer_node, y.ports[p].peer_node) << "port " << p;
      EXPECT_EQ(x.ports[p].peer_port, y.ports[p].peer_port) << "port " << p;
      EXPECT_EQ(x.ports[p].guid, y.ports[p].guid) << "port " << p;
      if (x.ports[p].connected()) {
        EXPECT_EQ(x.ports[p].width_enabled, y.ports[p].width_enabled);
        EXPECT_EQ(x.ports[p].speed_enabled, y.ports[p].speed_enabled);
        EXPECT_EQ(x.ports[p].speed_ext_enabled, y.ports[p].speed_ext_enabled);
      }
    }
  }
}

std::string error_of(std::string_view text) {
  try {
    parse_topology(text, "t.net");
  } catch (const TopologyError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(SimTopology, AllIbsimExamplesParseAndRoundTrip) {
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(MADENGINE_IBSIM_EXAMPLES)) {
    if (e.path().filename().string().rfind("net", 0) != 0) continue;
    SCOPED_TRACE(e.path().string());
    const Topology t = load_topology(e.path().string());
    EXPECT_GE(t.nodes.size(), 3u);
    expect_same(t, parse_topology(write_topology(t)));
    ++files;
  }
  EXPECT_EQ(files, 5u);
}

TEST(SimTopology, GuidsFollowIbsim) {
  const Topology t = load_topology(std::string(MADENGINE_IBSIM_EXAMPLES) + "/net.2sw2path4hca2port");
  // Switches count from 0x200000, one GUID each; CAs from 0x100000, ports + 1 each.
  EXPECT_EQ(t.nodes[t.find("Switch1")].node_guid, 0x200000u);
  EXPECT_EQ(t.nodes[t.find("Switch2")].node_guid, 0x200001u);
  EXPECT_EQ(t.nodes[t.find("Hca1")].node_guid, 0x100000u);
  EXPECT_EQ(t.nodes[t.find("Hca1")].ports[2].guid, 0x100002u);
  EXPECT_EQ(t.nodes[t.find("Hca2")].node_guid, 0x100003u);
  EXPECT_EQ(t.nodes[t.find("Switch2")].ports[3].guid, 0x200001u);
  EXPECT_EQ(t.link_count(), 6u);
  const TopoNode& s1 = t.nodes[t.find("Switch1")];
  EXPECT_EQ(s1.ports[3].peer_node, t.find("Switch2"));
  EXPECT_EQ(s1.ports[3].peer_port, 3);
  EXPECT_EQ(s1.description, "Switch1");
}

TEST(SimTopology, IbnetdiscoverOutput) {
  const char* text = R"(#
# Topology file: generated on Sun Nov 29 2026
#
vendid=0x2c9
devid=0xb924
sysimgguid=0x2c90000000100
switchguid=0x2c90000000001(2c90000000001)
Switch	24 "S-0002c90000000001"		# "ISR9024 Voltaire" enhanced port 0 lid 1 lmc 0
[1]	"H-0002c90000000002"[1](2c90000000003) 		# "mtx01 HCA-1" lid 2 4xDDR
[2]	"H-0002c90000000005"[1](2c90000000006) 		# "mtx02 HCA-1" lid 3 4xQDR

vendid=0x2c9
devid=0x6282
caguid=0x2c90000000002
Ca	2 "H-0002c90000000002"		# "mtx01 HCA-1"
[1](2c90000000003) 	"S-0002c90000000001"[1]		# lid 2 lmc 0 "ISR9024 Voltaire" lid 1 4xDDR

vendid=0x2c9
caguid=0x2c90000000005
Ca	1 "H-0002c90000000005"		# "mtx02 HCA-1"
[1](2c90000000006) 	"S-0002c90000000001"[2]		# lid 3 lmc 0 "ISR9024 Voltaire" lid 1 4xQDR
)";
  const Topology t = parse_topology(text);
  ASSERT_EQ(t.nodes.size(), 3u);
  const TopoNode& sw = t.nodes[0];
  EXPECT_TRUE(sw.is_switch());
  EXPECT_EQ(sw.num_ports, 24);
  EXPECT_EQ(sw.node_guid, 0x2c90000000001u);
  EXPECT_EQ(sw.system_guid, 0x2c90000000100u);
  EXPECT_EQ(sw.description, "ISR9024 Voltaire");
  EXPECT_EQ(sw.vendor_id, 0x2c9u);
  EXPECT_EQ(sw.device_id, 0xb924);
  EXPECT_TRUE(sw.enhanced_port0);
  EXPECT_EQ(sw.ports[0].lid, 1);
  EXPECT_EQ(sw.ports[1].width_enabled, link_width::k1x | link_width::k4x);
  EXPECT_EQ(sw.ports[1].speed_enabled, link_speed::kSdr | link_speed::kDdr);
  const TopoNode& ca = t.nodes[1];
  EXPECT_EQ(ca.type, NodeType::kCa);
  EXPECT_EQ(ca.node_guid, 0x2c90000000002u);
  EXPECT_EQ(ca.system_guid, ca.node_guid);  // sysimgguid applies to one node only
  EXPECT_EQ(ca.device_id, 0x6282);
  EXPECT_EQ(ca.ports[1].guid, 0x2c90000000003u);
  EXPECT_EQ(ca.ports[1].lid, 2);
  EXPECT_EQ(t.nodes[2].device_id, 0x6282);  // devid persists, as in ibsim
  EXPECT_EQ(t.nodes[2].ports[1].speed_enabled, 7);
  EXPECT_EQ(active_speed(sw.ports[2].speed_enabled, t.nodes[2].ports[1].speed_enabled), link_speed::kQdr);
  expect_same(t, parse_topology(write_topology(t)));
}

TEST(SimTopology, PortOptions) {
  const Topology t =
      parse_topology("Switch 4 \"s\"\n[1] \"h\"[1] w=8 s=4 e=3\n\nHca 1 \"h\"\n[1] \"s\"[1] w=10 s=6 e=1\n");
  EXPECT_EQ(active_width(t.nodes[0].ports[1].width_enabled, t.nodes[1].ports[1].width_enabled), link_width::k12x);
  EXPECT_EQ(active_speed(t.nodes[0].ports[1].speed_enabled, t.nodes[1].ports[1].speed_enabled), link_speed::kQdr);
  EXPECT_EQ(active_speed_ext(t.nodes[0].ports[1].speed_ext_enabled, t.nodes[1].ports[1].speed_ext_enabled),
            link_speed_ext::kFdr);
  expect_same(t, parse_topology(write_topology(t)));
}

TEST(SimTopology, ErrorsNameTheLine) {
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[3] \"h\"[1]\n"), "t.net:2: port 3 out of range 1..2 for node \"s\"");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\"[1]\n"), "t.net:2: unknown peer node \"h\"");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\"[1]\n\nHca 1 \"h\"\n"),
            "t.net:2: \"h\"[1] does not list the link back to \"s\"[1]");
  EXPECT_EQ(error_of("# c\nSwitch x \"s\"\n"),
            "t.net:2: node header: expected a port count 1..254 before the quoted id");
  EXPECT_EQ(error_of("Hca 1 \"h\"\nHca 1 \"h\"\n"), "t.net:2: duplicate node id \"h\"");
  EXPECT_EQ(error_of("bogus\n"),
            "t.net:1: unrecognised line (expected a node header such as 'Switch 8 \"name\"', a port line "
            "'[1] \"peer\"[2]', a '# comment' or an assignment such as 'switchguid=0x...')");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\"[1] w=0\n"), "t.net:2: port option w=: link width mask must be 1..31");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\n"), "t.net:2: expected a quoted peer node id");
  EXPECT_EQ(error_of("caguid=0x10\nHca 1 \"a\"\ncaguid=0x10\nHca 1 \"b\"\n"),
            "t.net:4: node \"b\": node GUID 0x0000000000000010 already used by \"a\"");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\"[1]\n[1] \"h\"[1]\n"), "t.net:3: port 1 listed twice");
  EXPECT_EQ(error_of("Switch 2 \"s\"\n[1] \"h\"[1] w=1\n\nHca 1 \"h\"\n[1] \"s\"[1] w=2\n"),
            "t.net:2: \"s\"[1] and \"h\"[1] share no enabled link width or speed");
  EXPECT_EQ(error_of("include \"x\"\n"), "t.net:1: 'include' lines are not supported by the sim");
  try {
    load_topology("/nonexistent/file.net");
    FAIL();
  } catch (const TopologyError& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/file.net:0: cannot open the file");
  }
}

TEST(SimGenerators, FatTree2Level) {
  const Topology t = make_fat_tree_2level({36});
  EXPECT_EQ(t.ca_count(), 648u);
  EXPECT_EQ(t.switch_count(), 54u);
  EXPECT_EQ(t.link_count(), 648u + 36u * 18u);
  expect_same(t, parse_topology(write_topology(t)));
}

TEST(SimGenerators, FatTree3Level) {
  EXPECT_EQ(make_fat_tree_3level({36, 4}).ca_count(), 1296u);
  EXPECT_EQ(make_fat_tree_3level({36, 8}).ca_count(), 2592u);
  EXPECT_EQ(make_fat_tree_3level({36, 16}).ca_count(), 5184u);
  const Topology t = make_fat_tree_3level({36});
  EXPECT_EQ(t.ca_count(), 11664u);
  EXPECT_EQ(t.switch_count(), 324u + 36u * 36u);
  // Every core switch port is used once all k pods are present.
  for (const auto& n : t.nodes) {
    if (n.id.rfind("core-", 0) != 0) continue;
    for (std::size_t p = 1; p <= n.num_ports; ++p) ASSERT_TRUE(n.ports[p].connected());
  }
  std::set<std::uint64_t> guids;
  for (const auto& n : t.nodes) guids.insert(n.node_guid);
  EXPECT_EQ(guids.size(), t.nodes.size());
  EXPECT_THROW(make_fat_tree_3level({35}), std::invalid_argument);
  EXPECT_THROW(make_fat_tree_3level({8, 9}), std::invalid_argument);
}

TEST(SimGenerators, RandomIsSeededAndConnected) {
  const RandomSpec spec{40, 5, 3, 16, 77};
  const Topology a = make_random(spec);
  const Topology b = make_random(spec);
  EXPECT_EQ(write_topology(a), write_topology(b));
  RandomSpec other = spec;
  other.seed = 78;
  EXPECT_NE(write_topology(a), write_topology(make_random(other)));
  EXPECT_EQ(a.ca_count(), 120u);
  // Connected: BFS over all nodes reaches everything.
  std::vector<bool> seen(a.nodes.size());
  std::vector<std::uint32_t> q{0};
  seen[0] = true;
  for (std::size_t i = 0; i < q.size(); ++i)
    for (const auto& p : a.nodes[q[i]].ports)
      if (p.connected() && !seen[p.peer_node]) {
        seen[p.peer_node] = true;
        q.push_back(p.peer_node);
      }
  EXPECT_EQ(q.size(), a.nodes.size());
  expect_same(a, parse_topology(write_topology(a)));
}

TEST(SimGenerators, TwoSubnets) {
  const TwoSubnets s = make_two_subnets(8);
  EXPECT_EQ(s.topo.ca_count(), 64u);
  EXPECT_TRUE(s.topo.nodes[s.sm_a].hosts_sm);
  EXPECT_EQ(s.topo.nodes[s.sm_b].id, "b-host-0-0");
  EXPECT_FALSE(s.topo.nodes[s.join_a].ports[s.join_a_port].connected());
  EXPECT_FALSE(s.topo.nodes[s.join_b].ports[s.join_b_port].connected());
  Topology joined = s.topo;
  joined.connect(s.join_a, s.join_a_port, s.join_b, s.join_b_port);
  EXPECT_EQ(joined.link_count(), s.topo.link_count() + 1);
}
