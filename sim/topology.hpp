// A fabric's wiring as read from or written to an ibnetdiscover/ibsim topology
// file, or produced by a generator: nodes (type, ports, id, description,
// GUIDs) and links (enabled widths/speeds). One file drives both ibsim and the
// sim, so GUIDs absent from the file are derived the way ibsim derives them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace madengine::sim {

// Values as in NodeInfo.NodeType (IBA 14.2.5.3).
enum class NodeType : std::uint8_t { kCa = 1, kSwitch = 2, kRouter = 3 };

inline constexpr std::uint32_t kNoNode = 0xffffffffu;

// PortInfo enable masks (IBA 14.2.5.6): LinkWidthEnabled 1=1x 2=4x 4=8x 8=12x
// 16=2x; LinkSpeedEnabled 1=SDR 2=DDR 4=QDR; LinkSpeedExtEnabled 1=FDR 2=EDR
// 4=HDR 8=NDR; LinkSpeedExtEnabled2 1=XDR. Defaults are ibsim's (4x, SDR, no
// extended speed).
namespace link_width {
inline constexpr std::uint8_t k1x = 1, k4x = 2, k8x = 4, k12x = 8, k2x = 16;
}
namespace link_speed {
inline constexpr std::uint8_t kSdr = 1, kDdr = 2, kQdr = 4;
}
namespace link_speed_ext {
inline constexpr std::uint8_t kNone = 0, kFdr = 1, kEdr = 2, kHdr = 4, kNdr = 8;
}
namespace link_speed_ext2 {
inline constexpr std::uint8_t kNone = 0, kXdr = 1;
}
inline constexpr std::uint8_t kDefaultWidthEnabled = link_width::k4x;
inline constexpr std::uint8_t kDefaultSpeedEnabled = link_speed::kSdr;
inline constexpr std::uint8_t kDefaultSpeedExtEnabled = link_speed_ext::kNone;

// The active value both ends settle on: the highest enabled on both; 0 if
// they share none (ibsim refuses such a link, so do we).
std::uint8_t active_width(std::uint8_t a_enabled, std::uint8_t b_enabled) noexcept;
std::uint8_t active_speed(std::uint8_t a_enabled, std::uint8_t b_enabled) noexcept;
std::uint8_t active_speed_ext(std::uint8_t a_enabled, std::uint8_t b_enabled) noexcept;
std::uint8_t active_speed_ext2(std::uint8_t a_enabled, std::uint8_t b_enabled) noexcept;

struct TopoPort {
  std::uint32_t peer_node = kNoNode;
  std::uint8_t peer_port = 0;
  std::uint8_t width_enabled = kDefaultWidthEnabled;
  std::uint8_t speed_enabled = kDefaultSpeedEnabled;
  std::uint8_t speed_ext_enabled = kDefaultSpeedExtEnabled;
  std::uint8_t speed_ext2_enabled = link_speed_ext2::kNone;  // "x=" (no ibsim has XDR)
  std::uint16_t lid = 0;  // a LID the file pre-assigns (ibnetdiscover output); 0 = none
  std::uint8_t lmc = 0;
  std::uint64_t guid = 0;  // port GUID (switch ports share the node GUID)

  bool connected() const noexcept { return peer_node != kNoNode; }
};

struct TopoNode {
  NodeType type = NodeType::kCa;
  std::uint8_t num_ports = 0;   // external ports; a switch also has port 0
  bool hosts_sm = false;        // a generator's hint: an SM is meant to run here
  bool enhanced_port0 = false;  // SwitchInfo.EnhancedPort0 ("enhanced port 0")
  std::uint32_t vendor_id = 0;  // 24 bits
  std::uint16_t device_id = 0;
  std::uint64_t node_guid = 0;
  std::uint64_t system_guid = 0;
  std::string id;               // the quoted node id, unique in the file
  std::string description;      // NodeDescription; the id when the file gives none
  std::vector<TopoPort> ports;  // index = port number, size num_ports + 1 (index 0: switch port 0)

  bool is_switch() const noexcept { return type == NodeType::kSwitch; }
  std::uint8_t first_port() const noexcept { return is_switch() ? 0 : 1; }
};

// Allocates node and port GUIDs exactly as ibsim does when a file gives none:
// CAs count from 0x100000, switches from 0x200000 (routers from 0); a switch
// uses one GUID for the node and all its ports, a CA reserves num_ports + 1
// (node GUID, then port p = node GUID + p). "caguid=" / "switchguid=" lines
// move the counter of their type.
class GuidAllocator {
 public:
  std::uint64_t next(NodeType type, std::uint8_t num_ports) noexcept;
  void set_base(NodeType type, std::uint64_t guid) noexcept;
  void set_relative(NodeType type, std::uint64_t offset) noexcept;

 private:
  static constexpr std::size_t index(NodeType t) noexcept { return static_cast<std::size_t>(t); }
  std::uint64_t abs_[4] = {0, 0x100000, 0x200000, 0};
  std::uint64_t cur_[4] = {0, 0x100000, 0x200000, 0};
};

// Thrown on a malformed file or an inconsistent topology (start-up path only).
// what() reads "file:line: what is wrong".
class TopologyError : public std::runtime_error {
 public:
  TopologyError(std::string file, std::size_t line, const std::string& msg);
  const std::string& file() const noexcept { return file_; }
  std::size_t line() const noexcept { return line_; }

 private:
  std::string file_;
  std::size_t line_;
};

class Topology {
 public:
  std::vector<TopoNode> nodes;

  // Adds a node with GUIDs from `guids` (or the given node_guid when non-zero);
  // throws std::invalid_argument on a duplicate id or GUID.
  std::uint32_t add_node(NodeType type, std::uint8_t num_ports, std::string id, std::string description = {},
                         std::uint64_t node_guid = 0);
  // Connects two free ports; throws std::invalid_argument on a bad or busy port
  // or when the two ends share no width or speed.
  void connect(std::uint32_t a, std::uint8_t a_port, std::uint32_t b, std::uint8_t b_port);
  void disconnect(std::uint32_t a, std::uint8_t a_port) noexcept;

  std::uint32_t find(std::string_view id) const noexcept;
  std::uint32_t find_by_guid(std::uint64_t node_guid) const noexcept;

  std::size_t switch_count() const noexcept;
  std::size_t ca_count() const noexcept;
  std::size_t link_count() const noexcept;

  GuidAllocator guids;

 private:
  friend class TopologyParser;
  std::unordered_map<std::string, std::uint32_t> by_id_;
  std::unordered_map<std::uint64_t, std::uint32_t> by_guid_;
};

// Parses ibsim/ibnetdiscover text. `file_name` only labels errors.
Topology parse_topology(std::string_view text, std::string_view file_name = "<input>");
// Reads and parses a file; throws TopologyError if it cannot be read.
Topology load_topology(const std::string& path);

// Writes the topology in the format both ibsim and parse_topology read: per
// node "vendid="/"devid="/"sysimgguid="/"switchguid=|caguid=" lines so ibsim
// reproduces every GUID, the header, then one line per connected port with
// "w=/s=/e=" options where they differ from the defaults.
std::string write_topology(const Topology& topo);
void save_topology(const Topology& topo, const std::string& path);

}  // namespace madengine::sim
