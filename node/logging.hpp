// The library's log where the embedder set none: stderr, in the daemon's
// format (logging.cpp also applies a [log] section, madengine/node/config.hpp).
#pragma once

namespace madengine::node {

// spdlog's own default logger writes to stdout, into the embedder's output:
// while it is still that one (the embedder set no logger of its own), the
// library's log goes to stderr instead.
void log_to_stderr_unless_set() noexcept;

}  // namespace madengine::node
