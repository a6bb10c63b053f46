// Building and reading the compact path-record database (see path_db.hpp).
// For one destination LID the LFTs form a tree towards it, so every switch's
// entry is its next hop's entry plus one link: O(switches) per LID. The LIDs
// behind one destination switch are walked together; per source switch the
// most common switch-to-switch part becomes the group entry and the pairs
// that differ from it are kept as exceptions, so every answer stays exact.
#include "sa/paths/path_db.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

#include "madengine/common/parallel_for.hpp"
#include "sa/paths/link_rate.hpp"

namespace madengine::sa {

using fabric::NodeId;

namespace {

constexpr std::uint8_t kUnlimited = 0xfe;  // no link yet: MTU/rate of "nothing"
// The switch-to-switch part of a walk that ended at a switch other than the
// LID's own (a misrouted LFT): never predicted, always an exception.
constexpr PathAttrs kForeign{0xff, 0, 0, 1};
constexpr PathAttrs kAtSwitch{0, kUnlimited, kUnlimited, 0};  // nothing crossed yet
// LIDs of one destination switch walked at a time: bounds the row buffers.
constexpr std::size_t kGroupChunkLids = 64;

// Rate codes are not ordered by speed: compare through a table.
struct RateOrder {
  std::array<std::uint32_t, 256> mbps{};
  RateOrder() {
    for (unsigned c = 0; c < 256; ++c) mbps[c] = rate_mbps(static_cast<std::uint8_t>(c));
    mbps[kUnlimited] = ~0u;
  }
  std::uint8_t min(std::uint8_t a, std::uint8_t b) const noexcept { return mbps[a] <= mbps[b] ? a : b; }
};
const RateOrder kRateOrder;

std::uint8_t link_rate(const fabric::Port& p) noexcept { return rate_code(link_mbps(p.link_width, p.link_speed)); }

PathAttrs join(PathAttrs rest, std::uint8_t mtu, std::uint8_t rate, bool switch_hop) noexcept {
  if (!rest.routed()) return rest;
  rest.hops = static_cast<std::uint8_t>(rest.hops + (switch_hop ? 1 : 0));
  rest.mtu = std::min(rest.mtu, mtu);
  rest.rate = kRateOrder.min(rest.rate, rate);
  return rest;
}

std::uint32_t key_of(PathAttrs a) noexcept {
  return std::uint32_t{a.hops} | std::uint32_t{a.mtu} << 8 | std::uint32_t{a.rate} << 16 | std::uint32_t{a.reserved} << 24;
}

// One switch port as the walk needs it, precomputed once per build so a step
// reads 8 bytes instead of the Node and Port it comes from.
struct Hop {
  enum Kind : std::uint8_t { kDead, kSwitch, kExit, kSelf };
  std::uint32_t next = 0;  // kSwitch: the peer's switch index
  std::uint8_t mtu = 0, rate = 0;
  Kind kind = kDead;
};

// Walks the LFTs towards one LID from every switch. `exact` gets the full
// path value (the destination's last link included, what a per-LID table
// holds); `part` the switch-to-switch part when the walk ends at `home` (the
// LID's own switch), kForeign when it ends elsewhere.
class LidWalker {
 public:
  LidWalker(const fabric::Fabric& f, const std::vector<fabric::Lft>& lfts, const std::vector<std::uint32_t>& index)
      : state_(lfts.size()) {
    for (const fabric::Lft& l : lfts) {
      width_ = std::max<std::size_t>(width_, f.nodes[l.node].ports.size());
      lft_.push_back(l.ports.data());
      lft_size_.push_back(l.ports.size());
    }
    hops_.resize(lfts.size() * width_);
    for (std::size_t s = 0; s < lfts.size(); ++s) {
      const fabric::Node& node = f.nodes[lfts[s].node];
      Hop* row = hops_.data() + s * width_;
      row[0].kind = Hop::kSelf;
      for (std::size_t p = 1; p <= node.num_ports() && p != fabric::kLftNoRoute; ++p) {
        const fabric::Port& out = node.ports[p];
        if (!out.linked()) continue;
        Hop& h = row[p];
        h.mtu = out.mtu;
        h.rate = link_rate(out);
        if (!f.nodes[out.peer].is_switch()) h.kind = Hop::kExit;
        else if (out.peer < index.size() && index[out.peer] != ~0u) h.kind = Hop::kSwitch, h.next = index[out.peer];
      }
    }
  }

  void walk(std::uint16_t dlid, std::uint32_t home, PathAttrs* exact, PathAttrs* part) {
    const std::uint32_t switches = static_cast<std::uint32_t>(lft_.size());
    std::fill(state_.begin(), state_.end(), 0);
    for (std::uint32_t start = 0; start < switches; ++start) {
      if (state_[start] == 2) continue;
      // Walk down the tree until a known entry, then fill in on the way back.
      stack_.clear();
      std::uint32_t s = start;
      PathAttrs tail, tail_part;
      while (true) {
        if (state_[s] == 2) {
          tail = exact[s];
          tail_part = part[s];
          break;
        }
        if (state_[s] == 1) {  // a forwarding loop: nothing on it is routed
          tail = tail_part = PathAttrs{};
          break;
        }
        const Hop& h = hop(s, dlid);
        if (h.kind == Hop::kSwitch) {
          state_[s] = 1;
          stack_.push_back(s);
          s = h.next;
          continue;
        }
        if (h.kind == Hop::kDead) {
          tail = tail_part = PathAttrs{};
        } else {  // the destination is this switch's port 0, or the CA behind h
          tail = h.kind == Hop::kSelf ? kAtSwitch : PathAttrs{0, h.mtu, h.rate, 0};
          tail_part = s == home ? kAtSwitch : kForeign;
        }
        exact[s] = tail;
        part[s] = tail_part;
        state_[s] = 2;
        break;
      }
      while (!stack_.empty()) {
        const std::uint32_t at = stack_.back();
        stack_.pop_back();
        const Hop& h = hop(at, dlid);
        tail = join(tail, h.mtu, h.rate, true);
        tail_part = join(tail_part, h.mtu, h.rate, true);
        exact[at] = tail;
        part[at] = tail_part;
        state_[at] = 2;
      }
    }
  }

 private:
  const Hop& hop(std::uint32_t s, std::uint16_t dlid) const noexcept {
    static const Hop kNoHop{};
    const std::uint8_t port = dlid < lft_size_[s] ? lft_[s][dlid] : fabric::kLftNoRoute;
    return port < width_ ? hops_[s * width_ + port] : kNoHop;
  }

  std::size_t width_ = 1;                 // ports per switch row, port 0 included
  std::vector<Hop> hops_;                 // [switch * width_ + port]
  std::vector<const std::uint8_t*> lft_;  // each switch's LFT
  std::vector<std::size_t> lft_size_;
  std::vector<std::uint8_t> state_;       // 0 new, 1 on the stack, 2 done
  std::vector<std::uint32_t> stack_;
};

}  // namespace

PathDb PathDb::build(const fabric::Fabric& fabric, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                     unsigned shards, unsigned threads) {
  PathDb db;
  db.shards_ = std::max(1u, shards);
  const std::uint32_t switches = static_cast<std::uint32_t>(lfts.size());
  db.switches_ = switches;
  db.top_lid_ = top_lid;
  db.switch_index_.assign(fabric.nodes.size(), ~0u);
  for (std::uint32_t i = 0; i < switches; ++i) db.switch_index_[lfts[i].node] = i;
  const auto index_of = [&](NodeId n) { return n < db.switch_index_.size() ? db.switch_index_[n] : ~0u; };

  db.attach_.assign(top_lid + 1u, Attach{});
  for (const fabric::EndPort e : fabric.end_ports()) {
    const fabric::Node& n = fabric.nodes[e.node];
    const std::uint16_t base = fabric.lid_of(e);
    if (base == 0 || base > top_lid) continue;
    Attach a;
    if (n.is_switch()) {
      a.switch_index = index_of(e.node);
      a.mtu = a.rate = kUnlimited;
      a.lid_count = 1;
    } else {
      const fabric::Port& p = n.ports[e.port];
      a.switch_index = p.linked() ? index_of(p.peer) : ~0u;
      a.mtu = p.mtu;
      a.rate = link_rate(p);
      a.lid_count = static_cast<std::uint8_t>(1u << n.lmc);
    }
    for (unsigned i = 0; i < a.lid_count && base + i <= top_lid; ++i) db.attach_[base + i] = a;
  }

  // The LIDs of each destination switch; the last group holds LIDs that have
  // no switch of their own (a CA linked to a CA, an unlinked port).
  const std::uint32_t groups = switches + 1;
  std::vector<std::uint32_t> group_begin(groups + 1, 0);
  std::vector<std::uint16_t> group_lids;
  const auto group_of = [&](const Attach& a) { return a.switch_index < switches ? a.switch_index : switches; };
  for (std::uint32_t lid = 1; lid <= top_lid; ++lid)
    if (db.attach_[lid].lid_count != 0) ++group_begin[group_of(db.attach_[lid]) + 1];
  for (std::uint32_t g = 0; g < groups; ++g) group_begin[g + 1] += group_begin[g];
  group_lids.resize(group_begin[groups]);
  {
    std::vector<std::uint32_t> fill(group_begin.begin(), group_begin.end() - 1);
    for (std::uint32_t lid = 1; lid <= top_lid; ++lid)
      if (db.attach_[lid].lid_count != 0) group_lids[fill[group_of(db.attach_[lid])]++] = static_cast<std::uint16_t>(lid);
  }

  // Per destination switch: walk its LIDs, vote per source switch on the
  // switch-to-switch part (Boyer-Moore majority over the first chunk), keep
  // the pairs whose exact value the group entry does not give.
  std::vector<PathAttrs> group_value(std::size_t{groups} * switches, PathAttrs{});  // [dst group][src]
  std::vector<std::vector<Exception>> lid_exceptions(top_lid + 1u);
  const unsigned workers = std::max(1u, std::min(threads, groups));
  parallel_for(workers, workers, [&](std::size_t w) {
    LidWalker walker(fabric, lfts, db.switch_index_);
    std::vector<PathAttrs> exact(kGroupChunkLids * switches), part(kGroupChunkLids * switches);
    std::vector<std::uint32_t> votes(switches);
    for (std::uint32_t g = static_cast<std::uint32_t>(w); g < groups; g += workers) {
      PathAttrs* gv = group_value.data() + std::size_t{g} * switches;
      const std::uint32_t first = group_begin[g], last = group_begin[g + 1];
      for (std::uint32_t c = first; c < last; c += kGroupChunkLids) {
        const std::uint32_t n = std::min<std::uint32_t>(last - c, kGroupChunkLids);
        for (std::uint32_t i = 0; i < n; ++i)
          walker.walk(group_lids[c + i], g, exact.data() + std::size_t{i} * switches, part.data() + std::size_t{i} * switches);
        if (c == first && g < switches) {
          std::fill(votes.begin(), votes.end(), 0u);
          for (std::uint32_t i = 0; i < n; ++i) {
            const PathAttrs* row = part.data() + std::size_t{i} * switches;
            for (std::uint32_t s = 0; s < switches; ++s) {
              if (votes[s] == 0) gv[s] = row[s], votes[s] = 1;
              else votes[s] += gv[s] == row[s] ? 1u : ~0u;  // +1 or -1
            }
          }
          for (std::uint32_t s = 0; s < switches; ++s)
            if (gv[s] == kForeign) gv[s] = PathAttrs{};
        }
        for (std::uint32_t i = 0; i < n; ++i) {
          const std::uint16_t lid = group_lids[c + i];
          Attach& a = db.attach_[lid];
          // The last link as the LID's switch itself crosses it (hops 0).
          const PathAttrs home = g < switches ? exact[std::size_t{i} * switches + g] : PathAttrs{};
          a.exit_mtu = home.routed() && home.hops == 0 ? home.mtu : kUnlimited;
          a.exit_rate = home.routed() && home.hops == 0 ? home.rate : kUnlimited;
          const PathAttrs* row = exact.data() + std::size_t{i} * switches;
          auto& out = lid_exceptions[lid];
          for (std::uint32_t s = 0; s < switches; ++s) {
            const PathAttrs predicted = join(gv[s], a.exit_mtu, a.exit_rate, false);
            if (!(predicted == row[s])) out.push_back({s, row[s]});
          }
        }
      }
    }
  });

  // The palette, in a fixed order (source-major), so the result does not
  // depend on the thread count. Values beyond kEscape codes become exceptions.
  db.group_.assign(std::size_t{switches} * switches, kEscape);
  std::unordered_map<std::uint32_t, std::uint8_t> codes;
  for (std::uint32_t s = 0; s < switches; ++s)
    for (std::uint32_t d = 0; d < switches; ++d) {
      const PathAttrs v = group_value[std::size_t{d} * switches + s];
      auto it = codes.find(key_of(v));
      if (it == codes.end() && db.palette_count_ < kEscape) {
        it = codes.emplace(key_of(v), static_cast<std::uint8_t>(db.palette_count_)).first;
        db.palette_[db.palette_count_++] = v;
      }
      if (it != codes.end()) {
        db.group_[std::size_t{s} * switches + d] = it->second;
        continue;
      }
      for (std::uint32_t k = group_begin[d]; k < group_begin[d + 1]; ++k) {
        const std::uint16_t lid = group_lids[k];
        auto& out = lid_exceptions[lid];
        const bool listed = std::any_of(out.begin(), out.end(), [&](const Exception& e) { return e.switch_index == s; });
        if (!listed) out.push_back({s, join(v, db.attach_[lid].exit_mtu, db.attach_[lid].exit_rate, false)});
      }
    }

  // Exceptions, flattened: a sorted list per LID, or a whole row when the
  // list would be long (a binary search over it would cost more than a row).
  const std::size_t sparse_max = std::max<std::size_t>(16, switches / 16);
  for (std::uint32_t lid = 1; lid <= top_lid; ++lid) {
    auto& list = lid_exceptions[lid];
    if (list.empty()) continue;
    std::sort(list.begin(), list.end(), [](const Exception& x, const Exception& y) { return x.switch_index < y.switch_index; });
    Attach& a = db.attach_[lid];
    if (list.size() > sparse_max) {
      const std::size_t at = db.dense_.size();
      db.dense_.resize(at + switches);
      for (std::uint32_t s = 0; s < switches; ++s) db.dense_[at + s] = db.lookup_index(s, static_cast<std::uint16_t>(lid));
      for (const Exception& e : list) db.dense_[at + e.switch_index] = e.attrs;
      a.dense = 1;
      a.exc_offset = static_cast<std::uint32_t>(at);
    } else {
      a.exc_offset = static_cast<std::uint32_t>(db.exceptions_.size());
      a.exc_count = static_cast<std::uint16_t>(list.size());
      db.exceptions_.insert(db.exceptions_.end(), list.begin(), list.end());
    }
  }
  // Whether anything is unrouted: a palette code in use, an exception, a
  // dense row entry, or an end LID on no switch.
  std::array<bool, 256> used{};
  for (const std::uint8_t c : db.group_) used[c] = true;
  db.all_routed_ = switches != 0;
  for (std::size_t c = 0; c < used.size(); ++c)
    if (used[c] && c != kEscape && !db.palette_[c].routed()) db.all_routed_ = false;
  for (const Exception& e : db.exceptions_) db.all_routed_ = db.all_routed_ && e.attrs.routed();
  for (const PathAttrs& a : db.dense_) db.all_routed_ = db.all_routed_ && a.routed();
  for (std::uint32_t lid = 1; lid <= top_lid; ++lid)
    if (db.attach_[lid].lid_count != 0 && db.attach_[lid].switch_index >= switches) db.all_routed_ = false;
  return db;
}

PathAttrs PathDb::lookup_index(std::uint32_t s, std::uint16_t dlid) const noexcept {
  const Attach& d = attach_[dlid];
  if (d.dense != 0) return dense_[std::size_t{d.exc_offset} + s];
  if (d.exc_count != 0) {
    const Exception* first = exceptions_.data() + d.exc_offset;
    const Exception* last = first + d.exc_count;
    const Exception* it = std::lower_bound(first, last, s, [](const Exception& e, std::uint32_t v) { return e.switch_index < v; });
    if (it != last && it->switch_index == s) return it->attrs;
  }
  if (d.switch_index >= switches_) return PathAttrs{};
  const std::uint8_t code = group_[std::size_t{s} * switches_ + d.switch_index];
  return join(palette_[code], d.exit_mtu, d.exit_rate, false);
}

PathAttrs PathDb::lookup(NodeId src_switch, std::uint16_t dlid) const noexcept {
  if (src_switch >= switch_index_.size() || dlid > top_lid_ || dlid == 0) return {};
  const std::uint32_t s = switch_index_[src_switch];
  if (s == ~0u || attach_[dlid].lid_count == 0) return {};
  return lookup_index(s, dlid);
}

PathAttrs PathDb::path(std::uint16_t slid, std::uint16_t dlid) const noexcept {
  if (slid == 0 || dlid == 0 || slid > top_lid_ || dlid > top_lid_) return {};
  const Attach& src = attach_[slid];
  if (src.lid_count == 0 || attach_[dlid].lid_count == 0 || src.switch_index == ~0u) return {};
  PathAttrs p = join(lookup_index(src.switch_index, dlid), src.mtu, src.rate, false);
  if (p.routed()) {
    if (p.mtu == kUnlimited) p.mtu = 5;     // switch to its own port 0: no link limits it
    if (p.rate == kUnlimited) p.rate = 16;  // nominal 100 Gb/s
  }
  return p;
}

void PathDb::prefetch(std::uint16_t slid, std::uint16_t dlid) const noexcept {
  if (slid >= attach_.size() || dlid >= attach_.size()) return;  // also an empty (never built) database
  const Attach& src = attach_[slid];
  const Attach& dst = attach_[dlid];
  if (src.switch_index < switches_ && dst.switch_index < switches_)
    __builtin_prefetch(group_.data() + std::size_t{src.switch_index} * switches_ + dst.switch_index);
}

std::size_t PathDb::bytes() const noexcept {
  return group_.size() + sizeof(palette_) + exceptions_.size() * sizeof(Exception) +
         dense_.size() * sizeof(PathAttrs) + switch_index_.size() * sizeof(std::uint32_t) + attach_.size() * sizeof(Attach);
}

}  // namespace madengine::sa
