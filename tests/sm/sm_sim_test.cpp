// The SubnetManager on the in-process `sim` transport: deterministic (the
// fabric owns time; one thread drives engine and fabric), larger fabrics than
// ibsim, and exact SMP counts for heavy and light sweeps.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <cstring>
#include <optional>
#include <set>
#include <cstdio>

#include "engine/engine.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sim/smp_client.hpp"
#include "madengine/wire/smp/mft.hpp"
#include "sm/sm.hpp"
#include "sm_sim_rig.hpp"

namespace madengine {
namespace {

using testing::SimRig;
using testing::kStepNs;

// What a brought-up fabric must look like, read from the simulator itself.
void check_sim_fabric(const sim::Fabric& f, const sa::Snapshot& snap) {
  std::set<std::uint16_t> lids;
  for (std::uint32_t n = 0; n < f.node_count(); ++n) {
    for (std::uint8_t p = f.is_switch(n) ? 0 : 1; p <= f.num_ports(n); ++p) {
      const sim::PortIdx idx = f.port(n, p);
      const bool end_port = f.is_switch(n) ? p == 0 : true;
      if (!end_port && (f.peer(idx) == sim::kNoPortIdx || f.phys_state(idx) != wire::PortPhysState::kLinkUp)) continue;
      if (p != 0 || !f.is_switch(n)) {
        EXPECT_EQ(f.port_state(idx), wire::PortState::kActive) << n << ":" << int(p);
      }
      if (end_port) {
        EXPECT_NE(f.lid(idx), 0);
        EXPECT_TRUE(lids.insert(f.lid(idx)).second) << "duplicate LID " << f.lid(idx);
      }
    }
  }
  // The switches forward exactly as our LFTs say.
  std::map<std::uint64_t, std::uint32_t> by_guid;
  for (std::uint32_t n = 0; n < f.node_count(); ++n) by_guid[f.node_guid(n)] = n;
  for (const auto& lft : snap.lfts) {
    const auto it = by_guid.find(snap.fabric.nodes[lft.node].node_guid);
    ASSERT_NE(it, by_guid.end());
    const std::uint32_t n = it->second;
    for (std::uint16_t lid = 1; lid <= snap.top_lid; ++lid)
      ASSERT_EQ(f.lft_port(n, lid), lid < lft.ports.size() ? lft.ports[lid] : fabric::kLftNoRoute) << "LID " << lid;
  }
}

TEST(SmSim, FatTree2K16BringUpAndRepeatSweeps) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_2level({.k = 16}), "host-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const auto first = rig.sm->status();
  EXPECT_EQ(first.state, wire::SmState::kMaster);
  EXPECT_EQ(first.last_heavy.nodes, 16u + 8u + 16u * 8u);
  EXPECT_EQ(first.last_heavy.bringup.errors, 0u);
  EXPECT_EQ(first.last_heavy.discovery_errors, 0u);
  check_sim_fabric(rig.fabric, *rig.store.current());
  // Light sweeps of an unchanged fabric: SwitchInfo per switch + our PortInfo.
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.light_sweeps >= 3; }, 10'000));
  EXPECT_EQ(rig.sm->status().heavy_sweeps, 1u);
  EXPECT_EQ(rig.sm->status().last_light_smps, 24u + 1u);
  // Every switch is asked by LID, through the LFTs the SM wrote.
  EXPECT_EQ(rig.sm->status().last_light_lid_routed, 24u);
  // A forced heavy sweep of the unchanged fabric reads but writes nothing:
  // discovery, and one LFT block read back per switch.
  rig.sm->request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.heavy_sweeps >= 2; }, 10'000));
  const auto again = rig.sm->status().last_heavy;
  EXPECT_EQ(again.smps, again.discovery_smps + 24u);
  EXPECT_EQ(again.bringup.lfts_lost, 0u);
  EXPECT_EQ(again.bringup.port_info_sets + again.bringup.lft_blocks_written + again.bringup.switch_info_sets, 0u);
  EXPECT_EQ(again.new_nodes + again.vanished_nodes + again.lids_new, 0u);
}

// Same topology and seed, same SMP counts: the run is deterministic.
TEST(SmSim, HeavySweepSmpCountIsDeterministic) {
  std::uint64_t smps[2] = {}, discovery[2] = {}, bound = 0;
  for (int i = 0; i < 2; ++i) {
    SimRig rig(sim::make_fat_tree_3level({.k = 8}), "host-0-0-0", sm::SmConfig{});
    ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
    smps[i] = rig.sm->status().last_heavy.smps;
    discovery[i] = rig.sm->status().last_heavy.discovery_smps;
    check_sim_fabric(rig.fabric, *rig.store.current());
    // Upper bound: per node NodeDescription + PortInfo of each port read
    // (+ SwitchInfo, a PortStateChange clear and its external ports read
    // again after the clear, per switch), plus at most one NodeInfo per link
    // end and one for the SM's own node.
    const auto& f = rig.store.current()->fabric;
    bound = 1;
    for (const auto& n : f.nodes) {
      bound += 1 + (n.is_switch() ? n.num_ports() + 1u + 2u + n.num_ports() : 1u);
      for (std::uint8_t p = 1; p <= n.num_ports(); ++p) bound += n.ports[p].linked() ? 1 : 0;
    }
  }
  EXPECT_EQ(smps[0], smps[1]);
  EXPECT_LE(discovery[0], bound);
  EXPECT_EQ(discovery[0], discovery[1]);
  // Each node is read once: NodeInfo per link end reached, NodeDescription,
  // PortInfo of each port, SwitchInfo; duplicates cost only a NodeInfo.
  EXPECT_GT(discovery[0], 0u);
}

// A leaf-to-spine link goes down: the SM notices and routes around it; back
// up, the link is brought to ACTIVE again.
TEST(SmSim, LinkDownAndUp) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const std::uint32_t links = rig.sm->status().last_heavy.links;
  const std::uint32_t leaf = rig.fabric.find_node("leaf-1");
  const sim::PortIdx up = rig.fabric.port(leaf, 8);  // a spine-facing port
  ASSERT_NE(rig.fabric.peer(up), sim::kNoPortIdx);
  rig.fabric.link_down(up);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.heavy_sweeps >= 2 && s.last_heavy.links == links - 1; },
                            10'000));
  check_sim_fabric(rig.fabric, *rig.store.current());
  rig.fabric.link_up(up);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.last_heavy.links == links && s.last_heavy.ok; }, 10'000));
  check_sim_fabric(rig.fabric, *rig.store.current());
}

// Links between switches go down: the SM re-reads only the switches that
// reported it (their SwitchInfo and PortInfo), takes the links down in the
// last fabric and routes around them. A walk of the whole subnet afterwards
// finds nothing to change, so the re-discovered fabric was the real one.
// Back up, the new link makes the SM walk the subnet again.
TEST(SmSim, LinksDownAreRediscoveredFromTheSwitchesThatReportThem) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_3level({.k = 8, .pods = 4}), "host-0-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const sm::SmStatus before = rig.sm->status();
  const std::uint32_t links = before.last_heavy.links;
  const std::uint64_t walk_smps = before.last_heavy.discovery_smps;
  EXPECT_FALSE(before.last_heavy.rediscovered);
  // Two uplinks of one edge switch, among them the one the SM reached it by
  // (so its old path is broken and a second round finds another).
  const std::uint32_t edge = rig.fabric.find_node("edge-2-1");
  std::vector<sim::PortIdx> cut;
  for (std::uint8_t p = 1; cut.size() < 2; ++p) {
    const sim::PortIdx port = rig.fabric.port(edge, p);
    const sim::PortIdx peer = rig.fabric.peer(port);
    if (peer != sim::kNoPortIdx && rig.fabric.is_switch(rig.fabric.node_of(peer))) cut.push_back(port);
  }
  for (const sim::PortIdx p : cut) rig.fabric.link_down(p);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.last_heavy.links == links - 2 && s.last_heavy.ok; },
                            10'000));
  const sm::SweepStats re = rig.sm->status().last_heavy;
  EXPECT_TRUE(re.rediscovered) << re.walk_reason;
  EXPECT_EQ(re.new_nodes + re.vanished_nodes, 0u);
  // The switches at both ends of the cables: SwitchInfo and 8 PortInfo each,
  // twice at most, against a walk's thousands.
  EXPECT_LE(re.discovery_smps, 4u * 2u * 10u);
  EXPECT_LT(re.discovery_smps * 20, walk_smps);
  EXPECT_GT(re.bringup.lft_blocks_written, 0u);
  check_sim_fabric(rig.fabric, *rig.store.current());

  const std::uint64_t heavy = rig.sm->status().heavy_sweeps;
  rig.sm->request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.heavy_sweeps > heavy && s.last_heavy.ok; }, 10'000));
  const sm::SweepStats walked = rig.sm->status().last_heavy;
  EXPECT_FALSE(walked.rediscovered);
  EXPECT_EQ(walked.links, links - 2);
  EXPECT_EQ(walked.new_nodes + walked.vanished_nodes, 0u);
  EXPECT_EQ(walked.lids_rerouted, 0u);
  EXPECT_EQ(walked.bringup.lft_blocks_written, 0u);
  EXPECT_EQ(walked.bringup.port_info_sets, 0u);

  for (const sim::PortIdx p : cut) rig.fabric.link_up(p);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.last_heavy.links == links && s.last_heavy.ok; }, 10'000));
  EXPECT_FALSE(rig.sm->status().last_heavy.rediscovered);
  check_sim_fabric(rig.fabric, *rig.store.current());
}

// A switch that resets after the SM read it and before its SwitchInfo Set
// lands holds the SM's LinearFDBTop over an empty table: every block looks
// programmed by the top alone. The next sweep reads one block back, finds
// the table lost and writes it again.
TEST(SmSim, SwitchResetWhileProgrammedGetsItsTableAgain) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const std::uint16_t top = rig.store.current()->top_lid;
  const std::uint64_t heavy = rig.sm->status().heavy_sweeps;
  const std::uint32_t spine = rig.fabric.find_node("spine-2");
  sim::SmpClient sma(rig.fabric, rig.fabric.attach(spine, 0, AgentSpec{.smi = true}));
  rig.fabric.reset_node(spine);
  const auto read = sma.dr(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, wire::DrPath{});
  ASSERT_TRUE(read.has_value());
  auto si = wire::decode<wire::SwitchInfo>(std::span<const std::uint8_t>(read->data));
  ASSERT_TRUE(si.has_value());
  ASSERT_EQ(si->linear_fdb_top.get(), 0);  // the reset cleared it, and the table
  si->prepare_for_set(false);
  si->linear_fdb_top = wire::be16::from(top);  // the Set that landed after the reset
  ASSERT_TRUE(sma.dr(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, wire::DrPath{}, wire::as_bytes(*si)));
  ASSERT_EQ(rig.fabric.lft_port(spine, 1), wire::kLftNoPort);
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.heavy_sweeps > heavy && s.last_heavy.ok; }, 10'000));
  const sm::SweepStats st = rig.sm->status().last_heavy;
  EXPECT_EQ(st.bringup.lfts_lost, 1u);
  EXPECT_GT(st.bringup.lft_blocks_written, 0u);
  check_sim_fabric(rig.fabric, *rig.store.current());
}

// Another master programmed our port (its SMInfo answer was lost in our
// last election, so our light sweeps never ask it): our port's MasterSMLID
// is no longer ours, and the next light sweep elects again.
TEST(SmSim, OurPortProgrammedByAnotherMasterSweepsAgain) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const std::uint64_t heavy = rig.sm->status().heavy_sweeps;
  const std::uint16_t sm_lid = rig.sm->status().sm_lid;
  // The other master's Set, sent from the SM's leaf switch one hop away.
  const sim::PortIdx leaf_port = rig.fabric.peer(rig.fabric.port(rig.fabric.find_node("host-0-0"), 1));
  sim::SmpClient sma(rig.fabric, rig.fabric.attach(rig.fabric.node_of(leaf_port), 0, AgentSpec{.smi = true}));
  wire::DrPath to_host;
  to_host.push(rig.fabric.port_num_of(leaf_port));
  const auto read = sma.dr(wire::method::kGet, wire::smp_attr::kPortInfo, 1, to_host);
  ASSERT_TRUE(read.has_value());
  auto pi = wire::decode<wire::PortInfo>(std::span<const std::uint8_t>(read->data));
  ASSERT_TRUE(pi.has_value());
  ASSERT_EQ(pi->master_sm_lid.get(), sm_lid);
  pi->master_sm_lid = wire::be16::from(static_cast<std::uint16_t>(sm_lid + 7));
  pi->set_port_state(0);
  pi->set_port_physical_state(0);
  pi->set_link_down_default_state(0);
  ASSERT_TRUE(sma.dr(wire::method::kSet, wire::smp_attr::kPortInfo, 1, to_host, wire::as_bytes(*pi)));
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.heavy_sweeps > heavy && s.last_heavy.ok; }, 10'000));
  EXPECT_NE(rig.sm->status().last_heavy.walk_reason.find("MasterSMLID"), std::string::npos)
      << rig.sm->status().last_heavy.walk_reason;
  const auto again = sma.dr(wire::method::kGet, wire::smp_attr::kPortInfo, 1, to_host);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(wire::decode<wire::PortInfo>(std::span<const std::uint8_t>(again->data))->master_sm_lid.get(), sm_lid);
}

// A host's cable pulled: the CA is gone, which re-discovery does not handle;
// the SM walks the subnet and says why.
TEST(SmSim, LinkToACaDownWalksTheSubnet) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 100;
  SimRig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", cfg);
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const std::uint32_t nodes = rig.sm->status().last_heavy.nodes;
  rig.fabric.link_down(rig.fabric.port(rig.fabric.find_node("host-3-1"), 1));
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.last_heavy.nodes == nodes - 1 && s.last_heavy.ok; },
                            10'000));
  const sm::SweepStats st = rig.sm->status().last_heavy;
  EXPECT_FALSE(st.rediscovered);
  EXPECT_NE(st.walk_reason.find("to a CA"), std::string::npos) << st.walk_reason;
  EXPECT_EQ(st.vanished_nodes, 1u);
}

// The SM's own cable pulled and put back: seen through the cheap local
// PortInfo check within local_port_check_ms, long before the next light
// sweep (10 s here); the whole fabric is up again at once. Simulated time.
TEST(SmSim, OwnPortBackIsSweptWithinTheLocalCheck) {
  sm::SmConfig cfg;
  cfg.light_sweep_interval_ms = 10'000;
  cfg.local_port_check_ms = 250;
  SimRig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", cfg);
  // The first sweep ended (port tables read after subnet up).
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.port_table_sweeps >= 1; }, 60'000));
  const std::uint32_t nodes = rig.sm->status().last_heavy.nodes;
  const sim::PortIdx own = rig.fabric.port(rig.fabric.find_node("host-0-0"), 1);
  rig.fabric.link_down(own);
  Nanos t0 = rig.fabric.now_ns();
  // Alone behind a dead link: the sweep finds only us, routes nothing, and
  // the SA keeps the last epoch.
  ASSERT_TRUE(rig.run_until([&](const sm::SmStatus& s) { return s.last_heavy.nodes == 1; }, 5'000));
  EXPECT_LE(rig.fabric.now_ns() - t0, 1000 * kNanosPerMilli);
  EXPECT_EQ(rig.store.current()->fabric.nodes.size(), nodes);
  rig.run_until([](const sm::SmStatus&) { return false; }, 2'000);  // and does not sweep again while it stays down
  const auto down_sweeps = rig.sm->status().heavy_sweeps;
  rig.fabric.link_up(own);
  t0 = rig.fabric.now_ns();
  ASSERT_TRUE(rig.run_until(
      [&](const sm::SmStatus& s) { return s.heavy_sweeps > down_sweeps && s.last_heavy.nodes == nodes && s.last_heavy.ok; },
      5'000));
  const Nanos back_ms = (rig.fabric.now_ns() - t0) / kNanosPerMilli;
  std::printf("own port back: fabric up again after %lld ms of sim time\n", static_cast<long long>(back_ms));
  EXPECT_LE(back_ms, 1000);
  check_sim_fabric(rig.fabric, *rig.store.current());
}

struct TestGroups final : sa::McGroupProvider {
  std::vector<sa::McGroup> list;
  std::vector<sa::McGroup> groups() override { return list; }
};

// Floods a packet for `mlid` from `from` (a CA node) by reading every switch's
// MFT over LID-routed SMPs; returns the CA nodes reached, or nothing on a loop.
std::optional<std::set<std::uint32_t>> flood(sim::Fabric& f, sim::SmpClient& c, const sa::Snapshot& snap,
                                             std::uint32_t from, std::uint16_t mlid) {
  std::map<std::uint64_t, std::uint16_t> lid_of;  // switch node GUID -> LID
  for (const auto& n : snap.fabric.nodes)
    if (n.is_switch()) lid_of[n.node_guid] = n.base_lid;
  std::set<std::uint32_t> reached, seen_switches;
  std::vector<std::pair<std::uint32_t, std::uint8_t>> todo;  // (switch, in port)
  const sim::PortIdx first = f.peer(f.port(from, 1));
  todo.emplace_back(f.node_of(first), f.port_num_of(first));
  while (!todo.empty()) {
    const auto [sw, in] = todo.back();
    todo.pop_back();
    if (!seen_switches.insert(sw).second) return std::nullopt;  // a loop
    std::uint32_t mask = 0;
    for (std::uint8_t pos = 0; pos * 16 <= f.num_ports(sw); ++pos) {
      const auto r = c.lid(wire::method::kGet, wire::smp_attr::kMulticastFwdTable,
                           wire::mft_modifier(pos, wire::mft_block_of(mlid)), lid_of.at(f.node_guid(sw)));
      if (!r) return std::nullopt;
      wire::MftBlock blk;
      std::memcpy(&blk, r->data.data(), sizeof blk);
      mask |= std::uint32_t{blk.mask(wire::mft_index_of(mlid))} << (16 * pos);
    }
    for (std::uint8_t p = 1; p <= f.num_ports(sw); ++p) {
      if (p == in || !(mask & (1u << p))) continue;
      const sim::PortIdx peer = f.peer(f.port(sw, p));
      if (peer == sim::kNoPortIdx) continue;
      const std::uint32_t n = f.node_of(peer);
      if (f.is_switch(n)) {
        todo.emplace_back(n, f.port_num_of(peer));
      } else {
        reached.insert(n);
      }
    }
  }
  return reached;
}

TEST(SmSim, MulticastTreeReachesMembersAndFollowsChanges) {
  TestGroups provider;
  sm::SmConfig cfg;
  cfg.mcast = &provider;
  const sim::Topology topo = sim::make_fat_tree_2level({.k = 8});
  std::vector<std::uint32_t> members;
  {
    sim::Fabric probe(topo);
    for (const char* h : {"host-0-0", "host-3-1", "host-5-0", "host-5-2"}) members.push_back(probe.find_node(h));
  }
  SimRig rig(topo, "host-0-0", cfg);
  const std::uint16_t mlid = 0xc001;
  auto guids = [&](std::size_t count) {
    std::vector<std::uint64_t> out;
    for (std::size_t i = 0; i < count; ++i) out.push_back(rig.fabric.port_guid(rig.fabric.port(members[i], 1)));
    return out;
  };
  provider.list = {sa::McGroup{mlid, guids(4)}};
  // The first sweep ended: its last epoch (the port tables') published.
  ASSERT_TRUE(rig.run_until([](const sm::SmStatus& s) { return s.port_table_sweeps >= 1; }, 60'000));
  EXPECT_GT(rig.sm->status().last_heavy.mft_blocks_written, 0u);
  const auto snap = rig.store.current();
  EXPECT_FALSE(snap->mfts->load()->empty());

  const sim::EndpointId ep = rig.fabric.attach(rig.fabric.find_node("host-7-0"), 1, AgentSpec{.smi = true});
  sim::SmpClient client(rig.fabric, ep);
  const auto all = std::set<std::uint32_t>(members.begin(), members.end());
  for (const auto from : members) {
    const auto got = flood(rig.fabric, client, *snap, from, mlid);
    ASSERT_TRUE(got.has_value());
    std::set<std::uint32_t> want = all;
    want.erase(from);
    EXPECT_EQ(*got, want) << "from node " << from;
  }
  // host-5-2 leaves: after the notification only three members are reached.
  provider.list = {sa::McGroup{mlid, guids(3)}};
  provider.notify();
  const std::uint64_t epoch = rig.sm->status().epoch;
  for (int i = 0; i < 200; ++i) {  // a few idle-loop rounds of sim time
    if (rig.engine.poll_all_once() == 0) rig.fabric.advance(kStepNs);
  }
  EXPECT_EQ(rig.sm->status().epoch, epoch);  // no heavy sweep needed
  const auto got = flood(rig.fabric, client, *snap, members[0], mlid);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::set<std::uint32_t>{members[1], members[2]}));
  // The SA's MFT view (MFTRecords) followed without a new epoch: the leaf of
  // the member that left no longer forwards the group to its port.
  const auto& f = snap->fabric;
  const std::uint64_t left_guid = guids(4)[3];
  const auto left = std::find_if(f.nodes.begin(), f.nodes.end(), [&](const fabric::Node& n) {
    return !n.is_switch() && n.ports.size() > 1 && n.ports[1].guid == left_guid;
  });
  ASSERT_NE(left, f.nodes.end());
  const fabric::NodeId leaf = left->ports[1].peer;
  const std::uint8_t leaf_port = left->ports[1].peer_port;
  const auto view = snap->mfts->load();
  const auto leaf_mft = std::find_if(view->begin(), view->end(), [&](const sa::SwitchMft& m) { return m.node == leaf; });
  ASSERT_NE(leaf_mft, view->end());
  const auto& positions = leaf_mft->masks.at(mlid - wire::kMulticastLidBase);
  const std::size_t pos = leaf_port / 16;
  const std::uint16_t mask = pos < positions.size() ? positions[pos] : 0;
  EXPECT_EQ(mask & (1u << (leaf_port % 16)), 0u);
  EXPECT_NE(mask, 0u);  // still forwarded up towards the other members
  rig.fabric.detach(ep);
}

}  // namespace
}  // namespace madengine
