// The daemon's command line: its flags, each bound to the config field it
// overrides, and the configuration the daemon runs, built from the file,
// the flags and the defaults derived from both (at start and at each SIGHUP).
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "madengine/node/config.hpp"
#include "service/service_config.hpp"

namespace madengine::daemon_cli {

// A flag bound to its own copy of a config field: after the file is read,
// only the flags that were given overwrite it (so 0 or "" can be set too).
class Overrides {
 public:
  template <typename T>
  CLI::Option* add(CLI::App& app, const std::string& name, T& field_in_file_config, const std::string& help) {
    auto value = std::make_shared<T>();
    CLI::Option* opt = app.add_option(name, *value, help);
    applies_.push_back([opt, value, &field_in_file_config] {
      if (opt->count() != 0) field_in_file_config = *value;
    });
    return opt;
  }
  void apply() const {
    for (const auto& f : applies_) f();
  }

 private:
  std::vector<std::function<void()>> applies_;
};

// The command line: the flags bound to a config's fields (Overrides) and
// those the daemon derives defaults from.
struct CommandLine {
  std::string config_file, transport, sa_journal, metrics_listen, admin_socket;
  bool exit_after_up = false;
  // A test fault (sim transport only, not in --help): once the subnet is up,
  // the SM's core runs a command that does not return for this long, as a
  // core stuck in a device call would; a shutdown then ends forced (70).
  unsigned sim_wedge_core_ms = 0;
  Overrides flags;
  CLI::Option* transport_opt = nullptr;
  CLI::Option* guid2lid_opt = nullptr;
  CLI::Option* journal_opt = nullptr;
  CLI::Option* guid2mkey_opt = nullptr;
  CLI::Option* metrics_opt = nullptr;
  CLI::Option* admin_opt = nullptr;
};

// Adds every flag (and --version) to `app`; the node's flags are bound to `cfg`.
void add_flags(CLI::App& app, CommandLine& cl, node::NodeConfig& cfg);
// The configuration the daemon runs: the file's values, the flags that were
// given on top, then the defaults derived from both. The same at start and
// at each SIGHUP, so a reload compares like with like. `cfg` is the config
// the flags were bound to. Throws node::ConfigError.
void load_configuration(const CommandLine& cl, node::NodeConfig& cfg, service::ServiceConfig& svc);

}  // namespace madengine::daemon_cli
