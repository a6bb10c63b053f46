// The fabric model: SMA answers, directed-route and LID-routed forwarding,
// the port state machine, M_Key checks, drops with reasons, time and faults.
#include "sim/fabric.hpp"

#include <cstdlib>

#include <gtest/gtest.h>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/pkey_table.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"
#include "sim/bringup.hpp"
#include "sim/generators.hpp"
#include "sim/smp_client.hpp"

using namespace madengine;
using namespace madengine::sim;
using wire::method::kGet;
using wire::method::kSet;

namespace {

const char* kNet = R"(
Switch 8 "S1"
[1] "H1"[1]
[3] "S2"[3]
[5] "S2"[5]

Switch 8 "S2"
[1] "H2"[1]
[3] "S1"[3]
[5] "S1"[5]

Hca 2 "H1"
[1] "S1"[1]

Hca 2 "H2"
[1] "S2"[1]
)";

template <typename T>
const T& as(const wire::DrSmp& s) {
  return *reinterpret_cast<const T*>(s.data.data());
}
template <typename T>
std::span<const std::uint8_t> bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof v};
}
wire::DrPath path(std::initializer_list<std::uint8_t> ports) {
  wire::DrPath p;
  for (auto x : ports) p.push(x);
  return p;
}

struct Rig {
  explicit Rig(const Topology& t, FabricConfig cfg = {}, const char* sm_node = "H1")
      : fabric(t, cfg), ep(fabric.attach(fabric.find_node(sm_node), 1, sm_spec())) {}
  static AgentSpec sm_spec() {
    AgentSpec spec;
    spec.smi = true;
    spec.is_sm = true;
    return spec;
  }
  Fabric fabric;
  EndpointId ep;
  SmpClient client{fabric, ep};
};

}  // namespace

TEST(SimFabric, DirectedRouteNodeInfoAcrossTheFabric) {
  Rig r(parse_topology(kNet));
  auto local = r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, wire::DrPath{});
  ASSERT_TRUE(local);
  EXPECT_EQ(as<wire::NodeInfo>(*local).node_guid.get(), 0x100000u);
  EXPECT_EQ(as<wire::NodeInfo>(*local).local_port_num, 1);
  auto s2 = r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 5}));
  ASSERT_TRUE(s2);
  EXPECT_TRUE(s2->direction_in());
  EXPECT_EQ(s2->smp_status(), 0);
  EXPECT_EQ(s2->hop_pointer(), 0);
  EXPECT_EQ(s2->return_path[1], 1);  // entered S1 by port 1
  EXPECT_EQ(s2->return_path[2], 5);  // entered S2 by port 5
  const auto& ni = as<wire::NodeInfo>(*s2);
  EXPECT_TRUE(ni.is_switch());
  EXPECT_EQ(ni.node_guid.get(), 0x200001u);
  EXPECT_EQ(ni.local_port_num, 5);
  EXPECT_EQ(ni.num_ports, 8);
  auto h2 = r.client.dr(kGet, wire::smp_attr::kNodeDescription, 0, path({1, 3, 1}));
  ASSERT_TRUE(h2);
  EXPECT_EQ(as<wire::NodeDescription>(*h2).text(), "H2");
  // 3 hops out and back, plus the SMA: time is the simulator's, exactly.
  const Nanos t0 = r.fabric.now_ns();
  ASSERT_TRUE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1})));
  EXPECT_EQ(r.fabric.now_ns() - t0, 6 * r.fabric.config().hop_latency_ns + r.fabric.config().sma_latency_ns);
}

TEST(SimFabric, DirectedRouteDrops) {
  Rig r(parse_topology(kNet));
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({2})));  // not our port
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kBadPath), 1u);
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 2})));  // S1 port 2 has no cable
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kLinkDown), 1u);
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1, 1})));  // through H2
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kNotSwitch), 1u);
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 9})));  // S1 has 8 ports
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kBadPath), 2u);
}

TEST(SimFabric, StatusForBadRequests) {
  Rig r(parse_topology(kNet));
  auto si = r.client.dr(kGet, wire::smp_attr::kSwitchInfo, 0, wire::DrPath{});  // H1 is a CA
  ASSERT_TRUE(si);
  EXPECT_EQ(si->smp_status(), wire::status::kMethodAttrUnsupported);
  auto pi = r.client.dr(kGet, wire::smp_attr::kPortInfo, 9, path({1}));
  ASSERT_TRUE(pi);
  EXPECT_EQ(pi->smp_status(), wire::status::kInvalidField);
  auto led = r.client.dr(kGet, wire::smp_attr::kLedInfo, 0, path({1}));
  ASSERT_TRUE(led);
  EXPECT_EQ(led->smp_status(), wire::status::kMethodAttrUnsupported);
  auto weird = r.client.dr(wire::method::kSend, wire::smp_attr::kNodeInfo, 0, path({1}));
  ASSERT_TRUE(weird);
  EXPECT_EQ(weird->smp_status(), wire::status::kMethodUnsupported);
}

TEST(SimFabric, PortStateMachineAndPortStateChange) {
  Rig r(parse_topology(kNet));
  auto get_pi = [&](const wire::DrPath& p, std::uint32_t port) {
    return as<wire::PortInfo>(*r.client.dr(kGet, wire::smp_attr::kPortInfo, port, p));
  };
  wire::PortInfo pi = get_pi(path({1}), 3);
  EXPECT_EQ(pi.state(), wire::PortState::kInit);
  EXPECT_EQ(pi.phys_state(), wire::PortPhysState::kLinkUp);
  pi.set_port_physical_state(0);
  pi.set_state(wire::PortState::kActive);  // INIT -> ACTIVE is not allowed
  auto bad = r.client.dr(kSet, wire::smp_attr::kPortInfo, 3, path({1}), bytes(pi));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->smp_status(), wire::status::kInvalidField);
  EXPECT_EQ(as<wire::PortInfo>(*bad).state(), wire::PortState::kInit);
  pi.set_state(wire::PortState::kArmed);
  auto armed = r.client.dr(kSet, wire::smp_attr::kPortInfo, 3, path({1}), bytes(pi));
  EXPECT_EQ(as<wire::PortInfo>(*armed).state(), wire::PortState::kArmed);
  pi.set_state(wire::PortState::kActive);  // neighbour still INIT
  EXPECT_EQ(r.client.dr(kSet, wire::smp_attr::kPortInfo, 3, path({1}), bytes(pi))->smp_status(),
            wire::status::kInvalidField);
  pi.set_state(wire::PortState::kArmed);
  r.client.dr(kSet, wire::smp_attr::kPortInfo, 3, path({1, 3}), bytes(pi));
  pi.set_state(wire::PortState::kActive);
  EXPECT_EQ(as<wire::PortInfo>(*r.client.dr(kSet, wire::smp_attr::kPortInfo, 3, path({1}), bytes(pi))).state(),
            wire::PortState::kActive);

  // PortStateChange: set at power-on, cleared by writing 1, set again by a link going down.
  auto swi = as<wire::SwitchInfo>(*r.client.dr(kGet, wire::smp_attr::kSwitchInfo, 0, path({1})));
  EXPECT_EQ(swi.port_state_change(), 1);
  auto cleared = as<wire::SwitchInfo>(*r.client.dr(kSet, wire::smp_attr::kSwitchInfo, 0, path({1}), bytes(swi)));
  EXPECT_EQ(cleared.port_state_change(), 0);
  swi.set_port_state_change(0);  // writing 0 leaves it alone
  EXPECT_EQ(as<wire::SwitchInfo>(*r.client.dr(kSet, wire::smp_attr::kSwitchInfo, 0, path({1}), bytes(swi)))
                .port_state_change(),
            0);
  r.fabric.link_down(r.fabric.port(r.fabric.find_node("S1"), 5));
  EXPECT_EQ(as<wire::SwitchInfo>(*r.client.dr(kGet, wire::smp_attr::kSwitchInfo, 0, path({1}))).port_state_change(), 1);
  EXPECT_EQ(get_pi(path({1}), 5).state(), wire::PortState::kDown);
  EXPECT_EQ(get_pi(path({1}), 5).phys_state(), wire::PortPhysState::kPolling);
  r.fabric.link_up(r.fabric.port(r.fabric.find_node("S1"), 5));
  EXPECT_EQ(get_pi(path({1}), 5).state(), wire::PortState::kInit);
}

TEST(SimFabric, MKeyProtection) {
  Rig r(parse_topology(kNet));
  auto pi = as<wire::PortInfo>(*r.client.dr(kGet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1})));
  pi.m_key = wire::be64::from(0x1234);
  pi.set_m_key_protect_bits(1);
  pi.set_port_state(0);
  pi.set_port_physical_state(0);
  ASSERT_EQ(r.client.dr(kSet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1}), bytes(pi))->smp_status(), 0);
  // Level 1: a Get with the wrong key succeeds but shows M_Key 0; a Set gets no answer.
  auto g = r.client.dr(kGet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1}), {}, 0x9999);
  ASSERT_TRUE(g);
  EXPECT_EQ(as<wire::PortInfo>(*g).m_key.get(), 0u);
  EXPECT_EQ(
      as<wire::PortInfo>(*r.client.dr(kGet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1}), {}, 0x1234)).m_key.get(),
      0x1234u);
  EXPECT_FALSE(r.client.dr(kSet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1}), bytes(pi), 0x9999));
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kMKey), 1u);
  // Level 2: Gets with the wrong key fail too.
  pi.set_m_key_protect_bits(2);
  ASSERT_TRUE(r.client.dr(kSet, wire::smp_attr::kPortInfo, 0, path({1, 3, 1}), bytes(pi), 0x1234));
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1}), {}, 0));
  EXPECT_TRUE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1}), {}, 0x1234));
  EXPECT_EQ(r.fabric.counters().drop(DropReason::kMKey), 2u);
}

TEST(SimFabric, TablesRoundTrip) {
  Rig r(parse_topology(kNet));
  wire::LftBlock lft{};
  for (std::size_t i = 0; i < wire::kLftBlockSize; ++i) lft.set_port(i, static_cast<std::uint8_t>(i % 9));
  auto set = r.client.dr(kSet, wire::smp_attr::kLinearFwdTable, 2, path({1}), bytes(lft));
  ASSERT_EQ(set->smp_status(), 0);
  EXPECT_EQ(as<wire::LftBlock>(*r.client.dr(kGet, wire::smp_attr::kLinearFwdTable, 2, path({1}))).port(7), 7);
  EXPECT_EQ(as<wire::LftBlock>(*r.client.dr(kGet, wire::smp_attr::kLinearFwdTable, 1, path({1}))).port(7),
            wire::kLftNoPort);
  EXPECT_EQ(r.client.dr(kGet, wire::smp_attr::kLinearFwdTable, 0, wire::DrPath{})->smp_status(),
            wire::status::kMethodAttrUnsupported);
  auto pk = as<wire::PKeyTableBlock>(*r.client.dr(kGet, wire::smp_attr::kPKeyTable, 0, wire::DrPath{}));
  EXPECT_EQ(pk.pkey(0), 0xffff);
  pk.set_pkey(1, 0x8001);
  r.client.dr(kSet, wire::smp_attr::kPKeyTable, 0, wire::DrPath{}, bytes(pk));
  EXPECT_EQ(as<wire::PKeyTableBlock>(*r.client.dr(kGet, wire::smp_attr::kPKeyTable, 0, wire::DrPath{})).pkey(1),
            0x8001);
  EXPECT_EQ(r.client.dr(kGet, wire::smp_attr::kPKeyTable, 2, wire::DrPath{})->smp_status(),
            wire::status::kInvalidField);
}

TEST(SimFabric, BringUpThenLidRouting) {
  Rig r(make_fat_tree_2level({8}), {}, "host-0-0");
  Fabric& f = r.fabric;
  SmpClient& client = r.client;
  const BringUpResult res = bring_up(client);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.nodes.size(), f.node_count());
  EXPECT_EQ(res.lid_max, f.node_count());  // one LID per switch and per host port
  for (PortIdx p = 0; p < f.port_count(); ++p)
    if (f.peer(p) != kNoPortIdx) {
      ASSERT_EQ(f.port_state(p), wire::PortState::kActive);
    }
  // LID-routed NodeInfo to every LID.
  for (std::uint16_t lid = 1; lid <= res.lid_max; ++lid) {
    auto ni = client.lid(kGet, wire::smp_attr::kNodeInfo, 0, lid);
    ASSERT_TRUE(ni) << "lid " << lid;
    ASSERT_EQ(ni->hdr.status.get(), 0);
  }
  // A hole in an LFT drops with a reason.
  const std::uint32_t leaf = f.find_node("leaf-0");
  wire::LftBlock blk = as<wire::LftBlock>(*client.dr(kGet, wire::smp_attr::kLinearFwdTable, 0, path({1})));
  blk.set_port(res.lid_max, wire::kLftNoPort);
  client.dr(kSet, wire::smp_attr::kLinearFwdTable, 0, path({1}), bytes(blk));
  EXPECT_EQ(f.lft_port(leaf, res.lid_max), wire::kLftNoPort);
  EXPECT_FALSE(client.lid(kGet, wire::smp_attr::kNodeInfo, 0, res.lid_max));
  EXPECT_EQ(f.counters().drop(DropReason::kNoRoute), 1u);
  // A port that is not ACTIVE stops LID routing but not directed route.
  f.link_down(f.port(leaf, 5));
  f.link_up(f.port(leaf, 5));
  std::uint64_t before = f.counters().drop(DropReason::kPortNotActive);
  for (std::uint16_t lid = 1; lid < res.lid_max; ++lid) client.lid(kGet, wire::smp_attr::kNodeInfo, 0, lid);
  EXPECT_GT(f.counters().drop(DropReason::kPortNotActive), before);
  EXPECT_TRUE(client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 5})));
}

TEST(SimFabric, SeededLossReplaysExactly) {
  auto run = [](std::uint64_t seed) {
    FabricConfig cfg;
    cfg.seed = seed;
    Rig r(parse_topology(kNet), cfg);
    r.fabric.set_loss_rate(0.3);
    std::string outcome;
    for (int i = 0; i < 200; ++i)
      outcome += r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1})) ? '1' : '0';
    return outcome;
  };
  const std::uint64_t seed = 42;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string a = run(seed);
  EXPECT_EQ(a, run(seed));
  EXPECT_NE(a, run(seed + 1));
  const auto ok = std::count(a.begin(), a.end(), '1');
  EXPECT_GT(ok, 10);  // 0.7^6 of 200 is about 24
  EXPECT_LT(ok, 60);
}

TEST(SimFabric, FaultsMuteResetKill) {
  Rig r(parse_topology(kNet));
  Fabric& f = r.fabric;
  const std::uint32_t s2 = f.find_node("S2");
  f.schedule(f.now_ns() + 10, EventKind::kNodeMute, s2);
  f.run_until(f.now_ns() + 10);
  EXPECT_FALSE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3})));
  EXPECT_EQ(f.counters().drop(DropReason::kNodeMuted), 1u);
  EXPECT_TRUE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3, 1})));  // still forwards
  f.mute_node(s2, false);

  wire::LftBlock lft{};
  lft.set_port(1, 1);
  r.client.dr(kSet, wire::smp_attr::kLinearFwdTable, 0, path({1, 3}), bytes(lft));
  EXPECT_EQ(f.lft_port(s2, 1), 1);
  f.reset_node(s2);
  EXPECT_EQ(f.lft_port(s2, 1), wire::kLftNoPort);
  EXPECT_EQ(f.port_state(f.port(s2, 3)), wire::PortState::kInit);

  const std::uint32_t h1 = f.find_node("H1");
  EXPECT_EQ(f.take_event(r.ep), DeviceEvent::kNone);
  f.kill_node(h1);
  EXPECT_FALSE(f.device_present(r.ep));
  f.revive_node(h1);
  EXPECT_EQ(f.take_event(r.ep), DeviceEvent::kDeviceLost);
  EXPECT_EQ(f.take_event(r.ep), DeviceEvent::kDeviceBack);
  EXPECT_EQ(f.take_event(r.ep), DeviceEvent::kNone);
  EXPECT_TRUE(r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1})));
}

TEST(SimFabric, JoinTwoSubnets) {
  const TwoSubnets two = make_two_subnets(4);
  Fabric f(two.topo);
  AgentSpec spec;
  spec.smi = true;
  const EndpointId sm = f.attach(two.sm_a, 1, spec);
  SmpClient client(f, sm);
  const auto before = bring_up(client, false);
  ASSERT_TRUE(before.ok);
  EXPECT_EQ(before.nodes.size(), f.node_count() / 2);
  ASSERT_TRUE(f.link(f.port(two.join_a, two.join_a_port), f.port(two.join_b, two.join_b_port)));
  const auto after = bring_up(client, false);
  EXPECT_EQ(after.nodes.size(), f.node_count());
}

// DR SMPs whose first or last section is LID routed (IBA 14.2.2: DrSLID and
// DrDLID not permissive), on a routed fabric.
TEST(SimFabric, DirectedRouteWithLidRoutedSections) {
  Rig r(make_fat_tree_2level({4}), {}, "host-0-0");
  Fabric& f = r.fabric;
  const BringUpResult res = bring_up(r.client);
  ASSERT_TRUE(res.ok) << res.error;
  const std::uint16_t my_lid = f.lid(f.port(f.find_node("host-0-0"), 1));
  const std::uint16_t spine_lid = f.lid(f.port(f.find_node("spine-0"), 0));
  const std::uint16_t far_lid = f.lid(f.port(f.find_node("host-2-1"), 1));

  // Head: LID routed to spine-0, then directed out of its port 3 to leaf-2.
  auto head = r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3}), {}, 0, my_lid, wire::kPermissiveLid,
                          spine_lid);
  ASSERT_TRUE(head) << "drops: " << f.counters().drops_total();
  EXPECT_EQ(as<wire::NodeInfo>(*head).node_guid.get(), f.node_guid(f.find_node("leaf-2")));
  EXPECT_EQ(as<wire::NodeInfo>(*head).local_port_num, 3);
  EXPECT_EQ(head->hop_pointer(), 0);

  // Tail: directed to spine-0, then LID routed to host-2-1.
  auto tail = r.client.dr(kGet, wire::smp_attr::kNodeInfo, 0, path({1, 3}), {}, 0, wire::kPermissiveLid, far_lid);
  ASSERT_TRUE(tail) << "drops: " << f.counters().drops_total();
  EXPECT_EQ(as<wire::NodeInfo>(*tail).node_guid.get(), f.node_guid(f.find_node("host-2-1")));
  EXPECT_EQ(tail->return_path[1], 1);
  EXPECT_EQ(tail->return_path[2], 1);
  EXPECT_EQ(f.counters().drops_total(), 0u);
}

// Replays from MADENGINE_SIM_SEED when set, and says which seed ran: a
// failing run prints the seed that reproduces it exactly.
TEST(SimFabric, RandomFabricDiscoveryUnderLossIsReproducible) {
  const char* env = std::getenv("MADENGINE_SIM_SEED");
  const std::uint64_t seed = env ? std::strtoull(env, nullptr, 0) : 20261129;
  SCOPED_TRACE("replay with MADENGINE_SIM_SEED=" + std::to_string(seed));
  const Topology topo = make_random({24, 4, 2, 12, seed});
  auto run = [&]() {
    FabricConfig cfg;
    cfg.seed = seed;
    Rig r(topo, cfg, "host-0-0");
    r.fabric.set_link_loss_rate(r.fabric.port(r.fabric.find_node("sw-0"), 3), 0.5);
    const BringUpResult res = bring_up(r.client, false);
    return std::make_pair(res.nodes.size(), r.fabric.counters().drop(DropReason::kLoss));
  };
  const auto a = run();
  EXPECT_EQ(a, run());
  EXPECT_LE(a.first, topo.nodes.size());
}
