// Phase 1 of the min-hop family: each switch's distance to every
// destination switch along the paths the engine allows. One byte per
// (switch, destination), stored by switch so that one row holds a switch's
// distances to every destination: the LFT phase compares a switch's row with
// its neighbours' rows. Hops in the low 7 bits; for up/down, bit 7 marks a
// switch whose route to that destination goes only down from here.
#pragma once

#include <cstdint>
#include <vector>

#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

inline constexpr std::uint8_t kHopUnreachable = 0xff;
inline constexpr std::uint8_t kHopDownMode = 0x80;
inline constexpr std::uint8_t kHopMask = 0x7f;

struct HopTables {
  std::size_t switches = 0;
  std::size_t stride = 0;          // row length: switches rounded up to 64 (threads write whole cache lines)
  std::vector<std::uint8_t> hops;  // [sw * stride + dest]
  // Up/down: destinations some switch can reach only against the up*/down*
  // rule (e.g. spine to spine management LIDs). Their whole table is min-hop,
  // so routes stay loop-free; they are counted and reported.
  std::vector<std::uint8_t> minhop_fallback;  // by destination, 0/1
  std::uint8_t at(SwIdx dest, SwIdx sw) const noexcept { return hops[sw * stride + dest]; }
  const std::uint8_t* row(SwIdx sw) const noexcept { return hops.data() + sw * stride; }
};

// Plain min-hop distances (ranking == nullptr) or up*/down*-legal ones.
HopTables compute_hop_tables(const SwitchGraph& g, const Ranking* ranking, unsigned threads);

}  // namespace madengine::sm
