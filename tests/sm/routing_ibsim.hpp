// Routes read back from an ibsim fabric with infiniband-diags, whichever SM
// programmed them: the wiring and LIDs from ibnetdiscover, every switch's
// LFT from ibroute, as a fabric::Fabric and a RoutingResult the route
// checker takes. Shared by the ibsim routing test and the OpenSM comparison.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "ibsim_harness.hpp"
#include "madengine/fabric/fabric.hpp"
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

}  // namespace madengine::testing
