// compute_routes: the engine chain (each engine tried in order until one
// routes), the VL budget of the layered engines, and route tracing.
#include "sm/routing/routing.hpp"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "sm/routing/engine.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

using fabric::NodeId;

namespace {

constexpr RoutingAlgo kAllAlgos[] = {RoutingAlgo::kMinHop, RoutingAlgo::kUpDown, RoutingAlgo::kFatTree,
                                     RoutingAlgo::kDfsssp, RoutingAlgo::kNue,    RoutingAlgo::kDor};
constexpr std::uint8_t kDefaultVls = 8;  // VL0-7 when no port reports its VLCap

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool run_engine(const EngineInput& in, RoutingAlgo algo, RoutingResult& res) {
  switch (algo) {
    case RoutingAlgo::kMinHop:
    case RoutingAlgo::kUpDown:
    case RoutingAlgo::kFatTree: return route_minhop_family(in, algo, res);
    case RoutingAlgo::kDfsssp: return route_dfsssp(in, res);
    case RoutingAlgo::kNue: return route_nue(in, res);
    case RoutingAlgo::kDor: return route_dor(in, res);
  }
  res.error = "unknown engine";
  return false;
}

}  // namespace

const char* to_string(RoutingAlgo a) noexcept {
  switch (a) {
    case RoutingAlgo::kMinHop: return "minhop";
    case RoutingAlgo::kUpDown: return "updn";
    case RoutingAlgo::kFatTree: return "ftree";
    case RoutingAlgo::kDfsssp: return "dfsssp";
    case RoutingAlgo::kNue: return "nue";
    case RoutingAlgo::kDor: return "dor";
  }
  return "?";
}

bool parse_routing_algo(const std::string& s, RoutingAlgo& out) noexcept {
  for (auto a : kAllAlgos)
    if (s == to_string(a)) {
      out = a;
      return true;
    }
  return false;
}

std::string routing_engine_names(std::string_view sep) {
  std::string out;
  for (const RoutingAlgo a : kAllAlgos) {
    if (!out.empty()) out += sep;
    out += to_string(a);
  }
  return out;
}

bool parse_routing_chain(std::string_view s, std::vector<RoutingAlgo>& out, std::string* error) {
  std::vector<RoutingAlgo> chain;
  auto fail = [&](std::string msg) {
    if (error != nullptr) *error = std::move(msg);
    return false;
  };
  while (true) {
    const std::size_t comma = s.find(',');
    const std::string name(trim(s.substr(0, comma)));
    RoutingAlgo a;
    if (name.empty()) return fail("empty engine name in routing chain");
    if (!parse_routing_algo(name, a))
      return fail("unknown routing engine \"" + name + "\" (" + routing_engine_names() + ")");
    if (std::find(chain.begin(), chain.end(), a) != chain.end())
      return fail("routing engine \"" + name + "\" named twice in the chain");
    chain.push_back(a);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  out = std::move(chain);
  return true;
}

std::string to_string(const std::vector<RoutingAlgo>& chain) {
  std::string out;
  for (const RoutingAlgo a : chain) {
    if (!out.empty()) out += ',';
    out += to_string(a);
  }
  return out;
}

RoutingResult route_chain(const fabric::Fabric& fabric, const RoutingOptions& opts, const SwitchGraph& g,
                          const Reuse* reuse, RoutingAlgo reuse_engine) {
  RoutingResult res;
  if (g.size() == 0) {
    res.error = "no switches to route";
    return res;
  }
  const std::vector<RoutingAlgo> chain = opts.chain.empty() ? std::vector<RoutingAlgo>{opts.algo} : opts.chain;
  std::uint8_t vls = g.vls_min != 0 ? g.vls_min : kDefaultVls;
  if (opts.vls_max != 0) vls = std::min(vls, opts.vls_max);
  std::vector<std::string> failed;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    RoutingResult attempt;
    EngineInput in{fabric, g, opts, std::max(1u, opts.threads), vls, chain[i] == reuse_engine ? reuse : nullptr};
    const bool ok = run_engine(in, chain[i], attempt);
    if (ok && attempt.ok()) {
      attempt.engine = chain[i];
      attempt.failed = std::move(failed);
      attempt.vls_available = vls;
      attempt.sl_to_vl.resize(std::max<std::uint8_t>(1, attempt.layers.count()));
      for (std::size_t sl = 0; sl < attempt.sl_to_vl.size(); ++sl) attempt.sl_to_vl[sl] = static_cast<std::uint8_t>(sl);
      attempt.lids_rerouted = 0;
      for (const LidTarget& t : g.targets)
        if (in.reuse == nullptr || !in.reuse->keeps(t.base_lid)) attempt.lids_rerouted += t.lid_count;
      attempt.incremental = in.reuse != nullptr;
      if (in.reuse != nullptr) attempt.kept = in.reuse->keep_lid;
      return attempt;
    }
    failed.push_back(std::string(to_string(chain[i])) + ": " +
                     (attempt.error.empty() ? std::string("failed") : attempt.error));
  }
  for (const std::string& f : failed) {
    if (!res.error.empty()) res.error += "; ";
    res.error += f;
  }
  res.failed = std::move(failed);
  return res;
}

RoutingResult compute_routes(const fabric::Fabric& fabric, const RoutingOptions& opts) {
  const SwitchGraph g = SwitchGraph::build(fabric);
  return route_chain(fabric, opts, g, nullptr, opts.algo);
}

int trace_route(const fabric::Fabric& fabric, const RoutingResult& routes, std::uint16_t src_lid,
                std::uint16_t dst_lid, std::vector<NodeId>* switches) {
  // Which node owns a LID, and the LFT of each switch node.
  std::unordered_map<NodeId, const Lft*> lft_of;
  for (const Lft& l : routes.lfts) lft_of[l.node] = &l;
  NodeId at = fabric::kNoNode;
  bool dst_is_switch_port0 = false;
  NodeId dst_node = fabric::kNoNode;
  for (NodeId n = 0; n < fabric.nodes.size(); ++n) {
    const fabric::Node& node = fabric.nodes[n];
    auto owns = [&](std::uint16_t base, std::uint8_t lmc, std::uint16_t lid) {
      return base != 0 && lid >= base && lid < base + (1u << lmc);
    };
    if (node.is_switch()) {
      if (owns(node.base_lid, 0, src_lid)) at = n;
      if (owns(node.base_lid, 0, dst_lid)) dst_node = n, dst_is_switch_port0 = true;
    } else {
      for (std::uint8_t p = 1; p < node.port_lids.size() && p <= node.num_ports(); ++p) {
        if (owns(node.port_lids[p], node.lmc, src_lid) && node.ports[p].linked()) at = node.ports[p].peer;
        if (owns(node.port_lids[p], node.lmc, dst_lid)) dst_node = n;
      }
    }
  }
  if (at == fabric::kNoNode || dst_node == fabric::kNoNode) return -1;
  if (switches) switches->clear();
  for (std::size_t steps = 0; steps <= fabric.nodes.size(); ++steps) {
    const fabric::Node& node = fabric.nodes[at];
    if (!node.is_switch()) return at == dst_node ? static_cast<int>(steps) - 1 : -1;
    if (switches) switches->push_back(at);
    auto it = lft_of.find(at);
    if (it == lft_of.end() || dst_lid >= it->second->ports.size()) return -1;
    const std::uint8_t port = it->second->ports[dst_lid];
    if (port == kLftNoRoute) return -1;
    if (port == 0) return (dst_is_switch_port0 && at == dst_node) ? static_cast<int>(steps) : -1;
    if (port > node.num_ports() || !node.ports[port].linked()) return -1;
    at = node.ports[port].peer;
  }
  return -1;  // a loop
}

}  // namespace madengine::sm
