// Restart under a query storm on ibsim: the madengine daemon brings a fat
// tree up from bare ibsim, madstorm storms its SA (open-loop random
// PathRecord Gets), the daemon is SIGKILLed mid-storm and started again
// with the same guid2lid, SA journal and persisted epoch. A probe on
// another host (this binary again, as an ibsim client) asks a PathRecord
// every millisecond and times, from the new process's exec, the first
// answer identical to the one it got before the kill; then it checks
// every PathRecord and NodeRecord it recorded. OpenSM is then started,
// stormed, SIGKILLed and restarted the same way in the same run (its
// cache: guid2lid) for comparison.
//
//   restart_storm_bench [FABRIC=ft3:36:36] [RATE_QPS=2000] [opensm|no-opensm] [MADENGINE_BIN]
//
// Exits 3 when madengine's first correct answer comes later than 100 ms
// after its exec, any probed answer differs from before the kill, or the
// storm saw a wrong answer. Results: stdout; files in the printed folder.
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sa_probe.hpp"
#include "storm_rig.hpp"

using namespace madengine;
using namespace std::chrono_literals;
using Mono = std::chrono::steady_clock;

namespace {

constexpr double kTargetMs = 100;
constexpr double kStormTimeoutMs = 100;  // madstorm's re-send timeout (50 re-sends: a 5 s outage loses nothing)
constexpr std::size_t kPathQueries = 48, kNodeQueries = 16;

std::int64_t ns_of(Mono::time_point t) { return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count(); }

// ---- the probe (run as an ibsim client) ------------------------------------------

struct Recorded {
  wire::SaMad query;
  testing::SaProbeAnswer answer;
  std::string label;
};

std::string hex(std::span<const std::uint8_t> b) {
  std::string s;
  char buf[3];
  for (const std::uint8_t c : b) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    s += buf;
  }
  return s;
}

bool unhex(const std::string& s, std::span<std::uint8_t> out) {
  if (s.size() != out.size() * 2) return false;
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(std::stoul(s.substr(2 * i, 2), nullptr, 16));
  return true;
}

wire::SaMad query_of(char kind, unsigned a, unsigned b) {
  return kind == 'P' ? testing::path_record_get(static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b))
                     : testing::node_record_get(static_cast<std::uint16_t>(a));
}

std::vector<Recorded> read_recorded(const std::string& path) {
  std::vector<Recorded> out;
  std::ifstream in(path);
  char kind = 0;
  unsigned a = 0, b = 0, status = 0;
  std::string data;
  while (in >> kind >> a >> b >> status >> data) {
    Recorded r{query_of(kind, a, b), {}, std::string(1, kind) + " " + std::to_string(a) + " " + std::to_string(b)};
    r.answer.status = static_cast<std::uint16_t>(status);
    if (!unhex(data, r.answer.data)) break;
    out.push_back(r);
  }
  return out;
}

// --probe-record HOSTS OUT: PathRecords between random hosts and NodeRecords, answers kept.
int probe_record(const std::string& hosts_path, const std::string& out_path) {
  std::vector<unsigned> lids;
  std::ifstream in(hosts_path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    lids.push_back(static_cast<unsigned>(std::stoul(line, nullptr, 0)));
  }
  if (lids.size() < 2) return 2;
  SteadyClock clock;
  UmadTransport t({}, clock);
  if (!t.open(AgentSpec{.gsi_client = true})) return 2;
  testing::SaProbe probe(t, 0x51000000u);
  std::mt19937 rng(11);
  std::ofstream out(out_path);
  for (std::size_t i = 0; i < kPathQueries + kNodeQueries; ++i) {
    const char kind = i < kPathQueries ? 'P' : 'N';
    const unsigned a = lids[rng() % lids.size()], b = lids[rng() % lids.size()];
    const auto ans = probe.ask(query_of(kind, a, b));
    if (!ans || ans->status != 0) return 3;
    out << kind << ' ' << a << ' ' << b << ' ' << ans->status << ' ' << hex(ans->data) << '\n';
  }
  return 0;
}

// --probe-watch IN OUT LIMIT_MS READY GO: once GO exists (the old SM is
// dead), the first answer equal to the recorded one (asked every ms), then
// every recorded query checked.
int probe_watch(const std::string& in_path, const std::string& out_path, unsigned limit_ms, const std::string& ready,
                const std::string& go) {
  const std::vector<Recorded> rec = read_recorded(in_path);
  if (rec.empty()) return 2;
  SteadyClock clock;
  UmadTransport t({}, clock);
  if (!t.open(AgentSpec{.gsi_client = true})) return 2;
  testing::SaProbe probe(t, 0x52000000u);
  std::ofstream(ready) << "ready\n";
  const auto give_up = Mono::now() + 120s;
  while (!std::filesystem::exists(go))
    if (Mono::now() > give_up) return 2;
    else std::this_thread::sleep_for(100us);
  Mono::time_point first{};
  std::uint64_t wrong = 0, not_ready = 0, mismatches = 0;
  const bool answered = testing::wait_for_answer(probe, rec[0].query, rec[0].answer, 1000us,
                                                 std::chrono::milliseconds(limit_ms), first, wrong, not_ready);
  std::ofstream out(out_path);
  out << "answered " << answered << "\nfirst_correct_ns " << ns_of(first) << "\nwrong " << wrong << "\nnot_ready "
      << not_ready << '\n';
  if (!answered) return 1;
  for (const Recorded& r : rec) {
    const auto a = probe.ask(r.query, 20, 250ms);
    if (!a || !(*a == r.answer)) {
      ++mismatches;
      out << "mismatch " << r.label << (a ? " (answered otherwise)" : " (no answer)") << '\n';
    }
  }
  out << "all_checked_ns " << ns_of(Mono::now()) << "\nmismatches " << mismatches << '\n';
  return mismatches == 0 ? 0 : 1;
}

// ---- the run ------------------------------------------------------------------------

// A process on a fabric host, spawned directly so that the instant before
// its execve is known (monotonic and wall clock).
struct Spawned {
  pid_t pid = -1;
  Mono::time_point exec_at{};
  std::int64_t exec_unix_ns = 0;
};

std::string in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::stringstream ss(std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/sbin:/usr/bin");
  for (std::string d; std::getline(ss, d, ':');)
    if (::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  return name;
}

Spawned spawn_on(const ibsim::IbsimFabric& f, const std::string& host, std::vector<std::string> argv,
                 std::vector<std::string> env, const std::string& out, const std::string& cwd) {
  for (const std::string& e : f.client_env(host)) env.push_back(e);
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);  // later entries do not override earlier ones
  argv[0] = in_path(argv[0]);
  std::vector<char*> av, ev;  // built before fork: the child only calls async-signal-safe functions
  for (auto& a : argv) av.push_back(a.data());
  av.push_back(nullptr);
  for (auto& e : env) ev.push_back(e.data());
  ev.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {};
  const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    timespec ts[2];
    ::clock_gettime(CLOCK_MONOTONIC, &ts[0]);
    ::clock_gettime(CLOCK_REALTIME, &ts[1]);
    if (::write(fds[1], ts, sizeof ts) != sizeof ts) ::_exit(126);
    ::execve(av[0], av.data(), ev.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(out_fd);
  Spawned s;
  timespec ts[2];
  if (pid > 0 && ::read(fds[0], ts, sizeof ts) == sizeof ts) {
    s.pid = pid;
    s.exec_at = Mono::time_point(std::chrono::seconds(ts[0].tv_sec) + std::chrono::nanoseconds(ts[0].tv_nsec));
    s.exec_unix_ns = std::int64_t{ts[1].tv_sec} * 1'000'000'000 + ts[1].tv_nsec;
  }
  ::close(fds[0]);
  return s;
}

void sigkill(Spawned& s) {
  if (s.pid <= 0) return;
  ::kill(s.pid, SIGKILL);
  ::waitpid(s.pid, nullptr, 0);
  s.pid = -1;
}

bool wait_file(const std::string& path, const std::string& needle, std::chrono::seconds limit) {
  return ibsim::wait_until([&] { return testing::slurp(path).find(needle) != std::string::npos; }, limit, 50ms);
}

std::map<std::string, std::string> read_kv(const std::string& path) {
  std::map<std::string, std::string> kv;
  std::ifstream in(path);
  for (std::string k, v; in >> k && std::getline(in, v);) kv[k] = v.empty() ? v : v.substr(1);
  return kv;
}

// From madstorm's 100 ms buckets (counted when issued and answered): the
// first bucket at or after `from_unix_ns` with an answer, and the first
// whose queries were all answered, none failed and none waited for a
// client re-send (worst latency under `timeout_ms`): ms after
// `from_unix_ns`, at bucket resolution (-1: none).
struct StormAgain {
  double first_answer_ms = -1, whole_ms = -1;
};

StormAgain storm_again(const std::string& json_path, std::int64_t from_unix_ns, double timeout_ms) {
  StormAgain out;
  const auto j = nlohmann::json::parse(testing::slurp(json_path), nullptr, false);
  if (j.is_discarded() || !j.contains("series")) return out;
  const double bucket_ms = j["series"].value("bucket_ms", 100.0);
  const double start_ms = j["wall"].value("start_unix_ns", 0.0) / 1e6;
  const double from_ms = static_cast<double>(from_unix_ns) / 1e6;
  std::size_t i = 0;
  for (const auto& b : j["series"]["buckets"]) {
    const double at_ms = start_ms + static_cast<double>(i++) * bucket_ms;
    if (at_ms + bucket_ms <= from_ms || b.size() != 4) continue;
    const double issued = b[0].get<double>(), answered = b[1].get<double>(), failed = b[2].get<double>();
    const double late_ms = std::max(0.0, at_ms - from_ms);
    if (out.first_answer_ms < 0 && answered > 0) out.first_answer_ms = late_ms;
    if (issued > 0 && answered >= issued && failed == 0 && b[3].get<double>() / 1000 < timeout_ms) {
      out.whole_ms = late_ms;
      break;
    }
  }
  return out;
}

struct Outcome {
  bool ok = false;
  double first_correct_ms = -1, all_checked_ms = -1, kill_to_exec_ms = 0;
  StormAgain storm_again;
  std::uint64_t wrong = 0, not_ready = 0, mismatches = 0;
  testing::StormResult storm;
};

// Storm, SIGKILL `sm`, start it again with `restart` (the probe watching),
// while madstorm runs from `storm_host`.
template <typename Restart>
Outcome kill_and_restart(ibsim::IbsimFabric& fabric, const std::string& self, const std::string& dir, const std::string& tag,
                         const testing::StormFabric& sf, const std::string& storm_cmd, Spawned& sm, Restart restart,
                         unsigned limit_ms) {
  Outcome o;
  const std::string json = dir + "/storm-" + tag + ".json", ready = dir + "/ready-" + tag,
                    result = dir + "/probe-" + tag + ".txt", go = dir + "/go-" + tag;
  std::thread storm([&] {
    const auto r = fabric.run(storm_cmd + " --json " + json, sf.storm_host, 1200s);
    if (r.exit_code != 0 && r.exit_code != 4) std::fprintf(stderr, "%s storm: exit %d\n%s", tag.c_str(), r.exit_code, r.err.c_str());
  });
  std::this_thread::sleep_for(3s);  // warm-up and a steady storm first
  std::thread watcher([&] {
    fabric.run("\"" + self + "\" --probe-watch " + dir + "/answers-" + tag + " " + result + " " + std::to_string(limit_ms) +
                   " " + ready + " " + go,
               sf.middle_host, std::chrono::milliseconds(limit_ms) + 120s);
  });
  const bool watching = wait_file(ready, "ready", 60s);
  const auto killed = Mono::now();
  sigkill(sm);
  std::ofstream(go) << "go\n";  // the probe asks from now on: no answer can come from the old process
  sm = restart();
  o.kill_to_exec_ms = std::chrono::duration<double, std::milli>(sm.exec_at - killed).count();
  watcher.join();
  storm.join();
  auto kv = read_kv(result);
  o.wrong = std::strtoull(kv["wrong"].c_str(), nullptr, 10);
  o.not_ready = std::strtoull(kv["not_ready"].c_str(), nullptr, 10);
  o.mismatches = std::strtoull(kv["mismatches"].c_str(), nullptr, 10);
  if (watching && kv["answered"] == "1" && sm.pid > 0) {
    o.first_correct_ms = static_cast<double>(std::atoll(kv["first_correct_ns"].c_str()) - ns_of(sm.exec_at)) / 1e6;
    o.all_checked_ms = static_cast<double>(std::atoll(kv["all_checked_ns"].c_str()) - ns_of(sm.exec_at)) / 1e6;
    o.ok = kv.count("all_checked_ns") != 0;
  }
  o.storm = testing::read_storm(json);
  o.storm_again = storm_again(json, sm.exec_unix_ns, kStormTimeoutMs);
  return o;
}

// The restarted daemon's log lines from its start to its first sweep's publication.
void print_timeline(const std::string& log) {
  for (const char* needle : {"sa journal", "sa epoch", "sm: discovery:", "SA answering from epoch", "sm: subnet up"}) {
    const auto at = log.find(needle);
    if (at == std::string::npos) continue;
    const auto begin = log.rfind('\n', at);
    std::printf("  %s\n", log.substr(begin == std::string::npos ? 0 : begin + 1, log.find('\n', at) - begin - 1).c_str());
  }
}

void print_outcome(const char* sm, const Outcome& o) {
  std::printf("| %s | %.1f | %.1f | %.1f | %.0f | %.0f | %llu | %llu | %llu | %llu | %llu | %.2f |\n", sm, o.kill_to_exec_ms,
              o.first_correct_ms, o.all_checked_ms, o.storm_again.first_answer_ms, o.storm_again.whole_ms,
              static_cast<unsigned long long>(o.not_ready),
              static_cast<unsigned long long>(o.wrong + o.mismatches), static_cast<unsigned long long>(o.storm.issued),
              static_cast<unsigned long long>(o.storm.timeouts), static_cast<unsigned long long>(o.storm.errors),
              o.storm.max_ms);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--probe-record") return probe_record(argv[2], argv[3]);
  if (argc >= 7 && std::string(argv[1]) == "--probe-watch")
    return probe_watch(argv[2], argv[3], static_cast<unsigned>(std::atoi(argv[4])), argv[5], argv[6]);
  const std::string spec = argc > 1 ? argv[1] : "ft3:36:36";
  const double rate = argc > 2 ? std::atof(argv[2]) : 2000;
  const bool with_opensm = argc <= 3 || std::string(argv[3]) != "no-opensm";
  const std::string madengine_bin = argc > 4 ? argv[4] : MADENGINE_BIN;
  const std::string self = std::filesystem::canonical("/proc/self/exe");
  testing::StormFabric sf;
  if (!testing::parse_storm_fabric(spec, sf)) {
    std::fprintf(stderr, "restart_storm_bench: FABRIC is ft2:K or ft3:K:PODS\n");
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path() / ("restart-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir + "/opensm");
  sim::save_topology(sf.topo, dir + "/fabric.topo");
  ibsim::IbsimFabric fabric(dir + "/fabric.topo");
  if (!fabric.ok()) {
    std::fprintf(stderr, "ibsim: %s\n", fabric.error().c_str());
    return 1;
  }
  std::printf("restart_storm_bench: %s, storm %.0f q/s, load before: %s", spec.c_str(), rate,
              testing::slurp("/proc/loadavg").c_str());
  // Both runs of the daemon share guid2lid, the SA journal and the persisted epoch (sa-epoch beside the journal).
  for (const int run : {1, 2})
    std::ofstream(dir + "/madengine-" + std::to_string(run) + ".toml")
        << "[transport]\nkind = \"umad\"\n[sm]\nguid2lid = \"" << dir << "/guid2lid\"\n[sa]\njournal = \"" << dir
        << "/sa.journal\"\n[log]\nlevel = \"info\"\nfile = \"" << dir << "/madengine-" << run << ".log\"\n";
  const auto start_daemon = [&](int run) {
    return spawn_on(fabric, sf.sm_host, {madengine_bin, "-c", dir + "/madengine-" + std::to_string(run) + ".toml"}, {},
                    dir + "/madengine-" + std::to_string(run) + ".out", dir);
  };
  const auto t0 = Mono::now();
  Spawned sm = start_daemon(1);
  if (sm.pid <= 0 || !wait_file(dir + "/madengine-1.log", "sm: subnet up", 900s)) {
    std::fprintf(stderr, "madengine: no subnet up; see %s\n", dir.c_str());
    sigkill(sm);
    return 1;
  }
  // A build without the persisted epoch (MADENGINE_BIN, a before figure) writes none.
  const bool epoch = wait_file(dir + "/madengine-1.log", "sa epoch " + dir + "/sa-epoch: epoch", 60s);
  std::printf("madengine: subnet up %.1f s after its start (wall); %s\n",
              std::chrono::duration<double>(Mono::now() - t0).count(), epoch ? "epoch written" : "no epoch written");
  const std::string madstorm = std::string(MADSTORM_BIN) + " -p random --no-progress --seed 7";
  const auto hosts_of = [&](const std::string& tag) {
    const std::string hosts = dir + "/hosts-" + tag;
    fabric.run(madstorm + " -n 1 --save-hosts " + hosts, sf.storm_host, 1200s);
    const auto rec = fabric.run("\"" + self + "\" --probe-record " + hosts + " " + dir + "/answers-" + tag, sf.middle_host, 600s);
    return std::filesystem::exists(hosts) && rec.exit_code == 0 ? hosts : std::string();
  };
  const std::string hosts = hosts_of("madengine");
  if (hosts.empty()) {
    std::fprintf(stderr, "no hosts or no recorded answers from madengine; see %s\n", dir.c_str());
    sigkill(sm);
    return 1;
  }
  const std::string storm = madstorm + " --rate " + std::to_string(rate) + " -d 12000 --warmup 1000 --timeout " +
                            std::to_string(static_cast<int>(kStormTimeoutMs)) + " --retries 50 --hosts-file ";
  const Outcome me = kill_and_restart(fabric, self, dir, "madengine", sf, storm + hosts, sm, [&] { return start_daemon(2); },
                                      60'000);
  const std::string log2 = testing::slurp(dir + "/madengine-2.log");
  sigkill(sm);

  Outcome osm;
  if (with_opensm) {
    const auto start_opensm = [&](int run) {
      return spawn_on(fabric, sf.sm_host,
                      {"opensm", "-f", dir + "/opensm/osm-" + std::to_string(run) + ".log", "-d", "2", "-s", "0"},
                      {"OSM_TMP_DIR=" + dir + "/opensm", "OSM_CACHE_DIR=" + dir + "/opensm"},
                      dir + "/opensm/opensm-" + std::to_string(run) + ".out", dir + "/opensm");
    };
    Spawned o = start_opensm(1);
    if (o.pid > 0 && wait_file(dir + "/opensm/osm-1.log", "SUBNET UP", 1800s)) {
      const std::string o_hosts = hosts_of("opensm");
      if (!o_hosts.empty())
        osm = kill_and_restart(fabric, self, dir, "opensm", sf, storm + o_hosts, o, [&] { return start_opensm(2); }, 1'800'000);
    } else {
      std::fprintf(stderr, "OpenSM: no SUBNET UP; see %s/opensm\n", dir.c_str());
    }
    sigkill(o);
  }

  std::printf("\nSIGKILL mid-storm, restart with the same state files; times from the new process's exec (ms, wall):\n\n");
  std::printf("| SM | kill to exec | first correct answer | every probed answer checked | storm's first answer | "
              "storm whole again | error answers before | wrong answers | storm issued | storm timeouts | storm errors | "
              "storm max ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  print_outcome("madengine", me);
  if (with_opensm) print_outcome("OpenSM 3.3.23", osm);
  std::printf("\nmadengine's restart, from its log:\n");
  print_timeline(log2);
  std::printf("load after: %sfiles in %s\n", testing::slurp("/proc/loadavg").c_str(), dir.c_str());
  const bool met = me.ok && me.first_correct_ms <= kTargetMs && me.wrong == 0 && me.mismatches == 0 && me.storm.errors == 0;
  if (!met)
    std::printf("FAILED: %s\n", !me.ok ? "no correct answer after the restart"
                                : me.first_correct_ms > kTargetMs ? "first correct answer later than 100 ms after exec"
                                                                  : "a wrong answer");
  return met ? 0 : 3;
}
