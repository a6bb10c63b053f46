// The daemon's own settings beside the node's: where metrics are served
// ([metrics]) and where the admin socket listens ([admin]). Read from the
// same TOML file; errors name the file and line like the node's.
#pragma once

#include <string>

#include "perfmgr/perf_config.hpp"

namespace madengine::service {

inline constexpr const char* kDefaultAdminSocket = "/run/madengine/admin.sock";

struct ServiceConfig {
  std::string metrics_listen;                      // "HOST:PORT"; empty: no metrics endpoint
  std::string admin_socket = kDefaultAdminSocket;  // empty: no admin socket
  bool admin_socket_given = false;                 // the file (or a flag) named it
  // [perfmgr]: read by the node's parser (node/perfmgr_keys.hpp) from the same file.
  perfmgr::PerfMgrConfig perfmgr;
};

// The daemon on a simulated fabric opens no admin socket unless one was
// named (as it keeps no state files): a demo never takes the real daemon's
// socket. On a real port the default stands.
void apply_service_defaults(ServiceConfig& c, bool simulated);

// Throws node::ConfigError naming `name:line` of a bad or unknown key.
ServiceConfig parse_service_config(const std::string& toml_text, const std::string& name);
ServiceConfig load_service_config(const std::string& path);

// "127.0.0.1:9464", "[::1]:9464", ":9464" (every address) -> host and port;
// false with `error` set otherwise.
bool parse_listen(const std::string& text, std::string& host, unsigned& port, std::string& error);

}  // namespace madengine::service
