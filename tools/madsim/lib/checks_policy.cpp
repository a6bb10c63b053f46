// madsim's invariants of the site policy, once the fabric is quiet (see
// world.hpp): every CA port's P_Key table as the partitions file in force
// says, every port guarded by the master's M_Key at its protection level,
// and, under a routing that promises it, no cycle in the channel
// dependencies of the routes as the switches forward them (LFTs and SL2VL
// tables read from the fabric, each path on the SL the SA gives it).
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "lib/policy.hpp"
#include "lib/world.hpp"

namespace madsim {

namespace sim = madengine::sim;
namespace wire = madengine::wire;

namespace {

bool is_up(const sim::Fabric& f, sim::PortIdx p) {
  const sim::PortIdx q = f.peer(p);
  return q != sim::kNoPortIdx && f.phys_state(p) == wire::PortPhysState::kLinkUp &&
         f.phys_state(q) == wire::PortPhysState::kLinkUp;
}

unsigned vl_of(const std::array<std::uint8_t, 8>& table, unsigned sl) {
  return sl % 2 == 0 ? table[sl / 2] >> 4 : table[sl / 2] & 0x0fu;
}

}  // namespace

void World::check_partitions(const std::vector<std::uint32_t>& nodes) {
  unsigned reported = 0;
  for (const std::uint32_t n : nodes) {
    if (fabric_.is_switch(n)) continue;
    const sim::PortIdx p = fabric_.port(n, 1);
    if (p == sim::kNoPortIdx || !is_up(fabric_, p)) continue;
    std::vector<std::uint16_t> want = pkeys_of(*partitions_, n), have;
    for (const std::uint16_t k : fabric_.pkey_table(p))
      if ((k & 0x7fff) != 0) have.push_back(k);
    std::sort(want.begin(), want.end());
    std::sort(have.begin(), have.end());
    have.erase(std::unique(have.begin(), have.end()), have.end());
    if (want == have) continue;
    if (++reported > 3) continue;
    std::string w, h;
    for (const std::uint16_t k : want) w += fmt::format(" 0x{:04x}", k);
    for (const std::uint16_t k : have) h += fmt::format(" 0x{:04x}", k);
    violate("partitions", fmt::format("{} holds P_Keys{}; the partitions file gives it{}", fabric_.description(n), h, w));
  }
}

void World::check_m_keys(const std::vector<std::uint32_t>& nodes, const Slot& master) {
  const Policy& p = s_.policy;
  if (p.m_key == 0) return;
  const std::uint64_t key = master.starts > 1 && p.m_key_after_restart != 0 ? p.m_key_after_restart : p.m_key;
  unsigned reported = 0;
  for (const std::uint32_t n : nodes) {
    const bool sw = fabric_.is_switch(n);
    const sim::PortIdx port = fabric_.port(n, sw ? 0 : 1);
    if (port == sim::kNoPortIdx || (!sw && !is_up(fabric_, port))) continue;
    const sim::Fabric::LinkState l = fabric_.link_state(port);
    if (l.m_key == key && l.m_key_protect == p.m_key_protection && l.m_key_lease == p.m_key_lease_s) continue;
    if (++reported <= 3)
      violate("m-keys", fmt::format("{} holds M_Key 0x{:016x} protection {} lease {} s; the master's are 0x{:016x}, {}, {} s",
                                    fabric_.description(n), l.m_key, l.m_key_protect, l.m_key_lease, key,
                                    p.m_key_protection, p.m_key_lease_s));
  }
}

void World::check_channel_dependencies(const std::vector<std::uint32_t>& nodes, Slot& master) {
  if (!s_.policy.deadlock_free) return;
  // A channel is an egress port on a VL: (port index) * 16 + VL.
  std::vector<std::vector<std::uint32_t>> next(fabric_.port_count() * 16);
  std::unordered_set<std::uint64_t> seen;
  std::vector<std::uint16_t> dlids;
  std::vector<sim::PortIdx> sources;
  for (const std::uint32_t n : nodes) {
    const bool sw = fabric_.is_switch(n);
    const sim::PortIdx p = fabric_.port(n, sw ? 0 : 1);
    if (p == sim::kNoPortIdx || fabric_.lid(p) == 0 || (!sw && !is_up(fabric_, p))) continue;
    const unsigned span = 1u << fabric_.link_state(p).lmc;
    for (unsigned l = fabric_.lid(p); l < fabric_.lid(p) + span; ++l) dlids.push_back(static_cast<std::uint16_t>(l));
    if (!sw && fabric_.is_switch(fabric_.node_of(fabric_.peer(p)))) sources.push_back(p);
  }
  unsigned reported = 0;
  auto bad = [&](const std::string& what) {
    if (++reported <= 3) violate("deadlock-free", what);
  };
  for (const sim::PortIdx src : sources) {
    for (const std::uint16_t dlid : dlids) {
      madengine::node::PathInfo pi;
      if (dlid == fabric_.lid(src) || master.n->control().path(fabric_.lid(src), dlid, pi) != madengine::node::PathResult::kOk) continue;
      const unsigned sl = pi.sl;
      std::uint32_t prev = 0xffffffffu;
      sim::PortIdx out = src;
      std::uint8_t in = 0;
      for (unsigned hops = 0; hops < 64; ++hops) {
        const unsigned vl = vl_of(fabric_.sl2vl(out, in), sl);
        if (vl == 15) {
          bad(fmt::format("SL {} to LID {} is dropped (VL15) leaving {}[{}]", sl, dlid,
                          fabric_.description(fabric_.node_of(out)), fabric_.port_num_of(out)));
          break;
        }
        const std::uint32_t ch = static_cast<std::uint32_t>(out) * 16 + vl;
        if (prev != 0xffffffffu && seen.insert(std::uint64_t{prev} << 32 | ch).second) next[prev].push_back(ch);
        prev = ch;
        const sim::PortIdx q = fabric_.peer(out);
        const std::uint32_t sw = fabric_.node_of(q);
        if (!fabric_.is_switch(sw)) break;
        const std::uint8_t o = fabric_.lft_port(sw, dlid);
        if (o == 0 || o == wire::kLftNoPort || o > fabric_.num_ports(sw)) break;  // its own LID, or the LFT walk's to report
        in = fabric_.port_num_of(q);
        out = fabric_.port(sw, o);
      }
    }
  }
  // A cycle is a possible deadlock (Dally and Seitz): depth-first, iteratively.
  std::vector<std::uint8_t> color(next.size(), 0);  // 0 new, 1 on the path, 2 done
  for (std::uint32_t start = 0; start < next.size(); ++start) {
    if (color[start] != 0 || next[start].empty()) continue;
    std::vector<std::pair<std::uint32_t, std::size_t>> stack{{start, 0}};
    color[start] = 1;
    while (!stack.empty()) {
      auto& [ch, i] = stack.back();
      if (i == next[ch].size()) {
        color[ch] = 2;
        stack.pop_back();
        continue;
      }
      const std::uint32_t to = next[ch][i++];
      if (color[to] == 1) {
        const sim::PortIdx p = to / 16;
        return bad(fmt::format("routing {}: a channel dependency cycle through {}[{}] VL {} ({} channels deep)", s_.policy.routing,
                               fabric_.description(fabric_.node_of(p)), fabric_.port_num_of(p), to % 16, stack.size()));
      }
      if (color[to] == 0) {
        color[to] = 1;
        stack.emplace_back(to, 0);
      }
    }
  }
}

}  // namespace madsim
