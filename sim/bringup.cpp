// Reference bring-up over SMPs (see bringup.hpp): DR breadth-first discovery,
// sequential LIDs, min-hop LFTs from a BFS per switch, then ARMED/ACTIVE.
#include "sim/bringup.hpp"

#include <cstring>
#include <deque>
#include <unordered_map>

#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"

namespace madengine::sim {

namespace {

using wire::method::kGet;
using wire::method::kSet;

template <typename T>
const T& payload(const wire::DrSmp& smp) noexcept {
  return *reinterpret_cast<const T*>(smp.data.data());
}

bool ok(const std::optional<wire::DrSmp>& r) noexcept { return r && r->smp_status() == 0; }

}  // namespace

BringUpResult bring_up(SmpClient& client, bool program) {
  BringUpResult res;
  auto fail = [&](const char* why) {
    res.error = why;
    return res;
  };
  auto get = [&](std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path) {
    ++res.smps;
    return client.dr(kGet, attr, mod, path);
  };

  // ---- discovery ----
  auto self = get(wire::smp_attr::kNodeInfo, 0, wire::DrPath{});
  if (!ok(self)) return fail("local NodeInfo failed");
  std::unordered_map<std::uint64_t, std::uint32_t> by_guid;
  std::vector<std::vector<wire::DrPath>> port_paths;  // CAs: path that reaches each port
  auto add_node = [&](const wire::NodeInfo& ni, const wire::DrPath& path) {
    DiscoveredNode d;
    d.guid = ni.node_guid.get();
    d.is_switch = ni.is_switch();
    d.num_ports = ni.num_ports;
    d.path = path;
    d.entry_port = ni.local_port_num;
    d.peer.assign(d.num_ports + 1u, kNoNode);
    d.peer_port.assign(d.num_ports + 1u, 0);
    d.lids.assign(d.num_ports + 1u, 0);
    by_guid.emplace(d.guid, static_cast<std::uint32_t>(res.nodes.size()));
    res.nodes.push_back(std::move(d));
    port_paths.emplace_back(ni.num_ports + 1u);
    port_paths.back()[ni.local_port_num] = path;
    return static_cast<std::uint32_t>(res.nodes.size() - 1);
  };
  add_node(payload<wire::NodeInfo>(*self), wire::DrPath{});
  std::deque<std::uint32_t> queue{0};
  while (!queue.empty()) {
    const std::uint32_t x = queue.front();
    queue.pop_front();
    const DiscoveredNode node = res.nodes[x];
    std::uint8_t first = 1, last = node.num_ports;
    if (!node.is_switch) {
      if (x != 0) continue;  // DR does not pass through a CA other than our own
      first = last = node.entry_port;
    }
    for (std::uint8_t p = first; p <= last; ++p) {
      auto pi = get(wire::smp_attr::kPortInfo, p, node.path);
      if (!ok(pi)) return fail("PortInfo during discovery failed");
      if (payload<wire::PortInfo>(*pi).phys_state() != wire::PortPhysState::kLinkUp) continue;
      const wire::DrPath next = node.path.extended(p);
      auto ni = get(wire::smp_attr::kNodeInfo, 0, next);
      if (!ok(ni)) return fail("NodeInfo during discovery failed");
      const auto& info = payload<wire::NodeInfo>(*ni);
      auto it = by_guid.find(info.node_guid.get());
      std::uint32_t y;
      if (it == by_guid.end()) {
        y = add_node(info, next);
        queue.push_back(y);
      } else {
        y = it->second;
        if (!res.nodes[y].is_switch && port_paths[y][info.local_port_num].hops == 0 && y != 0)
          port_paths[y][info.local_port_num] = next;
      }
      res.nodes[x].peer[p] = y;
      res.nodes[x].peer_port[p] = info.local_port_num;
      res.nodes[y].peer[info.local_port_num] = x;
      res.nodes[y].peer_port[info.local_port_num] = p;
    }
  }
  if (!program) {
    res.ok = true;
    return res;
  }

  // ---- LIDs: our port first, then discovery order ----
  std::uint16_t next_lid = 1;
  std::vector<std::pair<std::uint32_t, std::uint8_t>> lid_owner{{kNoNode, 0}};  // [lid] -> (node, port)
  auto give = [&](std::uint32_t n, std::uint8_t p) {
    res.nodes[n].lids[p] = next_lid++;
    lid_owner.emplace_back(n, p);
  };
  for (std::uint32_t n = 0; n < res.nodes.size(); ++n) {
    DiscoveredNode& d = res.nodes[n];
    if (d.is_switch) {
      give(n, 0);
    } else {
      for (std::uint8_t p = 1; p <= d.num_ports; ++p)
        if (d.peer[p] != kNoNode || (n == 0 && p == d.entry_port)) give(n, p);
    }
  }
  res.sm_lid = res.nodes[0].lids[res.nodes[0].entry_port ? res.nodes[0].entry_port : 0];
  res.lid_max = static_cast<std::uint16_t>(next_lid - 1);

  auto path_to = [&](std::uint32_t n, std::uint8_t p) -> const wire::DrPath& {
    return res.nodes[n].is_switch ? res.nodes[n].path : port_paths[n][p];
  };
  // Get, modify, Set: a Set writes every writable field.
  auto set_port = [&](std::uint32_t n, std::uint8_t p, auto&& modify) {
    const std::uint32_t mod = res.nodes[n].is_switch ? p : 0;
    auto cur = get(wire::smp_attr::kPortInfo, mod, path_to(n, p));
    if (!ok(cur)) return false;
    wire::PortInfo pi = payload<wire::PortInfo>(*cur);
    pi.set_port_state(0);
    pi.set_port_physical_state(0);
    modify(pi);
    ++res.smps;
    auto r = client.dr(kSet, wire::smp_attr::kPortInfo, mod, path_to(n, p),
                       std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&pi), sizeof pi));
    return ok(r);
  };
  for (std::uint32_t n = 0; n < res.nodes.size(); ++n) {
    const DiscoveredNode& d = res.nodes[n];
    for (std::uint8_t p = 0; p <= d.num_ports; ++p) {
      if (!d.lids[p]) continue;
      if (!set_port(n, p, [&](wire::PortInfo& pi) {
            pi.lid = wire::be16::from(d.lids[p]);
            pi.master_sm_lid = wire::be16::from(res.sm_lid);
          }))
        return fail("PortInfo Set (LID) failed");
    }
  }

  // ---- min-hop LFTs ----
  std::vector<std::uint32_t> switches;
  for (std::uint32_t n = 0; n < res.nodes.size(); ++n)
    if (res.nodes[n].is_switch) switches.push_back(n);
  std::vector<std::uint8_t> first_hop(res.nodes.size());
  std::vector<bool> seen(res.nodes.size());
  for (std::uint32_t s : switches) {
    std::fill(first_hop.begin(), first_hop.end(), wire::kLftNoPort);
    std::fill(seen.begin(), seen.end(), false);
    std::deque<std::uint32_t> q{s};
    seen[s] = true;
    first_hop[s] = 0;
    while (!q.empty()) {
      const std::uint32_t u = q.front();
      q.pop_front();
      const DiscoveredNode& d = res.nodes[u];
      for (std::uint8_t p = 1; p <= d.num_ports; ++p) {
        const std::uint32_t v = d.peer[p];
        if (v == kNoNode || seen[v]) continue;
        seen[v] = true;
        first_hop[v] = u == s ? p : first_hop[u];
        if (res.nodes[v].is_switch) q.push_back(v);
      }
    }
    std::vector<std::uint8_t> lft((res.lid_max / wire::kLftBlockSize + 1u) * wire::kLftBlockSize, wire::kLftNoPort);
    for (std::uint16_t lid = 1; lid <= res.lid_max; ++lid) {
      const auto [n, p] = lid_owner[lid];
      if (res.nodes[n].is_switch) {
        lft[lid] = first_hop[n];
      } else {
        // A CA port: through the switch it hangs off (or directly if it is ours).
        const std::uint32_t sw = res.nodes[n].peer[p];
        if (sw == s)
          lft[lid] = res.nodes[n].peer_port[p];
        else if (sw != kNoNode && first_hop[sw] != wire::kLftNoPort)
          lft[lid] = first_hop[sw];
      }
    }
    const wire::DrPath& path = res.nodes[s].path;
    auto si = get(wire::smp_attr::kSwitchInfo, 0, path);
    if (!ok(si)) return fail("SwitchInfo Get failed");
    wire::SwitchInfo info = payload<wire::SwitchInfo>(*si);
    info.linear_fdb_top = wire::be16::from(res.lid_max);
    info.set_port_state_change(1);  // clear it: we have seen this switch's ports
    ++res.smps;
    if (!ok(client.dr(kSet, wire::smp_attr::kSwitchInfo, 0, path,
                      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&info), sizeof info))))
      return fail("SwitchInfo Set failed");
    for (std::uint32_t b = 0; b * wire::kLftBlockSize <= res.lid_max; ++b) {
      ++res.smps;
      if (!ok(client.dr(kSet, wire::smp_attr::kLinearFwdTable, b, path,
                        std::span<const std::uint8_t>(lft.data() + b * wire::kLftBlockSize, wire::kLftBlockSize))))
        return fail("LFT Set failed");
    }
  }

  // ---- INIT -> ARMED -> ACTIVE on every linked port ----
  for (std::uint8_t state : {std::uint8_t{3}, std::uint8_t{4}}) {
    for (std::uint32_t n = 0; n < res.nodes.size(); ++n) {
      const DiscoveredNode& d = res.nodes[n];
      for (std::uint8_t p = 1; p <= d.num_ports; ++p) {
        if (d.peer[p] == kNoNode) continue;
        if (!set_port(n, p, [&](wire::PortInfo& pi) { pi.set_port_state(state); }))
          return fail(state == 3 ? "PortInfo Set (ARMED) failed" : "PortInfo Set (ACTIVE) failed");
      }
    }
  }
  res.ok = true;
  return res;
}

}  // namespace madengine::sim
