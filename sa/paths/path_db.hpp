// The path-record database: for every (source switch, destination LID) the
// hop count, MTU, rate and SL (the VL layer deadlock-free routing gave the
// path) of the routed path from that switch to the destination port,
// precomputed after each routing pass. A PathRecord between
// two end ports is then one lookup plus the source's own link.
//
// Compact layout: every LID behind one destination switch shares the
// switch-to-switch part of its paths, so the database keeps one byte per
// (source switch, destination switch) (an index into a small palette of
// {hops, MTU, rate}), each LID's own last link, and an exception list for the
// (source switch, LID) pairs whose routed path differs from its switch's
// (LFTs route per DLID: under some routings two LIDs behind one switch cross
// different links). Answers are exactly those of a full per-LID table.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/lft.hpp"
#include "fabric/path_layers.hpp"

namespace madengine::sa {

struct PathAttrs {
  std::uint8_t hops = 0xff;  // switch-to-switch hops; 0xff: no route
  std::uint8_t mtu = 0;      // IBA MTU code, minimum along the path
  std::uint8_t rate = 0;     // IBA rate code, minimum along the path
  std::uint8_t sl = 0;       // the path's layer (SL) when routing layered it, else 0
  bool routed() const noexcept { return hops != 0xff; }
  friend bool operator==(const PathAttrs&, const PathAttrs&) = default;
};
static_assert(sizeof(PathAttrs) == 4);

class PathDb {
 public:
  // Builds the database with `threads` threads (each destination switch is
  // built by one thread, so the result does not depend on the thread count).
  // `shards` is the number of SA cores the DLIDs are steered across.
  // `layers` (indexed like `lfts`): each path's SL; nullptr or a single
  // layer: every path SL 0, and layered() is false.
  static PathDb build(const fabric::Fabric& fabric, const std::vector<fabric::Lft>& lfts, std::uint16_t top_lid,
                      unsigned shards, unsigned threads, const fabric::PathLayers* layers = nullptr);

  // A re-sweep that found the same fabric (the same nodes by GUID, links,
  // link MTUs, widths and speeds, and LIDs; discovery may number the nodes
  // differently) and routed it the same (every switch's LFT by GUID, every
  // path SL 0) can take the database of the last one: `db` renumbered for
  // `now`. Returns false, leaving `out` alone, when something differs.
  static bool reuse(const PathDb& db, const fabric::Fabric& db_fabric, const fabric::Fabric& now, PathDb& out);

  // The SLs come from a layered (deadlock-free over several VLs) routing:
  // a PathRecord must carry the path's SL, and no other.
  bool layered() const noexcept { return layered_; }

  unsigned shards() const noexcept { return shards_; }
  // The SA core that answers paths to `dlid` (the engine steers by DLID).
  unsigned shard_of(std::uint16_t dlid) const noexcept { return dlid % shards_; }
  // From the switch `src_switch` (a NodeId) to `dlid`, including the
  // destination's own link; unrouted if either is unknown.
  PathAttrs lookup(fabric::NodeId src_switch, std::uint16_t dlid) const noexcept;
  // A whole end-to-end path from an end port's LID to another's, including
  // the source's own link to its switch.
  PathAttrs path(std::uint16_t slid, std::uint16_t dlid) const noexcept;
  // Pull the cache lines path(slid, dlid) reads, for a burst of queries in
  // two passes: first every query's per-LID entries, then (once those have
  // arrived) every query's (source switch, destination switch) byte.
  void prefetch_ends(std::uint16_t slid, std::uint16_t dlid) const noexcept {
    if (slid >= attach_.size() || dlid >= attach_.size()) return;
    __builtin_prefetch(&attach_[slid]);
    __builtin_prefetch(&attach_[dlid]);
  }
  void prefetch(std::uint16_t slid, std::uint16_t dlid) const noexcept;

  // Where an end port's LID enters the fabric: its switch, its own link
  // (source side), the last link towards it (destination side) and where its
  // exceptions are. The SA copies each LID's into its per-LID entry, so a
  // PathRecord reads one line per end (path(const Attach&, const Attach&)).
  struct Attach {
    std::uint32_t switch_index = ~0u;
    std::uint8_t mtu = 0;       // the port's own link, as a source
    std::uint8_t rate = 0;
    std::uint8_t exit_mtu = 0;  // the destination switch's link to this LID
    std::uint8_t exit_rate = 0;
    std::uint32_t exc_offset = 0;  // into exceptions_ (sparse) or dense_ (dense)
    std::uint16_t exc_count = 0;   // sparse exceptions, sorted by switch
    std::uint8_t dense = 0;        // 1: a full row of switches_ entries in dense_
    std::uint8_t lid_count = 0;    // 0: no port has this LID
  };
  static_assert(sizeof(Attach) == 16);
  // Which build the per-LID entries come from (0: never built): a copy of
  // them (the snapshot's LID entries) is current while this is unchanged.
  std::uint64_t generation() const noexcept { return generation_; }
  // The entry of `lid` (an unrouted one beyond the database).
  Attach attach(std::uint16_t lid) const noexcept { return lid != 0 && lid < attach_.size() ? attach_[lid] : Attach{}; }
  // path(slid, dlid) from the two LIDs' entries, as attach() gave them.
  PathAttrs path(const Attach& src, const Attach& dst) const noexcept;
  // The (source switch, destination switch) byte path(src, dst) reads.
  void prefetch(const Attach& src, const Attach& dst) const noexcept { prefetch_switches(src.switch_index, dst.switch_index); }
  // The same by the switches' indexes (Attach::switch_index), however learnt.
  void prefetch_switches(std::uint32_t src, std::uint32_t dst) const noexcept {
    if (src < switches_ && dst < switches_) __builtin_prefetch(group_.data() + std::size_t{src} * switches_ + dst);
  }

  // Every (source switch, end-port LID) pair is routed: a path one way
  // implies the way back, and PathRecord's Reversible needs no second lookup.
  bool all_routed() const noexcept { return all_routed_; }

  std::size_t bytes() const noexcept;
  // (source switch, destination switch) entries plus exceptions.
  std::size_t entries() const noexcept { return group_.size() + exceptions_.size() + dense_.size(); }
  // (source switch, LID) pairs stored apart from their switch's entry (dense rows included).
  std::size_t exceptions() const noexcept { return exceptions_.size() + dense_.size(); }
  std::size_t palette_size() const noexcept { return palette_count_; }

 private:
  friend struct PathDbCodec;  // the persisted epoch (sa/state/epoch_file.cpp)
  struct Exception {
    std::uint32_t switch_index;
    PathAttrs attrs;
  };
  static constexpr std::uint8_t kEscape = 0xff;  // palette code: see the exceptions

  PathAttrs lookup_index(std::uint32_t s, const Attach& d) const noexcept;

  unsigned shards_ = 1;
  std::vector<std::uint8_t> group_;          // [src switch * switches_ + dst switch] -> palette code
  // Switch-to-switch parts by code; kEscape (always listed as exceptions) and
  // unused codes read as unrouted, so any code indexes safely.
  std::array<PathAttrs, 256> palette_{};
  std::uint32_t palette_count_ = 0;
  std::vector<Exception> exceptions_;
  std::vector<PathAttrs> dense_;
  std::vector<std::uint32_t> switch_index_;  // NodeId -> switch index (~0u for CAs)
  std::vector<Attach> attach_;               // by LID
  std::uint32_t switches_ = 0;
  std::uint16_t top_lid_ = 0;
  bool all_routed_ = false;
  bool layered_ = false;
  std::uint64_t generation_ = 0;
};

}  // namespace madengine::sa
