// Per-path virtual-lane layers as deadlock-free routing assigns them: the
// layer of the route from a source switch to a destination LID. A CA's
// injection channel has no incoming dependency, so a layer per (source
// switch, destination LID) covers every end-to-end path. With the identity
// SL-to-VL mapping routing assumes (SL i -> VL i), a path's layer is the SL
// its PathRecord carries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace madengine::fabric {

class PathLayers {
 public:
  static constexpr std::uint8_t kMixed = 0xff;  // by_lid_: the LID's routes use several layers: see its row

  PathLayers() = default;
  // `switches` sources (switch indexes in the routing result's LFT order), LIDs 0..top_lid.
  PathLayers(std::size_t switches, std::uint16_t top_lid) : switches_(switches), by_lid_(top_lid + 1u, 0) {}

  // Number of layers used (1 for a routing that needs no VL split; 0 when empty).
  std::uint8_t count() const noexcept { return count_; }
  bool layered() const noexcept { return count_ > 1; }
  std::size_t switches() const noexcept { return switches_; }
  std::uint16_t top_lid() const noexcept { return by_lid_.empty() ? 0 : static_cast<std::uint16_t>(by_lid_.size() - 1); }

  std::uint8_t at(std::size_t src_switch, std::uint16_t dlid) const noexcept {
    if (dlid >= by_lid_.size()) return 0;
    const std::uint8_t l = by_lid_[dlid];
    if (l != kMixed) return l;
    return rows_[std::size_t{row_of_[dlid]} * switches_ + src_switch];
  }

  // The layer every route to `dlid` shares (row set to nullptr), or the
  // LID's row by source switch (then the return value is kMixed).
  std::uint8_t lid_layer(std::uint16_t dlid, const std::uint8_t*& row) const noexcept {
    row = nullptr;
    if (dlid >= by_lid_.size()) return 0;
    const std::uint8_t l = by_lid_[dlid];
    if (l == kMixed) row = rows_.data() + std::size_t{row_of_[dlid]} * switches_;
    return l;
  }

  // Sets every route to `dlid` at once (the common case: one layer per LID).
  void set_lid(std::uint16_t dlid, std::uint8_t layer) {
    by_lid_[dlid] = layer;
    bump(layer);
  }
  // Sets the routes to `dlid` from each source switch (row[src_switch]).
  void set_row(std::uint16_t dlid, const std::vector<std::uint8_t>& row) {
    std::uint8_t first = row.empty() ? 0 : row[0];
    bool uniform = true;
    for (const std::uint8_t l : row) {
      uniform = uniform && l == first;
      bump(l);
    }
    if (uniform) {
      by_lid_[dlid] = first;
      return;
    }
    if (row_of_.size() < by_lid_.size()) row_of_.resize(by_lid_.size(), 0);
    row_of_[dlid] = static_cast<std::uint32_t>(rows_.size() / switches_);
    rows_.insert(rows_.end(), row.begin(), row.end());
    by_lid_[dlid] = kMixed;
  }
  // Declares the layer count when no path needed layers above 0.
  void set_count_at_least(std::uint8_t n) noexcept {
    if (n > count_) count_ = n;
  }

  std::size_t bytes() const noexcept { return by_lid_.size() + row_of_.size() * 4 + rows_.size(); }
  friend bool operator==(const PathLayers&, const PathLayers&) = default;

 private:
  void bump(std::uint8_t layer) noexcept {
    if (layer != kMixed && layer + 1u > count_) count_ = static_cast<std::uint8_t>(layer + 1u);
  }

  std::size_t switches_ = 0;
  std::uint8_t count_ = 0;
  std::vector<std::uint8_t> by_lid_;     // layer of every route to the LID, or kMixed
  std::vector<std::uint32_t> row_of_;    // kMixed LIDs: row index into rows_
  std::vector<std::uint8_t> rows_;       // [row * switches_ + src switch]
};

}  // namespace madengine::fabric
