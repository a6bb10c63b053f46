// The Topology container, ibsim's GUID derivation and the topology file
// writer (ibsim's net format: ibnetdiscover output plus a few extensions);
// the reader is topology_parser.cpp.
#include "sim/topology.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace madengine::sim {

namespace {

// Highest set bit among `order` (best first) that is set in `mask`.
template <std::size_t N>
std::uint8_t pick_best(std::uint8_t mask, const std::uint8_t (&order)[N]) noexcept {
  for (std::uint8_t bit : order)
    if (mask & bit) return bit;
  return 0;
}

std::string hex64(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

const char* type_keyword(NodeType t) noexcept {
  switch (t) {
    case NodeType::kSwitch:
      return "Switch";
    case NodeType::kCa:
      return "Hca";
    case NodeType::kRouter:
      return "Rt";
  }
  return "?";
}

const char* guid_keyword(NodeType t) noexcept {
  switch (t) {
    case NodeType::kSwitch:
      return "switchguid";
    case NodeType::kCa:
      return "caguid";
    case NodeType::kRouter:
      return "rtguid";
  }
  return "?";
}

}  // namespace

std::uint8_t active_width(std::uint8_t a, std::uint8_t b) noexcept {
  static constexpr std::uint8_t kOrder[] = {link_width::k12x, link_width::k8x, link_width::k4x, link_width::k2x,
                                            link_width::k1x};
  return pick_best(static_cast<std::uint8_t>(a & b), kOrder);
}
std::uint8_t active_speed(std::uint8_t a, std::uint8_t b) noexcept {
  static constexpr std::uint8_t kOrder[] = {link_speed::kQdr, link_speed::kDdr, link_speed::kSdr};
  return pick_best(static_cast<std::uint8_t>(a & b), kOrder);
}
std::uint8_t active_speed_ext2(std::uint8_t a, std::uint8_t b) noexcept {
  return static_cast<std::uint8_t>(a & b & link_speed_ext2::kXdr);
}
std::uint8_t active_speed_ext(std::uint8_t a, std::uint8_t b) noexcept {
  static constexpr std::uint8_t kOrder[] = {link_speed_ext::kNdr, link_speed_ext::kHdr, link_speed_ext::kEdr,
                                            link_speed_ext::kFdr};
  return pick_best(static_cast<std::uint8_t>(a & b), kOrder);
}

// ---- GuidAllocator --------------------------------------------------------

std::uint64_t GuidAllocator::next(NodeType type, std::uint8_t num_ports) noexcept {
  const std::size_t i = index(type);
  const std::uint64_t g = cur_[i];
  cur_[i] += type == NodeType::kSwitch ? 1 : std::uint64_t{num_ports} + 1;
  return g;
}
void GuidAllocator::set_base(NodeType type, std::uint64_t guid) noexcept {
  abs_[index(type)] = guid;
  cur_[index(type)] = guid;
}
void GuidAllocator::set_relative(NodeType type, std::uint64_t offset) noexcept {
  cur_[index(type)] = abs_[index(type)] + offset;
}

// ---- TopologyError --------------------------------------------------------

TopologyError::TopologyError(std::string file, std::size_t line, const std::string& msg)
    : std::runtime_error(file + ":" + std::to_string(line) + ": " + msg), file_(std::move(file)), line_(line) {}

// ---- Topology -------------------------------------------------------------

std::uint32_t Topology::add_node(NodeType type, std::uint8_t num_ports, std::string id, std::string description,
                                 std::uint64_t node_guid) {
  if (num_ports == 0) throw std::invalid_argument("node \"" + id + "\" has no ports");
  if (id.empty()) throw std::invalid_argument("empty node id");
  if (by_id_.count(id)) throw std::invalid_argument("duplicate node id \"" + id + "\"");
  if (node_guid == 0) node_guid = guids.next(type, num_ports);
  if (by_guid_.count(node_guid))
    throw std::invalid_argument("node \"" + id + "\": node GUID " + hex64(node_guid) + " already used by \"" +
                                nodes[by_guid_[node_guid]].id + "\"");
  TopoNode n;
  n.type = type;
  n.num_ports = num_ports;
  n.node_guid = node_guid;
  n.system_guid = node_guid;
  n.description = description.empty() ? id : std::move(description);
  n.id = std::move(id);
  n.ports.resize(std::size_t{num_ports} + 1);
  for (std::size_t p = 0; p < n.ports.size(); ++p)
    n.ports[p].guid = type == NodeType::kSwitch ? node_guid : node_guid + p;
  const auto idx = static_cast<std::uint32_t>(nodes.size());
  by_id_.emplace(n.id, idx);
  by_guid_.emplace(node_guid, idx);
  nodes.push_back(std::move(n));
  return idx;
}

void Topology::connect(std::uint32_t a, std::uint8_t ap, std::uint32_t b, std::uint8_t bp) {
  auto check = [&](std::uint32_t n, std::uint8_t p) {
    if (n >= nodes.size()) throw std::invalid_argument("no node #" + std::to_string(n));
    if (p == 0 || p > nodes[n].num_ports)
      throw std::invalid_argument("node \"" + nodes[n].id + "\" has no port " + std::to_string(p));
    if (nodes[n].ports[p].connected())
      throw std::invalid_argument("node \"" + nodes[n].id + "\" port " + std::to_string(p) + " is already linked");
  };
  check(a, ap);
  check(b, bp);
  if (a == b && ap == bp) throw std::invalid_argument("port linked to itself");
  TopoPort& x = nodes[a].ports[ap];
  TopoPort& y = nodes[b].ports[bp];
  if (!active_width(x.width_enabled, y.width_enabled) || !active_speed(x.speed_enabled, y.speed_enabled))
    throw std::invalid_argument("\"" + nodes[a].id + "\"[" + std::to_string(ap) + "] and \"" + nodes[b].id + "\"[" +
                                std::to_string(bp) + "] share no enabled link width or speed");
  x.peer_node = b;
  x.peer_port = bp;
  y.peer_node = a;
  y.peer_port = ap;
}

void Topology::disconnect(std::uint32_t a, std::uint8_t ap) noexcept {
  if (a >= nodes.size() || ap > nodes[a].num_ports) return;
  TopoPort& x = nodes[a].ports[ap];
  if (!x.connected()) return;
  TopoPort& y = nodes[x.peer_node].ports[x.peer_port];
  y.peer_node = kNoNode;
  y.peer_port = 0;
  x.peer_node = kNoNode;
  x.peer_port = 0;
}

std::uint32_t Topology::find(std::string_view id) const noexcept {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? kNoNode : it->second;
}
std::uint32_t Topology::find_by_guid(std::uint64_t g) const noexcept {
  auto it = by_guid_.find(g);
  return it == by_guid_.end() ? kNoNode : it->second;
}
std::size_t Topology::switch_count() const noexcept {
  std::size_t n = 0;
  for (const auto& x : nodes) n += x.is_switch();
  return n;
}
std::size_t Topology::ca_count() const noexcept { return nodes.size() - switch_count(); }
std::size_t Topology::link_count() const noexcept {
  std::size_t n = 0;
  for (const auto& x : nodes)
    for (std::size_t p = 1; p < x.ports.size(); ++p) n += x.ports[p].connected();
  return n / 2;
}

// ---- Writer ---------------------------------------------------------------

std::string write_topology(const Topology& topo) {
  std::string out;
  out.reserve(topo.nodes.size() * 96);
  out += "# Topology written by madengine's sim (ibsim/ibnetdiscover format)\n";
  GuidAllocator guids;  // mirrors ibsim's counters so base lines appear only where needed
  std::uint16_t devid = 0;
  char buf[256];
  for (const TopoNode& n : topo.nodes) {
    out += '\n';
    if (n.vendor_id) {
      std::snprintf(buf, sizeof buf, "vendid=0x%x\n", n.vendor_id);
      out += buf;
    }
    if (n.device_id != devid) {
      std::snprintf(buf, sizeof buf, "devid=0x%x\n", n.device_id);
      out += buf;
      devid = n.device_id;
    }
    if (n.system_guid != n.node_guid) out += "sysimgguid=" + hex64(n.system_guid) + "\n";
    GuidAllocator probe = guids;
    if (probe.next(n.type, n.num_ports) != n.node_guid) {
      out += std::string(guid_keyword(n.type)) + "=" + hex64(n.node_guid) + "\n";
      guids.set_base(n.type, n.node_guid);
    }
    guids.next(n.type, n.num_ports);
    std::snprintf(buf, sizeof buf, "%s\t%u \"", type_keyword(n.type), n.num_ports);
    out += buf;
    out += n.id;
    out += '"';
    const bool has_tail = n.enhanced_port0 || (n.is_switch() && n.ports[0].lid);
    if (n.description != n.id || has_tail) {
      // A quote would end the quoted description early: ibsim has no escape for it.
      std::string desc = n.description;
      std::replace(desc.begin(), desc.end(), '"', '\'');
      out += "\t\t# \"" + desc + "\"";
      if (n.enhanced_port0) out += " enhanced port 0";
      if (n.is_switch() && n.ports[0].lid) {
        std::snprintf(buf, sizeof buf, " lid %u lmc %u", n.ports[0].lid, n.ports[0].lmc);
        out += buf;
      }
    }
    out += '\n';
    for (std::size_t p = 1; p < n.ports.size(); ++p) {
      const TopoPort& tp = n.ports[p];
      if (!tp.connected()) continue;
      std::snprintf(buf, sizeof buf, "[%zu]", p);
      out += buf;
      if (!n.is_switch() && tp.guid != n.node_guid + p) {
        std::snprintf(buf, sizeof buf, "(%" PRIx64 ")", tp.guid);
        out += buf;
      }
      out += "\t\"" + topo.nodes[tp.peer_node].id + "\"";
      std::snprintf(buf, sizeof buf, "[%u]", tp.peer_port);
      out += buf;
      if (tp.width_enabled != kDefaultWidthEnabled) {
        std::snprintf(buf, sizeof buf, "\tw=%u", tp.width_enabled);
        out += buf;
      }
      if (tp.speed_enabled != kDefaultSpeedEnabled) {
        std::snprintf(buf, sizeof buf, "\ts=%u", tp.speed_enabled);
        out += buf;
      }
      if (tp.speed_ext_enabled != kDefaultSpeedExtEnabled) {
        std::snprintf(buf, sizeof buf, "\te=%u", tp.speed_ext_enabled);
        out += buf;
      }
      if (tp.speed_ext2_enabled != link_speed_ext2::kNone) {
        std::snprintf(buf, sizeof buf, "\tx=%u", tp.speed_ext2_enabled);
        out += buf;
      }
      out += '\n';
    }
  }
  return out;
}

void save_topology(const Topology& topo, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw TopologyError(path, 0, "cannot create the file");
  f << write_topology(topo);
  if (!f) throw TopologyError(path, 0, "write failed");
}

}  // namespace madengine::sim
