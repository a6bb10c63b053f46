// madsim: deterministic scenarios for the whole SM + SA. Each seed draws a
// fabric, SMs, clients and faults; the run is checked against madengine's
// invariants; a failing seed prints the one command that replays it.
//   madsim --seed 17                 one seed, its violations and replay line
//   madsim --seeds 1-300             a range (CI), a summary at the end
//   madsim --seeds 1-100000 --hours 8 --size medium   nights
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "lib/runner.hpp"
#include "lib/scenario.hpp"

namespace {

// What a crash handler prints: the replay line of the seed that was running.
char g_crash_line[256] = "madsim: crashed before any seed ran\n";

void on_crash(int sig) {
  const ssize_t n = ::write(STDERR_FILENO, g_crash_line, std::strlen(g_crash_line));
  (void)n;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

bool parse_range(const std::string& text, std::uint64_t& lo, std::uint64_t& hi) {
  const auto dash = text.find('-');
  try {
    lo = std::stoull(text.substr(0, dash));
    hi = dash == std::string::npos ? lo : std::stoull(text.substr(dash + 1));
  } catch (const std::exception&) {
    return false;
  }
  return lo <= hi;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"madsim: seeded scenarios (fabric, SMs, clients, faults) against madengine's invariants"};
  std::uint64_t seed = 0;
  std::string seeds, size_text = "small";
  double hours = 0;
  bool trace = false, describe_only = false, sm_logs = false, keep = false, quiet = false;
  std::string work_dir;
  app.add_option("--seed", seed, "run this one seed");
  app.add_option("--seeds", seeds, "run a range of seeds, A-B");
  app.add_option("--hours", hours, "stop a range after this many hours of wall time");
  app.add_option("--size", size_text, "fabric sizes: small (CI), medium, large");
  app.add_flag("--trace", trace, "print the event trace of each seed");
  app.add_flag("--describe", describe_only, "print the scenario a seed draws and do not run it");
  app.add_flag("--sm-logs", sm_logs, "the SMs' own logs (info) on stderr");
  app.add_option("--work-dir", work_dir, "keep each SM's guid2lid and journal under this folder");
  app.add_flag("--keep-work-dir", keep, "do not remove the state files at the end");
  app.add_flag("-q,--quiet", quiet, "only failures and the summary");
  CLI11_PARSE(app, argc, argv);
  madsim::Size size;
  if (!madsim::parse_size(size_text, size)) {
    fmt::print(stderr, "madsim: --size {}: expected small, medium or large\n", size_text);
    return 2;
  }
  std::uint64_t lo = seed, hi = seed;
  if (!seeds.empty() && !parse_range(seeds, lo, hi)) {
    fmt::print(stderr, "madsim: --seeds {}: expected A-B with A <= B\n", seeds);
    return 2;
  }
  if (seeds.empty() && app.count("--seed") == 0) {
    fmt::print(stderr, "madsim: give --seed N or --seeds A-B\n");
    return 2;
  }
  for (const int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_crash);
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t ran = 0, failed = 0;
  double sim_s = 0;
  std::string failures;
  for (std::uint64_t s = lo; s <= hi; ++s) {
    if (hours > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > hours * 3600) break;
    const madsim::Scenario sc = madsim::draw_scenario(s, size);
    if (describe_only) {
      fmt::print("{}", madsim::describe(sc));
      continue;
    }
    std::snprintf(g_crash_line, sizeof g_crash_line, "madsim: CRASH in seed %llu; replay: %s\n",
                  static_cast<unsigned long long>(s), madsim::replay_command(sc).c_str());
    madsim::RunOptions opts;
    opts.sm_logs = sm_logs;
    opts.work_dir = work_dir;
    opts.keep_work_dir = keep;
    const madsim::RunResult r = madsim::run_scenario(sc, opts);
    ++ran;
    sim_s += static_cast<double>(r.stats.sim_ns) / 1e9;
    if (trace)
      for (std::size_t i = 0; i < r.trace.entries().size(); ++i) fmt::print("  {}\n", r.trace.format(i));
    const auto& st = r.stats;
    if (!quiet || !r.ok())
      fmt::print("{} seed {}: {}; {} queries ({} answered, {} busy, {} excused, {} lost), {} sweeps, {} kills, {} "
                 "takeovers, {} SMPs dropped, {} LFT walks, {} paths; digest {:016x}\n",
                 r.ok() ? "ok  " : "FAIL", s, sc.fabric_spec, st.queries, st.answered, st.busy, st.excused, st.lost,
                 st.heavy_sweeps, st.kills, st.takeovers, st.smp_dropped, st.lft_pairs, st.paths_checked, r.digest);
    if (!r.ok()) {
      ++failed;
      fmt::print("{}", madsim::describe(sc));
      for (const madsim::Violation& v : r.violations)
        fmt::print("  violated {} at {:.3f} s: {}\n    after {}\n", v.invariant, static_cast<double>(v.at_ns) / 1e9,
                   v.detail, v.after_event);
      fmt::print("  replay: {}\n", madsim::replay_command(sc));
      failures += fmt::format("  {}\n", madsim::replay_command(sc));
    }
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!describe_only) {
    fmt::print("madsim: {} seeds, {} failed; {:.1f} s simulated, {:.1f} s wall\n{}", ran, failed, sim_s, wall, failures);
  }
  return failed == 0 ? 0 : 1;
}
