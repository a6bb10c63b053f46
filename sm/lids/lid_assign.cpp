// LID assignment (see lid_assign.hpp): claims in the order the preference
// gives, then the lowest free aligned block for whoever is left.
#include "sm/lids/lid_assign.hpp"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace madengine::sm {

using fabric::EndPort;

std::uint64_t end_port_guid(const fabric::Fabric& fabric, EndPort e) noexcept {
  const fabric::Node& n = fabric.nodes[e.node];
  if (n.is_switch()) return n.ports.empty() || n.ports[0].guid == 0 ? n.node_guid : n.ports[0].guid;
  return e.port < n.ports.size() ? n.ports[e.port].guid : 0;
}

namespace {

class LidSpace {
 public:
  LidSpace() : used_(fabric::kLidUnicastMax + 1, false) { used_[0] = true; }
  bool free(std::uint16_t base, unsigned count) const {
    if (base == 0 || base + count - 1 > fabric::kLidUnicastMax) return false;
    for (unsigned i = 0; i < count; ++i)
      if (used_[base + i]) return false;
    return true;
  }
  void take(std::uint16_t base, unsigned count) {
    for (unsigned i = 0; i < count; ++i) used_[base + i] = true;
  }
  // The highest LID taken (0: none).
  unsigned highest_used() const {
    for (unsigned l = fabric::kLidUnicastMax; l > 0; --l)
      if (used_[l]) return l;
    return 0;
  }
  // Searches from `from` up (first from the last hit, for count 1).
  void start_at(unsigned from) { next_hint_ = std::max(next_hint_, from); }
  void restart() { next_hint_ = 1; }
  std::optional<std::uint16_t> lowest_free(unsigned count) {
    const unsigned first = (std::max(next_hint_, count) + count - 1) / count * count;  // aligned to the block
    for (unsigned base = first; base + count - 1 <= fabric::kLidUnicastMax; base += count)
      if (free(static_cast<std::uint16_t>(base), count)) {
        if (count == 1) next_hint_ = base;
        return static_cast<std::uint16_t>(base);
      }
    return std::nullopt;
  }

 private:
  std::vector<bool> used_;
  unsigned next_hint_ = 1;
};

}  // namespace

LidAssignReport assign_lids(fabric::Fabric& fabric, Guid2Lid& map, std::uint8_t lmc,
                            const std::vector<std::uint16_t>& current, LidPreference prefer) {
  LidAssignReport rep;
  const std::vector<EndPort> ports = fabric.end_ports();
  struct Want {
    std::size_t idx;
    std::uint64_t guid;
    unsigned count;
  };
  std::vector<Want> wants;
  wants.reserve(ports.size());
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const bool sw = fabric.nodes[ports[i].node].is_switch();
    wants.push_back({i, end_port_guid(fabric, ports[i]), sw ? 1u : (1u << lmc)});
  }
  std::sort(wants.begin(), wants.end(), [](const Want& a, const Want& b) { return a.guid < b.guid; });
  std::unordered_set<std::uint64_t> present;
  for (const Want& w : wants) present.insert(w.guid);

  std::vector<std::uint16_t> got(ports.size(), 0);
  std::vector<bool> claimed(ports.size(), false);  // the port had a LID to claim (current or map)
  LidSpace space;
  auto current_of = [&](const Want& w) -> std::uint16_t { return w.idx < current.size() ? current[w.idx] : 0; };
  auto map_of = [&](const Want& w) -> std::uint16_t {
    const auto it = map.find(w.guid);
    return it == map.end() ? 0 : it->second.min_lid;
  };
  // LIDs the map holds for ports this sweep did not find (a mute SMA, a
  // link down): still theirs, as in OpenSM's persistent database, so no
  // other port is handed one while its owner may still carry it.
  auto reserve_absent = [&] {
    for (const auto& [guid, range] : map) {
      if (present.contains(guid) || range.min_lid == 0 || range.max_lid < range.min_lid) continue;
      const unsigned count = range.max_lid - range.min_lid + 1u;
      if (space.free(range.min_lid, count)) space.take(range.min_lid, count);
    }
  };
  auto claim = [&](const Want& w, std::uint16_t base) {
    if (base == 0) return false;
    claimed[w.idx] = true;
    if (base % w.count != 0 || !space.free(base, w.count)) return false;
    space.take(base, w.count);
    got[w.idx] = base;
    return true;
  };
  if (prefer == LidPreference::kCurrent) {
    // 1. Ports that carry a LID the map does not give them: numbered by
    //    another SM since our map was written (an interim master, the other
    //    master of joined subnets). A port that stayed keeps the LID clients
    //    know it by, and that numbering is newer than ours: where a port
    //    still carries our old LID for it as well, that SM meant to move it
    //    (its Set was lost), so this one wins.
    for (const Want& w : wants) {
      const std::uint16_t c = current_of(w);
      if (c != 0 && c != map_of(w) && claim(w, c)) ++rep.kept_current;
    }
    // 2. Ports that carry the LID the map gives them: left alone since.
    for (const Want& w : wants) {
      const std::uint16_t c = current_of(w);
      if (got[w.idx] == 0 && c != 0 && c == map_of(w) && claim(w, c)) ++rep.kept_from_map;
    }
    // 3. The map, for ports that carry no LID (reset, or never numbered) or
    //    lost theirs in a collision: what this SM handed out comes back.
    for (const Want& w : wants)
      if (got[w.idx] == 0 && claim(w, map_of(w))) ++rep.kept_from_map;
    reserve_absent();
  } else {
    // 1. The map: this mastership numbered the subnet, a port that carries
    //    another LID missed our Set (or another SM wrote it).
    for (const Want& w : wants)
      if (claim(w, map_of(w))) ++rep.kept_from_map;
    reserve_absent();
    // 2. The LID a port carries, when the map gave it none (no entry, as
    //    for the part of a subnet joined, or one another port holds).
    for (const Want& w : wants)
      if (got[w.idx] == 0 && claim(w, current_of(w))) ++rep.kept_current;
  }
  // Everyone else: the lowest free aligned block, in GUID order. The first
  // numbering of a mastership knows only the LIDs it found: a hole below
  // the highest may be an absent port's (a link down while we took over),
  // which comes back carrying it, so new LIDs go above them while any are free.
  if (prefer == LidPreference::kCurrent) space.start_at(space.highest_used() + 1);
  for (const Want& w : wants) {
    if (got[w.idx] != 0) continue;
    if (claimed[w.idx]) ++rep.conflicts;
    auto base = space.lowest_free(w.count);
    if (!base && prefer == LidPreference::kCurrent) {
      space.restart();  // the space above is full: the holes, after all
      base = space.lowest_free(w.count);
    }
    if (base) {
      space.take(*base, w.count);
      got[w.idx] = *base;
      ++rep.assigned_new;
    } else {
      ++rep.exhausted;
    }
  }
  for (const Want& w : wants) {
    const EndPort e = ports[w.idx];
    fabric::Node& n = fabric.nodes[e.node];
    if (n.is_switch()) {
      n.base_lid = got[w.idx];
      n.lmc = 0;
    } else {
      if (n.port_lids.size() <= e.port) n.port_lids.resize(e.port + 1u, 0);
      n.port_lids[e.port] = got[w.idx];
      n.lmc = lmc;
    }
    if (got[w.idx] != 0)
      map[w.guid] = {got[w.idx], static_cast<std::uint16_t>(got[w.idx] + w.count - 1)};
  }
  // An absent port whose map LID went to a port that carries it has yielded
  // it for good: left in the map, it would claim the LID back from that
  // port at the next sweep that prefers the map (GUID order decides).
  std::vector<bool> given(fabric::kLidUnicastMax + 1, false);
  for (const Want& w : wants)
    for (unsigned i = 0; got[w.idx] != 0 && i < w.count; ++i) given[got[w.idx] + i] = true;
  std::erase_if(map, [&](const auto& entry) {
    const auto& [guid, range] = entry;
    if (present.contains(guid) || range.min_lid == 0) return false;
    for (unsigned l = range.min_lid; l <= range.max_lid && l <= fabric::kLidUnicastMax; ++l)
      if (given[l]) return true;
    return false;
  });
  return rep;
}

}  // namespace madengine::sm
