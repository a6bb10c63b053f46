// HA with full SubnetManagers on the sim fabric (label sim, deterministic):
// two SMs of different priority (one MASTER, one STANDBY); the master's node
// killed and the standby taking over within its polling budget with every
// LID unchanged; a higher-priority SM started later getting the subnet by
// handover; a standby that took over beside a running master seen by the
// master's light sweep; two subnets with a master each joined at run time
// ending with one master, every port pointing at its LID, no LID used twice;
// after such a join, the standby taking over while the master that
// renumbered its old part dies, one switch's PortInfo read lost on the
// second look, and every port keeping the master's LID.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "engine/engine.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "sa/snapshot.hpp"
#include "sim/fabric.hpp"
#include "sim/faults/smp_loss.hpp"
#include "sim/generators.hpp"
#include "sim/sim_transport.hpp"
#include "sim/smp_client.hpp"
#include "sm/sm.hpp"

namespace madengine {
namespace {

constexpr Nanos kStepNs = kNanosPerMilli;

struct SmNode {
  std::unique_ptr<sim::SimTransport> transport;
  std::unique_ptr<Engine> engine;
  sa::SnapshotStore store;
  std::unique_ptr<sm::SubnetManager> sm;
  ~SmNode() {
    sm.reset();
    if (engine) engine->quiesce();
  }
};

struct Rig {
  sim::Fabric fabric;
  std::vector<std::unique_ptr<SmNode>> sms;
  explicit Rig(const sim::Topology& t) : fabric(t, sim::FabricConfig{.seed = 7}) {}
  ~Rig() { sms.clear(); }
  sm::SubnetManager& add(std::uint32_t node, std::uint8_t prio, sm::SmConfig cfg = {}) {
    auto n = std::make_unique<SmNode>();
    n->transport = std::make_unique<sim::SimTransport>(fabric, node, 1);
    if (!n->transport->open(AgentSpec{.smi = true, .is_sm = true})) throw std::runtime_error("sim transport did not open");
    n->engine = std::make_unique<Engine>(EngineConfig{.cores = 1, .pin = false, .clock = &fabric.clock()});
    n->engine->add_transport(*n->transport, 0);
    cfg.priority = prio;
    cfg.sm_key = 1;
    cfg.ha_poll_interval_ms = 100;
    cfg.ha_poll_retries = 3;
    cfg.light_sweep_interval_ms = 200;
    n->sm = std::make_unique<sm::SubnetManager>(*n->engine, *n->transport, cfg, n->store);
    sms.push_back(std::move(n));
    return *sms.back()->sm;
  }
  void remove_engine_of(std::size_t i) { sms[i]->sm.reset(); }
  bool run_until(const std::function<bool()>& pred, Nanos sim_ms) {
    const Nanos end = fabric.now_ns() + sim_ms * kNanosPerMilli;
    while (fabric.now_ns() < end) {
      if (pred()) return true;
      std::size_t work = 0;
      for (auto& s : sms)
        if (s->sm) work += s->engine->poll_all_once();
      if (work == 0) fabric.advance(kStepNs);
    }
    return pred();
  }
};

bool is(const sm::SubnetManager& s, wire::SmState st) { return s.status().state == st; }

// LID of every end port, by port GUID, from the simulator itself.
std::map<std::uint64_t, std::uint16_t> sim_lids(const sim::Fabric& f) {
  std::map<std::uint64_t, std::uint16_t> out;
  for (std::uint32_t n = 0; n < f.node_count(); ++n)
    for (std::uint8_t p = f.is_switch(n) ? 0 : 1; p <= (f.is_switch(n) ? 0 : f.num_ports(n)); ++p) {
      const sim::PortIdx idx = f.port(n, p);
      out[f.port_guid(idx)] = f.lid(idx);
    }
  return out;
}

// Every end port: a unique non-zero LID, and MasterSMLID = `sm_lid` (read
// with LID-routed PortInfo Gets from a spare endpoint).
void check_one_master(sim::Fabric& f, std::uint32_t probe_node, std::uint16_t sm_lid) {
  const auto lids = sim_lids(f);
  std::set<std::uint16_t> seen;
  for (const auto& [guid, lid] : lids) {
    EXPECT_NE(lid, 0) << std::hex << guid;
    EXPECT_TRUE(seen.insert(lid).second) << "LID " << lid << " used twice";
  }
  const sim::EndpointId ep = f.attach(probe_node, 1, AgentSpec{.smi = true});
  sim::SmpClient client(f, ep);
  for (const std::uint16_t lid : seen) {
    const auto r = client.lid(wire::method::kGet, wire::smp_attr::kPortInfo, 0, lid);
    ASSERT_TRUE(r.has_value()) << "LID " << lid;
    const auto pi = wire::decode<wire::PortInfo>(std::span<const std::uint8_t>(r->data));
    ASSERT_TRUE(pi.has_value());
    EXPECT_EQ(pi->master_sm_lid.get(), sm_lid) << "LID " << lid;
  }
  f.detach(ep);
}

TEST(HaSmSim, MasterAndStandbyThenTakeoverKeepsLids) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}));
  const std::uint32_t master_node = rig.fabric.find_node("host-0-0");
  sm::SubnetManager& hi = rig.add(master_node, 9);
  sm::SubnetManager& lo = rig.add(rig.fabric.find_node("host-3-1"), 2);
  ASSERT_TRUE(rig.run_until([&] { return hi.status().subnet_up && is(lo, wire::SmState::kStandby); }, 30'000));
  EXPECT_TRUE(is(hi, wire::SmState::kMaster));
  EXPECT_EQ(lo.status().polled_guid, rig.fabric.port_guid(rig.fabric.port(master_node, 1)));
  EXPECT_FALSE(lo.status().subnet_up);  // a standby configures nothing
  const auto before = sim_lids(rig.fabric);
  rig.fabric.kill_node(master_node);
  const Nanos t0 = rig.fabric.now_ns();
  ASSERT_TRUE(rig.run_until([&] { return is(lo, wire::SmState::kMaster) && lo.status().subnet_up; }, 30'000));
  const Nanos took_ms = (rig.fabric.now_ns() - t0) / kNanosPerMilli;
  std::printf("takeover: %lld ms of sim time (100 ms x 3 polls)\n", static_cast<long long>(took_ms));
  EXPECT_LE(took_ms, 3 * 200 + 1000);  // polls (interval + timeout each) and one heavy sweep of a small fabric
  EXPECT_GE(lo.status().ha.polls_failed, 3u);
  // Every LID as it was (the dead master's own port keeps its entry).
  const auto after = sim_lids(rig.fabric);
  for (const auto& [guid, lid] : before) {
    if (guid == rig.fabric.port_guid(rig.fabric.port(master_node, 1))) continue;
    EXPECT_EQ(after.at(guid), lid) << std::hex << guid;
  }
  EXPECT_EQ(lo.status().last_heavy.lids_new, 0u);
  // The SA answered from the standby's prepared snapshot before routing ran.
  EXPECT_EQ(lo.status().prepared_publications, 1u);
  EXPECT_GE(lo.status().epoch, 2u);  // then the programmed one
}

// A standby polls its master and re-reads the fabric only every
// standby_refresh_ms (a 90-node fabric, two minutes of sim time).
TEST(HaSmSim, StandbyRefreshesAtItsBoundedRate) {
  Rig rig(sim::make_fat_tree_2level({.k = 12}));  // 72 hosts, 18 switches
  sm::SmConfig cfg;
  cfg.standby_refresh_ms = 60'000;
  sm::SubnetManager& hi = rig.add(rig.fabric.find_node("host-0-0"), 9);
  sm::SubnetManager& lo = rig.add(rig.fabric.find_node("host-5-1"), 2, cfg);
  ASSERT_TRUE(rig.run_until([&] { return hi.status().subnet_up && lo.status().prepared_snapshots >= 1; }, 30'000));
  const auto rediscoveries = lo.status().sweeps_not_programmed;
  const auto smps0 = rig.fabric.counters().sma_requests;
  const Nanos t0 = rig.fabric.now_ns();
  rig.run_until([] { return false; }, 120'000);
  const double seconds = static_cast<double>(rig.fabric.now_ns() - t0) / 1e9;
  const auto redone = lo.status().sweeps_not_programmed - rediscoveries;
  std::printf("standby: %llu re-discoveries in %.0f s of sim time; SMA requests %.0f/s in all (both SMs)\n",
              static_cast<unsigned long long>(redone), seconds,
              static_cast<double>(rig.fabric.counters().sma_requests - smps0) / seconds);
  EXPECT_GE(redone, 1u);
  EXPECT_LE(redone, 3u);
  EXPECT_TRUE(is(lo, wire::SmState::kStandby));
  // Its polls reach the status (and the metrics) without a state change.
  lo.refresh_status();
  EXPECT_GE(lo.status().ha.polls, 10u) << "a poll every 10 s for two minutes";
  // Its status names the master's LID, not its own (nor 0).
  hi.refresh_status();
  EXPECT_NE(hi.status().sm_lid, 0u);
  EXPECT_EQ(lo.status().sm_lid, hi.status().sm_lid);
  EXPECT_NE(lo.status().port_lid, lo.status().sm_lid);
}

TEST(HaSmSim, HigherSmStartedLaterGetsTheSubnetByHandover) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}));
  sm::SubnetManager& lo = rig.add(rig.fabric.find_node("host-0-0"), 2);
  ASSERT_TRUE(rig.run_until([&] { return lo.status().subnet_up; }, 30'000));
  const auto before = sim_lids(rig.fabric);
  const std::uint32_t hi_node = rig.fabric.find_node("host-2-0");
  sm::SubnetManager& hi = rig.add(hi_node, 9);
  ASSERT_TRUE(rig.run_until(
      [&] { return is(hi, wire::SmState::kMaster) && hi.status().subnet_up && is(lo, wire::SmState::kStandby); }, 30'000));
  EXPECT_EQ(lo.status().ha.handovers_sent, 1u);
  EXPECT_EQ(hi.status().ha.acks_sent, 1u);
  EXPECT_EQ(hi.status().last_heavy.lids_new, 0u);  // no renumbering
  EXPECT_EQ(sim_lids(rig.fabric), before);
  const std::uint16_t hi_lid = rig.fabric.lid(rig.fabric.port(hi_node, 1));
  check_one_master(rig.fabric, rig.fabric.find_node("host-5-1"), hi_lid);
}

// A standby that lost every SMInfo for a while (its polls, then its
// discovery's Get to the master) takes over while the master runs. The
// master's light sweep asks the SMs of its last election for their SMInfo
// (as OpenSM's does), finds a second MASTER, sweeps, and the election
// leaves one: nothing else would have made either sweep again.
TEST(HaSmSim, StandbyThatTookOverBesideTheMasterIsSeenByItsLightSweep) {
  Rig rig(sim::make_fat_tree_2level({.k = 8}));
  sm::SubnetManager& hi = rig.add(rig.fabric.find_node("host-0-0"), 9);
  sm::SubnetManager& lo = rig.add(rig.fabric.find_node("host-3-1"), 2);
  ASSERT_TRUE(rig.run_until([&] { return hi.status().subnet_up && is(lo, wire::SmState::kStandby); }, 30'000));
  sim::SmpLoss loss(rig.fabric, 11);
  rig.fabric.set_packet_fault(&loss);
  const Nanos t0 = rig.fabric.now_ns();
  loss.add({.rate = 1.0, .attr_id = wire::smp_attr::kSmInfo, .from_ns = t0, .until_ns = t0 + 2 * kNanosPerSecond});
  ASSERT_TRUE(rig.run_until([&] { return is(lo, wire::SmState::kMaster); }, 5'000));
  EXPECT_TRUE(is(hi, wire::SmState::kMaster));  // two masters, for now
  rig.run_until([&] { return rig.fabric.now_ns() >= t0 + 2 * kNanosPerSecond; }, 5'000);
  EXPECT_TRUE(rig.run_until([&] { return is(hi, wire::SmState::kMaster) && is(lo, wire::SmState::kStandby); }, 5'000))
      << "hi " << wire::to_string(hi.status().state) << ", lo " << wire::to_string(lo.status().state);
  rig.fabric.set_packet_fault(nullptr);
}

TEST(HaSmSim, TwoSubnetsJoinedEndWithOneMaster) {
  const sim::TwoSubnets two = sim::make_two_subnets(4);
  Rig rig(two.topo);
  sm::SubnetManager& a = rig.add(two.sm_a, 3);
  sm::SubnetManager& b = rig.add(two.sm_b, 7);
  ASSERT_TRUE(rig.run_until([&] { return a.status().subnet_up && b.status().subnet_up; }, 30'000));
  ASSERT_TRUE(is(a, wire::SmState::kMaster));
  ASSERT_TRUE(is(b, wire::SmState::kMaster));
  // Both subnets numbered from LID 1: the join brings conflicts to resolve.
  ASSERT_TRUE(rig.fabric.link(rig.fabric.port(two.join_a, two.join_a_port), rig.fabric.port(two.join_b, two.join_b_port)));
  ASSERT_TRUE(rig.run_until(
      [&] {
        return is(b, wire::SmState::kMaster) && is(a, wire::SmState::kStandby) && b.status().last_heavy.ok &&
               b.status().last_heavy.nodes == 28;
      },
      30'000))
      << "a " << wire::to_string(a.status().state) << " b " << wire::to_string(b.status().state) << " b nodes "
      << b.status().last_heavy.nodes;
  const std::uint16_t b_lid = rig.fabric.lid(rig.fabric.port(two.sm_b, 1));
  // Let b's next sweep settle anything a's last writes left.
  const auto sweeps = b.status().heavy_sweeps;
  ASSERT_TRUE(rig.run_until([&] { return b.status().heavy_sweeps > sweeps || b.status().light_sweeps > 2; }, 5'000));
  // Probe from a host no SM is attached to (the first endpoint on a port gets its MADs).
  std::uint32_t probe = 0;
  while (rig.fabric.is_switch(probe) || probe == two.sm_a || probe == two.sm_b) ++probe;
  check_one_master(rig.fabric, probe, b_lid);
}


// From arm(), for `window_ns`: drops the PortInfo answers of one switch's
// port 0 (known by the LID they carry) after the first, and every
// NodeDescription answer of another node (its time-outs hold the sweep
// while the master's polls fail).
class TakeoverReadLoss final : public sim::PacketFault {
 public:
  TakeoverReadLoss(const sim::Fabric& f, std::uint32_t sw, std::uint32_t slow) : fabric_(f), sw_(sw), slow_(slow) {}
  void arm(std::uint16_t lid, Nanos window_ns) {
    lid_ = lid;
    until_ns_ = fabric_.now_ns() + window_ns;
  }
  bool drop(const sim::Packet& pkt, sim::PortIdx out) noexcept override {
    if (lid_ == 0 || fabric_.now_ns() >= until_ns_) return false;
    const auto& smp = *reinterpret_cast<const wire::DrSmp*>(pkt.mad.bytes.data());
    if (smp.hdr.klass() != wire::MgmtClass::kSubnDirected || smp.hdr.method != wire::method::kGetResp) return false;
    const std::uint32_t from = fabric_.node_of(out);
    if (from == slow_ && smp.hdr.attr_id.get() == wire::smp_attr::kNodeDescription) return true;
    if (from != sw_ || smp.hdr.attr_id.get() != wire::smp_attr::kPortInfo || (smp.hdr.attr_mod.get() & 0xff) != 0)
      return false;
    const auto pi = wire::decode<wire::PortInfo>(std::span<const std::uint8_t>(smp.data));
    if (!pi || pi->lid.get() != lid_) return false;  // another node's answer on its way back
    if (passed_++ == 0) return false;
    ++dropped;
    return true;
  }
  std::uint32_t dropped = 0;

 private:
  const sim::Fabric& fabric_;
  std::uint32_t sw_, slow_;
  std::uint16_t lid_ = 0;
  Nanos until_ns_ = 0;
  std::uint32_t passed_ = 0;
};

// After a join the higher master renumbered the lower one's old part; the
// standby's last reading of the fabric was taken before that renumbering.
// The master dies during the standby's next refresh, which read the new
// LIDs; taking over, the standby reads the subnet again, and there a
// switch's PortInfo is lost: it keeps the LID this sweep's first reading
// found, not the older one of the standby's earlier reading (which another
// port now carries: the switch would be moved).
TEST(HaSmSim, TakeoverAfterARenumberingKeepsALidItsSecondReadingLost) {
  const sim::TwoSubnets two = sim::make_two_subnets(4);
  Rig rig(two.topo);
  const std::uint32_t sw = rig.fabric.find_node("a-leaf-0");
  TakeoverReadLoss loss(rig.fabric, sw, rig.fabric.find_node("b-host-1-1"));
  rig.fabric.set_packet_fault(&loss);
  bool armed = false, refresh_began = false;
  sm::SmConfig acfg;
  acfg.standby_refresh_ms = 3000;
  sm::SubnetManager* ap = nullptr;
  acfg.on_phase = [&](sm::SmPhase p) {
    if (p == sm::SmPhase::kDiscovery && armed && ap != nullptr && is(*ap, wire::SmState::kStandby)) refresh_began = true;
  };
  sm::SubnetManager& a = rig.add(two.sm_a, 3, acfg);
  ap = &a;
  sm::SubnetManager& b = rig.add(two.sm_b, 7);
  ASSERT_TRUE(rig.run_until([&] { return a.status().subnet_up && b.status().subnet_up; }, 30'000));
  const std::uint16_t old_lid = rig.fabric.lid(rig.fabric.port(sw, 0));
  ASSERT_TRUE(rig.fabric.link(rig.fabric.port(two.join_a, two.join_a_port), rig.fabric.port(two.join_b, two.join_b_port)));
  ASSERT_TRUE(rig.run_until(
      [&] {
        return is(b, wire::SmState::kMaster) && is(a, wire::SmState::kStandby) && b.status().last_heavy.ok &&
               b.status().last_heavy.nodes == 28;
      },
      30'000));
  const auto numbered = sim_lids(rig.fabric);
  const std::uint16_t new_lid = numbered.at(rig.fabric.port_guid(rig.fabric.port(sw, 0)));
  ASSERT_NE(new_lid, old_lid);  // the join renumbered a's part
  ASSERT_EQ(a.status().prepared_snapshots, 0u);  // a's only reading predates it
  armed = true;
  ASSERT_TRUE(rig.run_until([&] { return refresh_began; }, 10'000));
  // The master dies while the refresh reads the subnet.
  rig.fabric.kill_node(two.sm_b);
  loss.arm(new_lid, 5 * kNanosPerSecond);
  ASSERT_TRUE(rig.run_until([&] { return is(a, wire::SmState::kMaster); }, 10'000));
  rig.run_until([] { return false; }, 6'000);  // its sweeps, the loss over, and a sweep after
  EXPECT_TRUE(is(a, wire::SmState::kMaster));
  EXPECT_TRUE(a.status().last_heavy.ok);
  ASSERT_GE(loss.dropped, 1u);  // the second reading lost it
  const auto after = sim_lids(rig.fabric);
  const std::uint64_t dead = rig.fabric.port_guid(rig.fabric.port(two.sm_b, 1));
  for (const auto& [guid, lid] : numbered) {
    if (guid == dead) continue;
    EXPECT_EQ(after.at(guid), lid) << std::hex << guid;
  }
}

}  // namespace
}  // namespace madengine
