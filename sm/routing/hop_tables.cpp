// Phase 1 of the min-hop family (see hop_tables.hpp). Min-hop distances come
// from a bit-parallel BFS: 64 destinations at a time, one bit each, so a BFS
// level costs one OR per link for 64 destinations. Up*/down* distances are a
// restricted BFS per destination, 64 destinations per batch, written into
// the table a cache line at a time.
#include "sm/routing/hop_tables.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <numeric>

#include "engine/parallel_for.hpp"

namespace madengine::sm {

namespace {

constexpr unsigned kBatch = 64;  // destinations per batch: bits of a word, bytes of a cache line

struct Scratch {
  std::vector<std::uint64_t> visit, frontier, next;
};

// Min-hop distances from every switch to destinations [first, first+count).
void minhop_batch(const SwitchGraph& g, const std::vector<SwIdx>& peer, SwIdx first, unsigned count, HopTables& t,
                  Scratch& sc) {
  const std::size_t n = g.size();
  sc.visit.assign(n, 0);
  sc.frontier.assign(n, 0);
  sc.next.assign(n, 0);
  for (unsigned i = 0; i < count; ++i) {
    sc.visit[first + i] = sc.frontier[first + i] = std::uint64_t{1} << i;
    t.hops[(first + i) * t.stride + first + i] = 0;
  }
  for (unsigned level = 1; level <= kHopMask; ++level) {
    bool any = false;
    for (std::size_t v = 0; v < n; ++v) {
      std::uint64_t m = 0;
      for (ChannelId c = g.link_begin[v]; c < g.link_begin[v + 1]; ++c) m |= sc.frontier[peer[c]];
      m &= ~sc.visit[v];
      sc.next[v] = m;
      if (m == 0) continue;
      any = true;
      sc.visit[v] |= m;
      std::uint8_t* row = t.hops.data() + v * t.stride + first;
      for (; m != 0; m &= m - 1) row[std::countr_zero(m)] = static_cast<std::uint8_t>(level);
    }
    if (!any) break;
    sc.frontier.swap(sc.next);
  }
}

// Up/down: a switch that can reach `dest` going only down uses that route
// (so a packet that has gone down never needs to go up again); any other
// switch goes up to the neighbour with the shortest legal route. `order`
// lists switches by increasing (rank, GUID), so every up-neighbour comes first.
void updn_from(const SwitchGraph& g, const Ranking& r, const std::vector<SwIdx>& order, SwIdx dest,
               std::uint8_t* out, std::vector<SwIdx>& queue) {
  std::fill(out, out + g.size(), kHopUnreachable);
  queue.clear();
  out[dest] = kHopDownMode;  // 0 hops, down mode
  queue.push_back(dest);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const SwIdx v = queue[head];
    const std::uint8_t next = static_cast<std::uint8_t>((out[v] & kHopMask) + 1);
    if (next > kHopMask - 1) break;
    for (const SwitchLink& l : g.links(v)) {
      const SwIdx u = l.peer;  // u -> v is a down link when v -> u goes up
      if (out[u] == kHopUnreachable && r.is_up(v, u)) {
        out[u] = static_cast<std::uint8_t>(next | kHopDownMode);
        queue.push_back(u);
      }
    }
  }
  for (SwIdx s : order) {
    if (out[s] != kHopUnreachable) continue;
    std::uint8_t best = kHopUnreachable;
    for (const SwitchLink& l : g.links(s))
      if (r.is_up(s, l.peer) && out[l.peer] != kHopUnreachable)
        best = std::min<std::uint8_t>(best, out[l.peer] & kHopMask);
    if (best < kHopMask - 1) out[s] = static_cast<std::uint8_t>(best + 1);
  }
}

// Replaces destinations [first, first+count) by their up*/down* distances
// where every switch that reaches a destination min-hop also reaches it legally.
void updn_batch(const SwitchGraph& g, const Ranking& r, const std::vector<SwIdx>& order, SwIdx first, unsigned count,
                HopTables& t, std::vector<std::uint8_t>& rows, std::vector<SwIdx>& queue) {
  const std::size_t n = g.size();
  rows.resize(std::size_t{kBatch} * n);
  std::array<bool, kBatch> complete{};
  for (unsigned i = 0; i < count; ++i) {
    updn_from(g, r, order, first + i, rows.data() + std::size_t{i} * n, queue);
    complete[i] = true;
  }
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint8_t* minhop = t.hops.data() + s * t.stride + first;
    for (unsigned i = 0; i < count; ++i)
      if (minhop[i] != kHopUnreachable && rows[std::size_t{i} * n + s] == kHopUnreachable) complete[i] = false;
  }
  for (unsigned i = 0; i < count; ++i) t.minhop_fallback[first + i] = complete[i] ? 0 : 1;
  for (std::size_t s = 0; s < n; ++s) {
    std::uint8_t* out = t.hops.data() + s * t.stride + first;
    for (unsigned i = 0; i < count; ++i)
      if (complete[i]) out[i] = rows[std::size_t{i} * n + s];
  }
}

}  // namespace

HopTables compute_hop_tables(const SwitchGraph& g, const Ranking* ranking, unsigned threads) {
  HopTables t;
  const std::size_t n = g.size();
  t.switches = n;
  t.stride = (n + kBatch - 1) / kBatch * kBatch;
  t.hops.assign(n * t.stride, kHopUnreachable);
  t.minhop_fallback.assign(t.stride, 0);  // padded: read 16 at a time
  std::vector<SwIdx> peer(g.channels());
  for (ChannelId c = 0; c < g.channels(); ++c) peer[c] = g.link[c].peer;
  const std::size_t batches = (n + kBatch - 1) / kBatch;
  const unsigned workers = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(batches, 1))));
  // Batch b's destinations are columns [64b, 64b+64): one cache line of each
  // row, written by one thread only.
  parallel_for(workers, workers, [&](std::size_t w) {
    Scratch sc;
    for (std::size_t b = w; b < batches; b += workers) {
      const auto first = static_cast<SwIdx>(b * kBatch);
      minhop_batch(g, peer, first, static_cast<unsigned>(std::min<std::size_t>(kBatch, n - first)), t, sc);
    }
  });
  if (ranking == nullptr) return t;
  std::vector<SwIdx> order(n);
  std::iota(order.begin(), order.end(), SwIdx{0});
  std::sort(order.begin(), order.end(), [&](SwIdx a, SwIdx b) {
    return ranking->rank[a] != ranking->rank[b] ? ranking->rank[a] < ranking->rank[b] : ranking->guid[a] < ranking->guid[b];
  });
  parallel_for(workers, workers, [&](std::size_t w) {
    std::vector<std::uint8_t> rows;
    std::vector<SwIdx> queue;
    queue.reserve(n);
    for (std::size_t b = w; b < batches; b += workers) {
      const auto first = static_cast<SwIdx>(b * kBatch);
      updn_batch(g, *ranking, order, first, static_cast<unsigned>(std::min<std::size_t>(kBatch, n - first)), t, rows,
                 queue);
    }
  });
  return t;
}

}  // namespace madengine::sm
