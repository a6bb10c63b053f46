// The simulated switches' linear forwarding tables as shared 64-entry
// blocks (one LinearForwardingTable SMP each): a switch holds block ids,
// and switches holding the same 64 ports share one copy, reference-counted
// and replaced on write. Regular fabrics repeat blocks across switches (a
// 43,904-host fat tree's 2.9 M blocks hold 8,568 distinct ones), so the
// model stays small at the largest subnets.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace madengine::sim {

class LftPool {
 public:
  static constexpr std::size_t kBlockLids = 64;
  using Block = std::array<std::uint8_t, kBlockLids>;
  static constexpr std::uint32_t kEmpty = 0;  // every entry "no port": shared, never freed

  explicit LftPool(std::uint8_t no_port) {
    Block empty;
    empty.fill(no_port);
    blocks_.push_back(empty);
    refs_.push_back(0);
    index_.emplace(hash(empty), kEmpty);
  }

  const Block& block(std::uint32_t id) const noexcept { return blocks_[id]; }

  // The id of a block with these contents, one reference more.
  std::uint32_t acquire(const std::uint8_t* data) {
    Block b;
    std::memcpy(b.data(), data, kBlockLids);
    const std::uint64_t h = hash(b);
    for (auto [it, end] = index_.equal_range(h); it != end; ++it)
      if (blocks_[it->second] == b) {
        if (it->second != kEmpty) ++refs_[it->second];
        return it->second;
      }
    std::uint32_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      blocks_[id] = b;
      refs_[id] = 1;
    } else {
      id = static_cast<std::uint32_t>(blocks_.size());
      blocks_.push_back(b);
      refs_.push_back(1);
    }
    index_.emplace(h, id);
    return id;
  }

  void release(std::uint32_t id) noexcept {
    if (id == kEmpty || --refs_[id] != 0) return;
    for (auto [it, end] = index_.equal_range(hash(blocks_[id])); it != end; ++it)
      if (it->second == id) {
        index_.erase(it);
        break;
      }
    free_.push_back(id);
  }

  std::size_t distinct() const noexcept { return blocks_.size() - free_.size(); }
  std::size_t memory_bytes() const noexcept {
    return blocks_.capacity() * sizeof(Block) + refs_.capacity() * 4 + free_.capacity() * 4 +
           index_.size() * (sizeof(std::uint64_t) + 4 + 2 * sizeof(void*)) + index_.bucket_count() * sizeof(void*);
  }

 private:
  static std::uint64_t hash(const Block& b) noexcept {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (const std::uint8_t x : b) h = (h ^ x) * 1099511628211ull;
    return h;
  }

  std::vector<Block> blocks_;
  std::vector<std::uint32_t> refs_;
  std::vector<std::uint32_t> free_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> index_;
};

}  // namespace madengine::sim
