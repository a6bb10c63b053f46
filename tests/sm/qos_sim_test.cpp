// QoS options and programming (label sim, and the options' unit tests):
// OpenSM's option syntax and fall-backs, then on the sim every port's
// SL2VL and VLArb tables as the options say (limited to its OperationalVLs),
// VLHighLimit, no writes on an unchanged re-sweep, and the SA's SL2VL and
// VLArb records reporting what was written, switch ports included.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "madengine/wire/sa_records.hpp"
#include "sim/generators.hpp"
#include "sim_sa_rig.hpp"
#include "sm/qos/qos_options.hpp"

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
  sm::SmConfig cfg;
  cfg.qos = std::make_shared<const sm::QosConfig>(*qos);
  auto& node = rig.add(rig.fabric.find_node("host-0-0"), cfg);
  ASSERT_TRUE(rig.run_until([&] { return node.sm->status().subnet_up; }, 30'000));
  const auto st = node.sm->status().last_heavy;
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
  node.sm->request_heavy_sweep();
  ASSERT_TRUE(rig.run_until([&] { return node.sm->status().heavy_sweeps >= 2; }, 10'000));
  const auto again = node.sm->status().last_heavy.qos;
  EXPECT_EQ(again.sl2vl_sets + again.vlarb_sets + again.errors, 0u);
  EXPECT_EQ(again.kept, st.qos.sl2vl_sets + st.qos.vlarb_sets);
}

TEST(QosSim, OffWritesNoTable) {
  testing::SimSaRig rig(sim::make_fat_tree_2level({.k = 4}), 5);
  auto& node = rig.add(rig.fabric.find_node("host-0-0"), sm::SmConfig{});
  ASSERT_TRUE(rig.run_until([&] { return node.sm->status().subnet_up; }, 30'000));
  EXPECT_EQ(node.sm->status().last_heavy.qos.sl2vl_sets + node.sm->status().last_heavy.qos.vlarb_sets, 0u);
  const auto& f = rig.fabric;
  // The simulator's (ibsim's) defaults stay: SL i -> VL i, SL15 -> VL7.
  EXPECT_EQ(f.sl2vl(f.port(f.find_node("host-2-1"), 1), 0),
            (std::array<std::uint8_t, 8>{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7}));
}

}  // namespace
}  // namespace madengine
