// The command-line conventions the tools share: `--version` prints the
// project's version, and a bad flag or value exits 2 with CLI11's message,
// as the manual pages promise (CLI11's own codes are 105, 106, 109, ...).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "madengine_version.h"

namespace madengine::cli {

inline constexpr int kExitUsage = 2;

inline void add_version_flag(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", program + " " + MADENGINE_VERSION_STRING, "print the version and exit");
}

// Parses the command line. Nothing when the tool goes on; else the status
// to exit with: 0 after --help or --version, kExitUsage after a usage error
// (the message and a pointer to --help are on stderr).
inline std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
}

}  // namespace madengine::cli
