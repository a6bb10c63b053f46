// run_storm: hosts, workload, common start, storm, report.
#include "lib/runner.hpp"

#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <algorithm>

#include <fmt/format.h>

namespace madstorm {

std::int64_t wall_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t sleep_until_wall(std::int64_t unix_ns) noexcept {
  const timespec at{static_cast<time_t>(unix_ns / 1'000'000'000), static_cast<long>(unix_ns % 1'000'000'000)};
  while (wall_now_ns() < unix_ns && clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
  return std::max<std::int64_t>(0, wall_now_ns() - unix_ns);
}

std::optional<RunOutput> run_storm(const RunRequest& req, madengine::Transport& transport,
                                   const madengine::Clock& clock, const std::function<void(Nanos)>& idle,
                                   std::string& error, const std::function<void(Storm*)>& on_storm) {
  std::vector<Host> hosts = req.hosts;
  if (hosts.empty() && !req.hosts_file.empty()) {
    hosts = load_hosts_file(req.hosts_file);
  } else if (hosts.empty()) {
    hosts = discover_hosts(transport, clock, req.info.storm.sa, idle, req.discover, error);
    if (hosts.empty()) {
      error = "host discovery failed: " + (error.empty() ? std::string("the SA knows no CA ports") : error);
      return std::nullopt;
    }
  }
  if (!req.save_hosts.empty()) save_hosts_file(req.save_hosts, hosts);
  Workload workload(req.info.workload, hosts);
  Storm storm(req.info.storm, transport, clock, hosts, workload);
  storm.set_idle(idle);
  storm.set_oracle(req.oracle);
  if (req.progress) {
    std::FILE* out = req.out;
    storm.set_progress([out](const Progress& p) {
      const std::string eta = p.eta_s >= 0 ? fmt::format("{:.0f} s", p.eta_s) : "?";
      fmt::print(out, "\r  {:7.1f} s  issued {:>9}  answered {:>9}  failed {:>6}  in flight {:>5}  {:>9.0f} q/s  ETA {}   ",
                 static_cast<double>(p.since_start_ns) / 1e9, p.issued, p.answered, p.failed, p.in_flight, p.rate_qps,
                 eta);
      std::fflush(out);
    });
  }
  RunInfo info = req.info;
  if (info.wall.host.empty()) {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0) info.wall.host = name;
  }
  info.wall.start_at_unix_ns = req.start_at_unix_ns;
  if (req.start_at_unix_ns != 0) {
    const std::int64_t wait_ns = req.start_at_unix_ns - wall_now_ns();
    if (wait_ns > 0) {
      fmt::print(req.out, "madstorm: {} hosts ready; starting in {:.3f} s (--start-at)\n", hosts.size(),
                 static_cast<double>(wait_ns) / 1e9);
      std::fflush(req.out);
    }
    const std::int64_t late_ns = sleep_until_wall(req.start_at_unix_ns);
    if (late_ns > 1'000'000)
      fmt::print(stderr, "madstorm: started {:.3f} s after --start-at ({})\n", static_cast<double>(late_ns) / 1e9,
                 wait_ns > 0 ? "woken late: a busy machine" : "set-up ended after it");
  }
  // The storm's clock is monotonic; the wall clock at its zero lets merged
  // runs of several hosts share one time line.
  const std::int64_t wall0 = wall_now_ns();
  const Nanos steady0 = clock.now_ns();
  if (on_storm) on_storm(&storm);
  RunOutput o;
  o.result = storm.run();
  if (on_storm) on_storm(nullptr);
  // A duration or a warm-up makes the measured count depend on speed: no plan then.
  const StormConfig& sc = req.info.storm;
  const std::uint64_t total = workload.total();
  if (sc.duration_ms == 0 && sc.warmup_ms == 0)
    o.planned = sc.queries_max == 0 ? total : (total == 0 ? sc.queries_max : std::min(sc.queries_max, total));
  info.wall.start_unix_ns = wall0 + (o.result.measure_start_ns - steady0);
  if (req.progress) fmt::print(req.out, "\n");
  print_summary(req.out, info, o.result);
  if (!req.plot_path.empty()) write_svg(req.plot_path, info, o.result);
  if (!req.html_path.empty()) write_html(req.html_path, info, o.result);
  o.json = to_json(info, o.result);
  return o;
}

}  // namespace madstorm
