// The admin socket's HA commands on two SMs sharing a simulated fabric
// (label sim): `sms` lists both, `handover` on the master hands the subnet
// to the standby and it stays there, `priority` on the standby changes the
// election. The commands run on each SM's core while the test's loop pumps
// both nodes; the command waits on its own thread, as the socket's does.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "node/fabric_spec.hpp"
#include "node/internal_node.hpp"
#include "service/admin.hpp"
#include "sim/fabric.hpp"
#include "sm/sm.hpp"

namespace madengine::service {
namespace {

using nlohmann::json;

struct Pair {
  sim::Fabric fabric{node::make_topology("ft2:8", ""), sim::FabricConfig{.seed = 5}};
  std::vector<std::unique_ptr<node::InternalNode>> nodes;
  node::InternalNode& add(const char* at, unsigned priority) {
    node::NodeConfig cfg;
    cfg.transport.kind = node::TransportKind::kSim;
    cfg.engine.cores = 1;
    cfg.engine.pin = false;
    cfg.sm.priority = priority;
    cfg.sm.ha_poll_interval_ms = 100;
    cfg.sm.ha_poll_retries = 3;
    cfg.sm.sweep_interval_ms = 200;
    nodes.push_back(std::make_unique<node::InternalNode>(
        cfg, node::NodeHooks{}, node::InternalOptions{.sim_fabric = &fabric, .sim_node = fabric.find_node(at)}));
    return *nodes.back();
  }
  void turn() {
    std::size_t work = 0;
    for (auto& n : nodes) work += n->engine().poll_all_once();
    if (work == 0) fabric.advance(kNanosPerMilli);
  }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      turn();
    }
    return pred();
  }
  // A command through AdminCommands on its own thread while we pump.
  json command(node::InternalNode& n, const json& req) {
    AdminCommands commands(n);
    auto reply = std::async(std::launch::async, [&] { return commands.handle(req); });
    while (reply.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) turn();
    return reply.get();
  }
};

bool is(node::InternalNode& n, wire::SmState s) { return n.sm().status().state == s; }

TEST(ServiceHandover, HandsTheSubnetToTheStandbyAndItStays) {
  Pair p;
  node::InternalNode& a = p.add("host-0-0", 15);
  node::InternalNode& b = p.add("host-1-0", 10);
  ASSERT_TRUE(p.run_until([&] { return is(a, wire::SmState::kMaster) && is(b, wire::SmState::kStandby); }, 20'000));
  // The master's next heavy sweep reads the standby's SMInfo as STANDBY.
  json sms;
  for (int i = 0; i < 20; ++i) {  // a sweep in progress may have read it earlier
    const std::uint64_t sweeps = a.sm().status().heavy_sweeps;
    a.sm().request_heavy_sweep();
    ASSERT_TRUE(p.run_until([&] { return a.sm().status().heavy_sweeps > sweeps; }, 5000));
    sms = p.command(a, {{"cmd", "sms"}});
    if (sms["sms"].size() == 2 && sms["sms"][1]["state"] == "STANDBY") break;
  }
  ASSERT_TRUE(sms["ok"].get<bool>()) << sms.dump();
  ASSERT_EQ(sms["sms"].size(), 2u) << sms.dump();
  EXPECT_EQ(sms["sms"][1]["state"], "STANDBY");
  EXPECT_EQ(sms["sms"][1]["priority"], 10);

  // The standby cannot hand over.
  const json refused = p.command(b, {{"cmd", "handover"}});
  EXPECT_FALSE(refused["ok"].get<bool>());

  const json h = p.command(a, {{"cmd", "handover"}});
  ASSERT_TRUE(h["ok"].get<bool>()) << h.dump();
  EXPECT_EQ(h["was"], 15);
  EXPECT_LE(h["priority"].get<int>(), 10);
  ASSERT_TRUE(p.run_until([&] { return is(b, wire::SmState::kMaster) && is(a, wire::SmState::kStandby); }, 20'000))
      << "a " << wire::to_string(a.sm().status().state) << " b " << wire::to_string(b.sm().status().state);
  // And it stays: several polling budgets later nothing moved back.
  p.run_until([] { return false; }, 3000);
  EXPECT_TRUE(is(b, wire::SmState::kMaster));
  EXPECT_TRUE(is(a, wire::SmState::kStandby));
  // Both name the new master's LID as the SM LID (the old master no longer names itself).
  a.post(a.sm_core(), [&a] { a.sm().refresh_status(); });
  b.post(b.sm_core(), [&b] { b.sm().refresh_status(); });
  p.run_until([] { return false; }, 100);
  const std::uint16_t master_lid = b.sm().status().port_lid;
  ASSERT_NE(master_lid, 0u);
  EXPECT_NE(a.sm().status().port_lid, master_lid);
  EXPECT_EQ(p.command(a, {{"cmd", "status"}})["sm_lid"], master_lid);
  EXPECT_EQ(p.command(b, {{"cmd", "status"}})["sm_lid"], master_lid);

  // Priority back up on the old master: the election gives it the subnet again.
  const json up = p.command(a, {{"cmd", "priority"}, {"value", 15}});
  ASSERT_TRUE(up["ok"].get<bool>()) << up.dump();
  EXPECT_TRUE(p.run_until([&] { return is(a, wire::SmState::kMaster) && is(b, wire::SmState::kStandby); }, 20'000));
}

}  // namespace
}  // namespace madengine::service
