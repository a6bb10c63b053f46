// Routes read back from an ibsim fabric with infiniband-diags, whichever SM
// programmed them: the wiring and LIDs from ibnetdiscover, every switch's
// LFT from ibroute, as a fabric::Fabric and a RoutingResult the route
// checker takes; every SL2VL table from smpquery, and the channel
// dependency graph they make with each path's SL. Shared by the ibsim
// routing test and the OpenSM comparison.
#pragma once

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "ibsim_harness.hpp"
#include "fabric/fabric.hpp"
#include "sim/topology.hpp"
#include "sim/topology_fabric.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::testing {

// An ibsim fabric of `topo` (written to a temporary file, removed once
// ibsim has read it); check ok() and error().
inline std::unique_ptr<ibsim::IbsimFabric> start_ibsim(const sim::Topology& topo, const std::string& tag,
                                                       std::chrono::milliseconds start_timeout = std::chrono::minutes(2)) {
  const std::string path =
      std::filesystem::temp_directory_path() / (tag + "-" + std::to_string(::getpid()) + ".topo");
  sim::save_topology(topo, path);
  auto fabric = std::make_unique<ibsim::IbsimFabric>(path, ibsim::IbsimFabric::Options{.start_timeout = start_timeout});
  std::filesystem::remove(path);
  return fabric;
}

struct ReadBack {
  fabric::Fabric fabric;   // node ids: ibnetdiscover's node order
  sm::RoutingResult routes;  // lfts only (no layers)
  std::string error;
};

inline ReadBack read_back_routes(const ibsim::IbsimFabric& f, const std::string& host,
                                 std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  ReadBack out;
  const auto nd = f.run("ibnetdiscover", host, timeout);
  if (nd.exit_code != 0) {
    out.error = "ibnetdiscover: " + nd.err;
    return out;
  }
  sim::Topology topo;
  try {
    topo = sim::parse_topology(nd.out, "ibnetdiscover");
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  out.fabric = sim::to_sm_fabric(topo);
  std::string cmd;
  for (std::uint32_t n = 0; n < topo.nodes.size(); ++n) {
    fabric::Node& node = out.fabric.nodes[n];
    const sim::TopoNode& tn = topo.nodes[n];
    if (node.is_switch()) {
      node.base_lid = tn.ports[0].lid;
      cmd += "echo '=== " + std::to_string(n) + "'; ibroute " + std::to_string(node.base_lid) + "; ";
    } else {
      for (std::uint8_t p = 1; p <= tn.num_ports; ++p) node.port_lids[p] = tn.ports[p].lid;
      node.lmc = tn.ports[tn.num_ports > 0 ? 1 : 0].lmc;
    }
  }
  const auto rt = f.run(cmd, host, timeout);
  if (rt.exit_code != 0) {
    out.error = "ibroute: " + rt.err;
    return out;
  }
  static const std::regex line_re(R"(^0x([0-9a-fA-F]+) (\d+) )");
  std::istringstream in(rt.out);
  std::string line;
  fabric::Lft* lft = nullptr;
  for (const fabric::Node& n : out.fabric.nodes)
    for (const std::uint16_t lid : n.is_switch() ? std::vector<std::uint16_t>{n.base_lid} : n.port_lids)
      out.routes.top_lid = std::max<std::uint16_t>(out.routes.top_lid, static_cast<std::uint16_t>(lid + (1u << n.lmc) - 1));
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      out.routes.lfts.push_back({static_cast<fabric::NodeId>(std::stoul(line.substr(4))), {}});
      lft = &out.routes.lfts.back();
      lft->ports.assign(out.routes.top_lid + 1u, fabric::kLftNoRoute);
      continue;
    }
    std::smatch m;
    if (lft != nullptr && std::regex_search(line, m, line_re)) {
      const unsigned long lid = std::stoul(m[1], nullptr, 16);
      if (lid < lft->ports.size()) lft->ports[lid] = static_cast<std::uint8_t>(std::stoul(m[2]));
    }
  }
  return out;
}

// Every SL2VL table the switches hold, read with smpquery (one table per
// input and output port): by (node id, input port, output port), the VL of
// each SL. Node ids are `rb.fabric`'s.
struct Sl2VlReadBack {
  std::map<std::tuple<fabric::NodeId, std::uint8_t, std::uint8_t>, std::array<std::uint8_t, 16>> tables;
  std::string error;
};

inline Sl2VlReadBack read_back_sl2vl(const ibsim::IbsimFabric& f, const std::string& host, const ReadBack& rb,
                                     std::chrono::milliseconds timeout = std::chrono::minutes(5)) {
  Sl2VlReadBack out;
  std::string cmd;
  for (fabric::NodeId n = 0; n < rb.fabric.nodes.size(); ++n) {
    const fabric::Node& node = rb.fabric.nodes[n];
    if (!node.is_switch()) continue;
    for (std::uint8_t p = 1; p <= node.num_ports(); ++p)
      if (node.ports[p].linked())
        cmd += "echo '=== " + std::to_string(n) + "'; smpquery sl2vl " + std::to_string(node.base_lid) + " " +
               std::to_string(p) + "; ";
  }
  const auto r = f.run(cmd, host, timeout);
  if (r.exit_code != 0) {
    out.error = "smpquery sl2vl: " + r.err;
    return out;
  }
  // "ports: in  2, out  3: | 0| 1| ...|15|"
  static const std::regex row_re(R"(ports: in\s*(\d+), out\s*(\d+):\s*\|(.*)$)");
  std::istringstream in(r.out);
  std::string line;
  fabric::NodeId node = fabric::kNoNode;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      node = static_cast<fabric::NodeId>(std::stoul(line.substr(4)));
      continue;
    }
    std::smatch m;
    if (node == fabric::kNoNode || !std::regex_search(line, m, row_re)) continue;
    std::array<std::uint8_t, 16> vls{};
    std::istringstream cells(m[3].str());
    std::string cell;
    std::size_t i = 0;
    while (i < vls.size() && std::getline(cells, cell, '|')) vls[i++] = static_cast<std::uint8_t>(std::stoul(cell));
    if (i != vls.size()) {
      out.error = "smpquery sl2vl: short row: " + line;
      return out;
    }
    out.tables[{node, static_cast<std::uint8_t>(std::stoul(m[1])), static_cast<std::uint8_t>(std::stoul(m[2]))}] = vls;
  }
  return out;
}

// The channel dependency graph of the routes as the switches hold them: a
// packet from every CA port to every end-port LID, on the SL `sl_of(source
// switch, dlid)` gives it, crosses channels (switch, output port, VL) with
// the VL each switch's SL2VL table gives for its input and output port; each
// step is an edge. Deadlock-free when the graph has no cycle. Returns "" or
// the first problem.
inline std::string check_cdg(const ReadBack& rb, const Sl2VlReadBack& sl2vl,
                             const std::function<std::uint8_t(fabric::NodeId, std::uint16_t)>& sl_of,
                             std::size_t* channels_used = nullptr) {
  const fabric::Fabric& f = rb.fabric;
  std::map<fabric::NodeId, const fabric::Lft*> lft_of;
  for (const auto& l : rb.routes.lfts) lft_of[l.node] = &l;
  using Channel = std::tuple<fabric::NodeId, std::uint8_t, std::uint8_t>;  // switch, out port, VL
  std::map<Channel, std::set<Channel>> edges;
  std::vector<std::uint16_t> dlids;
  for (const auto e : f.end_ports()) dlids.push_back(f.lid_of(e));
  for (fabric::NodeId ca = 0; ca < f.nodes.size(); ++ca) {
    if (f.nodes[ca].is_switch()) continue;
    for (std::uint8_t cp = 1; cp <= f.nodes[ca].num_ports(); ++cp) {
      const fabric::Port& src = f.nodes[ca].ports[cp];
      if (!src.linked() || !f.nodes[src.peer].is_switch()) continue;
      for (const std::uint16_t dlid : dlids) {
        const std::uint8_t sl = sl_of(src.peer, dlid);
        fabric::NodeId sw = src.peer;
        std::uint8_t in_port = src.peer_port;
        std::optional<Channel> prev;
        for (std::size_t hops = 0; hops <= f.nodes.size(); ++hops) {
          const fabric::Lft* lft = lft_of.count(sw) ? lft_of[sw] : nullptr;
          if (lft == nullptr || dlid >= lft->ports.size() || lft->ports[dlid] == fabric::kLftNoRoute)
            return "no route at node " + std::to_string(sw) + " to LID " + std::to_string(dlid);
          const std::uint8_t out = lft->ports[dlid];
          if (out == 0) break;  // the switch's own LID
          const auto t = sl2vl.tables.find({sw, in_port, out});
          if (t == sl2vl.tables.end())
            return "no SL2VL table read at node " + std::to_string(sw) + " in " + std::to_string(in_port) + " out " +
                   std::to_string(out);
          const Channel ch{sw, out, t->second[sl]};
          if (std::get<2>(ch) == 15) return "SL" + std::to_string(sl) + " dropped (VL15) at node " + std::to_string(sw);
          if (prev) edges[*prev].insert(ch);
          edges.try_emplace(ch);
          prev = ch;
          const fabric::Port& op = f.nodes[sw].ports[out];
          if (!op.linked() || !f.nodes[op.peer].is_switch()) break;  // reached a CA
          in_port = op.peer_port;
          sw = op.peer;
        }
      }
    }
  }
  if (channels_used != nullptr) *channels_used = edges.size();
  // Depth-first search for a back edge, iteratively.
  std::map<Channel, int> color;  // 0 new, 1 on the stack, 2 done
  for (const auto& [start, ignored] : edges) {
    if (color[start] != 0) continue;
    std::vector<std::pair<Channel, std::set<Channel>::const_iterator>> stack{{start, edges[start].cbegin()}};
    color[start] = 1;
    while (!stack.empty()) {
      auto& [ch, it] = stack.back();
      if (it == edges[ch].cend()) {
        color[ch] = 2;
        stack.pop_back();
        continue;
      }
      const Channel next = *it++;
      if (color[next] == 1)
        return "a dependency cycle through node " + std::to_string(std::get<0>(next)) + " port " +
               std::to_string(std::get<1>(next)) + " VL " + std::to_string(std::get<2>(next));
      if (color[next] == 0) {
        color[next] = 1;
        stack.push_back({next, edges[next].cbegin()});
      }
    }
  }
  return "";
}

}  // namespace madengine::testing
