// The SM's view of a subnet: nodes, ports, links and the LIDs assigned to
// them, as discovery builds it and as routing and the SA read it. Plain data,
// indexed by dense node ids so routing can use arrays instead of maps.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"

namespace madengine::fabric {

using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = ~NodeId{0};
inline constexpr std::uint16_t kLidUnicastMax = 0xbfff;  // 0xc000.. is multicast (IBA 4.1.3)

enum class NodeKind : std::uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };

struct Port {
  std::uint64_t guid = 0;      // port GUID (switch ports 1..N share port 0's on the wire)
  NodeId peer = kNoNode;       // node at the other end of the link, if any
  std::uint8_t peer_port = 0;
  std::uint8_t link_width = 0; // IBA codes: active width, speed, MTU
  std::uint8_t link_speed = 0;
  std::uint8_t mtu = 0;
  std::uint8_t vl_cap = 0;
  std::uint8_t state = 0;      // PortState
  wire::PortInfo info{};       // as last read (discovery) or programmed (bring-up)
  bool linked() const noexcept { return peer != kNoNode; }
};

struct Node {
  NodeKind kind = NodeKind::kCa;
  std::uint64_t node_guid = 0;
  std::uint64_t system_guid = 0;
  std::string description;
  // ports[0] is the switch management port; CAs use 1..N (ports[0] unused).
  std::vector<Port> ports;
  std::uint16_t base_lid = 0;  // switch: port 0's LID; CA: see Port LIDs below
  std::uint8_t lmc = 0;
  // CA ports carry their own LIDs; index = port number.
  std::vector<std::uint16_t> port_lids;
  // Raw attributes as discovery read them (the SA serves records from these).
  wire::NodeInfo node_info{};
  wire::NodeDescription node_desc{};
  wire::SwitchInfo switch_info{};  // switches only
  wire::DrPath dr_path{};          // how the SM reaches this node

  bool is_switch() const noexcept { return kind == NodeKind::kSwitch; }
  std::uint8_t num_ports() const noexcept {
    return static_cast<std::uint8_t>(ports.empty() ? 0 : ports.size() - 1);
  }
};

// An end port: something with a LID (a CA port, or a switch's port 0).
struct EndPort {
  NodeId node = kNoNode;
  std::uint8_t port = 0;
  bool operator==(const EndPort&) const noexcept = default;
};

struct Fabric {
  std::vector<Node> nodes;

  NodeId add_node(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<NodeId>(nodes.size() - 1);
  }
  // Connects a.pa <-> b.pb (ports vectors must already be sized).
  void link(NodeId a, std::uint8_t pa, NodeId b, std::uint8_t pb) {
    nodes[a].ports[pa].peer = b;
    nodes[a].ports[pa].peer_port = pb;
    nodes[b].ports[pb].peer = a;
    nodes[b].ports[pb].peer_port = pa;
  }
  // Every end port, switches' port 0 first in node order, then CA ports.
  std::vector<EndPort> end_ports() const {
    std::vector<EndPort> out;
    for (NodeId i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (n.is_switch()) {
        out.push_back({i, 0});
      } else {
        for (std::uint8_t p = 1; p <= n.num_ports(); ++p)
          if (n.ports[p].linked()) out.push_back({i, p});
      }
    }
    return out;
  }
  std::uint16_t lid_of(EndPort e) const noexcept {
    const Node& n = nodes[e.node];
    if (n.is_switch()) return n.base_lid;
    return e.port < n.port_lids.size() ? n.port_lids[e.port] : 0;
  }
  std::size_t switch_count() const noexcept {
    std::size_t c = 0;
    for (const auto& n : nodes) c += n.is_switch();
    return c;
  }
};

}  // namespace madengine::fabric
