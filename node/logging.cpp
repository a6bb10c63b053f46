// [log] applied to the process's log (spdlog's default logger), as the
// daemon does at start (and again on SIGHUP, which reopens the file after
// logrotate moved it) and libmadengine's me_node_create when [log] is given.
#include "node/logging.hpp"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "madengine/node/config.hpp"

namespace madengine::node {

namespace {
constexpr const char* kPattern = "%Y-%m-%d %H:%M:%S.%e %^%l%$ %v";
}  // namespace

void log_to_stderr_unless_set() noexcept {
  try {
    if (!spdlog::default_logger()->name().empty()) return;  // the embedder's own
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("madengine", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
    spdlog::set_pattern(kPattern);
  } catch (...) {
    // spdlog could not make the sink: the log stays where it was.
  }
}

void apply_log_config(const LogSection& log) {
  // Not registered by name: a second call (SIGHUP) replaces the first
  // logger instead of clashing with it in spdlog's registry.
  if (!log.file.empty())
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("madengine", std::make_shared<spdlog::sinks::basic_file_sink_mt>(log.file)));
  spdlog::set_level(spdlog::level::from_str(log.level));
  spdlog::set_pattern(kPattern);
  // A log file is read while the daemon runs (tail -f, an operator after an
  // incident): warnings and errors at once, everything else within a second.
  spdlog::flush_on(spdlog::level::warn);
  spdlog::flush_every(std::chrono::seconds(1));
}

}  // namespace madengine::node
