// The path-record database: for every (source switch, destination LID) the
// hop count, MTU and rate of the routed path from that switch to the
// destination port, precomputed after each routing pass and sharded by
// destination LID so each SA core owns its shard. A PathRecord between two
// end ports is then one lookup plus the source's own link.
#pragma once

#include <cstdint>
#include <vector>

#include "madengine/fabric/fabric.hpp"
#include "madengine/fabric/lft.hpp"

namespace madengine::sa {

struct PathAttrs {
  std::uint8_t hops = 0xff;  // switch-to-switch hops; 0xff: no route
  std::uint8_t mtu = 0;      // IBA MTU code, minimum along the path
  std::uint8_t rate = 0;     // IBA rate code, minimum along the path
  std::uint8_t reserved = 0;
  bool routed() const noexcept { return hops != 0xff; }
};
static_assert(sizeof(PathAttrs) == 4);

class PathDb {
 public:
  // Builds every shard (threads work on whole shards, so the result does not
  // depend on the thread count).
  static PathDb build(const fabric::Fabric& fabric, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                      unsigned shards, unsigned threads);

  unsigned shards() const noexcept { return static_cast<unsigned>(shards_.size()); }
  unsigned shard_of(std::uint16_t dlid) const noexcept { return dlid % shards(); }
  // From the switch `src_switch` (a NodeId) to `dlid`; nullptr if either is unknown.
  const PathAttrs* lookup(fabric::NodeId src_switch, std::uint16_t dlid) const noexcept;
  // A whole end-to-end path from an end port's LID to another's, including
  // the source's own link to its switch.
  PathAttrs path(std::uint16_t slid, std::uint16_t dlid) const noexcept;

  std::size_t bytes() const noexcept;
  std::size_t entries() const noexcept;

 private:
  struct Shard {
    std::vector<PathAttrs> table;  // [(dlid / shards) * switches + switch index]
  };
  // Where an end port's LID block enters the fabric: its switch and own link.
  struct Attach {
    std::uint32_t switch_index = ~0u;
    std::uint8_t mtu = 0;
    std::uint8_t rate = 0;
    std::uint8_t lid_count = 0;
  };
  std::vector<Shard> shards_;
  std::vector<std::uint32_t> switch_index_;  // NodeId -> switch index (~0u for CAs)
  std::vector<Attach> attach_;               // by LID
  std::uint32_t switches_ = 0;
  std::uint16_t top_lid_ = 0;
};

}  // namespace madengine::sa
