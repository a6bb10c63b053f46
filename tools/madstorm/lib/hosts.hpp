// Where the storm's hosts come from: the SA itself (a NodeRecord GetTable,
// reassembled with the engine's RMPP receiver, or a NodeRecord Get per LID)
// or a hosts file of "LID PORT_GUID [NODE_GUID]" lines. Start-up code.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/storm.hpp"
#include "lib/workload.hpp"
#include "madengine/engine/clock.hpp"
#include "madengine/engine/transport.hpp"

namespace madstorm {

enum class DiscoverMethod : std::uint8_t {
  kAuto,   // GetTable, then the scan if the table does not come back whole
  kTable,  // one NodeRecord GetTable (RMPP answer)
  kScan,   // NodeRecord Get for LID 1, 2, ... until a whole batch has no record
};

struct DiscoverOptions {
  DiscoverMethod method = DiscoverMethod::kAuto;
  std::uint32_t timeout_ms = 2000;  // per attempt
  std::uint8_t retries = 3;
  std::uint32_t scan_batch = 64;    // LIDs asked at once; an empty batch ends the scan
  // The port delivers received MADs cut short: ibsim's umad2sim keeps 224 of
  // 256 bytes and fills the rest from beyond its buffer, so every full RMPP
  // segment loses 32 bytes of records. kAuto then scans (one-record answers
  // fit) instead of trusting a table.
  bool mads_cut_short = false;
};

// Every channel-adapter port the SA knows (NodeRecords of node type CA),
// sorted by LID. Empty with `error` set when the SA gives no usable answer.
// A table whose records cannot all be right (node type out of range, a CA
// without LID or GUID, a LID or port GUID twice) is refused as corrupt, and
// kAuto scans. On ibsim the scan is needed: umad2sim does not segment
// OpenSM's multi-MAD answers (it passes the first 256 bytes, RMPP version 0)
// and cuts every MAD it delivers to 224 bytes (see mads_cut_short).
std::vector<Host> discover_hosts(madengine::Transport& transport, const madengine::Clock& clock, const SaTarget& sa,
                                 const std::function<void(Nanos)>& idle, const DiscoverOptions& opts,
                                 std::string& error);

// Reads "LID PORT_GUID [NODE_GUID]" lines ('#' comments, numbers in decimal
// or 0x hex). Throws std::runtime_error naming the file and line on bad input.
std::vector<Host> load_hosts_file(const std::string& path);
// Writes `hosts` in that format (a later run can skip discovery, or storm an
// SA that answers no NodeRecords). Throws std::runtime_error if it cannot.
void save_hosts_file(const std::string& path, const std::vector<Host>& hosts);

}  // namespace madstorm
