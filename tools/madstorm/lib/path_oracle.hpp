// The check a PathRecord answer goes through beyond "it names the ends that
// were asked for": a PathOracle compares it with the fabric itself (see
// fabric_oracle.hpp), independently of the SA under test.
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/sa/path_record.hpp"

namespace madstorm {

enum class PathVerdict : std::uint8_t {
  kOk,
  kUnknownEnd,     // SLID/DLID (or the GIDs) name no end port of the fabric
  kUnreached,      // the LFT walk from the source does not reach the DLID (no route, loop, port down)
  kMtu,            // not the smallest MTU of the walk's links
  kRate,           // not the slowest rate of the walk's links
  kPKey,           // not a partition both ports are in (with a full member)
  kSl,             // not the SL expected, or one the path has no data VL for
  kHopLimit,       // a HopLimit that would let packets leave the subnet
  kNotReversible,  // says Reversible but the walk back does not reach the source
};
inline constexpr std::size_t kPathVerdictCount = 9;
const char* to_string(PathVerdict v) noexcept;

struct PathCheck {
  PathVerdict verdict = PathVerdict::kOk;
  std::uint8_t hops = 0;  // links the walk crossed (when it reached the DLID)
};
inline constexpr std::size_t kPathHopsMax = 64;  // hop histogram range (hops above count as the last)

class PathOracle {
 public:
  virtual ~PathOracle() = default;
  virtual PathCheck check(const madengine::wire::PathRecord& rec) noexcept = 0;
};

}  // namespace madstorm
