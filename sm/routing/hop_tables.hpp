// Phase 1 of routing: for every destination switch, each switch's distance
// to it along the paths the engine allows. One byte per (destination,
// switch): hops in the low 7 bits; for up/down, bit 7 marks a switch whose
// route to that destination goes only down from here.
#pragma once

#include <cstdint>
#include <vector>

#include "sm/routing/routing.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

inline constexpr std::uint8_t kHopUnreachable = 0xff;
inline constexpr std::uint8_t kHopDownMode = 0x80;
inline constexpr std::uint8_t kHopMask = 0x7f;

struct HopTables {
  std::size_t switches = 0;
  std::vector<std::uint8_t> hops;  // [dest * switches + sw]
  // Up/down: destinations some switch can reach only against the up*/down*
  // rule (e.g. spine to spine management LIDs). Their whole table is min-hop,
  // so routes stay loop-free; they are counted and reported.
  std::vector<bool> minhop_fallback;
  std::uint8_t at(SwIdx dest, SwIdx sw) const noexcept { return hops[dest * switches + sw]; }
};

HopTables compute_hop_tables(const SwitchGraph& g, const Ranking* ranking, unsigned threads);

}  // namespace madengine::sm
