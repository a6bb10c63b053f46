// A dense, array-based view of the switches of a Fabric for the routing
// engines: switch indexes, inter-switch links (flat, each a "channel" with
// an id for channel dependency graphs), the end ports (LIDs) behind each
// switch, VL capacity, and up/down ranks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "fabric/fabric.hpp"

namespace madengine::sm {

using SwIdx = std::uint32_t;
inline constexpr SwIdx kNoSwitch = ~SwIdx{0};
using ChannelId = std::uint32_t;  // a directed switch-to-switch link
inline constexpr ChannelId kNoChannel = ~ChannelId{0};

struct SwitchLink {
  std::uint8_t port;       // our port
  std::uint8_t peer_port;  // the port it lands on
  SwIdx peer;              // switch at the other end
  ChannelId reverse;       // the same cable the other way
};

// A LID block that leaves the fabric at switch `sw` through `exit_port`
// (0 for the switch's own management port).
struct LidTarget {
  std::uint16_t base_lid;
  std::uint8_t lid_count;  // 2^LMC
  SwIdx sw;
  std::uint8_t exit_port;
  bool is_switch;          // a switch's port 0 (no CA behind it)
};

struct SwitchGraph {
  std::vector<fabric::NodeId> node_of;      // SwIdx -> NodeId
  std::vector<SwIdx> sw_of;                 // NodeId -> SwIdx (kNoSwitch for CAs)
  std::vector<ChannelId> link_begin;        // CSR: switch s's links are [link_begin[s], link_begin[s+1])
  std::vector<SwitchLink> link;             // by ChannelId
  std::vector<SwIdx> channel_from;          // ChannelId -> the switch it leaves
  std::vector<LidTarget> targets;           // sorted by base LID
  std::vector<std::uint32_t> target_begin;  // CSR over switches: indexes into targets_by_switch
  std::vector<std::uint32_t> targets_by_switch;  // target indexes, by switch, in LID order
  std::vector<std::uint32_t> ca_lids;       // LIDs of CAs behind each switch (route sources for balance)
  std::vector<bool> has_ca;                 // a CA hangs off this switch (a leaf)
  std::vector<std::uint64_t> guid;          // node GUID by SwIdx
  // Orders that do not depend on discovery order (node ids): engines walk
  // these so a re-sweep that numbers nodes differently routes the same.
  std::vector<SwIdx> by_lid;                // switches with LIDs behind them, by their lowest LID
  std::vector<SwIdx> by_guid;               // every switch, by node GUID
  std::uint8_t max_ports = 0;               // largest switch port number
  std::vector<ChannelId> port_channel;      // [s * (max_ports + 1) + port]
  // Data VLs every linked port offers (from VLCap: 1, 2, 4, 8 or 15);
  // 0 when no port reported a VLCap.
  std::uint8_t vls_min = 0;

  std::size_t size() const noexcept { return node_of.size(); }
  std::size_t channels() const noexcept { return link.size(); }
  std::span<const SwitchLink> links(SwIdx s) const noexcept {
    return {link.data() + link_begin[s], link.data() + link_begin[s + 1]};
  }
  std::span<const std::uint32_t> targets_at(SwIdx s) const noexcept {
    return {targets_by_switch.data() + target_begin[s], targets_by_switch.data() + target_begin[s + 1]};
  }
  // The channel leaving `s` by `port`, kNoChannel if that port has no switch behind it.
  ChannelId channel_at(SwIdx s, std::uint8_t port) const noexcept {
    return port <= max_ports ? port_channel[std::size_t{s} * (max_ports + 1u) + port] : kNoChannel;
  }
  static SwitchGraph build(const fabric::Fabric& fabric);
};

// Data VLs for a PortInfo VLCap code (IBA 14.2.5.6: 1 = VL0 ... 5 = VL0-14).
std::uint8_t data_vls_of_cap(std::uint8_t vl_cap) noexcept;

// Up/down ranks: distance from the roots; roots either given or detected as
// the switches farthest from the leaves (the spines of a fat tree).
struct Ranking {
  std::vector<std::uint32_t> rank;  // per SwIdx; roots are 0
  std::vector<SwIdx> roots;
  // Direction of sw -> peer: up when towards a lower (rank, guid).
  std::vector<std::uint64_t> guid;
  bool is_up(SwIdx from, SwIdx to) const noexcept {
    return rank[to] < rank[from] || (rank[to] == rank[from] && guid[to] < guid[from]);
  }
};

Ranking rank_switches(const fabric::Fabric& fabric, const SwitchGraph& g,
                      const std::vector<std::uint64_t>& root_guids);

// BFS hop distances over the switch graph from a set of sources (~0u: unreachable).
std::vector<std::uint32_t> switch_distances_from(const SwitchGraph& g, const std::vector<SwIdx>& sources);

}  // namespace madengine::sm
