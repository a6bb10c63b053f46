// The persistent GUID -> LID map in OpenSM's guid2lid format
// ("0x0002c90300000003 0x0037 0x0037", hex LIDs, a blank line after each
// entry), so an operator replacing OpenSM keeps every LID and can go back.
// Plain decimal LIDs (earlier madengine files) are read too. Saves are atomic
// and durable (write, fsync, rename, fsync of the folder).
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
// The file's text, as save_guid2lid() writes it.
std::string format_guid2lid(const Guid2Lid& map);

}  // namespace madengine::sm
