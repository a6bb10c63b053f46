// Read access to a fabric as the SM discovered and routed it: nodes, ports,
// links, LIDs and (for a published epoch) every switch's LFT, each read as
// a plain value (the SM's own model stays inside the library). A view of a
// published epoch keeps that epoch alive for as long as it exists, so it may
// be read from any thread while the SM publishes newer ones.
#pragma once

#include <cstddef>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "madengine/export.h"

namespace madengine::fabric {
struct Fabric;  // the SM's model (private)
struct Lft;
}  // namespace madengine::fabric

namespace madengine::node {

// Nodes are numbered 0..node_count()-1 within one view.
using NodeId = std::uint32_t;
inline constexpr NodeId kNoNode = ~NodeId{0};
// An LFT entry that routes nowhere.
inline constexpr std::uint8_t kNoRoute = 0xff;

enum class NodeKind : std::uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };  // NodeInfo:NodeType

struct FabricNode {
  NodeKind kind = NodeKind::kCa;
  std::uint64_t node_guid = 0;
  std::uint64_t system_guid = 0;
  std::string description;   // NodeDescription
  std::uint8_t num_ports = 0;
  std::uint16_t lid = 0;      // a switch's (port 0); CAs' LIDs are their ports'
  std::uint8_t lmc = 0;
  bool is_switch() const noexcept { return kind == NodeKind::kSwitch; }
};

struct FabricPort {
  std::uint64_t guid = 0;
  std::uint16_t lid = 0;         // a CA port's, or a switch's port 0; 0 on switch ports 1..N
  std::uint8_t state = 0;        // IBA PortState (4: ACTIVE)
  NodeId peer = kNoNode;         // the node at the other end of the link
  std::uint8_t peer_port = 0;
  std::uint8_t link_width = 0;   // IBA codes: active width, speed, MTU
  std::uint8_t link_speed = 0;
  std::uint8_t mtu = 0;
  bool linked() const noexcept { return peer != kNoNode; }
};

// Something with a LID: a CA port, or a switch's port 0.
struct EndPort {
  NodeId node = kNoNode;
  std::uint8_t port = 0;
  bool operator==(const EndPort&) const noexcept = default;
};

class FabricView {
 public:
  FabricView() = default;  // empty: no epoch published yet
  // The library's own: `owner` keeps `fabric` and `lfts` alive (null:
  // borrowed for the length of a call, as the routing hook's fabric).
  MADENGINE_API FabricView(std::shared_ptr<const void> owner, const fabric::Fabric& fabric, const fabric::Lft* lfts,
                           std::size_t lft_count, std::uint64_t epoch, std::uint16_t top_lid);

  bool empty() const noexcept { return fabric_ == nullptr; }
  std::uint64_t epoch() const noexcept { return epoch_; }
  std::uint16_t top_lid() const noexcept { return top_lid_; }

  std::size_t node_count() const noexcept { return nodes_; }
  // Every node's physical ports, plus port 0 of each switch.
  std::size_t port_count() const noexcept { return ports_; }
  // Links between two ports, each counted once.
  std::size_t link_count() const noexcept { return links_; }
  // Node `node` (< node_count()); throws std::out_of_range beyond.
  MADENGINE_API FabricNode node(NodeId node) const;
  // Port `port` of `node` (1..num_ports, and 0 on a switch); throws
  // std::out_of_range for a port the node does not have.
  MADENGINE_API FabricPort port(NodeId node, std::uint8_t port) const;
  // Every end port: switches' port 0 first in node order, then linked CA ports.
  MADENGINE_API std::vector<EndPort> end_ports() const;
  MADENGINE_API std::uint16_t lid_of(EndPort e) const noexcept;
  // Whether switch `node` has an LFT in this view (a routed epoch).
  MADENGINE_API bool has_lft(NodeId node) const noexcept;
  // Switch `node`'s output port for `lid`; kNoRoute if it has none.
  MADENGINE_API std::uint8_t lft_port(NodeId node, std::uint16_t lid) const noexcept;

 private:
  friend struct FabricModel;  // node/fabric_model.hpp: the library's C ABI reads the model itself
  std::shared_ptr<const void> owner_;
  const fabric::Fabric* fabric_ = nullptr;
  const fabric::Lft* lfts_ = nullptr;
  std::vector<std::uint32_t> lft_index_;  // NodeId -> index into lfts_ (~0u: none)
  std::uint64_t epoch_ = 0;
  std::uint16_t top_lid_ = 0;
  std::size_t nodes_ = 0, ports_ = 0, links_ = 0;
};

// A vendor's routing fills these (NodeHooks::routing): one LFT per switch,
// every entry kNoRoute until set. Valid only during the hook's call.
class LftTable {
 public:
  // The library's own: the SM's LFTs of one routing pass.
  MADENGINE_API LftTable(std::vector<fabric::Lft>& lfts, const FabricView& fabric);
  // The highest LID an LFT holds (entries 0..top_lid()).
  std::uint16_t top_lid() const noexcept { return top_lid_; }
  // Routes `lid` at switch `node` out of `port` (0: the switch itself,
  // 1..num_ports, or kNoRoute). False when `node` is not a switch, `lid`
  // is 0 or above top_lid(), or the switch has no such port.
  MADENGINE_API bool set(NodeId node, std::uint16_t lid, std::uint8_t port) noexcept;
  // The entry as set so far; kNoRoute for what set() would refuse.
  MADENGINE_API std::uint8_t get(NodeId node, std::uint16_t lid) const noexcept;

 private:
  std::uint8_t* entry(NodeId node, std::uint16_t lid) const noexcept;
  std::vector<fabric::Lft>* lfts_;
  const FabricView* fabric_;
  std::vector<std::uint32_t> index_;  // NodeId -> index into *lfts_ (~0u: not a switch)
  std::uint16_t top_lid_ = 0;
};

// A vendor's routing in place of the SM's engines (NodeHooks::routing):
// each heavy sweep hands it the discovered fabric (LIDs assigned) and the
// LFTs to fill; the SM programs those and the SA serves paths from them.
// It runs where routing runs: on the compute pool, never on a MAD core
// (docs/embedding.md, threading). Returning false (with `error` set) fails
// the routing pass: nothing is programmed and the sweep reports the error.
// Both arguments are valid only during the call.
using RoutingHook = std::function<bool(const FabricView& fabric, LftTable& lfts, std::string& error)>;

}  // namespace madengine::node
