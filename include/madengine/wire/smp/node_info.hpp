// NodeInfo (IBA 14.2.5.3): the 40-byte identity of a node that discovery
// reads first at every hop: its type, port count, GUIDs and vendor/device.
// The LocalPortNum field names the port the SMP arrived on.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

enum class NodeType : std::uint8_t {
  kCa = 1,
  kSwitch = 2,
  kRouter = 3,
};

constexpr const char* to_string(NodeType t) noexcept {
  switch (t) {
    case NodeType::kCa: return "CA";
    case NodeType::kSwitch: return "Switch";
    case NodeType::kRouter: return "Router";
  }
  return "unknown";
}

struct NodeInfo {
  std::uint8_t base_version;   // 0
  std::uint8_t class_version;  // 1
  std::uint8_t node_type;      // 2: a NodeType; kept raw so unknown values survive a round trip
  std::uint8_t num_ports;      // 3: physical ports (a switch's port 0 is not counted)
  be64 system_image_guid;      // 4
  be64 node_guid;              // 12
  be64 port_guid;              // 20: GUID of the port the SMP arrived on (of port 0 on a switch)
  be16 partition_cap;          // 28: P_Key table entries (32 per PKeyTable block)
  be16 device_id;              // 30
  be32 revision;               // 32
  std::uint8_t local_port_num;           // 36
  std::array<std::uint8_t, 3> vendor_id_;  // 37: 24-bit VendorID, use vendor_id()

  // 24-bit VendorID (IEEE OUI).
  std::uint32_t vendor_id() const noexcept { return VendorId::get(smp_detail::raw(this)); }
  void set_vendor_id(std::uint32_t v) noexcept { VendorId::set(smp_detail::raw(this), v); }

  NodeType type() const noexcept { return static_cast<NodeType>(node_type); }
  void set_type(NodeType t) noexcept { node_type = static_cast<std::uint8_t>(t); }
  bool is_switch() const noexcept { return node_type == static_cast<std::uint8_t>(NodeType::kSwitch); }

  using VendorId = BitField<37, 0, 24>;
};
static_assert(sizeof(NodeInfo) == 40 && alignof(NodeInfo) == 1);
static_assert(offsetof(NodeInfo, system_image_guid) == 4);
static_assert(offsetof(NodeInfo, node_guid) == 12);
static_assert(offsetof(NodeInfo, port_guid) == 20);
static_assert(offsetof(NodeInfo, partition_cap) == 28);
static_assert(offsetof(NodeInfo, revision) == 32);
static_assert(offsetof(NodeInfo, local_port_num) == 36);
static_assert(NodeInfo::VendorId::kEnd == sizeof(NodeInfo));

}  // namespace madengine::wire
