// Read access to a fabric as the SM discovered and routed it: nodes, ports,
// links, LIDs and (for a published epoch) every switch's LFT, each read as
// a plain value; the SM's own model stays inside the library. A view of a
// published epoch keeps that epoch alive for as long as it exists, so it may
// be read from any thread while the SM publishes newer ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "madengine/export.h"

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

// A port's link as PortInfo describes it, the rates worked out.
struct PortLink {
  std::uint8_t width = 0;          // LinkWidthActive: 1 1x, 16 2x, 2 4x, 4 8x, 8 12x
  std::uint8_t width_enabled = 0;  // LinkWidthEnabled (LinkWidthSupported where it says "as supported")
  std::uint8_t speed = 0;          // LinkSpeedActive: 1 SDR, 2 DDR, 4 QDR
  std::uint8_t speed_ext = 0;      // LinkSpeedExtActive: 1 FDR, 2 EDR, 4 HDR, 8 NDR; 0 none
  std::uint8_t speed_ext2 = 0;     // LinkSpeedExtActive2: 1 XDR; 0 none
  std::uint8_t port_rate = 0;      // IBA rate code of this port (PathRecord codes)
  std::uint8_t link_rate = 0;      // of the link: the lesser of its two ends
  std::uint8_t mtu_cap = 0;        // IBA code
  std::uint8_t vl_cap = 0;         // VLCap code
  std::uint8_t op_vls = 0;         // OperationalVLs code
  std::uint32_t data_mbps = 0;     // this port's data rate, Mb/s (width x lane rate)
};

// Something with a LID: a CA port, or a switch's port 0.
struct EndPort {
  NodeId node = kNoNode;
  std::uint8_t port = 0;
  bool operator==(const EndPort&) const noexcept = default;
};

struct FabricSource;  // the library's own (what a view reads)

class FabricView {
 public:
  FabricView() = default;  // empty: no epoch published yet

  bool empty() const noexcept { return src_ == nullptr; }
  // 0 for the fabric a routing hook is given (not yet published).
  MADENGINE_API std::uint64_t epoch() const noexcept;
  // The highest unicast LID assigned.
  MADENGINE_API std::uint16_t top_lid() const noexcept;

  MADENGINE_API std::size_t node_count() const noexcept;
  // Every node's physical ports, plus port 0 of each switch.
  MADENGINE_API std::size_t port_count() const noexcept;
  // Links between two ports, each counted once.
  MADENGINE_API std::size_t link_count() const noexcept;
  // Node `node` (< node_count()); throws std::out_of_range beyond.
  MADENGINE_API FabricNode node(NodeId node) const;
  // Port `port` of `node` (1..num_ports, and 0 on a switch); throws
  // std::out_of_range for a port the node does not have.
  MADENGINE_API FabricPort port(NodeId node, std::uint8_t port) const;
  // The same port's link and rates; throws as port() does.
  MADENGINE_API PortLink port_link(NodeId node, std::uint8_t port) const;
  // Every end port: switches' port 0 first in node order, then linked CA ports.
  MADENGINE_API std::vector<EndPort> end_ports() const;
  // The base LID of an end port (0: none).
  MADENGINE_API std::uint16_t lid_of(EndPort e) const noexcept;
  // The end port that has `lid` (any LID of its LMC range).
  MADENGINE_API std::optional<EndPort> end_port_by_lid(std::uint16_t lid) const noexcept;
  // The end port whose port GUID is `guid` (a switch's: port 0).
  MADENGINE_API std::optional<EndPort> end_port_by_guid(std::uint64_t guid) const noexcept;
  // Whether switch `node` has an LFT in this view (a routed epoch).
  MADENGINE_API bool has_lft(NodeId node) const noexcept;
  // Switch `node`'s output port for `lid`; kNoRoute if it has none.
  MADENGINE_API std::uint8_t lft_port(NodeId node, std::uint16_t lid) const noexcept;

 private:
  friend struct FabricSource;
  explicit FabricView(std::shared_ptr<const FabricSource> src) : src_(std::move(src)) {}
  std::shared_ptr<const FabricSource> src_;
};

// A vendor's routing fills these (NodeHooks::routing): one LFT per switch,
// every entry kNoRoute until set. Valid only during the hook's call.
class LftTable {
 public:
  struct Tables;  // the library's own (the SM's LFTs of one routing pass)
  explicit LftTable(Tables& t) noexcept : t_(&t) {}
  // The highest LID an LFT holds (entries 0..top_lid()).
  MADENGINE_API std::uint16_t top_lid() const noexcept;
  // Routes `lid` at switch `node` out of `port` (0: the switch itself,
  // 1..num_ports, or kNoRoute). False when `node` is not a switch, `lid`
  // is 0 or above top_lid(), or the switch has no such port.
  MADENGINE_API bool set(NodeId node, std::uint16_t lid, std::uint8_t port) noexcept;
  // The entry as set so far; kNoRoute for what set() would refuse.
  MADENGINE_API std::uint8_t get(NodeId node, std::uint16_t lid) const noexcept;

 private:
  Tables* t_;
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
