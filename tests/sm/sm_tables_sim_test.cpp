// SL2VL, VLArb and GUIDInfo tables in the SM's snapshot (sm/tables), and
// notices to the SA's subscribers (SmConfig::on_notice): on the sim
// transport, checked against the simulated SMAs and a subscribing sim host.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>

#include "engine/engine.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sim/smp_client.hpp"
#include "sm/sm.hpp"
#include "sm_sa_node.hpp"

namespace madengine {
namespace {

constexpr Nanos kStepNs = kNanosPerMilli;

// The sim SMAs' defaults are ibsim's: SL i -> VL i (SL15 -> VL7).
constexpr std::uint8_t kDefaultSl2Vl[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7};

// The daemon's node (SM and SA on one engine core) over the sim transport,
// with the SM's own defaults (priority and SM_Key 0) and `tweak` applied last.
struct Rig {
  sim::Fabric fabric;
  std::unique_ptr<node::InternalNode> node;

  Rig(const sim::Topology& topo, const char* sm_node, std::function<void(sm::SmConfig&)> tweak)
      : fabric(topo, sim::FabricConfig{.seed = 1}) {
    node::NodeConfig c = testing::sim_node_config();
    c.sm.priority = 0;
    c.sm.sm_key = 0;
    node = std::make_unique<node::InternalNode>(
        c, node::NodeHooks{},
        node::InternalOptions{.sim_fabric = &fabric, .sim_node = fabric.find_node(sm_node), .sm = std::move(tweak)});
  }
  sm::SubnetManager& sm() { return node->sm(); }
  sa::SaServer& sa() { return node->sa(); }
  Engine& engine() { return node->engine(); }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms, const std::function<void()>& each = {}) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      if (each) each();
      if (engine().poll_all_once() == 0) fabric.advance(kStepNs);
    }
    return pred();
  }
  bool run_until_status(const std::function<bool(const sm::SmStatus&)>& pred, Nanos sim_ms) {
    return run_until([&] { return pred(sm().status()); }, sim_ms);
  }
  // GUIDInfo blocks of a CA port (the sim's GUIDCap).
  std::uint32_t ca_guid_blocks() const {
    const auto snap = node->store().current();
    for (const auto& n : snap->fabric.nodes)
      if (!n.is_switch()) return wire::guid_info_blocks_for(n.ports[1].info.guid_cap);
    return 0;
  }
  sa::PortTables tables_of(std::uint64_t node_guid, std::uint8_t port) const {
    const auto snap = node->store().current();
    const fabric::NodeId n = snap->by_node_guid.at(node_guid);
    return snap->port_tables->load()->at(n).at(port);
  }
};

TEST(SmTablesSim, EndPortTablesAreReadOnceAndAgainWhenThePortChanges) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", [](sm::SmConfig& c) { c.light_sweep_interval_ms = 100; });
  // Subnet up does not wait for the port tables (OpenSM reads none): they
  // are read next and replace the epoch's tables inside the epoch.
  ASSERT_TRUE(rig.run_until_status([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  const sm::SmStatus up = rig.sm().status();
  EXPECT_EQ(up.port_table_sweeps, 0u);
  EXPECT_EQ(up.last_heavy.tables_smps, 0u);
  EXPECT_TRUE(rig.tables_of(rig.fabric.node_guid(rig.fabric.find_node("host-3-1")), 1).sl2vl.empty());
  EXPECT_EQ(rig.node->store().current()->port_tables->version(), 0u);
  ASSERT_TRUE(rig.run_until_status([](const sm::SmStatus& s) { return s.port_table_sweeps >= 1; }, 60'000));
  EXPECT_EQ(rig.sm().status().epoch, up.epoch);
  EXPECT_EQ(rig.node->store().current()->port_tables->version(), 1u);
  const auto first = rig.sm().status().last_heavy;
  // Every CA port (32 hosts) and switch port 0 (12 switches): CAs read
  // their GUIDInfo blocks, SL2VL and VLArb blocks 1 and 3 (caps of 8
  // entries); switch port 0 only GUIDInfo (a base port 0, and switch ports
  // were not asked for).
  const std::uint32_t blocks = rig.ca_guid_blocks();
  EXPECT_GE(blocks, 1u);
  EXPECT_EQ(first.tables_ports_read, 32u + 12u);
  EXPECT_EQ(first.tables_smps, 32u * (blocks + 3u) + 12u);
  EXPECT_EQ(first.smps, first.discovery_smps + first.bringup.smps + first.tables_smps + first.mft_blocks_written);

  // The SA's source equals what the simulated SMAs hold.
  const std::uint32_t host = rig.fabric.find_node("host-3-1");
  const sim::PortIdx hp = rig.fabric.port(host, 1);
  const sa::PortTables t = rig.tables_of(rig.fabric.node_guid(host), 1);
  ASSERT_EQ(t.sl2vl.size(), 1u);
  EXPECT_EQ(std::memcmp(t.sl2vl[0].bytes.data(), kDefaultSl2Vl, 8), 0);
  ASSERT_EQ(t.vl_arb.size(), 4u);
  EXPECT_EQ(t.vl_arb[0].entries[1].vl(), 1);  // low table: VL1 weight 4 (VL0 weight 0)
  EXPECT_EQ(t.vl_arb[0].entries[1].weight, 4);
  EXPECT_EQ(t.vl_arb[2].entries[0].weight, 4);  // high table: VL0 weight 4
  EXPECT_EQ(t.vl_arb[1].entries[0].weight, 0);  // no upper blocks at a cap of 8
  // GUIDInfo with no alias GUID is not kept: the SA answers it from the
  // port GUID and GUIDCap, as for a port never read.
  EXPECT_TRUE(t.guids.empty());
  const std::uint32_t leaf = rig.fabric.find_node("leaf-0");
  const sa::PortTables sw0 = rig.tables_of(rig.fabric.node_guid(leaf), 0);
  EXPECT_TRUE(sw0.sl2vl.empty());
  EXPECT_TRUE(sw0.guids.empty());

  // An unchanged fabric: a forced heavy sweep reads no table.
  rig.sm().request_heavy_sweep();
  ASSERT_TRUE(rig.run_until_status([](const sm::SmStatus& s) { return s.port_table_sweeps >= 2; }, 10'000));
  EXPECT_EQ(rig.sm().status().last_heavy.tables_smps, 0u);
  EXPECT_EQ(rig.sm().status().last_heavy.tables_ports_read, 0u);

  // A host changes its SL2VL table behind the SM and its link bounces: only
  // that port is read again, and the snapshot has the new table.
  sim::SmpClient client(rig.fabric, rig.fabric.attach(host, 1, AgentSpec{.smi = true}));
  wire::Sl2VlTable changed{};
  for (std::uint8_t sl = 0; sl < wire::kSlCount; ++sl) changed.set_vl(sl, sl % 2);
  ASSERT_TRUE(client.dr(wire::method::kSet, wire::smp_attr::kSl2VlTable, 0, {},
                        std::span<const std::uint8_t>(changed.bytes.data(), changed.bytes.size())));
  // And an alias GUID at index 1: that GUIDInfo table is kept.
  constexpr std::uint64_t kAlias = 0x0002c9030000a11aull;
  wire::GuidInfoBlock gb{};
  gb.set_guid(1, kAlias);
  ASSERT_TRUE(client.dr(wire::method::kSet, wire::smp_attr::kGuidInfo, 0, {},
                        std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&gb), sizeof gb)));
  const std::uint64_t sweeps = rig.sm().status().heavy_sweeps;
  rig.fabric.link_down(hp);
  ASSERT_TRUE(rig.run_until_status([&](const sm::SmStatus& s) { return s.heavy_sweeps > sweeps; }, 10'000));
  rig.fabric.link_up(hp);
  ASSERT_TRUE(rig.run_until_status(
      [&](const sm::SmStatus& s) { return s.last_heavy.tables_ports_read > 0 && s.last_heavy.ok; }, 10'000));
  EXPECT_EQ(rig.sm().status().last_heavy.tables_ports_read, 1u);
  const sa::PortTables again = rig.tables_of(rig.fabric.node_guid(host), 1);
  ASSERT_EQ(again.sl2vl.size(), 1u);
  EXPECT_EQ(again.sl2vl[0].get_vl(3), 1);
  EXPECT_EQ(again.sl2vl[0].get_vl(4), 0);
  ASSERT_GE(again.guids.size(), 2u);
  EXPECT_EQ(again.guids[0], rig.fabric.port_guid(hp));
  EXPECT_EQ(again.guids[1], kAlias);
}

TEST(SmTablesSim, SwitchPortTablesOnRequest) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", [](sm::SmConfig& c) { c.read_switch_port_tables = true; });
  ASSERT_TRUE(rig.run_until_status([](const sm::SmStatus& s) { return s.port_table_sweeps >= 1; }, 60'000));
  const auto st = rig.sm().status().last_heavy;
  // Per switch: GUIDInfo of port 0, and per linked port (all 8) VLArb blocks
  // 1 and 3 plus SL2VL from each linked input port and port 0 (a base port
  // 0 has no tables of its own as an output port).
  EXPECT_EQ(st.tables_smps, 32u * (rig.ca_guid_blocks() + 3u) + 12u * (1u + 8u * 2u + 8u * 9u));
  const std::uint32_t leaf = rig.fabric.find_node("leaf-1");
  const sa::PortTables t = rig.tables_of(rig.fabric.node_guid(leaf), 2);
  ASSERT_EQ(t.sl2vl.size(), 9u);
  EXPECT_EQ(std::memcmp(t.sl2vl[5].bytes.data(), kDefaultSl2Vl, 8), 0);
  ASSERT_EQ(t.vl_arb.size(), 4u);
  EXPECT_EQ(t.vl_arb[2].entries[0].weight, 4);
}

wire::InformInfo subscribe_all() {
  wire::InformInfo i{};
  i.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  i.is_generic = 1;
  i.subscribe = 1;
  i.type = wire::be16::from(wire::inform_type::kAll);
  i.set_trap_number(wire::kInformAllTraps);
  i.set_producer_type(wire::kInformAllProducers);
  return i;
}

// Notices of the traps in `reports` with this number and GID.
std::size_t reports_of(const std::vector<MadBuf>& reports, std::uint16_t trap, std::uint64_t guid) {
  std::size_t n = 0;
  for (const MadBuf& b : reports) {
    const auto& sa = b.as<wire::SaMad>();
    if (sa.hdr.attr_id.get() != wire::sa_attr::kNotice) continue;
    wire::Notice notice;
    std::memcpy(&notice, sa.data.data(), sizeof notice);
    if (notice.trap_number.get() == trap && notice.details<wire::NoticeDetailsGid>().gid.guid.get() == guid) ++n;
  }
  return n;
}

// IBA 13.4.8.2: a subscriber hears trap 65 when a host's link goes down and
// trap 64 when it comes back, from the SM's sweeps through the SA.
TEST(SmTablesSim, SubscriberGetsGidOutOfAndInServiceReports) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}), "host-0-0", [](sm::SmConfig& c) { c.light_sweep_interval_ms = 100; });
  ASSERT_TRUE(rig.run_until_status([](const sm::SmStatus& s) { return s.subnet_up; }, 60'000));
  sim::Host sub(rig.fabric, rig.fabric.find_node("host-2-0"));
  const wire::InformInfo ii = subscribe_all();
  const auto tid = sub.query(wire::method::kSet, wire::sa_attr::kInformInfo, 0,
                             std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&ii), sizeof ii));
  ASSERT_TRUE(tid.has_value());
  std::optional<MadBuf> resp;
  ASSERT_TRUE(rig.run_until([&] { return (resp = sub.take_response(*tid)).has_value(); }, 1'000, [&] { sub.poll(); }));
  ASSERT_EQ(resp->as<wire::SaMad>().hdr.status.get(), 0);
  ASSERT_EQ(rig.sa().subscriptions().size(), 1u);

  const std::uint32_t gone = rig.fabric.find_node("host-5-1");
  const sim::PortIdx gp = rig.fabric.port(gone, 1);
  const std::uint64_t guid = rig.fabric.port_guid(gp);
  rig.fabric.link_down(gp);
  ASSERT_TRUE(rig.run_until([&] { return reports_of(sub.reports(), wire::trap::kGidOutOfService, guid) > 0; }, 10'000,
                            [&] { sub.poll(); }));
  EXPECT_EQ(reports_of(sub.reports(), wire::trap::kGidInService, guid), 0u);
  rig.fabric.link_up(gp);
  ASSERT_TRUE(rig.run_until([&] { return reports_of(sub.reports(), wire::trap::kGidInService, guid) > 0; }, 10'000,
                            [&] { sub.poll(); }));
  // Each Report was acknowledged by the host, so none was repeated.
  for (int i = 0; i < 500; ++i) {
    sub.poll();
    if (rig.engine().poll_all_once() == 0) rig.fabric.advance(kStepNs);
  }
  EXPECT_EQ(reports_of(sub.reports(), wire::trap::kGidOutOfService, guid), 1u);
  EXPECT_EQ(reports_of(sub.reports(), wire::trap::kGidInService, guid), 1u);
  EXPECT_GE(rig.sa().counters().reports_acked, 2u);
  EXPECT_EQ(rig.sm().status().last_heavy.gid_traps, 1u);
}

}  // namespace
}  // namespace madengine
