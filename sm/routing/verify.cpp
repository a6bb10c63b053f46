// The route checker (see verify.hpp). Per destination LID the LFTs form (at
// most) a tree towards it; each switch's walk is memoised, each source
// switch's path adds its dependencies on its own layer, and a colouring DFS
// per VL finds cycles.
#include "sm/routing/verify.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

namespace {

using fabric::NodeId;

constexpr std::uint32_t kDeliver = ~0u - 1;  // next "channel" of a switch that delivers the LID
constexpr std::uint32_t kDead = ~0u;         // drops it

// Where a LID leaves the fabric: its switch and whether it is the switch's own port 0.
struct Owner {
  SwIdx sw = kNoSwitch;
  std::uint8_t port = 0;  // exit port at sw (0: the switch itself)
  bool is_switch = false;
};

std::string switch_name(const fabric::Fabric& f, const SwitchGraph& g, SwIdx s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(f.nodes[g.node_of[s]].node_guid));
  return buf;
}

std::string channel_name(const fabric::Fabric& f, const SwitchGraph& g, ChannelId c) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%llx[%u]", static_cast<unsigned long long>(f.nodes[g.node_of[g.channel_from[c]]].node_guid),
                g.link[c].port);
  return buf;
}

// A cycle in one VL's dependency graph, or an empty vector.
std::vector<ChannelId> find_cycle(const std::vector<std::vector<ChannelId>>& next) {
  const std::size_t n = next.size();
  std::vector<std::uint8_t> colour(n, 0);  // 0 new, 1 on the stack, 2 done
  std::vector<std::pair<ChannelId, std::size_t>> stack;
  for (ChannelId start = 0; start < n; ++start) {
    if (colour[start] != 0) continue;
    stack.push_back({start, 0});
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [c, i] = stack.back();
      if (i < next[c].size()) {
        const ChannelId d = next[c][i++];
        if (colour[d] == 1) {
          std::vector<ChannelId> cycle;
          for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
            cycle.push_back(it->first);
            if (it->first == d) break;
          }
          std::reverse(cycle.begin(), cycle.end());
          return cycle;
        }
        if (colour[d] == 0) {
          colour[d] = 1;
          stack.push_back({d, 0});
        }
        continue;
      }
      colour[c] = 2;
      stack.pop_back();
    }
  }
  return {};
}

}  // namespace

RouteCheck check_routes(const fabric::Fabric& f, const RoutingResult& routes, const CheckOptions& opts) {
  RouteCheck out;
  const SwitchGraph g = SwitchGraph::build(f);
  const std::size_t n = g.size();
  if (n == 0 || routes.lfts.empty()) return out;
  // LFT by SwIdx (the result's order may be any).
  std::vector<const Lft*> lft(n, nullptr);
  for (const Lft& l : routes.lfts)
    if (l.node < g.sw_of.size() && g.sw_of[l.node] != kNoSwitch) lft[g.sw_of[l.node]] = &l;
  // Layers are indexed by the result's LFT order.
  std::vector<std::size_t> layer_index(n, 0);
  for (std::size_t i = 0; i < routes.lfts.size(); ++i)
    if (const NodeId node = routes.lfts[i].node; node < g.sw_of.size() && g.sw_of[node] != kNoSwitch)
      layer_index[g.sw_of[node]] = i;
  const bool layered = routes.layers.switches() != 0;

  std::uint16_t top = 0;
  for (const LidTarget& t : g.targets) top = std::max<std::uint16_t>(top, static_cast<std::uint16_t>(t.base_lid + t.lid_count - 1));
  std::vector<Owner> owner(top + 1u);
  for (const LidTarget& t : g.targets)
    for (std::uint8_t i = 0; i < t.lid_count; ++i) owner[t.base_lid + i] = {t.sw, t.exit_port, t.is_switch};
  // Sources per switch: end ports entering there (CA ports, LMC blocks once, and the switch's port 0).
  std::vector<std::uint32_t> ca_sources(n, 0), all_sources(n, 0);
  for (const LidTarget& t : g.targets) {
    if (t.is_switch) {
      if (opts.switch_endpoints) ++all_sources[t.sw];
    } else {
      ++ca_sources[t.sw];
      ++all_sources[t.sw];
    }
  }
  std::vector<std::vector<std::uint32_t>> dist_to;  // minimal: BFS from each switch
  if (opts.minimal) {
    dist_to.resize(n);
    for (SwIdx s = 0; s < n; ++s) dist_to[s] = switch_distances_from(g, {s});
  }

  out.links = static_cast<std::uint32_t>(g.channels());
  std::vector<std::uint64_t> load(g.channels(), 0);
  std::vector<std::unordered_set<std::uint64_t>> deps;  // by VL: (from << 32 | to)
  std::vector<std::uint32_t> next(n);
  std::vector<std::int32_t> hops(n);  // -1 unknown, -2 on the walk, -3 bad
  std::vector<SwIdx> walk;
  for (std::uint32_t dlid = 1; dlid <= top; ++dlid) {
    const Owner o = owner[dlid];
    if (o.sw == kNoSwitch || (o.is_switch && !opts.switch_endpoints)) continue;
    const bool ca_dest = !o.is_switch;
    for (SwIdx s = 0; s < n; ++s) {
      const std::uint8_t p = lft[s] != nullptr && dlid < lft[s]->ports.size() ? lft[s]->ports[dlid] : kLftNoRoute;
      if (s == o.sw && p == o.port) {
        next[s] = kDeliver;
        continue;
      }
      next[s] = kDead;
      if (p == kLftNoRoute || p == 0) continue;
      if (const ChannelId c = g.channel_at(s, p); c != kNoChannel) next[s] = c;
    }
    std::fill(hops.begin(), hops.end(), -1);
    for (SwIdx start = 0; start < n; ++start) {
      walk.clear();
      SwIdx s = start;
      std::int32_t tail;
      while (true) {
        if (hops[s] >= 0 || hops[s] == -3) {
          tail = hops[s];
          break;
        }
        if (hops[s] == -2 || next[s] == kDead) {  // a loop, or a drop
          tail = -3;
          if (hops[s] != -2) hops[s] = -3;
          break;
        }
        if (next[s] == kDeliver) {
          tail = hops[s] = 0;
          break;
        }
        hops[s] = -2;
        walk.push_back(s);
        s = g.link[next[s]].peer;
      }
      while (!walk.empty()) {
        const SwIdx at = walk.back();
        walk.pop_back();
        tail = tail < 0 ? -3 : tail + 1;
        hops[at] = tail;
      }
    }
    for (SwIdx s = 0; s < n; ++s) {
      if (all_sources[s] == 0) continue;
      out.pairs += all_sources[s];
      if (hops[s] < 0) {
        out.unrouted += all_sources[s];
        if (out.first_problem.empty())
          out.first_problem = "LID " + std::to_string(dlid) + " unreachable from switch " + switch_name(f, g, s);
        continue;
      }
      if (opts.minimal && static_cast<std::uint32_t>(hops[s]) != dist_to[s][o.sw]) {
        out.non_minimal += all_sources[s];
        if (out.first_problem.empty())
          out.first_problem = "LID " + std::to_string(dlid) + " routed in " + std::to_string(hops[s]) + " hops, shortest " +
                              std::to_string(dist_to[s][o.sw]);
      }
    }
    // Dependencies and load, walking each source switch's path.
    for (SwIdx x = 0; x < n; ++x) {
      if (all_sources[x] == 0 || hops[x] < 0) continue;
      const std::uint8_t vl = layered ? routes.layers.at(layer_index[x], static_cast<std::uint16_t>(dlid)) : 0;
      if (opts.cycles && deps.size() <= vl) deps.resize(vl + 1u);
      out.vls_used = std::max<std::uint8_t>(out.vls_used, static_cast<std::uint8_t>(vl + 1));
      ChannelId prev = kNoChannel;
      for (SwIdx s = x; next[s] != kDeliver; s = g.link[next[s]].peer) {
        const ChannelId c = next[s];
        if (opts.balance && ca_dest) load[c] += ca_sources[x];
        if (opts.cycles && prev != kNoChannel) deps[vl].insert(std::uint64_t{prev} << 32 | c);
        prev = c;
      }
    }
  }
  if (opts.balance) {
    std::uint64_t sum = 0;
    for (const std::uint64_t l : load) {
      sum += l;
      out.max_routes = std::max(out.max_routes, l);
      out.links_used += l != 0;
    }
    out.mean_routes = g.channels() == 0 ? 0.0 : static_cast<double>(sum) / static_cast<double>(g.channels());
  }
  if (opts.cycles) {
    out.dependencies.resize(deps.size());
    for (std::size_t vl = 0; vl < deps.size(); ++vl) {
      out.dependencies[vl] = deps[vl].size();
      std::vector<std::vector<ChannelId>> adj(g.channels());
      for (const std::uint64_t d : deps[vl]) adj[d >> 32].push_back(static_cast<ChannelId>(d));
      const auto cycle = find_cycle(adj);
      if (cycle.empty() || !out.acyclic) continue;
      out.acyclic = false;
      out.cycle_vl = static_cast<std::uint8_t>(vl);
      out.cycle_length = cycle.size();
      std::string text = "dependency cycle on VL " + std::to_string(vl) + ":";
      for (const ChannelId c : cycle) text += " " + channel_name(f, g, c);
      if (out.first_problem.empty()) out.first_problem = text;
    }
  }
  return out;
}

}  // namespace madengine::sm
