// Where the storm's hosts come from: the SA itself (a NodeRecord GetTable,
// reassembled with the engine's RMPP receiver) or a hosts file of
// "LID PORT_GUID [NODE_GUID]" lines. Start-up code: may allocate and throw.
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

struct DiscoverOptions {
  std::uint32_t timeout_ms = 2000;  // per attempt
  std::uint8_t retries = 3;
};

// Every channel-adapter port the SA knows (NodeRecords of node type CA),
// sorted by LID. Empty with `error` set when the SA gives no usable answer.
std::vector<Host> discover_hosts(madengine::Transport& transport, const madengine::Clock& clock, const SaTarget& sa,
                                 const std::function<void(Nanos)>& idle, const DiscoverOptions& opts,
                                 std::string& error);

// Reads "LID PORT_GUID [NODE_GUID]" lines ('#' comments, numbers in decimal
// or 0x hex). Throws std::runtime_error naming the file and line on bad input.
std::vector<Host> load_hosts_file(const std::string& path);

}  // namespace madstorm
