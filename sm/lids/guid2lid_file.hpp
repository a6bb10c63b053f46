// The persistent GUID -> LID map. Same line format as OpenSM's guid2lid file
// ("0xGUID MIN_LID MAX_LID"), so an operator replacing OpenSM keeps every LID.
// Saves are atomic (write + rename), so a crash never leaves half a file.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace madengine::sm {

struct LidRange {
  std::uint16_t min_lid = 0;
  std::uint16_t max_lid = 0;
  bool operator==(const LidRange&) const noexcept = default;
};

using Guid2Lid = std::map<std::uint64_t, LidRange>;  // ordered: deterministic files and conflicts

struct Guid2LidError {
  int line = 0;  // 0: the file as a whole (cannot open, cannot write)
  std::string what;
};

// A missing file is an empty map, not an error (a first start).
bool load_guid2lid(const std::string& path, Guid2Lid& out, Guid2LidError& err);
bool save_guid2lid(const std::string& path, const Guid2Lid& map, Guid2LidError& err);

}  // namespace madengine::sm
