// LayeredCdg (see cdg.hpp): Pearce-Kelly insertion into a dynamic
// topological order, one order per layer.
#include "sm/routing/cdg.hpp"

#include <algorithm>
#include <numeric>

namespace madengine::sm {

LayeredCdg::LayeredCdg(const SwitchGraph& g, unsigned layers) : g_(g) {
  std::size_t degree = 1;
  for (SwIdx s = 0; s < g.size(); ++s) degree = std::max<std::size_t>(degree, g.link_begin[s + 1] - g.link_begin[s]);
  words_ = (degree + 63) / 64;
  const std::size_t n = g.channels();
  bits_.assign(layers, std::vector<std::uint64_t>(n * words_, 0));
  refused_ = bits_;
  // Channels into each switch (its predecessors' candidates), counted from
  // the channels' far ends: exact even where a link has no reverse.
  in_begin_.assign(g.size() + 1, 0);
  for (ChannelId c = 0; c < n; ++c) ++in_begin_[g.link[c].peer + 1];
  std::size_t in_degree = 1;
  for (SwIdx s = 0; s < g.size(); ++s) {
    in_degree = std::max<std::size_t>(in_degree, in_begin_[s + 1]);
    in_begin_[s + 1] += in_begin_[s];
  }
  in_.resize(n);
  in_index_.resize(n);
  std::vector<ChannelId> fill(in_begin_.begin(), in_begin_.end() - 1);
  for (ChannelId c = 0; c < n; ++c) {
    const SwIdx b = g.link[c].peer;
    in_index_[c] = fill[b] - in_begin_[b];
    in_[fill[b]++] = c;
  }
  in_words_ = (in_degree + 63) / 64;
  into_.assign(layers, std::vector<std::uint64_t>(n * in_words_, 0));
  ord_.assign(layers, std::vector<std::uint32_t>(n));
  for (unsigned l = 0; l < layers; ++l) std::iota(ord_[l].begin(), ord_[l].end(), 0u);
  at_ = ord_;
  fwd_bits_.assign(n / 64 + 2, 0);
  bwd_bits_.assign(n / 64 + 2, 0);
  count_.assign(layers, 0);
  mark_.assign(n, 0);
}

void LayeredCdg::set_initial_order(const std::vector<std::uint32_t>& position) {
  for (unsigned l = 0; l < ord_.size(); ++l) set_order(l, position);
}

void LayeredCdg::set_order(unsigned layer, std::vector<std::uint32_t> position) {
  ord_[layer] = std::move(position);
  for (ChannelId c = 0; c < ord_[layer].size(); ++c) at_[layer][ord_[layer][c]] = c;
}

void LayeredCdg::add_acyclic(unsigned layer, const std::vector<std::uint8_t>& dep, std::size_t degree) {
  for (ChannelId c1 = 0; c1 < g_.channels(); ++c1) {
    const SwIdx b = g_.link[c1].peer;
    const std::size_t out = g_.link_begin[b + 1] - g_.link_begin[b];
    for (std::size_t k = 0; k < out; ++k)
      if (dep[std::size_t{c1} * degree + k] && !has(layer, c1, g_.link_begin[b] + static_cast<ChannelId>(k)))
        set(layer, c1, g_.link_begin[b] + static_cast<ChannelId>(k));
  }
}

// Channels reachable from `from` whose position is at most `upper`; false
// (a cycle) when `target` is among them.
bool LayeredCdg::forward(unsigned layer, ChannelId from, std::uint32_t upper, ChannelId target) {
  const auto& ord = ord_[layer];
  const auto& bits = bits_[layer];
  stack_.assign(1, from);
  mark_[from] = stamp_;
  while (!stack_.empty()) {
    const ChannelId c = stack_.back();
    stack_.pop_back();
    fwd_.push_back(c);
    const ChannelId base = g_.link_begin[g_.link[c].peer];
    const std::uint64_t* row = bits.data() + std::size_t{c} * words_;
    for (std::size_t w = 0; w < words_; ++w)
      for (std::uint64_t m = row[w]; m != 0; m &= m - 1) {
        const ChannelId d = base + static_cast<ChannelId>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(m)));
        if (d == target) return false;
        if (mark_[d] == stamp_ || ord[d] > upper) continue;
        mark_[d] = stamp_;
        stack_.push_back(d);
      }
  }
  return true;
}

// Channels that reach `from` whose position is at least `lower`: a
// predecessor of channel c (a to b) is a channel into a, listed in c's row
// of into_ by its index among the channels into a.
void LayeredCdg::backward(unsigned layer, ChannelId from, std::uint32_t lower) {
  const auto& ord = ord_[layer];
  const auto& into = into_[layer];
  stack_.assign(1, from);
  mark_[from] = stamp_;
  while (!stack_.empty()) {
    const ChannelId c = stack_.back();
    stack_.pop_back();
    bwd_.push_back(c);
    const ChannelId* in = in_.data() + in_begin_[g_.channel_from[c]];
    const std::uint64_t* row = into.data() + std::size_t{c} * in_words_;
    for (std::size_t w = 0; w < in_words_; ++w)
      for (std::uint64_t m = row[w]; m != 0; m &= m - 1) {
        const ChannelId p = in[w * 64 + static_cast<std::size_t>(__builtin_ctzll(m))];  // into a
        if (mark_[p] == stamp_ || ord[p] < lower) continue;
        mark_[p] = stamp_;
        stack_.push_back(p);
      }
  }
}

bool LayeredCdg::add(unsigned layer, ChannelId c1, ChannelId c2) {
  if (has(layer, c1, c2)) return true;
  if (c1 == c2) return false;
  auto& ord = ord_[layer];
  const std::uint32_t lower = ord[c2], upper = ord[c1];
  if (lower > upper) {  // already in order
    set(layer, c1, c2);
    return true;
  }
  if (++stamp_ == 0) {
    std::fill(mark_.begin(), mark_.end(), 0u);
    stamp_ = 1;
  }
  fwd_.clear();
  bwd_.clear();
  if (!forward(layer, c2, upper, c1)) return false;
  backward(layer, c1, lower);
  // Reorder: what reaches c1 first, then what c2 reaches, in the positions
  // they held together, each group in its old relative order. All lie in
  // [lower, upper]: a bit per position of that span puts them in order
  // without sorting.
  auto& at = at_[layer];
  for (const ChannelId c : bwd_) bwd_bits_[(ord[c] - lower) / 64] |= std::uint64_t{1} << ((ord[c] - lower) % 64);
  for (const ChannelId c : fwd_) fwd_bits_[(ord[c] - lower) / 64] |= std::uint64_t{1} << ((ord[c] - lower) % 64);
  slots_.clear();
  bwd_.clear();
  fwd_.clear();
  for (std::size_t w = 0; w <= (upper - lower) / 64; ++w) {
    const std::uint64_t b = bwd_bits_[w], f = fwd_bits_[w];
    for (std::uint64_t m = b | f; m != 0; m &= m - 1) {
      const std::uint32_t bit = static_cast<std::uint32_t>(__builtin_ctzll(m));
      const std::uint32_t p = lower + static_cast<std::uint32_t>(w * 64) + bit;
      slots_.push_back(p);
      ((b >> bit) & 1u ? bwd_ : fwd_).push_back(at[p]);
    }
    bwd_bits_[w] = fwd_bits_[w] = 0;
  }
  std::size_t i = 0;
  for (const ChannelId c : bwd_) ord[c] = slots_[i], at[slots_[i++]] = c;
  for (const ChannelId c : fwd_) ord[c] = slots_[i], at[slots_[i++]] = c;
  set(layer, c1, c2);
  return true;
}

}  // namespace madengine::sm
