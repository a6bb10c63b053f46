// The daemon under a service manager: systemd's notification protocol
// (sd_notify: READY=1 at the first subnet up or on entering STANDBY,
// STATUS= lines, WATCHDOG=1 only while every engine core and the SM's task
// loop are alive), the once-a-second refresh of what only the SM's core may
// read, and the log set-up that suits journald (no timestamps, <N> syslog
// priority prefixes) when stderr is the journal (JOURNAL_STREAM).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "madengine/node/config.hpp"
#include "node/control.hpp"

namespace madengine::service {

// A heavy sweep may run this long (wall time) before the watchdog calls the
// SM's loop stuck: routing 48k LIDs takes tens of seconds on 2 CPUs.
inline constexpr std::uint32_t kSweepStallMaxMs = 600'000;

class Supervisor {
 public:
  explicit Supervisor(node::NodeControl node);
  ~Supervisor();
  // Call often (the daemon's loop: every 50 ms). Does at most one check per
  // second: beats posted to every core, the SM's status refreshed, READY,
  // STATUS and WATCHDOG sent as due.
  void tick();
  // Whether the last check found every core and the SM loop alive.
  bool healthy() const noexcept { return healthy_; }
  bool ready_sent() const noexcept { return ready_sent_; }
  // STOPPING=1 (clean shutdown started).
  void stopping();
  std::string status_line() const;

 private:
  void check();

  node::NodeControl node_;
  std::uint64_t watchdog_usec_ = 0;  // 0: no watchdog asked for
  std::chrono::steady_clock::time_point next_check_{}, next_watchdog_{};
  // One beat per core per check; a core is alive when it ran the previous one.
  std::shared_ptr<std::vector<std::uint64_t>> beats_seen_;  // written by each core, read here (relaxed is enough: a late read only delays)
  std::uint64_t beat_ = 0;
  std::uint64_t sm_turns_ = 0;
  Nanos sweep_seen_ns_ = -1;  // the sweep start last seen, and when (wall)
  std::chrono::steady_clock::time_point sweep_seen_at_{};
  bool healthy_ = false;
  bool ready_sent_ = false;
  std::string last_status_;
};

// [log] for the daemon: node::apply_log_config, then journald's format when
// logging to stderr and stderr is the journal. Re-callable (SIGHUP reopens).
void apply_daemon_log(const node::LogSection& log);
// JOURNAL_STREAM names stderr's device and inode (systemd.exec(5)).
bool stderr_is_journal() noexcept;

}  // namespace madengine::service
