// Load patterns: which emulated host asks the SA what, in which order. A
// Workload is built at start-up from the host set and hands out one Query at
// a time without allocating; finite patterns (job start, restart storm,
// multicast join/leave) end, the others run until the storm's limit.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "madengine/wire/endian.hpp"

namespace madstorm {

// An end port the storm speaks for (its LID and GUIDs come from the fabric).
struct Host {
  std::uint16_t lid = 0;
  std::uint64_t port_guid = 0;
  std::uint64_t node_guid = 0;
};

enum class Pattern : std::uint8_t {
  kJobStart,     // every rank resolves every peer, starting after itself (MPI launchers)
  kRestart,      // every host re-resolves every peer in its own random order
  kRandomPairs,  // random source, random destination
  kHotSpot,      // random sources, destinations among the first hot_dests hosts
  kGetTable,     // PathRecord GetTable: every path from one source (RMPP answer), each source once
  kNodeRecord,   // NodeRecord Get by LID
  kMcastJoin,    // MCMemberRecord join (Set) by every host, then leave (Delete)
  kMix,          // record types drawn by weight
  kReregJoin,    // every host joins its groups and subscribes: what clients hold before a reregistration
  kRereg,        // every host leaves each of its groups, joins it again and subscribes again (ClientReregister)
};
inline constexpr std::size_t kPatternCount = 10;
const char* to_string(Pattern p) noexcept;
std::optional<Pattern> pattern_from_string(std::string_view s) noexcept;

enum class QueryKind : std::uint8_t { kPathRecord, kPathTable, kNodeRecord, kMcJoin, kMcLeave, kInformSub };
inline constexpr std::size_t kQueryKindCount = 6;

// The groups an IPoIB host is a member of (RFC 4391), in the order it joins
// them: 0 the broadcast group, 1 IPv4 all-hosts, 2 IPv6 all-nodes, 3 the
// host's IPv6 solicited-node group. The broadcast group is the SA's; the
// others are created by their first joiner.
inline constexpr std::uint8_t kReregGroups = 4;
const char* to_string(QueryKind k) noexcept;

struct Query {
  QueryKind kind = QueryKind::kPathRecord;
  std::uint32_t src = 0;  // index into the host set (requester, SGID/SLID)
  std::uint32_t dst = 0;  // index into the host set (DGID/DLID, NodeRecord LID)
  std::uint8_t group = 0; // multicast: which of the host's groups (kReregGroups); 0 the broadcast group
  bool barrier = false;   // issue only when nothing is in flight (leaves after joins)
};

// Weights of the record types in Pattern::kMix.
struct MixWeights {
  std::uint32_t path_record = 8;
  std::uint32_t path_table = 0;
  std::uint32_t node_record = 1;
  std::uint32_t mc_join = 0;  // each join is followed later by its leave
};
// "pr:8,table:1,nr:1,mc:1" -> weights; nullopt (and `error`) if malformed.
std::optional<MixWeights> parse_mix(std::string_view s, std::string& error);

struct WorkloadConfig {
  Pattern pattern = Pattern::kJobStart;
  std::uint32_t job_size = 0;     // job start: first job_size hosts form the job (0 = all)
  std::uint32_t hot_dests = 4;    // hot spot: how many destinations
  MixWeights mix{};
  bool repeat = false;            // finite patterns start over when done (for --duration/--count)
  std::uint32_t shard_index = 0;  // this process's sources: index % shard_count == shard_index
  std::uint32_t shard_count = 1;
  std::uint64_t seed = 1;
};

class Workload {
 public:
  // Throws std::invalid_argument on an unusable configuration (fewer than two
  // hosts, shard out of range, a job or hot set larger than the hosts...).
  Workload(const WorkloadConfig& cfg, std::span<const Host> hosts);

  // The next query; false when a finite pattern is exhausted.
  bool next(Query& q) noexcept;
  // Queries a finite pattern issues in all (this shard); 0 if unbounded or repeating.
  std::uint64_t total() const noexcept { return cfg_.repeat ? 0 : total_; }
  std::uint64_t produced() const noexcept { return produced_; }
  std::size_t sources() const noexcept { return sources_.size(); }
  const WorkloadConfig& config() const noexcept { return cfg_; }

  // Job start, restart and GetTable give each source its own sequence of
  // queries, the same set next() hands out in rounds. A storm can then issue
  // them source by source, so a host whose window is full does not hold the
  // others up (each host of a real job start asks on its own).
  bool per_source() const noexcept;
  std::uint64_t per_source_total() const noexcept { return per_source_total_; }  // queries of each source
  // Source number t (0 <= t < sources()): its host, its place in the first
  // round (restart: the shuffled turn order), and its m-th query
  // (m < per_source_total()).
  std::uint32_t source_host(std::uint32_t t) const noexcept { return sources_[t]; }
  std::uint32_t turn(std::uint32_t i) const noexcept { return turn_order_.empty() ? i : turn_order_[i]; }
  void query_of(std::uint32_t t, std::uint64_t m, Query& q) const noexcept;

 private:
  void rereg_query(std::uint64_t m, Query& q) const noexcept;
  std::uint32_t random_below(std::uint32_t n) noexcept;
  std::uint32_t random_source() noexcept { return sources_[random_below(static_cast<std::uint32_t>(sources_.size()))]; }
  std::uint32_t random_peer(std::uint32_t src, std::uint32_t n) noexcept;

  WorkloadConfig cfg_;
  std::uint32_t hosts_ = 0;
  std::vector<std::uint32_t> sources_;  // this shard's requesters (host indices)
  std::uint64_t total_ = 0;
  std::uint64_t per_source_total_ = 0;
  std::uint64_t produced_ = 0;
  std::mt19937_64 rng_;
  // Restart storm: per-source peer walk (offset, stride coprime to hosts-1)
  // and the order sources take turns in.
  std::vector<std::uint32_t> offset_;
  std::vector<std::uint32_t> stride_;
  std::vector<std::uint32_t> turn_order_;
  // Mix: cumulative weights; a join's host, left at the next multicast draw.
  std::array<std::uint32_t, 4> mix_cum_{};
  std::optional<std::uint32_t> pending_leave_;
};

}  // namespace madstorm
