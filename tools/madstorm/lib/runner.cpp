// run_storm: hosts, workload, storm, report.
#include "lib/runner.hpp"

#include <fmt/format.h>

namespace madstorm {

std::optional<nlohmann::json> run_storm(const RunRequest& req, madengine::Transport& transport,
                                        const madengine::Clock& clock, const std::function<void(Nanos)>& idle,
                                        std::string& error, const std::function<void(Storm*)>& on_storm) {
  std::vector<Host> hosts;
  if (!req.hosts_file.empty()) {
    hosts = load_hosts_file(req.hosts_file);
  } else {
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
  if (on_storm) on_storm(&storm);
  const StormResult r = storm.run();
  if (on_storm) on_storm(nullptr);
  if (req.progress) fmt::print(req.out, "\n");
  print_summary(req.out, req.info, r);
  if (!req.plot_path.empty()) write_svg(req.plot_path, req.info, r);
  return to_json(req.info, r);
}

}  // namespace madstorm
