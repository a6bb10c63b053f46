// OpenSM's partitions.conf, read unchanged (its man page, "PARTITION
// CONFIGURATION"): `Name=PKey, flags : members ;` statements over any number
// of lines, `#` comments, member lists with ALL, ALL_CAS, ALL_SWITCHES,
// ALL_ROUTERS, SELF and port GUIDs with =full/=limited/=both, `mgid=` lines.
// The parser keeps the statements in file order; plan_partitions()
// (partition_plan.hpp) applies them to a fabric.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "madengine/wire/sa/common.hpp"
#include "sm/file_issue.hpp"

namespace madengine::sm {

enum class Membership : std::uint8_t { kLimited, kFull, kBoth };
enum class MemberKind : std::uint8_t { kGuid, kAll, kAllCas, kAllSwitches, kAllRouters, kSelf };

// A multicast group's parameters (OpenSM's "mgroup flags"), with its defaults.
struct McGroupParams {
  std::uint8_t mtu = 4;          // IBA code: 2048
  std::uint8_t rate = 3;         // IBA code: 10 Gb/s
  std::uint8_t sl = 0;
  std::uint16_t scope_mask = 0;  // bit s: one group at scope s; none: link-local (2)
  std::uint32_t qkey = 0;        // 0: 0x0b1b for IP groups (IPoIB), else 0
  std::uint8_t tclass = 0;
  std::uint32_t flow_label = 0;
  bool operator==(const McGroupParams&) const noexcept = default;
};

inline constexpr std::uint32_t kIpoibQkey = 0x0b1b;

struct PartitionMember {
  MemberKind kind = MemberKind::kGuid;
  std::uint64_t guid = 0;  // kGuid only
  Membership membership = Membership::kLimited;
  unsigned line = 0;
};

// An `mgid=GID[,flags]` line: a group created in the partition.
struct PartitionMgroup {
  wire::Gid mgid{};
  McGroupParams params;  // the partition's, overridden by the line's flags
  unsigned line = 0;
};

// One statement. Several may name one partition (the same P_Key, or the same
// name without one): they are merged in file order.
struct PartitionDef {
  unsigned line = 0;
  std::string name;
  std::uint16_t pkey = 0;  // low 15 bits; 0: the partition of that name, else a generated one
  bool ipoib = false;      // create the IPoIB broadcast group with `params`
  bool indx0 = false;      // this P_Key goes to block 0 index 0 of its members
  McGroupParams params;
  std::vector<PartitionMember> members;  // in file order: a later entry for a port overrides an earlier one
  std::vector<PartitionMgroup> mgroups;
};

struct PartitionConfig {
  std::string file;
  std::vector<PartitionDef> defs;
  // What OpenSM logs as "PARSE WARN" and goes on (an unknown flag, a value it
  // skips): kept so the daemon logs them with file:line.
  std::vector<FileIssue> warnings;
};

// The configuration in `text` (`file` names it in messages), or nullopt with
// the first error (file:line: what) in `error`.
std::optional<PartitionConfig> parse_partition_config(std::string_view text, const std::string& file,
                                                      FileIssue& error);
std::optional<PartitionConfig> load_partition_config(const std::string& path, FileIssue& error);

}  // namespace madengine::sm
