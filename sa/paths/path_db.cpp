// Building and reading the compact path-record database (see path_db.hpp).
// For one destination LID the LFTs form a tree towards it, so every switch's
// entry is its next hop's entry plus one link: O(switches) per LID. The LIDs
// behind one destination switch are walked together; per source switch the
// most common switch-to-switch part becomes the group entry and the pairs
// that differ from it are kept as exceptions, so every answer stays exact.
#include "sa/paths/path_db.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <unordered_map>

#include "engine/parallel_for.hpp"
#include "fabric/link_rate.hpp"

namespace madengine::sa {

using fabric::NodeId;

namespace {

constexpr std::uint8_t kUnlimited = 0xfe;  // no link yet: MTU/rate of "nothing"
// The switch-to-switch part of a walk that ended at a switch other than the
// LID's own (a misrouted LFT): never predicted, always an exception.
constexpr PathAttrs kForeign{0xff, 0, 0, 1};
constexpr PathAttrs kAtSwitch{0, kUnlimited, 0xff, 0};  // nothing crossed yet (rates as ranks: fastest)
// LIDs of one destination switch walked at a time: bounds the row buffers.
constexpr std::size_t kGroupChunkLids = 64;

// Rate codes are not ordered by speed: compare through a table. The build
// works on ranks (codes renumbered by speed, so a minimum is a plain min)
// and stores codes.
struct RateOrder {
  std::array<std::uint32_t, 256> mbps{};
  std::array<std::uint8_t, 256> rank{}, code{};  // code -> rank, rank -> code
  RateOrder() {
    for (unsigned c = 0; c < 256; ++c) mbps[c] = wire::rate_mbps(static_cast<std::uint8_t>(c));
    mbps[kUnlimited] = ~0u;
    std::array<std::uint8_t, 256> by_speed{};
    for (unsigned c = 0; c < 256; ++c) by_speed[c] = static_cast<std::uint8_t>(c);
    std::stable_sort(by_speed.begin(), by_speed.end(), [&](std::uint8_t a, std::uint8_t b) { return mbps[a] < mbps[b]; });
    for (unsigned r = 0; r < 256; ++r) rank[by_speed[r]] = static_cast<std::uint8_t>(r), code[r] = by_speed[r];
  }
  std::uint8_t min(std::uint8_t a, std::uint8_t b) const noexcept { return mbps[a] <= mbps[b] ? a : b; }
};
const RateOrder kRateOrder;

// Build values (rates as ranks) to stored values (rate codes) and back.
PathAttrs to_codes(PathAttrs a) noexcept {
  if (a.routed()) a.rate = kRateOrder.code[a.rate];
  return a;
}
// A build value plus one more link (rates as ranks).
PathAttrs join_ranked(PathAttrs rest, std::uint8_t mtu, std::uint8_t rate_rank, bool switch_hop) noexcept {
  if (!rest.routed()) return rest;
  rest.hops = static_cast<std::uint8_t>(rest.hops + (switch_hop ? 1 : 0));
  rest.mtu = std::min(rest.mtu, mtu);
  rest.rate = std::min(rest.rate, rate_rank);
  return rest;
}

PathAttrs join(PathAttrs rest, std::uint8_t mtu, std::uint8_t rate, bool switch_hop) noexcept {
  if (!rest.routed()) return rest;
  rest.hops = static_cast<std::uint8_t>(rest.hops + (switch_hop ? 1 : 0));
  rest.mtu = std::min(rest.mtu, mtu);
  rest.rate = kRateOrder.min(rest.rate, rate);
  return rest;
}

std::uint32_t key_of(PathAttrs a) noexcept {
  return std::uint32_t{a.hops} | std::uint32_t{a.mtu} << 8 | std::uint32_t{a.rate} << 16 | std::uint32_t{a.sl} << 24;
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
      : state_(lfts.size()), step_(lfts.size()), depth_(lfts.size(), 0), done_(lfts.size(), 0) {
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
        h.rate = kRateOrder.rank[fabric::link_rate_code(f, lfts[s].node, static_cast<std::uint8_t>(p))];
        if (!f.nodes[out.peer].is_switch()) h.kind = Hop::kExit;
        else if (out.peer < index.size() && index[out.peer] != ~0u) h.kind = Hop::kSwitch, h.next = index[out.peer];
      }
    }
  }

  void walk(std::uint16_t dlid, std::uint32_t home, PathAttrs* exact, PathAttrs* part) {
    const std::uint32_t switches = static_cast<std::uint32_t>(lft_.size());
    // Every switch's step first, from the LFTs' block of 64 LIDs copied
    // switch by switch (one cache line each) and kept for the next LIDs of
    // the block: the walk below then touches only this column, instead of
    // missing the cache at every dependent step.
    const std::uint8_t* block = lft_block(dlid / kBlockLids) + dlid % kBlockLids;
    for (std::uint32_t s = 0; s < switches; ++s) {
      const std::uint8_t port = block[std::size_t{s} * kBlockLids];
      step_[s] = port < width_ ? hops_[s * width_ + port] : Hop{};
    }
    // The LIDs behind one switch usually have trees of the same depths (a
    // minimal routing's are): in the last tree's depth order every switch's
    // next hop is already done, with no walk. Any other tree: walk it.
    if (order_home_ == home && walk_in_order(home, exact, part)) return;
    walk_trees(home, exact, part);
  }

 private:
  bool walk_in_order(std::uint32_t home, PathAttrs* exact, PathAttrs* part) {
    if (++stamp_ == 0) {
      std::fill(done_.begin(), done_.end(), 0u);
      stamp_ = 1;
    }
    for (const std::uint32_t s : order_) {
      const Hop& h = step_[s];
      if (h.kind == Hop::kSwitch) {
        if (done_[h.next] != stamp_) return false;
        exact[s] = join_ranked(exact[h.next], h.mtu, h.rate, true);
        part[s] = join_ranked(part[h.next], h.mtu, h.rate, true);
      } else if (h.kind == Hop::kDead) {
        exact[s] = part[s] = PathAttrs{};
      } else {
        exact[s] = h.kind == Hop::kSelf ? kAtSwitch : PathAttrs{0, h.mtu, h.rate, 0};
        part[s] = s == home ? kAtSwitch : kForeign;
      }
      done_[s] = stamp_;
    }
    return true;
  }

  // Walks down each tree until a known entry, then fills in on the way back;
  // records the depth order for walk_in_order.
  void walk_trees(std::uint32_t home, PathAttrs* exact, PathAttrs* part) {
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
        const Hop& h = step_[s];
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
        depth_[s] = 0;
        break;
      }
      // Loops: nothing on the stack has a done next hop; depth 0 is as good as any.
      std::uint32_t d = state_[s] == 2 ? depth_[s] : 0;
      while (!stack_.empty()) {
        const std::uint32_t at = stack_.back();
        stack_.pop_back();
        const Hop& h = step_[at];
        tail = join_ranked(tail, h.mtu, h.rate, true);
        tail_part = join_ranked(tail_part, h.mtu, h.rate, true);
        exact[at] = tail;
        part[at] = tail_part;
        state_[at] = 2;
        depth_[at] = ++d;
      }
    }
    // The depth order (counting sort) for the next LIDs of this switch.
    std::uint32_t deepest = 0;
    for (std::uint32_t s = 0; s < switches; ++s) deepest = std::max(deepest, depth_[s]);
    count_.assign(deepest + 2u, 0);
    for (std::uint32_t s = 0; s < switches; ++s) ++count_[depth_[s] + 1u];
    for (std::size_t i = 1; i < count_.size(); ++i) count_[i] += count_[i - 1];
    order_.resize(switches);
    for (std::uint32_t s = 0; s < switches; ++s) order_[count_[depth_[s]]++] = s;
    order_home_ = home;
  }

  // Block b of every switch's LFT, [switch * kBlockLids + lid % kBlockLids];
  // a few blocks are kept (a destination switch's LIDs and its own LID
  // usually lie in two blocks).
  const std::uint8_t* lft_block(std::size_t b) {
    Cached* victim = &cache_[0];
    for (Cached& c : cache_) {
      if (c.block == b) {
        c.used = ++clock_;
        return c.bytes.data();
      }
      if (c.used < victim->used) victim = &c;
    }
    const std::size_t switches = lft_.size();
    victim->bytes.resize(switches * kBlockLids);
    for (std::size_t s = 0; s < switches; ++s) {
      std::uint8_t* out = victim->bytes.data() + s * kBlockLids;
      const std::size_t first = b * kBlockLids;
      const std::size_t have = lft_size_[s] > first ? std::min(kBlockLids, lft_size_[s] - first) : 0;
      if (have != 0) std::memcpy(out, lft_[s] + first, have);
      std::memset(out + have, fabric::kLftNoRoute, kBlockLids - have);
    }
    victim->block = b;
    victim->used = ++clock_;
    return victim->bytes.data();
  }

  std::size_t width_ = 1;                 // ports per switch row, port 0 included
  std::vector<Hop> hops_;                 // [switch * width_ + port]
  std::vector<const std::uint8_t*> lft_;  // each switch's LFT
  std::vector<std::size_t> lft_size_;
  std::vector<std::uint8_t> state_;       // 0 new, 1 on the stack, 2 done
  std::vector<Hop> step_;                 // this LID's step at each switch
  std::vector<std::uint32_t> depth_;      // the last walked tree's depth of each switch
  std::vector<std::uint32_t> order_;      // and its switches by depth
  std::vector<std::uint32_t> count_;
  std::uint32_t order_home_ = ~0u;        // the destination switch order_ was recorded for
  std::vector<std::uint32_t> done_;       // walk_in_order: == stamp_ when done for this LID
  std::uint32_t stamp_ = 0;
  static constexpr std::size_t kBlockLids = 64;
  struct Cached {
    std::size_t block = ~std::size_t{0};
    std::uint64_t used = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::array<Cached, 4> cache_;
  std::uint64_t clock_ = 0;
  std::vector<std::uint32_t> stack_;
};

}  // namespace

PathDb PathDb::build(const fabric::Fabric& fabric, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                     unsigned shards, unsigned threads, const fabric::PathLayers* layers) {
  static std::atomic<std::uint64_t> builds{0};  // relaxed: only distinctness matters
  PathDb db;
  db.generation_ = builds.fetch_add(1, std::memory_order_relaxed) + 1;
  if (layers != nullptr && (!layers->layered() || layers->switches() != lfts.size())) layers = nullptr;
  db.layered_ = layers != nullptr;
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
      a.rate = fabric::link_rate_code(fabric, e.node, e.port);
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
    std::vector<PathAttrs> pred(switches);
    std::uint32_t pred_group = ~0u;
    std::uint8_t pred_mtu = 0, pred_rate = 0;
    for (std::uint32_t g = static_cast<std::uint32_t>(w); g < groups; g += workers) {
      PathAttrs* gv = group_value.data() + std::size_t{g} * switches;
      const std::uint32_t first = group_begin[g], last = group_begin[g + 1];
      for (std::uint32_t c = first; c < last; c += kGroupChunkLids) {
        const std::uint32_t n = std::min<std::uint32_t>(last - c, kGroupChunkLids);
        if (c == first) pred_group = ~0u;  // gv is voted below
        for (std::uint32_t i = 0; i < n; ++i) {
          PathAttrs* ex = exact.data() + std::size_t{i} * switches;
          PathAttrs* pa = part.data() + std::size_t{i} * switches;
          walker.walk(group_lids[c + i], g, ex, pa);
          if (layers == nullptr) continue;
          // Each path's SL, the same for both values (a path's layer is its source switch's).
          const std::uint8_t* row;
          const std::uint8_t uniform = layers->lid_layer(group_lids[c + i], row);
          for (std::uint32_t s = 0; s < switches; ++s) {
            const std::uint8_t sl = row != nullptr ? row[s] : uniform;
            if (ex[s].routed()) ex[s].sl = sl;
            if (pa[s].routed()) pa[s].sl = sl;
          }
        }
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
          const bool exit_link = home.routed() && home.hops == 0;
          const std::uint8_t exit_rank = exit_link ? home.rate : kRateOrder.rank[kUnlimited];
          a.exit_mtu = exit_link ? home.mtu : kUnlimited;
          a.exit_rate = kRateOrder.code[exit_rank];
          // What the group entry predicts for this exit link (the same for
          // most LIDs of a switch): one row compare finds the exceptions.
          if (pred_group != g || pred_mtu != a.exit_mtu || pred_rate != exit_rank) {
            for (std::uint32_t s = 0; s < switches; ++s) pred[s] = join_ranked(gv[s], a.exit_mtu, exit_rank, false);
            pred_group = g, pred_mtu = a.exit_mtu, pred_rate = exit_rank;
          }
          const PathAttrs* row = exact.data() + std::size_t{i} * switches;
          if (std::memcmp(row, pred.data(), std::size_t{switches} * sizeof(PathAttrs)) == 0) continue;
          auto& out = lid_exceptions[lid];
          for (std::uint32_t s = 0; s < switches; ++s)
            if (!(pred[s] == row[s])) out.push_back({s, to_codes(row[s])});
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
      const PathAttrs v = to_codes(group_value[std::size_t{d} * switches + s]);
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
      for (std::uint32_t s = 0; s < switches; ++s) db.dense_[at + s] = db.lookup_index(s, db.attach_[lid]);
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

bool PathDb::reuse(const PathDb& db, const fabric::Fabric& then, const fabric::Fabric& now, PathDb& out) {
  if (db.layered_ || then.nodes.size() != now.nodes.size()) return false;
  std::unordered_map<std::uint64_t, NodeId> by_guid;
  by_guid.reserve(then.nodes.size());
  for (NodeId i = 0; i < then.nodes.size(); ++i) by_guid.emplace(then.nodes[i].node_guid, i);
  std::vector<NodeId> old_of(now.nodes.size(), fabric::kNoNode);
  for (NodeId i = 0; i < now.nodes.size(); ++i) {
    const auto it = by_guid.find(now.nodes[i].node_guid);
    if (it == by_guid.end()) return false;
    old_of[i] = it->second;
  }
  for (NodeId i = 0; i < now.nodes.size(); ++i) {
    const fabric::Node& x = now.nodes[i];
    const fabric::Node& y = then.nodes[old_of[i]];
    if (x.kind != y.kind || x.base_lid != y.base_lid || x.lmc != y.lmc || x.port_lids != y.port_lids ||
        x.ports.size() != y.ports.size())
      return false;
    for (std::size_t p = 0; p < x.ports.size(); ++p) {
      const fabric::Port& u = x.ports[p];
      const fabric::Port& v = y.ports[p];
      if (u.linked() != v.linked() || u.mtu != v.mtu || u.link_width != v.link_width || u.link_speed != v.link_speed ||
          fabric::port_rate_code(x, static_cast<std::uint8_t>(p)) != fabric::port_rate_code(y, static_cast<std::uint8_t>(p)))
        return false;
      if (u.linked() && (old_of[u.peer] != v.peer || u.peer_port != v.peer_port)) return false;
    }
  }
  out = db;
  // Lookups by node id go through switch_index_; everything else is keyed
  // by switch index and LID, which the renumbering leaves alone.
  out.switch_index_.assign(now.nodes.size(), ~0u);
  for (NodeId i = 0; i < now.nodes.size(); ++i)
    if (old_of[i] < db.switch_index_.size()) out.switch_index_[i] = db.switch_index_[old_of[i]];
  return true;
}

PathAttrs PathDb::lookup_index(std::uint32_t s, const Attach& d) const noexcept {
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
  return lookup_index(s, attach_[dlid]);
}

PathAttrs PathDb::path(std::uint16_t slid, std::uint16_t dlid) const noexcept {
  if (slid == 0 || dlid == 0 || slid > top_lid_ || dlid > top_lid_) return {};
  return path(attach_[slid], attach_[dlid]);
}

PathAttrs PathDb::path(const Attach& src, const Attach& dst) const noexcept {
  if (src.lid_count == 0 || dst.lid_count == 0 || src.switch_index == ~0u) return {};
  PathAttrs p = join(lookup_index(src.switch_index, dst), src.mtu, src.rate, false);
  if (p.routed()) {
    if (p.mtu == kUnlimited) p.mtu = 5;     // switch to its own port 0: no link limits it
    if (p.rate == kUnlimited) p.rate = 16;  // nominal 100 Gb/s
  }
  return p;
}

void PathDb::prefetch(std::uint16_t slid, std::uint16_t dlid) const noexcept {
  if (slid >= attach_.size() || dlid >= attach_.size()) return;  // also an empty (never built) database
  prefetch(attach_[slid], attach_[dlid]);
}

std::size_t PathDb::bytes() const noexcept {
  return group_.size() + sizeof(palette_) + exceptions_.size() * sizeof(Exception) +
         dense_.size() * sizeof(PathAttrs) + switch_index_.size() * sizeof(std::uint32_t) + attach_.size() * sizeof(Attach);
}

}  // namespace madengine::sa
