// The persistent GUID -> LID map in OpenSM's guid2lid format
// ("0x0002c90300000003 0x0037 0x0037", hex LIDs, a blank line after each
// entry), so an operator replacing OpenSM keeps every LID and can go back.
// Plain decimal LIDs (earlier madengine files) are read too. Saves are atomic
// and durable (write, fsync, rename, fsync of the folder).
//
// The fabric the file describes (our SM port and subnet prefix) is its first
// entry, a line OpenSM's reader passes over (osm_db takes "#fabric" as a key,
// logs "ERR 610B: Key:#fabric is invalid" and drops it, then reads every
// other entry) and never writes back:
//   #fabric sm_port_guid 0x0002c90300000001 subnet_prefix 0xfe80000000000000
// A file without it (OpenSM's, an earlier madengine's) names no fabric.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "sa/state/fabric_identity.hpp"

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

// A missing file is an empty map, not an error (a first start). `fabric`
// (if given) receives the file's fabric line, unknown without one.
bool load_guid2lid(const std::string& path, Guid2Lid& out, Guid2LidError& err, sa::FabricIdentity* fabric = nullptr);
// With a known `fabric`, the file names it.
bool save_guid2lid(const std::string& path, const Guid2Lid& map, Guid2LidError& err, const sa::FabricIdentity& fabric = {});
// The file's text, as save_guid2lid() writes it.
std::string format_guid2lid(const Guid2Lid& map, const sa::FabricIdentity& fabric = {});

}  // namespace madengine::sm
