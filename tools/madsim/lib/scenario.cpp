// Drawing a scenario from a seed (see scenario.hpp).
#include "lib/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "lib/policy.hpp"
#include "lib/rng.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/smp.hpp"
#include "node/fault_points.hpp"
#include "sim/generators.hpp"

namespace madsim {

namespace sim = madengine::sim;
using madengine::kNanosPerMilli;
using madengine::kNanosPerSecond;
using madengine::node::SmPhase;

bool parse_size(const std::string& text, Size& out) noexcept {
  if (text == "small") out = Size::kSmall;
  else if (text == "medium") out = Size::kMedium;
  else if (text == "large") out = Size::kLarge;
  else return false;
  return true;
}

const char* to_string(Size s) noexcept {
  switch (s) {
    case Size::kSmall: return "small";
    case Size::kMedium: return "medium";
    case Size::kLarge: return "large";
  }
  return "?";
}

const char* to_string(FabricKind k) noexcept {
  switch (k) {
    case FabricKind::kFatTree2: return "ft2";
    case FabricKind::kFatTree3: return "ft3";
    case FabricKind::kRandom: return "random";
    case FabricKind::kTwoSubnets: return "two-subnets";
    case FabricKind::kTorus: return "torus";
    case FabricKind::kMesh: return "mesh";
    case FabricKind::kDragonfly: return "dragonfly";
  }
  return "?";
}

const char* to_string(FaultKind k) noexcept {
  switch (k) {
    case FaultKind::kSmpLoss: return "smp-loss";
    case FaultKind::kLinkFlap: return "link-flap";
    case FaultKind::kLinkFlapInPhase: return "link-flap-in-phase";
    case FaultKind::kSwitchReboot: return "switch-reboot";
    case FaultKind::kSmaMute: return "sma-mute";
    case FaultKind::kSmaResetting: return "sma-resetting";
    case FaultKind::kMasterKill: return "master-kill";
    case FaultKind::kMasterKillJournal: return "master-kill-journal";
    case FaultKind::kSmPortBounce: return "sm-port-bounce";
    case FaultKind::kJoinSubnets: return "join-subnets";
    case FaultKind::kPartitionsReload: return "partitions-reload";
  }
  return "?";
}

const char* to_string(ClientOp op) noexcept {
  switch (op) {
    case ClientOp::kPathRecord: return "path-record";
    case ClientOp::kGetTable: return "get-table";
    case ClientOp::kServiceSet: return "service-set";
    case ClientOp::kServiceDelete: return "service-delete";
    case ClientOp::kMcJoin: return "mc-join";
    case ClientOp::kMcLeave: return "mc-leave";
    case ClientOp::kInformSubscribe: return "inform-subscribe";
  }
  return "?";
}

namespace {

void draw_fabric(Rng& r, Scenario& s) {
  const unsigned big = s.size == Size::kSmall ? 0 : s.size == Size::kMedium ? 1 : 2;
  switch (r.pick(10)) {
    case 0:
    case 1:
    case 2: {
      s.fabric_kind = FabricKind::kFatTree2;
      const unsigned k = big == 0 ? 2 * static_cast<unsigned>(r.range(2, 4)) : big == 1 ? 2 * static_cast<unsigned>(r.range(5, 9)) : 36;
      const unsigned leaves = static_cast<unsigned>(r.range(2, k));
      const unsigned hosts = static_cast<unsigned>(r.range(1, k / 2));
      s.topo = sim::make_fat_tree_2level({.k = k, .leaves = leaves, .hosts_per_leaf = hosts});
      s.fabric_spec = fmt::format("ft2 k={} leaves={} hosts_per_leaf={}", k, leaves, hosts);
      break;
    }
    case 3:
    case 4: {
      s.fabric_kind = FabricKind::kFatTree3;
      const unsigned k = big == 0 ? 4 : big == 1 ? 2 * static_cast<unsigned>(r.range(3, 4)) : 16;
      const unsigned pods = static_cast<unsigned>(r.range(2, k));
      s.topo = sim::make_fat_tree_3level({.k = k, .pods = pods});
      s.fabric_spec = fmt::format("ft3 k={} pods={}", k, pods);
      break;
    }
    case 5:
    case 6:
    case 7: {
      s.fabric_kind = FabricKind::kRandom;
      sim::RandomSpec spec;
      spec.switches = static_cast<unsigned>(big == 0 ? r.range(2, 10) : big == 1 ? r.range(12, 40) : r.range(100, 300));
      spec.degree = static_cast<unsigned>(r.range(1, 4));
      spec.hosts_per_switch = static_cast<unsigned>(r.range(1, 3));
      spec.radix = static_cast<unsigned>(r.range(spec.degree + spec.hosts_per_switch + 1, 18));
      spec.seed = r.next();
      s.topo = sim::make_random(spec);
      s.fabric_spec = fmt::format("random switches={} degree={} hosts_per_switch={} radix={} seed={}", spec.switches,
                                  spec.degree, spec.hosts_per_switch, spec.radix, spec.seed);
      break;
    }
    default: {
      s.fabric_kind = FabricKind::kTwoSubnets;
      const unsigned k = big == 0 ? 4 : big == 1 ? 8 : 16;
      sim::TwoSubnets two = sim::make_two_subnets(k);
      s.topo = std::move(two.topo);
      s.join_a = two.join_a;
      s.join_b = two.join_b;
      s.join_a_port = two.join_a_port;
      s.join_b_port = two.join_b_port;
      s.sms.push_back({two.sm_a, static_cast<std::uint8_t>(r.range(0, 15))});
      s.sms.push_back({two.sm_b, static_cast<std::uint8_t>(r.range(0, 15))});
      s.fabric_spec = fmt::format("two-subnets k={}", k);
      break;
    }
  }
}

// Tori and meshes (sim::make_torus) come from a generator of their own, so
// adding them left every other seed's scenario as it was: a seed it picks
// keeps its main draws and only its fabric becomes a grid. The salt is one
// that picks none of the seeds tests/madsim names (regression, smoke and
// replay seeds), whose scenarios were drawn before grids existed.
constexpr std::uint64_t kGridSalt = 0x677269642eull;
constexpr double kGridShare = 0.15;

void maybe_grid(std::uint64_t seed, Scenario& s) {
  if (s.fabric_kind == FabricKind::kTwoSubnets) return;
  Rng g(seed ^ kGridSalt);
  if (!g.chance(kGridShare)) return;
  const bool wrap = g.chance(0.5);
  const unsigned big = s.size == Size::kSmall ? 0 : s.size == Size::kMedium ? 1 : 2;
  sim::TorusSpec spec;
  const unsigned lo = big == 0 ? 2 : big == 1 ? 3 : 6, hi = big == 0 ? 4 : big == 1 ? 6 : 10;
  spec.dims = {static_cast<unsigned>(g.range(lo, hi)), static_cast<unsigned>(g.range(lo, hi)),
               big == 0 ? 1u : static_cast<unsigned>(g.range(1, 3))};
  spec.wrap = {wrap, wrap, wrap};
  spec.hosts_per_switch = static_cast<unsigned>(g.range(1, 2));
  spec.links_per_neighbor = 1;
  s.topo = sim::make_torus(spec).topo;
  s.fabric_kind = wrap ? FabricKind::kTorus : FabricKind::kMesh;
  s.fabric_spec = fmt::format("{} {}x{}x{} hosts_per_switch={}", wrap ? "torus" : "mesh", spec.dims[0], spec.dims[1],
                              spec.dims[2], spec.hosts_per_switch);
}

// Dragonflies likewise, from a stream of their own: a seed's other draws
// stay as they were, only its fabric changes.
constexpr std::uint64_t kDragonflySalt = 0x647261676f6eull;
constexpr double kDragonflyShare = 0.08;

void maybe_dragonfly(std::uint64_t seed, Scenario& s) {
  if (s.fabric_kind == FabricKind::kTwoSubnets || s.fabric_kind == FabricKind::kTorus || s.fabric_kind == FabricKind::kMesh)
    return;
  Rng g(seed ^ kDragonflySalt);
  if (!g.chance(kDragonflyShare)) return;
  const unsigned big = s.size == Size::kSmall ? 0 : s.size == Size::kMedium ? 1 : 2;
  sim::DragonflySpec spec;
  spec.routers = static_cast<unsigned>(big == 0 ? g.range(2, 3) : big == 1 ? g.range(3, 5) : g.range(6, 10));
  spec.globals = static_cast<unsigned>(g.range(1, 2));
  spec.groups = static_cast<unsigned>(g.range(2, spec.routers * spec.globals + 1));
  spec.hosts = static_cast<unsigned>(g.range(1, 2));
  s.topo = sim::make_dragonfly(spec);
  s.fabric_kind = FabricKind::kDragonfly;
  s.fabric_spec = fmt::format("dragonfly groups={} routers={} hosts={} globals={}", spec.groups, spec.routers, spec.hosts,
                              spec.globals);
}

std::vector<std::uint32_t> switches_of(const sim::Topology& t) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t n = 0; n < t.nodes.size(); ++n)
    if (t.nodes[n].is_switch()) out.push_back(n);
  return out;
}

// A cabled port (node, port number) of the topology, any link.
std::pair<std::uint32_t, std::uint8_t> any_link(Rng& r, const sim::Topology& t, bool switch_links_only) {
  std::vector<std::pair<std::uint32_t, std::uint8_t>> ports;
  for (std::uint32_t n = 0; n < t.nodes.size(); ++n) {
    const sim::TopoNode& node = t.nodes[n];
    for (std::uint8_t p = 1; p <= node.num_ports; ++p) {
      const sim::TopoPort& tp = node.ports[p];
      if (!tp.connected() || tp.peer_node < n) continue;  // each link once
      if (switch_links_only && (!node.is_switch() || !t.nodes[tp.peer_node].is_switch())) continue;
      ports.emplace_back(n, p);
    }
  }
  if (ports.empty()) return {sim::kNoNode, 0};
  return ports[r.pick(static_cast<unsigned>(ports.size()))];
}

constexpr std::uint16_t kLossAttrs[] = {0,
                                        madengine::wire::smp_attr::kNodeInfo,
                                        madengine::wire::smp_attr::kPortInfo,
                                        madengine::wire::smp_attr::kSwitchInfo,
                                        madengine::wire::smp_attr::kLinearFwdTable,
                                        madengine::wire::smp_attr::kSmInfo,
                                        madengine::wire::smp_attr::kNodeDescription};

constexpr SmPhase kKillPhases[] = {SmPhase::kDiscovery, SmPhase::kLids, SmPhase::kRouting, SmPhase::kProgramming,
                                   SmPhase::kReplicaCopy};

FaultDraw draw_fault(Rng& r, const Scenario& s, FaultKind kind, Nanos at) {
  FaultDraw f;
  f.kind = kind;
  f.at_ns = at;
  switch (kind) {
    case FaultKind::kSmpLoss:
      f.rate = 0.01 + 0.09 * r.unit();
      f.attr = kLossAttrs[r.pick(std::size(kLossAttrs))];
      f.length_ns = static_cast<Nanos>(r.range(1000, 8000)) * kNanosPerMilli;
      break;
    case FaultKind::kLinkFlap:
    case FaultKind::kLinkFlapInPhase: {
      const auto [node, port] = any_link(r, s.topo, r.chance(0.7));
      f.a = node;
      f.count = port;
      f.length_ns = static_cast<Nanos>(r.range(20, 2000)) * kNanosPerMilli;
      f.phase = r.chance(0.5) ? SmPhase::kDiscovery : SmPhase::kProgramming;
      break;
    }
    case FaultKind::kSwitchReboot: {
      const auto sw = switches_of(s.topo);
      f.a = sw[r.pick(static_cast<unsigned>(sw.size()))];
      break;
    }
    case FaultKind::kSmaMute:
    case FaultKind::kSmaResetting: {
      const auto sw = switches_of(s.topo);
      const auto ca = cas_of(s.topo);
      f.a = r.chance(0.7) ? sw[r.pick(static_cast<unsigned>(sw.size()))] : ca[r.pick(static_cast<unsigned>(ca.size()))];
      f.length_ns = static_cast<Nanos>(r.range(100, 3000)) * kNanosPerMilli;
      f.count = static_cast<unsigned>(r.range(2, 5));
      break;
    }
    case FaultKind::kMasterKill:
      f.phase = kKillPhases[r.pick(std::size(kKillPhases))];
      f.length_ns = static_cast<Nanos>(r.range(200, 4000)) * kNanosPerMilli;
      f.restart = s.sms.size() == 1 || r.chance(0.6);
      break;
    case FaultKind::kMasterKillJournal:
      f.step = r.pick(madengine::kDurableStepCount);
      f.length_ns = static_cast<Nanos>(r.range(200, 4000)) * kNanosPerMilli;
      f.restart = true;
      break;
    case FaultKind::kSmPortBounce:
      f.a = r.pick(static_cast<unsigned>(s.sms.size()));
      f.length_ns = static_cast<Nanos>(r.range(100, 3000)) * kNanosPerMilli;
      break;
    case FaultKind::kJoinSubnets:
    case FaultKind::kPartitionsReload:
      break;
  }
  return f;
}

}  // namespace

std::vector<std::uint32_t> cas_of(const sim::Topology& t) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t n = 0; n < t.nodes.size(); ++n)
    if (!t.nodes[n].is_switch()) out.push_back(n);
  return out;
}

ClientAction draw_action(Rng& r, const std::vector<std::uint32_t>& hosts, std::uint64_t at_ms,
                         unsigned count, unsigned first) {
  ClientAction a;
  a.at_ns = static_cast<Nanos>(at_ms) * kNanosPerMilli;
  a.client = first + r.pick(count);
  const unsigned op = r.pick(100);
  a.op = op < 35   ? ClientOp::kPathRecord
         : op < 45 ? ClientOp::kGetTable
         : op < 65 ? ClientOp::kServiceSet
         : op < 70 ? ClientOp::kServiceDelete
         : op < 85 ? ClientOp::kMcJoin
         : op < 92 ? ClientOp::kMcLeave
                   : ClientOp::kInformSubscribe;
  a.peer = hosts[r.pick(static_cast<unsigned>(hosts.size()))];
  a.key = r.pick(a.op == ClientOp::kMcJoin || a.op == ClientOp::kMcLeave ? 3 : 6);
  a.lease_s = r.chance(0.4) ? 0xffffffffu : static_cast<std::uint32_t>(r.range(2, 40));
  a.table = r.chance(0.5) ? madengine::wire::sa_attr::kNodeRecord : madengine::wire::sa_attr::kPortInfoRecord;
  return a;
}

namespace {

void draw_clients(Rng& r, Scenario& s) {
  std::vector<std::uint32_t> free;
  for (const std::uint32_t n : cas_of(s.topo))
    if (std::none_of(s.sms.begin(), s.sms.end(), [n](const SmDraw& d) { return d.node == n; })) free.push_back(n);
  const unsigned want = std::min<unsigned>(static_cast<unsigned>(free.size()), static_cast<unsigned>(r.range(2, 6)));
  for (unsigned i = 0; i < want; ++i) {
    const unsigned j = i + r.pick(static_cast<unsigned>(free.size()) - i);
    std::swap(free[i], free[j]);
    s.clients.push_back(free[i]);
  }
  if (s.clients.empty()) return;
  const auto hosts = cas_of(s.topo);
  const unsigned n = static_cast<unsigned>(r.range(15, 50));
  for (unsigned i = 0; i < n; ++i)
    s.actions.push_back(draw_action(r, hosts, r.range(500, static_cast<std::uint64_t>(s.run_ns / kNanosPerMilli)),
                                    static_cast<unsigned>(s.clients.size()), 0));
}

}  // namespace

Scenario draw_scenario(std::uint64_t seed, Size size) {
  // Each seed's stream is scrambled so that nearby seeds do not start alike.
  Rng r(seed * 0x9e3779b97f4a7c15ull + 0x6a09e667f3bcc909ull);
  Scenario s;
  s.seed = seed;
  s.size = size;
  s.run_ns = static_cast<Nanos>(r.range(14, 24)) * kNanosPerSecond;
  s.faults_end_ns = s.run_ns - 4 * kNanosPerSecond;
  draw_fabric(r, s);
  maybe_grid(seed, s);
  maybe_dragonfly(seed, s);
  const auto cas = cas_of(s.topo);
  if (s.sms.empty()) {
    const unsigned n = std::min<unsigned>(static_cast<unsigned>(cas.size()) - 1, static_cast<unsigned>(r.range(1, 3)));
    std::vector<std::uint32_t> pool = cas;
    for (unsigned i = 0; i < std::max(1u, n); ++i) {
      const unsigned j = i + r.pick(static_cast<unsigned>(pool.size()) - i);
      std::swap(pool[i], pool[j]);
      s.sms.push_back({pool[i], static_cast<std::uint8_t>(r.range(0, 15))});
    }
  } else if (r.chance(0.3)) {
    // A third SM, in subnet a.
    for (const std::uint32_t n : cas)
      if (s.topo.nodes[n].id.rfind("a-", 0) == 0 && n != s.sms[0].node && r.chance(0.3)) {
        s.sms.push_back({n, static_cast<std::uint8_t>(r.range(0, 15))});
        break;
      }
  }
  draw_clients(r, s);

  // Faults: a few, of kinds the fabric allows, anywhere before faults_end.
  const unsigned n_faults = static_cast<unsigned>(r.range(1, 4));
  for (unsigned i = 0; i < n_faults; ++i) {
    FaultKind kind;
    for (;;) {
      kind = static_cast<FaultKind>(r.pick(kFaultKindCount));
      if (kind == FaultKind::kJoinSubnets && s.fabric_kind != FabricKind::kTwoSubnets) continue;
      break;
    }
    const Nanos at = static_cast<Nanos>(r.range(0, static_cast<std::uint64_t>(s.faults_end_ns / kNanosPerMilli))) * kNanosPerMilli;
    s.faults.push_back(draw_fault(r, s, kind, at));
  }
  if (s.fabric_kind == FabricKind::kTwoSubnets &&
      std::none_of(s.faults.begin(), s.faults.end(), [](const FaultDraw& f) { return f.kind == FaultKind::kJoinSubnets; }))
    s.faults.push_back(draw_fault(r, s, FaultKind::kJoinSubnets,
                                  static_cast<Nanos>(r.range(2000, 9000)) * kNanosPerMilli));
  std::stable_sort(s.faults.begin(), s.faults.end(), [](const FaultDraw& x, const FaultDraw& y) { return x.at_ns < y.at_ns; });
  draw_policy(seed, s);
  return s;
}

std::string describe(const Scenario& s) {
  std::string out = fmt::format("seed {} ({}): fabric {} ({} nodes, {} links); run {:.1f} s\n", s.seed, to_string(s.size),
                                s.fabric_spec, s.topo.nodes.size(), s.topo.link_count(),
                                static_cast<double>(s.run_ns) / 1e9);
  for (std::size_t i = 0; i < s.sms.size(); ++i)
    out += fmt::format("  sm{} on {} priority {}\n", i, s.topo.nodes[s.sms[i].node].id, s.sms[i].priority);
  out += describe_policy(s);
  out += fmt::format("  {} clients, {} actions\n", s.clients.size(), s.actions.size());
  for (const FaultDraw& f : s.faults) {
    out += fmt::format("  fault at {:.3f} s: {}", static_cast<double>(f.at_ns) / 1e9, to_string(f.kind));
    switch (f.kind) {
      case FaultKind::kSmpLoss:
        out += fmt::format(" rate {:.3f} attr 0x{:04x} for {} ms", f.rate, f.attr, f.length_ns / kNanosPerMilli);
        break;
      case FaultKind::kLinkFlap:
      case FaultKind::kLinkFlapInPhase:
        out += fmt::format(" {}[{}] down {} ms", s.topo.nodes[f.a].id, f.count, f.length_ns / kNanosPerMilli);
        if (f.kind == FaultKind::kLinkFlapInPhase) out += fmt::format(" when the master enters {}", madengine::node::to_string(f.phase));
        break;
      case FaultKind::kSwitchReboot: out += " " + s.topo.nodes[f.a].id; break;
      case FaultKind::kSmaMute: out += fmt::format(" {} for {} ms", s.topo.nodes[f.a].id, f.length_ns / kNanosPerMilli); break;
      case FaultKind::kSmaResetting:
        out += fmt::format(" {} {} times every {} ms", s.topo.nodes[f.a].id, f.count, f.length_ns / kNanosPerMilli);
        break;
      case FaultKind::kMasterKill:
        out += fmt::format(" in {}{}", madengine::node::to_string(f.phase),
                           f.restart ? fmt::format(", back after {} ms", f.length_ns / kNanosPerMilli) : std::string(", not restarted"));
        break;
      case FaultKind::kMasterKillJournal:
        out += fmt::format(" before {}, back after {} ms", madengine::to_string(static_cast<madengine::DurableStep>(f.step)),
                           f.length_ns / kNanosPerMilli);
        break;
      case FaultKind::kSmPortBounce: out += fmt::format(" sm{} gone {} ms", f.a, f.length_ns / kNanosPerMilli); break;
      case FaultKind::kJoinSubnets:
      case FaultKind::kPartitionsReload: break;
    }
    out += "\n";
  }
  return out;
}

}  // namespace madsim
