// LID assignment (see lid_assign.hpp): claims in priority order, then the
// lowest free aligned block for whoever is left.
#include "sm/lids/lid_assign.hpp"

#include <algorithm>
#include <optional>

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
                            const std::vector<std::uint16_t>& current) {
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

  std::vector<std::uint16_t> got(ports.size(), 0);
  LidSpace space;
  auto aligned = [](std::uint16_t base, unsigned count) { return base % count == 0; };
  // 1. The map: what this SM (or OpenSM before it) handed out stays put.
  for (const Want& w : wants) {
    auto it = map.find(w.guid);
    if (it == map.end()) continue;
    const std::uint16_t base = it->second.min_lid;
    if (aligned(base, w.count) && space.free(base, w.count)) {
      space.take(base, w.count);
      got[w.idx] = base;
      ++rep.kept_from_map;
    } else {
      ++rep.conflicts;
    }
  }
  // 2. The LID a port already carries (a subnet taken over from another SM).
  for (const Want& w : wants) {
    if (got[w.idx] != 0 || w.idx >= current.size()) continue;
    const std::uint16_t base = current[w.idx];
    if (base == 0) continue;
    if (aligned(base, w.count) && space.free(base, w.count)) {
      space.take(base, w.count);
      got[w.idx] = base;
      ++rep.kept_current;
    } else {
      ++rep.conflicts;
    }
  }
  // 3. Everyone else: the lowest free aligned block, in GUID order.
  for (const Want& w : wants) {
    if (got[w.idx] != 0) continue;
    if (auto base = space.lowest_free(w.count)) {
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
  return rep;
}

}  // namespace madengine::sm
