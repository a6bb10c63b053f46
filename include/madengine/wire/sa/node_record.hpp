// NodeRecord (IBA 15.2.5.2, 108 bytes): a node's NodeInfo and
// NodeDescription as seen through one of its ports' LIDs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"

namespace madengine::wire {

namespace node_record_cm {
inline constexpr std::uint64_t kLid = 1ull << 0;
inline constexpr std::uint64_t kReserved = 1ull << 1;
inline constexpr std::uint64_t kBaseVersion = 1ull << 2;
inline constexpr std::uint64_t kClassVersion = 1ull << 3;
inline constexpr std::uint64_t kNodeType = 1ull << 4;
inline constexpr std::uint64_t kNumPorts = 1ull << 5;
inline constexpr std::uint64_t kSystemImageGuid = 1ull << 6;
inline constexpr std::uint64_t kNodeGuid = 1ull << 7;
inline constexpr std::uint64_t kPortGuid = 1ull << 8;
inline constexpr std::uint64_t kPartitionCap = 1ull << 9;
inline constexpr std::uint64_t kDeviceId = 1ull << 10;
inline constexpr std::uint64_t kRevision = 1ull << 11;
inline constexpr std::uint64_t kLocalPortNum = 1ull << 12;
inline constexpr std::uint64_t kVendorId = 1ull << 13;
inline constexpr std::uint64_t kNodeDescription = 1ull << 14;
}  // namespace node_record_cm

struct NodeRecord {
  be16 lid;
  be16 reserved;
  NodeInfo node_info;
  NodeDescription node_description;
};
static_assert(sizeof(NodeRecord) == 108 && alignof(NodeRecord) == 1);
static_assert(offsetof(NodeRecord, node_info) == 4);
static_assert(offsetof(NodeRecord, node_description) == 44);

}  // namespace madengine::wire
