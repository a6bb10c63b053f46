// [perfmgr] of the daemon's TOML: the performance manager's settings
// (perfmgr/perf_config.hpp). Read beside NodeConfig rather than in it, so
// libmadengine's NodeConfig keeps its layout (the ABI stays additive); the
// daemon and the C ABI read it from the same text and hand it to the node
// through InternalOptions.
#pragma once

#include <string>

#include "perfmgr/perf_config.hpp"

namespace madengine::node {

// Throws ConfigError naming name:line of a bad or unknown key. No
// [perfmgr] section: the defaults (the manager off).
perfmgr::PerfMgrConfig parse_perfmgr_config(const std::string& toml_text, const std::string& name);
perfmgr::PerfMgrConfig load_perfmgr_config(const std::string& path);

}  // namespace madengine::node
