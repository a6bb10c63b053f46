// The QoS policy as the SA applies it to PathRecords (IBA 15.2.5.16 with
// OpenSM's qos-policy semantics): port groups resolved to port GUIDs by the
// SM for this epoch, the levels, and the match rules in order. A query
// matches a rule when it meets every criterion the rule has (a ServiceID,
// P_Key or QoS class criterion needs that component in the query); no rule:
// the DEFAULT level.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace madengine::sa {

struct ValueRange {
  std::uint64_t lo = 0, hi = 0;
};

inline bool in_ranges(const std::vector<ValueRange>& r, std::uint64_t v) noexcept {
  return std::any_of(r.begin(), r.end(), [&](const ValueRange& x) { return v >= x.lo && v <= x.hi; });
}

struct QosLevelView {
  std::string name;
  bool sl_set = false, mtu_set = false, rate_set = false, life_set = false;
  std::uint8_t sl = 0, mtu_limit = 0, rate_limit = 0, packet_life = 0;
  std::vector<ValueRange> pkeys;  // low 15 bits
};

struct QosRuleView {
  std::vector<std::uint32_t> source, destination;  // group indexes
  std::vector<ValueRange> qos_class, service_id, pkey;
  std::uint32_t level = 0;
};

struct QosPolicyView {
  std::vector<std::vector<std::uint64_t>> groups;  // sorted port GUIDs
  std::vector<QosLevelView> levels;
  std::vector<QosRuleView> rules;
  std::uint32_t default_level = 0;

  bool in_group(std::uint32_t g, std::uint64_t guid) const noexcept {
    return g < groups.size() && std::binary_search(groups[g].begin(), groups[g].end(), guid);
  }
  bool in_any(const std::vector<std::uint32_t>& gs, std::uint64_t guid) const noexcept {
    return std::any_of(gs.begin(), gs.end(), [&](std::uint32_t g) { return in_group(g, guid); });
  }
  // The level of a PathRecord query; `has_*` say which components it names.
  const QosLevelView* level_for(std::uint64_t src_guid, std::uint64_t dst_guid, bool has_sid, std::uint64_t sid,
                                bool has_class, std::uint16_t qos_class, bool has_pkey, std::uint16_t pkey) const noexcept {
    for (const QosRuleView& r : rules) {
      if (!r.source.empty() && !in_any(r.source, src_guid)) continue;
      if (!r.destination.empty() && !in_any(r.destination, dst_guid)) continue;
      if (!r.qos_class.empty() && (!has_class || !in_ranges(r.qos_class, qos_class))) continue;
      if (!r.service_id.empty() && (!has_sid || !in_ranges(r.service_id, sid))) continue;
      if (!r.pkey.empty() && (!has_pkey || !in_ranges(r.pkey, pkey & 0x7fffu))) continue;
      return r.level < levels.size() ? &levels[r.level] : nullptr;
    }
    return default_level < levels.size() ? &levels[default_level] : nullptr;
  }
};

}  // namespace madengine::sa
