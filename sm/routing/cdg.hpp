// Channel dependency graphs kept acyclic as dependencies are added, one per
// virtual-lane layer. A dependency c1 -> c2 (a packet holding channel c1,
// switch a to b, waits for c2, b to c) is one bit: c2 is one of b's links.
// Adding keeps a topological order of the channels (Pearce and Kelly, "A
// dynamic topological sort algorithm for directed acyclic graphs", 2006):
// an edge that agrees with the order costs one comparison; otherwise only
// the channels between the two ends in the order are searched, and an edge
// that would close a cycle is refused. Used by dfsssp's layering and nue.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

class LayeredCdg {
 public:
  LayeredCdg(const SwitchGraph& g, unsigned layers);
  // Starts every layer from this order of the channels (position by
  // channel, a permutation): one close to topological for the dependencies
  // to come makes most additions a comparison.
  void set_initial_order(const std::vector<std::uint32_t>& position);
  void set_order(unsigned layer, std::vector<std::uint32_t> position);

  unsigned layers() const noexcept { return static_cast<unsigned>(ord_.size()); }
  // Adds every dependency of `dep` ([c1 * degree + index of c2 at c1's far
  // switch], nonzero: present) to a layer at once. The layer's graph with
  // them must have no cycle and agree with the order (the caller's
  // set_initial_order gives a topological order of `dep`).
  void add_acyclic(unsigned layer, const std::vector<std::uint8_t>& dep, std::size_t degree);
  // c2 must leave the switch c1 enters.
  bool has(unsigned layer, ChannelId c1, ChannelId c2) const noexcept {
    const std::uint32_t j = c2 - g_.link_begin[g_.link[c1].peer];
    return (bits_[layer][std::size_t{c1} * words_ + j / 64] >> (j % 64)) & 1u;
  }
  // Adds c1 -> c2 unless it closes a cycle in that layer (then false, and
  // nothing changes). Adding a present dependency succeeds.
  bool add(unsigned layer, ChannelId c1, ChannelId c2);
  // Removing never breaks the order: for undoing an attempt.
  void remove(unsigned layer, ChannelId c1, ChannelId c2) noexcept {
    const std::uint32_t j = c2 - g_.link_begin[g_.link[c1].peer];
    bits_[layer][std::size_t{c1} * words_ + j / 64] &= ~(std::uint64_t{1} << (j % 64));
    const std::uint32_t i = in_index_[c1];
    into_[layer][std::size_t{c2} * in_words_ + i / 64] &= ~(std::uint64_t{1} << (i % 64));
  }
  std::uint64_t dependencies(unsigned layer) const noexcept { return count_[layer]; }

  // A dependency found to close a cycle with edges that stay (none of an
  // attempt that may be undone): it always will, so callers skip the search.
  bool refused(unsigned layer, ChannelId c1, ChannelId c2) const noexcept {
    const std::uint32_t j = c2 - g_.link_begin[g_.link[c1].peer];
    return (refused_[layer][std::size_t{c1} * words_ + j / 64] >> (j % 64)) & 1u;
  }
  void refuse(unsigned layer, ChannelId c1, ChannelId c2) noexcept {
    const std::uint32_t j = c2 - g_.link_begin[g_.link[c1].peer];
    refused_[layer][std::size_t{c1} * words_ + j / 64] |= std::uint64_t{1} << (j % 64);
  }

 private:
  void set(unsigned layer, ChannelId c1, ChannelId c2) noexcept {
    const std::uint32_t j = c2 - g_.link_begin[g_.link[c1].peer];
    bits_[layer][std::size_t{c1} * words_ + j / 64] |= std::uint64_t{1} << (j % 64);
    const std::uint32_t i = in_index_[c1];
    into_[layer][std::size_t{c2} * in_words_ + i / 64] |= std::uint64_t{1} << (i % 64);
    ++count_[layer];
  }
  bool forward(unsigned layer, ChannelId from, std::uint32_t upper, ChannelId target);
  void backward(unsigned layer, ChannelId from, std::uint32_t lower);

  const SwitchGraph& g_;
  std::size_t words_ = 1;                          // 64-bit words per channel row (links of the far switch)
  std::vector<std::vector<std::uint64_t>> bits_;   // [layer][channel * words_ + j]
  std::vector<std::vector<std::uint64_t>> refused_;  // same layout
  // The same dependencies by their second channel (a to b): bit i of c2's
  // row is set when the i-th channel into a (in_) leads to c2.
  std::vector<std::vector<std::uint64_t>> into_;
  std::size_t in_words_ = 1;            // 64-bit words per into_ row
  std::vector<ChannelId> in_begin_;     // CSR by switch: the channels into it
  std::vector<ChannelId> in_;
  std::vector<std::uint32_t> in_index_; // by channel: its index among the channels into its far switch
  std::vector<std::vector<std::uint32_t>> ord_;    // [layer][channel]: position in the order
  std::vector<std::vector<ChannelId>> at_;         // [layer][position]: the channel there
  std::vector<std::uint64_t> count_;
  // Search scratch (one search at a time).
  std::vector<std::uint32_t> mark_;
  std::uint32_t stamp_ = 0;
  std::vector<ChannelId> fwd_, bwd_, stack_;
  // Reordering scratch: the searched channels' positions as bits from the
  // lower end of the span (cleared after each use), and the positions in order.
  std::vector<std::uint64_t> fwd_bits_, bwd_bits_;
  std::vector<std::uint32_t> slots_;
};

}  // namespace madengine::sm
