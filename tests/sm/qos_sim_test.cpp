// QoS options and programming (label sim, and the options' unit tests):
// OpenSM's option syntax and fall-backs, then on the sim every port's
// SL2VL and VLArb tables as the options say (limited to its OperationalVLs),
// VLHighLimit, no writes on an unchanged re-sweep, and the SA's SL2VL and
// VLArb records reporting what was written, switch ports included.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "madengine/wire/sa_records.hpp"
#include "sim/generators.hpp"
#include "sim_sa_rig.hpp"
#include "sm/qos/qos_options.hpp"
#include "sm/qos/qos_policy.hpp"

namespace madengine {
namespace {

using testing::bytes;
using testing::records;

TEST(QosOptions, DefaultsFallBacksAndErrors) {
  std::string err;
  sm::QosOptions o;
  o.enabled = true;
  auto c = sm::build_qos_config(o, err);
  ASSERT_TRUE(c) << err;
  // OpenSM's built-in tables: SL i -> VL i, SL15 -> VL7; high VL0 weight 4; low VL1..14 weight 4.
  EXPECT_EQ(c->ca.sl2vl.get_vl(14), 14);
  EXPECT_EQ(c->ca.sl2vl.get_vl(15), 7);
  EXPECT_EQ(c->swe.vlarb_high[0].entries[0].weight, 4);
  EXPECT_EQ(c->swe.vlarb_low[0].entries[0].weight, 0);
  EXPECT_EQ(c->swe.vlarb_low[0].entries[3].vl(), 3);
  EXPECT_EQ(c->swe.vlarb_low[0].entries[3].weight, 4);
  EXPECT_EQ(c->swe.vlarb_low[0].entries[15].weight, 0) << "beyond the list: 0:0";
  EXPECT_EQ(c->valid_sl_mask(), 0xffff);

  o.all.sl2vl = "0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15";
  o.all.high_limit = 4;
  o.ca.sl2vl = "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1";
  o.swe.vlarb_low = "0:32, 1:16";
  c = sm::build_qos_config(o, err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->ca.sl2vl.get_vl(0), 1) << "qos_ca_sl2vl wins for CAs";
  EXPECT_EQ(c->swe.sl2vl.get_vl(4), 0) << "qos_sl2vl for the rest";
  EXPECT_EQ(c->sw0.high_limit, 4);
  EXPECT_EQ(c->swe.vlarb_low[0].entries[1].weight, 16);
  EXPECT_EQ(c->ca.vlarb_low[0].entries[1].weight, 4) << "CAs keep the default low table";
  EXPECT_EQ(c->valid_sl_mask(), 0x7fff) << "SL15 is dropped (VL15) on switches";

  sm::QosOptions bad;
  bad.swe.sl2vl = "0,1,2";
  EXPECT_FALSE(sm::build_qos_config(bad, err));
  EXPECT_EQ(err, "qos_swe_sl2vl: needs 16 VLs (one per SL), has 3");
  bad = {};
  bad.all.vlarb_high = "0:4,1:x";
  EXPECT_FALSE(sm::build_qos_config(bad, err));
  EXPECT_EQ(err, "qos_vlarb_high: entry 2 '1:x' is not VL:weight (VL 0..14, weight 0..255)");
  bad = {};
  bad.rtr.max_vls = 16;
  EXPECT_FALSE(sm::build_qos_config(bad, err));
  EXPECT_EQ(err, "qos_rtr_max_vls must be 1..15");
}


TEST(QosSim, TablesOnEveryPortAsTheOptionsSay) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 5);
  sm::QosOptions o;
  o.enabled = true;
  o.all.high_limit = 3;
  o.swe.sl2vl = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15";  // SL15 dropped on switch ports
  o.ca.vlarb_low = "0:8,1:16,2:24,9:2";
  std::string err;
  auto qos = sm::build_qos_config(o, err);
  ASSERT_TRUE(qos) << err;
  auto& node = rig.add(rig.fabric.find_node("host-0-0"),
                       [q = std::make_shared<const sm::QosConfig>(*qos)](sm::SmConfig& c) { c.qos = q; });
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().subnet_up; }, 30'000));
  const auto st = node.sm().status().last_heavy;
  EXPECT_EQ(st.bringup.errors, 0u);
  EXPECT_EQ(st.qos.errors, 0u);
  EXPECT_GT(st.qos.sl2vl_sets, 0u);
  EXPECT_GT(st.qos.vlarb_sets, 0u);

  const auto& f = rig.fabric;
  const std::uint32_t host = f.find_node("host-2-1");
  const sim::PortIdx hp = f.port(host, 1);
  ASSERT_EQ(f.link_state(hp).op_vls, 4) << "VL0-7 on the sim";
  // A CA: the default SL2VL limited to VL0-7 (SL8 -> VL8 & 7 = 0), the CA's low VLArb table.
  const auto ca = f.sl2vl(hp, 0);
  EXPECT_EQ(ca, (std::array<std::uint8_t, 8>{0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67}));
  EXPECT_EQ(f.link_state(hp).vl_high_limit, 3);
  // A switch, every input port toward an output port: SL15 -> VL15 kept, the rest masked.
  const std::uint32_t leaf = f.node_of(f.peer(hp));
  const std::uint8_t out = f.port_num_of(f.peer(hp));
  for (std::uint8_t in = 0; in <= f.num_ports(leaf); ++in)
    EXPECT_EQ(f.sl2vl(f.port(leaf, out), in), (std::array<std::uint8_t, 8>{0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67 | 0x08}))
        << "in " << int(in);
  EXPECT_EQ(f.link_state(f.peer(hp)).vl_high_limit, 3);

  // The SA reports what was written: the CA's VLArb low block and the switch port's SL2VL.
  sim::Host h(rig.fabric, f.find_node("host-1-0"));
  wire::VlArbTableRecord vq{};
  vq.lid = wire::be16::from(f.lid(hp));
  const auto va = rig.ask(h, wire::method::kGetTable, wire::sa_attr::kVlArbTableRecord,
                          wire::vl_arb_record_cm::kLid, bytes(vq));
  ASSERT_TRUE(va);
  const auto blocks = records<wire::VlArbTableRecord>(*va);
  ASSERT_FALSE(blocks.empty());
  EXPECT_EQ(blocks[0].block_num, 1);
  EXPECT_EQ(blocks[0].vl_arb_table.entries[2].weight, 24);
  EXPECT_EQ(blocks[0].vl_arb_table.entries[3].vl(), 1) << "VL9 limited to VL0-7: VL1";
  wire::Sl2VlTableRecord sq{};
  sq.lid = wire::be16::from(f.lid(f.port(leaf, 0)));
  sq.output_port_num = out;
  sq.input_port_num = 1;
  const auto sa = rig.ask(h, wire::method::kGetTable, wire::sa_attr::kSl2VlTableRecord,
                          wire::sl2vl_record_cm::kLid | wire::sl2vl_record_cm::kInputPortNum |
                              wire::sl2vl_record_cm::kOutputPortNum,
                          bytes(sq));
  ASSERT_TRUE(sa);
  const auto sl = records<wire::Sl2VlTableRecord>(*sa);
  ASSERT_EQ(sl.size(), 1u);
  EXPECT_EQ(sl[0].table.get_vl(15), 15);

  // An unchanged fabric: nothing written again.
  node.sm().request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().heavy_sweeps >= 2; }, 10'000));
  const auto again = node.sm().status().last_heavy.qos;
  EXPECT_EQ(again.sl2vl_sets + again.vlarb_sets + again.errors, 0u);
  EXPECT_EQ(again.kept, st.qos.sl2vl_sets + st.qos.vlarb_sets);
}

TEST(QosSim, OffWritesNoTable) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 5);
  auto& node = rig.add(rig.fabric.find_node("host-0-0"));
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().subnet_up; }, 30'000));
  EXPECT_EQ(node.sm().status().last_heavy.qos.sl2vl_sets + node.sm().status().last_heavy.qos.vlarb_sets, 0u);
  const auto& f = rig.fabric;
  // The simulator's (ibsim's) defaults stay: SL i -> VL i, SL15 -> VL7.
  EXPECT_EQ(f.sl2vl(f.port(f.find_node("host-2-1"), 1), 0),
            (std::array<std::uint8_t, 8>{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7}));
}

// A layered routing without QoS: every port still gets the SL2VL the layers
// need (SL i -> VL i, limited to the port's VLs: VL0-7 here), no VLArb table;
// the simulator's default would otherwise stay (what a switch holds after
// reset is its vendor's choice, not the routing's).
TEST(QosSim, LayeredRoutingWritesSl2VlWithoutQos) {
  const auto g = sim::make_torus({.dims = {5, 5, 1}, .wrap = {true, true, false}, .hosts_per_switch = 1});
  testing::SimSaRig rig(g.topo, 5);
  auto& node = rig.add(rig.fabric.find_node("host-0-0-0-0"), [](sm::SmConfig& c) {
    c.routing_chain = {sm::RoutingAlgo::kDor};
  });
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().subnet_up; }, 30'000));
  const auto st = node.sm().status().last_heavy;
  ASSERT_GT(st.routing_vls, 1u) << "dor on a torus: dateline layers";
  EXPECT_EQ(st.qos.errors, 0u);
  EXPECT_GT(st.qos.sl2vl_sets, 0u);
  EXPECT_EQ(st.qos.vlarb_sets, 0u);
  const auto& f = rig.fabric;
  constexpr std::array<std::uint8_t, 8> kLayers{0x01, 0x23, 0x45, 0x67, 0x01, 0x23, 0x45, 0x67};
  std::size_t tables = 0;
  for (std::uint32_t n = 0; n < f.node_count(); ++n) {
    if (!f.is_switch(n)) continue;
    for (std::uint8_t out = 1; out <= f.num_ports(n); ++out) {
      if (f.peer(f.port(n, out)) == sim::kNoPortIdx) continue;
      for (std::uint8_t in = 0; in <= f.num_ports(n); ++in, ++tables)
        ASSERT_EQ(f.sl2vl(f.port(n, out), in), kLayers) << "switch " << n << " in " << int(in) << " out " << int(out);
    }
  }
  EXPECT_GT(tables, 0u);
  EXPECT_EQ(f.sl2vl(f.port(f.find_node("host-1-1-0-0"), 1), 0), kLayers);
  // Written once: an unchanged re-sweep sends none.
  node.sm().request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().heavy_sweeps >= 2; }, 10'000));
  EXPECT_EQ(node.sm().status().last_heavy.qos.sl2vl_sets, 0u);
}

// The subset of qos-policy.conf, with OpenSM's own example's keywords.
TEST(QosPolicy, SubsetReadsAndRefusesWhatItLeavesOut) {
  sm::FileIssue err;
  const auto p = sm::parse_qos_policy(
      "# a policy\n"
      "port-groups\n"
      "  port-group # using port GUIDs\n"
      "    name: Storage\n"
      "    use: SRP Targets\n"
      "    port-guid: 0x10000000000001, 0x10000000000005-0x1000000000FFFA\n"
      "    port-guid: 0x1000000000FFFF\n"
      "  end-port-group\n"
      "  port-group\n"
      "    name: \"CAs and SM\"\n"
      "    node-type: CA, SELF\n"
      "    partition: storage\n"
      "    pkey: 0x1234\n"
      "  end-port-group\n"
      "end-port-groups\n"
      "qos-setup\n"
      "  anything at all: ignored as OpenSM ignores it\n"
      "end-qos-setup\n"
      "qos-levels\n"
      "  qos-level\n"
      "    name: DEFAULT\n"
      "    sl: 0\n"
      "  end-qos-level\n"
      "  qos-level\n"
      "    name: WholeSet\n"
      "    sl: 1\n"
      "    mtu-limit: 4\n"
      "    rate-limit: 5\n"
      "    pkey: 0x1234\n"
      "    packet-life: 8\n"
      "  end-qos-level\n"
      "end-qos-levels\n"
      "qos-match-rules\n"
      "  qos-match-rule\n"
      "    use: Storage targets\n"
      "    destination: Storage\n"
      "    service-id: 0x10000000000001, 0x10000000000008-0x10000000000FFF\n"
      "    qos-level-name: WholeSet\n"
      "  end-qos-match-rule\n"
      "  qos-match-rule\n"
      "    qos-class: 7-9,11\n"
      "    source: CAs and SM\n"
      "    pkey: 0x0F00-0x0FFF\n"
      "    qos-level-name: DEFAULT\n"
      "  end-qos-match-rule\n"
      "end-qos-match-rules\n",
      "qos-policy.conf", err);
  ASSERT_TRUE(p) << err.text();
  ASSERT_EQ(p->groups.size(), 2u);
  EXPECT_EQ(p->groups[0].port_guids.size(), 3u);
  EXPECT_TRUE(sm::in_ranges(p->groups[0].port_guids, 0x10000000000010ull));
  EXPECT_EQ(p->groups[1].name, "CAs and SM");
  EXPECT_EQ(p->groups[1].node_types, sm::qos_node_type::kCa | sm::qos_node_type::kSelf);
  ASSERT_EQ(p->levels.size(), 2u);
  EXPECT_EQ(p->levels[1].sl, 1);
  EXPECT_EQ(p->levels[1].mtu_limit, 4);
  EXPECT_EQ(p->levels[1].rate_limit, 5);
  EXPECT_EQ(p->levels[1].packet_life, 8);
  EXPECT_EQ(p->default_level, 0u);
  ASSERT_EQ(p->rules.size(), 2u);
  EXPECT_EQ(p->rules[0].destination, std::vector<std::string>{"Storage"});
  EXPECT_TRUE(sm::in_ranges(p->rules[1].qos_class, 8));
  EXPECT_FALSE(sm::in_ranges(p->rules[1].qos_class, 10));

  auto error_of = [&](const char* text) {
    EXPECT_FALSE(sm::parse_qos_policy(text, "qos-policy.conf", err));
    return err.text();
  };
  EXPECT_EQ(error_of("qos-levels\n qos-level\n  name: x\n  sl: 16\n end-qos-level\nend-qos-levels\n"),
            "qos-policy.conf:4: sl: '16' is not 0..15");
  EXPECT_EQ(error_of("qos-levels\n qos-level\n  name: x\n end-qos-level\nend-qos-levels\n"),
            "qos-policy.conf: no qos-level named DEFAULT (OpenSM requires one)");
  EXPECT_EQ(error_of("qos-ulps\n default : 0\nend-qos-ulps\n"),
            "qos-policy.conf:1: qos-ulps (the simplified policy) is not supported: write qos-match-rules");
  EXPECT_EQ(error_of("qos-levels\n qos-level\n  name: DEFAULT\n end-qos-level\nend-qos-levels\n"
                     "qos-match-rules\n qos-match-rule\n  source: Nobody\n  qos-level-name: DEFAULT\n"
                     " end-qos-match-rule\nend-qos-match-rules\n"),
            "qos-policy.conf:7: port group 'Nobody' is not defined in port-groups");
  EXPECT_EQ(error_of("port-groups\n port-group\n  name: a\n  port-name: vs1 HCA-1/P1\n"),
            "qos-policy.conf:4: port-name is not supported: name the ports by port-guid");
  EXPECT_EQ(error_of("qos-levels\n qos-level\n  name: DEFAULT\n"), "qos-policy.conf:1: section not closed before the end of the file");
}

// PathRecord SL, MTU and rate from the policy, on the sim.
TEST(QosSim, PolicyGivesPathRecordsTheirLevel) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 5);
  const auto& f = rig.fabric;
  const std::uint32_t a = f.find_node("host-0-0"), b = f.find_node("host-1-0"), c = f.find_node("host-2-1");
  char guid_b[32];
  std::snprintf(guid_b, sizeof guid_b, "0x%llx", static_cast<unsigned long long>(f.port_guid(f.port(b, 1))));
  const std::string text = std::string(
                               "port-groups\n port-group\n  name: storage nodes\n  port-guid: ") + guid_b +
                           "\n end-port-group\nend-port-groups\n"
                           "qos-levels\n"
                           " qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\n"
                           " qos-level\n  name: storage\n  sl: 3\n  mtu-limit: 3\n  rate-limit: 3\n end-qos-level\n"
                           " qos-level\n  name: dropped\n  sl: 15\n end-qos-level\n"
                           " qos-level\n  name: srv\n  sl: 5\n  packet-life: 10\n end-qos-level\n"
                           "end-qos-levels\n"
                           "qos-match-rules\n"
                           " qos-match-rule\n  service-id: 0x1000-0x1fff\n  qos-level-name: srv\n end-qos-match-rule\n"
                           " qos-match-rule\n  service-id: 0x2000\n  qos-level-name: dropped\n end-qos-match-rule\n"
                           " qos-match-rule\n  destination: storage nodes\n  qos-level-name: storage\n end-qos-match-rule\n"
                           "end-qos-match-rules\n";
  sm::FileIssue ferr;
  auto policy = sm::parse_qos_policy(text, "qos-policy.conf", ferr);
  ASSERT_TRUE(policy) << ferr.text();
  sm::QosOptions o;
  o.enabled = true;
  o.all.sl2vl = "0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,15";  // SL15 is dropped
  std::string err;
  auto qos = sm::build_qos_config(o, err);
  ASSERT_TRUE(qos) << err;
  auto& node = rig.add(a, [q = std::make_shared<const sm::QosConfig>(*qos),
                           pol = std::make_shared<const sm::QosPolicy>(std::move(*policy))](sm::SmConfig& s) {
    s.qos = q;
    s.qos_policy = pol;
  });
  ASSERT_TRUE(rig.run_until([&] { return node.sm().status().subnet_up; }, 30'000));
  sim::Host h(rig.fabric, c);
  namespace cm = wire::path_record_cm;
  auto path = [&](std::uint32_t from, std::uint32_t to, std::uint64_t mask, std::uint64_t sid, std::uint8_t sl,
                  wire::PathRecord& got) {
    wire::PathRecord q{};
    q.slid = wire::be16::from(f.lid(f.port(from, 1)));
    q.dlid = wire::be16::from(f.lid(f.port(to, 1)));
    q.service_id = wire::be64::from(sid);
    q.set_sl(sl);
    const auto r = rig.ask(h, wire::method::kGet, wire::sa_attr::kPathRecord, cm::kSLid | cm::kDLid | mask, bytes(q));
    if (!r) return std::uint16_t{0xffff};
    std::memcpy(&got, r->as<wire::SaMad>().data.data(), sizeof got);
    return r->hdr().status.get();
  };
  wire::PathRecord got{};
  ASSERT_EQ(path(a, c, 0, 0, 0, got), 0);
  EXPECT_EQ(got.sl(), 0) << "DEFAULT";
  EXPECT_EQ(got.mtu(), 4);
  ASSERT_EQ(path(a, b, 0, 0, 0, got), 0);
  EXPECT_EQ(got.sl(), 3) << "to the storage group";
  EXPECT_EQ(got.mtu(), 3) << "mtu-limit 3 (1024)";
  EXPECT_EQ(got.rate(), 3) << "rate-limit 3 (10 Gb/s)";
  ASSERT_EQ(path(a, b, cm::kServiceId, 0x1234, 0, got), 0);
  EXPECT_EQ(got.sl(), 5) << "the first rule that matches: the ServiceID's";
  EXPECT_EQ(got.packet_life_time(), 10);
  EXPECT_EQ(path(a, c, cm::kServiceId, 0x2000, 0, got), wire::sa_status::kNoRecords) << "SL15 goes to VL15: no path";
  EXPECT_EQ(path(a, b, cm::kSl, 0, 2, got), wire::sa_status::kNoRecords) << "the query's SL against the level's";
  EXPECT_EQ(path(a, c, cm::kSl, 0, 2, got), wire::sa_status::kNoRecords) << "DEFAULT's SL 0 binds a query naming SL 2 (OpenSM)";
  ASSERT_EQ(path(a, c, cm::kSl, 0, 0, got), 0);
  EXPECT_EQ(got.sl(), 0);
}

}  // namespace
}  // namespace madengine
