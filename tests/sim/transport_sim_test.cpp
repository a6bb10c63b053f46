// The `sim` transport and hosts on a brought-up fabric: SA queries on QP1 to
// the SM LID and back, Reports and ReportResps, SMInfo between two SMs on one
// fabric, and the device life cycle driven by fault injection.
#include <gtest/gtest.h>

#include <cstring>

#include "madengine/wire/sa.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "sim/bringup.hpp"
#include "sim/generators.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sim/smp_client.hpp"

using namespace madengine;
using namespace madengine::sim;

namespace {

struct Routed {
  Routed() : fabric(make_fat_tree_2level({4})) {
    AgentSpec spec;
    spec.smi = true;
    const EndpointId tmp = fabric.attach(fabric.find_node("host-0-0"), 1, spec);
    SmpClient c(fabric, tmp);
    result = bring_up(c);
    fabric.detach(tmp);
  }
  // Drives the fabric until nothing is in flight (engines would poll here).
  void settle() {
    while (!fabric.idle()) fabric.run_until(fabric.next_event_ns());
  }
  Fabric fabric;
  BringUpResult result;
};

std::size_t rx(SimTransport& t, MadBuf* out, std::size_t n) {
  std::vector<MadBuf*> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = &out[i];
  return t.rx_burst(p);
}
bool tx(SimTransport& t, MadBuf& b) {
  MadBuf* p[1] = {&b};
  return t.tx_burst(p) == 1;
}

}  // namespace

TEST(SimTransport, SaQueryResponseAndReport) {
  Routed r;
  ASSERT_TRUE(r.result.ok) << r.result.error;
  SimTransport sa(r.fabric, r.fabric.find_node("host-0-0"), 1);
  ASSERT_TRUE(sa.open(AgentSpec{.smi = true, .is_sm = true, .sa_server = true, .gsi_client = true}));
  EXPECT_EQ(sa.local_port().lid, r.result.sm_lid);
  EXPECT_EQ(sa.local_port().state, PortState::kActive);

  Host host(r.fabric, r.fabric.find_node("host-3-1"));
  const std::uint8_t record[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const auto tid = host.query(wire::method::kGet, wire::sa_attr::kNodeRecord, 0x1, record);
  ASSERT_TRUE(tid);
  r.settle();
  MadBuf in[4];
  ASSERT_EQ(rx(sa, in, 4), 1u);
  const auto& req = in[0].as<wire::SaMad>();
  EXPECT_EQ(req.hdr.tid.get(), *tid);
  EXPECT_EQ(req.comp_mask.get(), 0x1u);
  EXPECT_EQ(req.data[7], 8);
  EXPECT_EQ(in[0].addr.remote_qpn, 1u);
  EXPECT_EQ(in[0].addr.qkey, kGsiQkey);
  const std::uint16_t host_lid = in[0].addr.lid;
  EXPECT_EQ(host_lid, r.fabric.lid(r.fabric.port(r.fabric.find_node("host-3-1"), 1)));

  MadBuf resp = in[0];
  resp.hdr().method = wire::method::kGetResp;
  ASSERT_TRUE(tx(sa, resp));
  r.settle();
  ASSERT_TRUE(host.take_response(*tid));

  MadBuf report = in[0];
  report.hdr().method = wire::method::kReport;
  report.hdr().tid = wire::be64::from(0x777);
  report.addr.lid = host_lid;
  ASSERT_TRUE(tx(sa, report));
  r.settle();
  host.poll();
  ASSERT_EQ(host.reports().size(), 1u);
  r.settle();
  ASSERT_EQ(rx(sa, in, 4), 1u);  // the ReportResp
  EXPECT_EQ(in[0].hdr().method, wire::method::kReportResp);
  EXPECT_EQ(in[0].hdr().tid.get(), 0x777u);
}

TEST(SimTransport, TwoSmsExchangeSmInfo) {
  Routed r;
  ASSERT_TRUE(r.result.ok);
  SimTransport a(r.fabric, r.fabric.find_node("host-0-0"), 1, "sim-a");
  SimTransport b(r.fabric, r.fabric.find_node("host-2-0"), 1, "sim-b");
  ASSERT_TRUE(a.open(AgentSpec{.smi = true, .is_sm = true}));
  ASSERT_TRUE(b.open(AgentSpec{.smi = true, .is_sm = true}));
  // DR from host-0-0 (port 1) -> leaf-0 -> spine-0 (leaf port 3) -> leaf-2 (spine port 3) -> host-2-0.
  wire::DrPath path;
  for (std::uint8_t p : {1, 3, 3, 1}) path.push(p);
  MadBuf get;
  get.as<wire::DrSmp>() = wire::make_dr_smp(wire::method::kGet, wire::smp_attr::kSmInfo, 0, 0xabc, path);
  ASSERT_TRUE(tx(a, get));
  r.settle();
  MadBuf in[2];
  ASSERT_EQ(rx(b, in, 2), 1u) << "the SMInfo request reaches the SM engine, not the SMA";
  auto& smp = in[0].as<wire::DrSmp>();
  EXPECT_EQ(smp.hop_pointer(), 5);
  wire::SmInfo info{};
  info.guid = wire::be64::from(b.local_port().port_guid);
  info.set_state(wire::SmState::kStandby);
  std::memcpy(smp.data.data(), &info, sizeof info);
  smp.hdr.method = wire::method::kGetResp;
  smp.set_direction_in(true);
  ASSERT_TRUE(tx(b, in[0]));
  r.settle();
  ASSERT_EQ(rx(a, in, 2), 1u);
  const auto& back = in[0].as<wire::DrSmp>();
  EXPECT_EQ(back.hdr.tid.get(), 0xabcu);
  wire::SmInfo got;
  std::memcpy(&got, back.data.data(), sizeof got);
  EXPECT_EQ(got.state(), wire::SmState::kStandby);
  EXPECT_EQ(got.guid.get(), b.local_port().port_guid);
}

TEST(SimTransport, LifeCycleFromFaults) {
  Routed r;
  ASSERT_TRUE(r.result.ok);
  const std::uint32_t node = r.fabric.find_node("host-1-1");
  SimTransport t(r.fabric, node, 1);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true, .gsi_client = true}));
  EXPECT_NE(t.local_port().lid, 0);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);

  const Nanos t0 = r.fabric.now_ns();
  r.fabric.schedule(t0 + 1000, EventKind::kLinkDown, r.fabric.port(node, 1));
  r.fabric.schedule(t0 + 2000, EventKind::kLinkUp, r.fabric.port(node, 1));
  r.fabric.schedule(t0 + 3000, EventKind::kNodeKill, node);
  r.fabric.schedule(t0 + 4000, EventKind::kNodeRevive, node);
  r.fabric.run_until(t0 + 1500);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kPortChanged);
  EXPECT_EQ(t.local_port().state, PortState::kDown);
  r.fabric.run_until(t0 + 2500);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kPortChanged);
  EXPECT_EQ(t.local_port().state, PortState::kInit);
  r.fabric.run_until(t0 + 3500);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceLost);
  MadBuf b;
  b.as<wire::DrSmp>() = wire::make_dr_smp(wire::method::kGet, wire::smp_attr::kNodeInfo, 0, 1, wire::DrPath{});
  EXPECT_FALSE(tx(t, b));
  r.fabric.run_until(t0 + 4500);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceBack);
  EXPECT_EQ(t.local_port().lid, 0) << "a revived node has lost its configuration";
  EXPECT_TRUE(tx(t, b));
  r.settle();
  MadBuf in[1];
  EXPECT_EQ(rx(t, in, 1), 1u);
}
