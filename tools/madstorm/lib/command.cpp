// The run request, the reported storm, the JSON file and the verdict, as
// both madstorm executables use them.
#include "lib/command.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "lib/report.hpp"
#include "lib/storm.hpp"

namespace madstorm {

namespace {
// The storm in progress, for stop_running_storm(); one at a time.
std::atomic<Storm*> g_storm{nullptr};
}  // namespace

RunRequest base_request(const Options& o, const madengine::Transport& t, std::uint16_t sa_lid, const std::string& label) {
  RunRequest req;
  req.info.label = label;
  req.info.transport = std::string(t.name());
  req.info.storm = o.storm;
  req.info.storm.sa.lid = sa_lid;
  req.info.storm.sa.subnet_prefix = t.local_port().subnet_prefix;
  req.info.workload = o.workload;
  req.info.wall.shard_source = o.shard_source;
  req.hosts_file = o.hosts_file;
  req.save_hosts = o.save_hosts;
  req.discover.method = o.discover == "table" ? DiscoverMethod::kTable
                        : o.discover == "scan" ? DiscoverMethod::kScan
                                               : DiscoverMethod::kAuto;
  req.discover.mads_cut_short = o.mads_cut_short;
  req.start_at_unix_ns = o.start_at_unix_ns;
  req.progress = !o.no_progress && ::isatty(STDOUT_FILENO);
  return req;
}

std::optional<RunOutput> run_reported(const RunRequest& req, madengine::Transport& t, const madengine::Clock& clock,
                                      const std::function<void(Nanos)>& idle) {
  std::string err;
  auto out = run_storm(req, t, clock, idle, err, [](Storm* s) { g_storm.store(s, std::memory_order_relaxed); });
  if (!out) fmt::print(stderr, "madstorm: {}\n", err);
  return out;
}

void stop_running_storm() noexcept {
  // request_stop() only stores to an atomic: async-signal-safe.
  if (Storm* s = g_storm.load(std::memory_order_relaxed)) s->request_stop();
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

int verdict(const Options& o, const std::vector<const RunOutput*>& runs, std::vector<std::string> problems) {
  std::uint64_t errors = 0;
  for (const RunOutput* r : runs) {
    errors += r->result.counters.errors;
    if (o.strict) {
      auto p = strict_problems(r->result, r->planned);
      problems.insert(problems.end(), p.begin(), p.end());
    }
  }
  if (!o.strict) return errors != 0 ? 3 : 0;
  if (problems.empty()) {
    fmt::print(stdout, "madstorm: strict check passed: every planned query answered, every answer right\n");
    return 0;
  }
  std::fflush(stdout);  // the summary first, then why it failed
  for (const std::string& p : problems) fmt::print(stderr, "madstorm: FAILED: {}\n", p);
  return errors != 0 ? 3 : 4;
}

}  // namespace madstorm
