// The node's C++ API on the sim, driven by the test (pump mode, deterministic):
// events (SM state changes, subnet up, port changes, notices), the routing
// hook (its LFTs programmed into the simulated switches and followed by the
// SA's paths, again at every heavy sweep; a failing or malformed hook
// programs nothing), traps 64/65 reported once each (to an InformInfo
// subscriber and the notice callback), vendor-class
// MADs answered on the engine core, FabricView and path().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine.hpp"
#include "fabric/lft.hpp"
#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "madengine/wire/mad.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"
#include "sim/sim_transport.hpp"
#include "sm/sm.hpp"

namespace madengine::node {
namespace {

constexpr Nanos kStepNs = 10 * kNanosPerMicro;

NodeConfig star_config() {
  NodeConfig c;
  c.transport.kind = TransportKind::kSim;
  c.transport.topology = MADENGINE_TEST_TOPOLOGY_DIR "/star3.topo";
  c.transport.sim_node = "H1";
  c.engine.cores = 1;
  c.engine.pin = false;
  c.sm.sweep_interval_ms = 200;
  return c;
}

// Pumps (and delivers events) until `pred` or `sim_ms` of simulated time.
template <typename Pred>
bool run_until(InternalNode& n, Pred pred, Nanos sim_ms) {
  const Nanos end = n.fabric()->now_ns() + sim_ms * kNanosPerMilli;
  while (n.fabric()->now_ns() < end) {
    n.dispatch_events();
    if (pred()) return true;
    n.pump(kStepNs);
  }
  n.dispatch_events();
  return pred();
}

// Star routing: every end port's LIDs through the switch port it hangs off,
// read through the public view and written through the LFT table.
bool route_star(const FabricView& f, LftTable& lfts, std::string& error) {
  for (NodeId n = 0; n < f.node_count(); ++n) {
    const FabricNode sw = f.node(n);
    if (!sw.is_switch()) continue;
    if (!lfts.set(n, sw.lid, 0)) {
      error = "the switch's own LID refused";
      return false;
    }
    for (std::uint8_t p = 1; p <= sw.num_ports; ++p) {
      const FabricPort port = f.port(n, p);
      if (!port.linked() || f.node(port.peer).is_switch()) continue;
      const std::uint16_t lid = f.lid_of({port.peer, port.peer_port});
      if (lid == 0 || lid > lfts.top_lid()) {
        error = "a CA without a LID";
        return false;
      }
      if (!lfts.set(n, lid, p)) {
        error = "a port of the switch refused";
        return false;
      }
    }
  }
  return true;
}

// The LID of the end port whose node's description holds `host`; 0: none.
std::uint16_t lid_named(const FabricView& v, const char* host) {
  for (const EndPort e : v.end_ports())
    if (v.node(e.node).description.find(host) != std::string::npos) return v.lid_of(e);
  return 0;
}

// The switches of a view.
std::vector<NodeId> switches_of(const FabricView& v) {
  std::vector<NodeId> out;
  for (NodeId n = 0; n < v.node_count(); ++n)
    if (v.node(n).is_switch()) out.push_back(n);
  return out;
}

TEST(Node, EventsInOrderAndPortChangesBetweenEpochs) {
  std::vector<std::string> seen;
  std::vector<PortChange> changes;
  NodeHooks hooks;
  hooks.events.sm_state = [&](wire::SmState from, wire::SmState to) {
    seen.push_back(std::string("sm ") + wire::to_string(from) + "->" + wire::to_string(to));
  };
  hooks.events.subnet_up = [&](std::uint64_t epoch) { seen.push_back("up " + std::to_string(epoch)); };
  hooks.events.port_change = [&](const PortChange& c) { changes.push_back(c); };
  hooks.events.notice = [&](const wire::Notice& n) { seen.push_back("trap " + std::to_string(n.trap_number.get())); };
  InternalNode n(star_config(), std::move(hooks));
  ASSERT_TRUE(run_until(n, [&] { return n.status().subnet_up; }, 10'000));
  n.dispatch_events();
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0], "sm NOTACTIVE->DISCOVERING");
  EXPECT_EQ(seen[1], "sm DISCOVERING->MASTER");
  EXPECT_EQ(seen[2], "up 1");
  EXPECT_TRUE(changes.empty()) << "the first epoch reports no port change";

  // H3's link goes down: the next epoch no longer has its port, then it returns.
  sim::Fabric& f = *n.fabric();
  const std::uint32_t h3 = f.find_node("H3");
  const std::uint64_t h3_guid = f.port_guid(f.port(h3, 1));
  f.link_down(f.port(h3, 1));
  ASSERT_TRUE(run_until(n, [&] { return !changes.empty(); }, 10'000));
  const auto gone = std::find_if(changes.begin(), changes.end(), [&](const PortChange& c) { return c.port_guid == h3_guid; });
  ASSERT_NE(gone, changes.end());
  EXPECT_FALSE(gone->is_switch);
  EXPECT_NE(gone->old_lid, 0);
  EXPECT_EQ(gone->new_state, 0) << "the port vanished from the epoch";
  EXPECT_GT(gone->epoch, 1u);
  const std::size_t before = changes.size();
  f.link_up(f.port(h3, 1));
  ASSERT_TRUE(run_until(
      n,
      [&] {
        for (std::size_t i = before; i < changes.size(); ++i)
          if (changes[i].port_guid == h3_guid && changes[i].new_state == 4) return true;
        return false;
      },
      10'000));
  // Traps 65 and 64 for H3's GID (what the SA's subscribers get) reached the notice callback too.
  run_until(n, [&] { return std::find(seen.begin(), seen.end(), "trap 64") != seen.end(); }, 1'000);
  const auto out = std::find(seen.begin(), seen.end(), "trap 65");
  ASSERT_NE(out, seen.end()) << ::testing::PrintToString(seen);
  EXPECT_NE(std::find(out, seen.end(), "trap 64"), seen.end()) << ::testing::PrintToString(seen);
  EXPECT_EQ(n.status().events_dropped, 0u);
}

wire::InformInfo subscribe_all_traps() {
  wire::InformInfo i{};
  i.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  i.is_generic = 1;
  i.subscribe = 1;
  i.type = wire::be16::from(wire::inform_type::kAll);
  i.set_trap_number(wire::kInformAllTraps);
  i.set_producer_type(wire::kInformAllProducers);
  return i;
}

// Reports of trap `trap` for the port GID with this GUID.
std::size_t gid_reports(const std::vector<MadBuf>& reports, std::uint16_t trap, std::uint64_t guid) {
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

// Traps 64/65 have one producer, the store's epoch change: with our SM a
// host's link going down and coming back gives a subscriber one Report of
// each and the notice callback one of each, and later sweeps of the
// unchanged fabric none.
TEST(Node, EachGidChangeReportedOnceToSubscribersAndCallback) {
  std::vector<std::pair<std::uint16_t, std::uint64_t>> notices;  // trap, GUID of traps 64/65
  NodeHooks hooks;
  hooks.events.notice = [&](const wire::Notice& n) {
    const std::uint16_t t = n.trap_number.get();
    if (t == wire::trap::kGidInService || t == wire::trap::kGidOutOfService)
      notices.emplace_back(t, n.details<wire::NoticeDetailsGid>().gid.guid.get());
  };
  InternalNode n(star_config(), std::move(hooks));
  ASSERT_TRUE(run_until(n, [&] { return n.status().subnet_up; }, 10'000));
  sim::Fabric& f = *n.fabric();
  sim::Host sub(f, f.find_node("H2"));
  const wire::InformInfo ii = subscribe_all_traps();
  const auto tid = sub.query(wire::method::kSet, wire::sa_attr::kInformInfo, 0,
                             std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&ii), sizeof ii));
  ASSERT_TRUE(tid.has_value());
  std::optional<MadBuf> resp;
  ASSERT_TRUE(run_until(n, [&] { return sub.poll(), (resp = sub.take_response(*tid)).has_value(); }, 1'000));
  ASSERT_EQ(resp->as<wire::SaMad>().hdr.status.get(), 0);

  const sim::PortIdx h3 = f.port(f.find_node("H3"), 1);
  const std::uint64_t guid = f.port_guid(h3);
  auto count = [&](std::uint16_t trap) {
    return std::count(notices.begin(), notices.end(), std::make_pair(trap, guid));
  };
  f.link_down(h3);
  ASSERT_TRUE(run_until(n, [&] { return sub.poll(), gid_reports(sub.reports(), wire::trap::kGidOutOfService, guid) > 0; },
                        10'000));
  f.link_up(h3);
  ASSERT_TRUE(run_until(n, [&] { return sub.poll(), gid_reports(sub.reports(), wire::trap::kGidInService, guid) > 0; },
                        10'000));
  // Several sweeps (200 ms apart) of the unchanged fabric: nothing more.
  const std::uint64_t sweeps = n.status().light_sweeps + n.status().heavy_sweeps;
  ASSERT_TRUE(run_until(n, [&] { return sub.poll(), n.status().light_sweeps + n.status().heavy_sweeps >= sweeps + 5; },
                        10'000));
  EXPECT_EQ(gid_reports(sub.reports(), wire::trap::kGidOutOfService, guid), 1u);
  EXPECT_EQ(gid_reports(sub.reports(), wire::trap::kGidInService, guid), 1u);
  EXPECT_EQ(count(wire::trap::kGidOutOfService), 1);
  EXPECT_EQ(count(wire::trap::kGidInService), 1);
  EXPECT_EQ(notices.size(), 2u);
}

TEST(Node, RoutingHookLftsAreProgrammedAndPathsFollowThem) {
  std::uint64_t calls = 0, hook_lid_lookups = 0;
  std::uint16_t quarantined = 0;
  NodeHooks hooks;
  hooks.routing = [&](const FabricView& f, LftTable& lfts, std::string& error) {
    ++calls;
    if (!route_star(f, lfts, error)) return false;
    // The fabric being routed answers lookups by LID and by port GUID.
    for (const EndPort e : f.end_ports()) {
      const std::uint64_t guid = f.port(e.node, e.port).guid;
      hook_lid_lookups += f.end_port_by_lid(f.lid_of(e)) == e &&
                          f.end_port_by_guid(guid != 0 ? guid : f.node(e.node).node_guid) == e;
    }
    // Leave H2 unrouted: the SA must then have no path to it.
    quarantined = lid_named(f, "H2");
    for (const NodeId sw : switches_of(f)) {
      EXPECT_NE(lfts.get(sw, quarantined), kNoRoute);
      EXPECT_TRUE(lfts.set(sw, quarantined, kNoRoute));
    }
    return true;
  };
  InternalNode n(star_config(), std::move(hooks));
  ASSERT_TRUE(run_until(n, [&] { return n.status().subnet_up; }, 10'000));
  EXPECT_EQ(calls, 1u);
  ASSERT_NE(quarantined, 0);

  const FabricView v = n.fabric_view();
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.node_count(), 4u);
  EXPECT_EQ(v.port_count(), 3u + 5u);  // three CA ports, the switch's four and its port 0
  EXPECT_EQ(v.link_count(), 3u);
  const std::vector<NodeId> sws = switches_of(v);
  ASSERT_EQ(sws.size(), 1u);
  const NodeId sw = sws[0];
  EXPECT_TRUE(v.has_lft(sw));
  EXPECT_FALSE(v.has_lft(sw == 0 ? 1 : 0));
  EXPECT_EQ(v.port(sw, 0).lid, v.node(sw).lid);
  EXPECT_THROW(v.node(static_cast<NodeId>(v.node_count())), std::out_of_range);
  EXPECT_THROW(v.port(sw, 5), std::out_of_range);
  // Every LID and port GUID leads back to its end port; unassigned ones to none.
  for (const EndPort e : v.end_ports()) {
    const std::uint16_t lid = v.lid_of(e);
    ASSERT_NE(lid, 0);
    EXPECT_EQ(v.end_port_by_lid(lid), e);
    const std::uint64_t guid = v.port(e.node, e.port).guid;
    EXPECT_EQ(v.end_port_by_guid(guid != 0 ? guid : v.node(e.node).node_guid), e);
  }
  EXPECT_FALSE(v.end_port_by_lid(0).has_value());
  EXPECT_FALSE(v.end_port_by_lid(static_cast<std::uint16_t>(v.top_lid() + 1)).has_value());
  EXPECT_FALSE(v.end_port_by_guid(0x1234).has_value());
  // The hook's view (not yet published) answers the same lookups.
  EXPECT_EQ(hook_lid_lookups, 4u);
  // A link's rate: both ends agree, and the data rate is width x lane rate.
  for (std::uint8_t p = 1; p <= 3; ++p) {
    const PortLink here = v.port_link(sw, p);
    const FabricPort fp = v.port(sw, p);
    const PortLink there = v.port_link(fp.peer, fp.peer_port);
    EXPECT_EQ(here.link_rate, there.link_rate);
    EXPECT_EQ(here.width, fp.link_width);
    EXPECT_NE(here.width_enabled & here.width, 0) << "the active width is one the port enables";
    EXPECT_GT(here.data_mbps, 0u);
  }
  EXPECT_THROW(v.port_link(sw, 5), std::out_of_range);
  // Views of one epoch share what they read; a new epoch's view reads the new one.
  EXPECT_EQ(n.fabric_view().epoch(), v.epoch());
  // The switch of the simulated fabric forwards as the hook said.
  sim::Fabric& f = *n.fabric();
  const std::uint32_t s1 = f.find_node("S1");
  for (std::uint16_t lid = 1; lid <= v.top_lid(); ++lid) EXPECT_EQ(f.lft_port(s1, lid), v.lft_port(sw, lid)) << lid;
  EXPECT_EQ(v.lft_port(sw, quarantined), kNoRoute);

  // Paths: H1 -> H3 exists (0 switch-to-switch hops), H1 -> H2 does not.
  const std::uint16_t h1 = lid_named(v, "H1"), h3 = lid_named(v, "H3");
  PathInfo p;
  ASSERT_EQ(n.path(h1, h3, p), PathResult::kOk);
  EXPECT_EQ(p.slid, h1);
  EXPECT_EQ(p.dlid, h3);
  EXPECT_EQ(p.hops, 0);
  EXPECT_EQ(p.pkey, 0xffff);
  EXPECT_EQ(p.epoch, v.epoch());
  EXPECT_EQ(n.path(h1, quarantined, p), PathResult::kNoPath);
}

// The hook is the SM's routing at every heavy sweep: the engines'
// incremental re-routing does not keep the previous pass's LFTs for it.
TEST(Node, RoutingHookRoutesEveryHeavySweep) {
  std::uint64_t calls = 0;
  const char* unrouted = "H2";
  NodeHooks hooks;
  hooks.routing = [&](const FabricView& f, LftTable& lfts, std::string& error) {
    ++calls;
    if (!route_star(f, lfts, error)) return false;
    for (const NodeId sw : switches_of(f)) lfts.set(sw, lid_named(f, unrouted), kNoRoute);
    return true;
  };
  InternalNode n(star_config(), std::move(hooks));
  ASSERT_TRUE(run_until(n, [&] { return n.status().subnet_up; }, 10'000));
  sim::Fabric& f = *n.fabric();
  const std::uint32_t s1 = f.find_node("S1");
  const auto lid_of = [&](const char* host) { return lid_named(n.fabric_view(), host); };
  const std::uint16_t h2 = lid_of("H2"), h3 = lid_of("H3");
  ASSERT_NE(h2, 0);
  ASSERT_NE(h3, 0);
  EXPECT_EQ(f.lft_port(s1, h2), fabric::kLftNoRoute);
  EXPECT_NE(f.lft_port(s1, h3), fabric::kLftNoRoute);
  sm::SmStatus s = n.sm().status();
  EXPECT_EQ(s.last_heavy.routing_engine, "routing hook");
  EXPECT_EQ(s.last_heavy.lids_rerouted, 4u) << "three CAs and the switch";

  // The same fabric swept again: the hook routes it again, now leaving H3 out.
  unrouted = "H3";
  const std::uint64_t heavy = s.heavy_sweeps;
  n.sm().request_heavy_sweep();
  ASSERT_TRUE(run_until(n, [&] { return n.sm().status().heavy_sweeps > heavy; }, 10'000));
  EXPECT_EQ(calls, 2u);
  s = n.sm().status();
  EXPECT_TRUE(s.last_heavy.ok) << s.last_heavy.error;
  EXPECT_EQ(s.last_heavy.lids_rerouted, 4u);
  EXPECT_NE(f.lft_port(s1, h2), fabric::kLftNoRoute);
  EXPECT_EQ(f.lft_port(s1, h3), fabric::kLftNoRoute);
  PathInfo p;
  EXPECT_EQ(n.path(h2, h3, p), PathResult::kNoPath);
  EXPECT_EQ(n.path(h3, h2, p), PathResult::kOk);
}

TEST(Node, FailingOrMalformedRoutingHookProgramsNothing) {
  for (int bad = 0; bad < 3; ++bad) {
    NodeHooks hooks;
    hooks.routing = [bad](const FabricView& f, LftTable& lfts, std::string& error) {
      if (bad == 0) {
        error = "vendor policy says no";
        return false;
      }
      if (bad == 1) {
        // A port the switch does not have, LID 0 and a LID above the top:
        // the table refuses each and holds nothing of them.
        const NodeId sw = switches_of(f).at(0);
        const bool refused = !lfts.set(sw, 1, 40) && !lfts.set(sw, 0, 1) &&
                             !lfts.set(sw, static_cast<std::uint16_t>(lfts.top_lid() + 1), 1) && lfts.get(sw, 1) == kNoRoute;
        error = refused ? "LftTable refused port 40" : "LftTable took port 40";
        return false;
      }
      if (bad == 2) throw std::runtime_error("vendor bug");
      return true;
    };
    InternalNode n(star_config(), std::move(hooks));
    run_until(n, [&] { return n.sm().status().heavy_sweeps > 0; }, 5'000);
    const sm::SmStatus s = n.sm().status();
    EXPECT_FALSE(s.subnet_up) << bad;
    EXPECT_NE(s.last_heavy.error.find("routing hook"), std::string::npos) << s.last_heavy.error;
    EXPECT_TRUE(n.fabric_view().empty());
    const char* why[] = {"vendor policy says no", "refused port 40", "vendor bug"};
    EXPECT_NE(s.last_heavy.error.find(why[bad]), std::string::npos) << s.last_heavy.error;
  }
}

TEST(Node, VendorClassRequestsAreAnsweredOnTheEngineCore) {
  std::uint64_t handled = 0;
  NodeHooks hooks;
  hooks.vendor_classes.push_back({.mgmt_class = 0x09, .handler = [&](const MadBuf& req, MadBuf& resp) {
                                    ++handled;
                                    if (req.hdr().attr_id.get() != 0x0010) return false;  // nothing for others
                                    std::memcpy(resp.mad.bytes.data() + 24, "hello", 5);
                                    return true;
                                  }});
  InternalNode n(star_config(), std::move(hooks));
  ASSERT_TRUE(run_until(n, [&] { return n.status().subnet_up; }, 10'000));

  // A client on H2 asks the SM's port: Get(0x0010) and Get(0x0011) of class 0x09.
  sim::Fabric& f = *n.fabric();
  sim::SimTransport client(f, f.find_node("H2"), 1, "client");
  ASSERT_TRUE(client.open(AgentSpec{.gsi_client = true}));
  auto ask = [&](std::uint16_t attr, std::uint64_t tid) {
    MadBuf b{};
    wire::MadHeader& h = b.hdr();
    h.base_version = 1;
    h.mgmt_class = 0x09;
    h.class_version = 1;
    h.method = wire::method::kGet;
    h.tid = wire::be64::from(tid);
    h.attr_id = wire::be16::from(attr);
    b.addr.lid = n.status().sm_lid;
    b.addr.remote_qpn = 1;
    b.addr.qkey = kGsiQkey;
    MadBuf* out[] = {&b};
    return client.tx_burst(out) == 1;
  };
  ASSERT_TRUE(ask(0x0010, 0x77));
  ASSERT_TRUE(ask(0x0011, 0x78));
  std::vector<MadBuf> got;
  ASSERT_TRUE(run_until(
      n,
      [&] {
        MadBuf rx{};
        MadBuf* in[] = {&rx};
        if (client.rx_burst(in) == 1) got.push_back(rx);
        return handled == 2 && !got.empty();
      },
      1'000));
  run_until(n, [] { return false; }, 20);
  ASSERT_EQ(got.size(), 1u) << "the handler answered the first request only";
  const MadBuf& r = got[0];
  EXPECT_EQ(r.hdr().mgmt_class, 0x09);
  EXPECT_EQ(r.hdr().method, wire::method::kGetResp);
  EXPECT_EQ(r.hdr().tid.get() & 0xffffffffu, 0x77u);
  EXPECT_EQ(r.hdr().status.get(), 0);
  EXPECT_EQ(std::memcmp(r.mad.bytes.data() + 24, "hello", 5), 0);
  client.close();
}

TEST(Node, BadVendorClassOrConfigIsRefusedBeforeAnythingRuns) {
  NodeHooks hooks;
  hooks.vendor_classes.push_back({.mgmt_class = 0x03, .handler = [](const MadBuf&, MadBuf&) { return false; }});
  EXPECT_THROW(Node(star_config(), std::move(hooks)), ConfigError);
  NodeConfig c = star_config();
  c.transport.sim_node = "nowhere";
  EXPECT_THROW(Node n(c), ConfigError);
}

}  // namespace
}  // namespace madengine::node
