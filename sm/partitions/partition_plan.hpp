// Partitions applied to a discovered fabric (what OpenSM's partition
// manager decides): which end ports are full or limited members of which
// partition, the P_Keys each end port's table must hold (in the order
// OpenSM places them), each partition's SL, and the multicast groups the
// partitions create (IPoIB broadcast groups, mgid lines). Pure: a function
// of the file, the fabric and three options; the SM recomputes it every
// heavy sweep and after a reload.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.hpp"
#include "madengine/wire/sa/mc_member_record.hpp"
#include "sm/partitions/partition_config.hpp"

namespace madengine::sm {

inline constexpr std::uint16_t kDefaultPKeyBase = 0x7fff;

// How switches toward CAs filter P_Keys (OpenSM's part_enforce).
enum class PartEnforce : std::uint8_t { kBoth, kIn, kOut, kOff };
bool parse_part_enforce(std::string_view text, PartEnforce& out) noexcept;

struct PartitionOptions {
  std::uint64_t sm_port_guid = 0;  // SELF, and the default partition's full member
  bool allow_both_pkeys = false;   // a port may be full and limited member of one partition
  bool qos = false;                // partition SLs apply only with QoS (else 0, as OpenSM)
  std::uint8_t packet_life = 18;   // the groups' PacketLifeTime (the subnet timeout)
};

inline constexpr std::uint8_t kMemberLimited = 1;
inline constexpr std::uint8_t kMemberFull = 2;

struct Partition {
  std::string name;
  std::uint16_t pkey = 0;  // low 15 bits
  std::uint8_t sl = 0;
  bool ipoib = false;
  std::unordered_map<std::uint64_t, std::uint8_t> members;  // port GUID -> kMemberLimited | kMemberFull
};

struct PartitionPlan {
  // In OpenSM's order (ascending P_Key as a little-endian host reads the
  // wire's big-endian value: what decides table order and which common
  // partition a PathRecord gets).
  std::vector<Partition> partitions;
  // Per end port GUID: the P_Keys it must hold, block 0 index 0 first (the
  // default partition, or an indx0 partition), then in placement order.
  std::unordered_map<std::uint64_t, std::vector<std::uint16_t>> port_pkeys;
  // Groups to exist with no member (IBA 15.2.5.17 parameters; MLID 0: the SA picks).
  std::vector<wire::McMemberRecord> groups;
  std::vector<FileIssue> notes;  // ports named but not in the subnet, groups refused

  const Partition* find(std::uint16_t pkey) const noexcept;
  // The P_Keys of `port_guid` (a port the plan does not know: the default partition, limited).
  std::span<const std::uint16_t> pkeys_of(std::uint64_t port_guid) const noexcept;
};

// `cfg` null: no partitions file (OpenSM: "Default=0x7fff,ipoib : ALL=full;").
PartitionPlan plan_partitions(const fabric::Fabric& f, const PartitionConfig* cfg, const PartitionOptions& opts);

// OpenSM's order of partitions: the P_Key's bytes swapped (it keys a map by
// the network-order value on a little-endian host).
constexpr std::uint16_t pkey_order_key(std::uint16_t pkey) noexcept {
  const std::uint16_t base = pkey & 0x7fff;
  return static_cast<std::uint16_t>(base >> 8 | (base & 0xff) << 8);
}

// ---- P_Key tables -----------------------------------------------------------

// An end port's table of `cap` entries holding `wanted` (its first entry at
// index 0), keeping every P_Key already in `current` where it is (clients
// address P_Keys by index: IPoIB child interfaces, QPs), placing new ones
// after the last used index and then in free slots. P_Keys that do not fit
// are counted in `dropped`. `allow_both`: full and limited entries of one
// partition are different P_Keys.
std::vector<std::uint16_t> layout_pkey_table(std::span<const std::uint16_t> wanted, std::span<const std::uint16_t> current,
                                             std::size_t cap, bool allow_both, std::size_t& dropped);

// A switch port's table toward the CA port whose table is `ca_table`: its
// valid entries in order, packed from index 0, a limited entry left out when
// the full one of its partition is there too. `fits` false when they exceed
// `cap` (the switch cannot enforce then: OpenSM turns enforcement off).
std::vector<std::uint16_t> peer_pkey_table(std::span<const std::uint16_t> ca_table, std::size_t cap, bool& fits);

}  // namespace madengine::sm
