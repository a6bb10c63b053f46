// A subset of OpenSM's qos-policy.conf (doc/QoS_management_in_OpenSM.txt,
// "Full QoS Policy File"): port-groups by port GUID (lists and ranges),
// P_Key, partition name and node type; qos-levels (SL, MTU and rate limits,
// packet lifetime, P_Keys); qos-match-rules by source and destination
// group, ServiceID, P_Key and QoS class, first match wins, the DEFAULT level
// otherwise. qos-setup is read and ignored, as OpenSM does. What the subset
// leaves out (port-name, qos-ulps, path-bits) is refused with file:line,
// never half-applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sm/file_issue.hpp"

namespace madengine::sm {

struct QosRange {
  std::uint64_t lo = 0, hi = 0;
  bool contains(std::uint64_t v) const noexcept { return v >= lo && v <= hi; }
};
bool in_ranges(const std::vector<QosRange>& r, std::uint64_t v) noexcept;

namespace qos_node_type {
inline constexpr std::uint8_t kCa = 1, kSwitch = 2, kRouter = 4, kSelf = 8, kAll = 16;
}

struct QosPortGroupDef {
  unsigned line = 0;
  std::string name;
  std::vector<QosRange> port_guids;
  std::vector<QosRange> pkeys;          // ports in partitions with these P_Keys (low 15 bits)
  std::vector<std::string> partitions;  // ports in partitions of these names
  std::uint8_t node_types = 0;          // qos_node_type bits
};

struct QosLevelDef {
  unsigned line = 0;
  std::string name;
  std::optional<std::uint8_t> sl, mtu_limit, rate_limit, packet_life;
  std::vector<QosRange> pkeys;
};

struct QosMatchRuleDef {
  unsigned line = 0;
  std::vector<std::string> source, destination;  // port group names
  std::vector<QosRange> qos_class, service_id, pkey;
  std::string level;                             // qos-level-name
};

struct QosPolicy {
  std::string file;
  std::vector<QosPortGroupDef> groups;
  std::vector<QosLevelDef> levels;
  std::vector<QosMatchRuleDef> rules;  // in file order
  std::size_t default_level = 0;       // index of DEFAULT in levels
};

// The policy in `text`, checked (names resolve, DEFAULT exists), or nullopt
// with the first error (file:line: what) in `error`.
std::optional<QosPolicy> parse_qos_policy(std::string_view text, const std::string& file, FileIssue& error);
std::optional<QosPolicy> load_qos_policy(const std::string& path, FileIssue& error);

}  // namespace madengine::sm
