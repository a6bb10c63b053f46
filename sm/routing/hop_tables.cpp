// Phase 1 of routing (see hop_tables.hpp): a BFS per destination switch,
// plain for min-hop, up*/down*-restricted when a ranking is given.
#include "sm/routing/hop_tables.hpp"

#include <algorithm>
#include <numeric>

#include "engine/parallel_for.hpp"

namespace madengine::sm {

namespace {

void minhop_from(const SwitchGraph& g, SwIdx dest, std::uint8_t* out, std::vector<SwIdx>& queue) {
  std::fill(out, out + g.size(), kHopUnreachable);
  queue.clear();
  out[dest] = 0;
  queue.push_back(dest);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const SwIdx s = queue[head];
    const std::uint8_t next = static_cast<std::uint8_t>(out[s] + 1);
    if (next > kHopMask) break;  // longer than any real subnet: leave unreachable
    for (const SwitchLink& l : g.links[s])
      if (out[l.peer] == kHopUnreachable) {
        out[l.peer] = next;
        queue.push_back(l.peer);
      }
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
    for (const SwitchLink& l : g.links[v]) {
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
    for (const SwitchLink& l : g.links[s])
      if (r.is_up(s, l.peer) && out[l.peer] != kHopUnreachable)
        best = std::min<std::uint8_t>(best, out[l.peer] & kHopMask);
    if (best < kHopMask - 1) out[s] = static_cast<std::uint8_t>(best + 1);
  }
}

}  // namespace

HopTables compute_hop_tables(const SwitchGraph& g, const Ranking* ranking, unsigned threads) {
  HopTables t;
  t.switches = g.size();
  t.hops.assign(g.size() * g.size(), kHopUnreachable);
  std::vector<SwIdx> order;
  if (ranking) {
    order.resize(g.size());
    std::iota(order.begin(), order.end(), SwIdx{0});
    std::sort(order.begin(), order.end(), [&](SwIdx a, SwIdx b) {
      return ranking->rank[a] != ranking->rank[b] ? ranking->rank[a] < ranking->rank[b]
                                                  : ranking->guid[a] < ranking->guid[b];
    });
  }
  const unsigned workers = std::max(1u, threads);
  std::vector<std::vector<SwIdx>> queues(workers);
  for (auto& q : queues) q.reserve(g.size());
  std::vector<std::vector<std::uint8_t>> scratch(workers, std::vector<std::uint8_t>(g.size()));
  t.minhop_fallback.assign(g.size(), false);
  std::vector<std::uint8_t> fallback(g.size(), 0);  // bytes, not bits: written by several threads
  // Interleaved partition: thread k handles destinations k, k+workers, ...
  parallel_for(workers, workers, [&](std::size_t w) {
    for (std::size_t d = w; d < g.size(); d += workers) {
      std::uint8_t* out = t.hops.data() + d * g.size();
      minhop_from(g, static_cast<SwIdx>(d), out, queues[w]);
      if (!ranking) continue;
      std::uint8_t* legal = scratch[w].data();
      updn_from(g, *ranking, order, static_cast<SwIdx>(d), legal, queues[w]);
      bool complete = true;
      for (std::size_t s = 0; s < g.size() && complete; ++s)
        complete = out[s] == kHopUnreachable || legal[s] != kHopUnreachable;
      if (complete)
        std::copy(legal, legal + g.size(), out);
      else
        fallback[d] = 1;
    }
  });
  for (std::size_t d = 0; d < g.size(); ++d) t.minhop_fallback[d] = fallback[d] != 0;
  return t;
}

}  // namespace madengine::sm
