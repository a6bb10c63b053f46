// Drawing a scenario's site policy and client shape (see policy.hpp).
#include "lib/policy.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "lib/rng.hpp"
#include "madengine/wire/sa.hpp"

namespace madsim {

namespace sim = madengine::sim;
using madengine::kNanosPerMilli;
using madengine::kNanosPerSecond;

namespace {

constexpr std::uint64_t kPolicySalt = 0x706f6c696379ull;
constexpr std::uint16_t kFullBit = 0x8000;

bool is_deadlock_free(const std::string& routing) {
  return routing == "dfsssp" || routing == "nue" || routing == "dor,dfsssp" || routing == "updn";
}

// What a site runs on a fabric of this shape.
std::string draw_routing(Rng& g, FabricKind k) {
  auto one_of = [&g](std::initializer_list<const char*> names) {
    return std::string(names.begin()[g.pick(static_cast<unsigned>(names.size()))]);
  };
  switch (k) {
    case FabricKind::kTorus:
    case FabricKind::kMesh: return one_of({"dor,dfsssp", "dfsssp", "nue", "minhop"});
    case FabricKind::kDragonfly: return one_of({"dfsssp", "nue", "minhop"});
    case FabricKind::kFatTree2:
    case FabricKind::kFatTree3: return one_of({"minhop", "minhop", "ftree,minhop", "updn", "dfsssp"});
    case FabricKind::kRandom: return one_of({"minhop", "minhop", "updn", "dfsssp", "nue"});
    case FabricKind::kTwoSubnets: return one_of({"minhop", "minhop", "updn"});
  }
  return "minhop";
}

// 1-3 partitions over the CAs; SLs from `sls` (QoS on) or 0.
std::vector<PartitionDraw> draw_partitions(Rng& g, const std::vector<std::uint32_t>& hosts,
                                           const std::vector<std::uint8_t>& sls) {
  std::vector<PartitionDraw> out;
  const unsigned n = static_cast<unsigned>(g.range(1, 3));
  for (unsigned i = 0; i < n; ++i) {
    PartitionDraw p;
    do {
      p.pkey = static_cast<std::uint16_t>(g.range(1, 0x7ffe));
    } while (std::any_of(out.begin(), out.end(), [&](const PartitionDraw& q) { return q.pkey == p.pkey; }));
    for (const std::uint32_t h : hosts)
      if (g.chance(0.5)) p.members.emplace_back(h, g.chance(0.6));
    if (p.members.empty()) p.members.emplace_back(hosts[g.pick(static_cast<unsigned>(hosts.size()))], true);
    p.sl = sls.empty() ? 0 : sls[g.pick(static_cast<unsigned>(sls.size()))];
    out.push_back(std::move(p));
  }
  return out;
}

// qos_sl2vl: each SL to a data VL of VL0-7, one or two SLs other than 0 to
// VL15 (such an SL carries nothing: no PathRecord may name it).
std::string draw_sl2vl(Rng& g, std::vector<std::uint8_t>& usable) {
  std::array<unsigned, 16> vl{};
  for (unsigned sl = 0; sl < 16; ++sl) vl[sl] = static_cast<unsigned>(g.range(0, 7));
  const unsigned dropped = static_cast<unsigned>(g.range(0, 2));
  for (unsigned i = 0; i < dropped; ++i) vl[1 + g.pick(15)] = 15;
  std::string out;
  for (unsigned sl = 0; sl < 16; ++sl) {
    out += fmt::format("{}{}", sl == 0 ? "" : ",", vl[sl]);
    if (vl[sl] != 15) usable.push_back(static_cast<std::uint8_t>(sl));
  }
  return out;
}

const PartitionDraw* find(const std::vector<PartitionDraw>& parts, std::uint16_t pkey) {
  for (const PartitionDraw& p : parts)
    if (p.pkey == (pkey & 0x7fff)) return &p;
  return nullptr;
}

// -1: not a member; 0: limited; 1: full.
int membership(const PartitionDraw& p, std::uint32_t node) {
  for (const auto& [n, full] : p.members)
    if (n == node) return full ? 1 : 0;
  return -1;
}

}  // namespace

void draw_policy(std::uint64_t seed, Scenario& s) {
  Rng g(seed ^ kPolicySalt);
  Policy& p = s.policy;
  const auto hosts = cas_of(s.topo);
  p.routing = draw_routing(g, s.fabric_kind);
  p.deadlock_free = is_deadlock_free(p.routing);
  p.layered = p.deadlock_free && p.routing != "updn";  // up/down needs one layer
  // QoS with a routing of one layer (a layered one owns the SL2VL tables).
  p.qos = !p.deadlock_free && p.routing != "updn" && g.chance(0.3);
  std::vector<std::uint8_t> sls;
  if (p.qos) p.qos_sl2vl = g.chance(0.7) ? draw_sl2vl(g, sls) : std::string();
  if (p.qos && sls.empty())
    for (std::uint8_t sl = 0; sl < 8; ++sl) sls.push_back(sl);  // OpenSM's default: SL i -> VL i (VL0-7 here)
  if (!p.qos) sls.clear();
  if (g.chance(0.4)) p.partitions = draw_partitions(g, hosts, sls);
  if (g.chance(0.35)) {
    p.partitions_reloaded = g.chance(0.2) ? std::vector<PartitionDraw>{} : draw_partitions(g, hosts, sls);
    FaultDraw f;
    f.kind = FaultKind::kPartitionsReload;
    f.at_ns = static_cast<Nanos>(g.range(1000, static_cast<std::uint64_t>(s.faults_end_ns / kNanosPerMilli))) * kNanosPerMilli;
    s.faults.push_back(f);
    std::stable_sort(s.faults.begin(), s.faults.end(), [](const FaultDraw& x, const FaultDraw& y) { return x.at_ns < y.at_ns; });
  }
  if (g.chance(0.3)) {
    p.m_key = g.next() | 1;
    p.m_key_lease_s = static_cast<unsigned>(g.range(1, 4));
    p.m_key_protection = static_cast<unsigned>(g.range(1, 3));
    const bool lone_restarts =
        s.sms.size() == 1 && std::any_of(s.faults.begin(), s.faults.end(), [](const FaultDraw& f) {
          return (f.kind == FaultKind::kMasterKill || f.kind == FaultKind::kMasterKillJournal) && f.restart;
        });
    if (lone_restarts && g.chance(0.5)) {
      p.m_key_after_restart = g.next() | 1;
      p.guid2mkey_lost = g.chance(0.5);
    }
  }
  // Several clients on one host, as a node runs several jobs' processes.
  if (!s.clients.empty() && g.chance(0.5)) {
    const std::size_t first = s.clients.size();
    p.extra_clients = static_cast<unsigned>(g.range(1, 7));
    for (std::size_t c = 0; c < first; ++c)
      for (unsigned i = 0; i < p.extra_clients; ++i) s.clients.push_back(s.clients[c]);
    const unsigned n = static_cast<unsigned>(g.range(10, 40));
    for (unsigned i = 0; i < n; ++i)
      s.actions.push_back(draw_action(g, hosts, g.range(500, static_cast<std::uint64_t>(s.run_ns / kNanosPerMilli)),
                                      static_cast<unsigned>(s.clients.size() - first), static_cast<unsigned>(first)));
  }
  p.gid_share = g.chance(0.7) ? g.unit() : 0.0;
  for (ClientAction& a : s.actions) {
    if (a.op != ClientOp::kPathRecord) continue;
    a.gid_shaped = g.chance(p.gid_share);
    a.pkey_pick = static_cast<std::uint32_t>(g.next());
  }
  std::stable_sort(s.actions.begin(), s.actions.end(),
                   [](const ClientAction& x, const ClientAction& y) { return x.at_ns < y.at_ns; });
}

std::vector<std::uint16_t> shared_pkeys(const std::vector<PartitionDraw>& parts, std::uint32_t a, std::uint32_t b) {
  std::vector<std::uint16_t> out{0xffff};
  for (const PartitionDraw& p : parts) {
    const int ma = membership(p, a), mb = membership(p, b);
    if (ma < 0 || mb < 0 || (ma == 0 && mb == 0)) continue;
    out.push_back(static_cast<std::uint16_t>(p.pkey | (ma == 1 ? kFullBit : 0)));
  }
  return out;
}

std::vector<std::uint16_t> pkeys_of(const std::vector<PartitionDraw>& parts, std::uint32_t node) {
  std::vector<std::uint16_t> out{0xffff};
  for (const PartitionDraw& p : parts)
    if (const int m = membership(p, node); m >= 0) out.push_back(static_cast<std::uint16_t>(p.pkey | (m == 1 ? kFullBit : 0)));
  return out;
}

std::uint8_t sl_of_pkey(const std::vector<PartitionDraw>& parts, std::uint16_t pkey) {
  const PartitionDraw* p = find(parts, pkey);
  return p != nullptr ? p->sl : 0;
}

std::string partitions_conf(const Scenario& s, const std::vector<PartitionDraw>& parts) {
  std::string out = "# madsim seed " + std::to_string(s.seed) + "\nDefault=0x7fff, ipoib : ALL=full ;\n";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const PartitionDraw& p = parts[i];
    out += fmt::format("p{}=0x{:04x}{} :", i, p.pkey, s.policy.qos ? fmt::format(", sl={}", p.sl) : std::string());
    for (std::size_t m = 0; m < p.members.size(); ++m)
      out += fmt::format("{} 0x{:016x}={}", m == 0 ? "" : ",", s.topo.nodes[p.members[m].first].ports[1].guid,
                         p.members[m].second ? "full" : "limited");
    out += " ;\n";
  }
  return out;
}

std::string describe_policy(const Scenario& s) {
  const Policy& p = s.policy;
  std::string out = fmt::format("  routing {}{}", p.routing, p.deadlock_free ? " (deadlock-free: checked)" : "");
  if (p.qos) out += fmt::format(", QoS on{}", p.qos_sl2vl.empty() ? std::string() : " qos_sl2vl " + p.qos_sl2vl);
  out += "\n";
  auto parts = [&](const char* what, const std::vector<PartitionDraw>& v) {
    out += fmt::format("  {}:", what);
    if (v.empty()) out += " the default only";
    for (const PartitionDraw& d : v) {
      out += fmt::format(" 0x{:04x} ({} members", d.pkey, d.members.size());
      if (p.qos) out += fmt::format(", SL {}", d.sl);
      out += ")";
    }
    out += "\n";
  };
  parts("partitions", p.partitions);
  if (std::any_of(s.faults.begin(), s.faults.end(), [](const FaultDraw& f) { return f.kind == FaultKind::kPartitionsReload; }))
    parts("partitions reloaded", p.partitions_reloaded);
  if (p.m_key != 0) {
    out += fmt::format("  M_Key 0x{:016x} lease {} s protection {}", p.m_key, p.m_key_lease_s, p.m_key_protection);
    if (p.m_key_after_restart != 0)
      out += fmt::format("; after a restart 0x{:016x}{}", p.m_key_after_restart, p.guid2mkey_lost ? ", guid2mkey lost" : "");
    out += "\n";
  }
  if (p.extra_clients != 0) out += fmt::format("  {} clients per client host\n", p.extra_clients + 1);
  if (p.gid_share > 0) out += fmt::format("  {:.0f} % of PathRecords by GID with a P_Key\n", 100 * p.gid_share);
  return out;
}

}  // namespace madsim
