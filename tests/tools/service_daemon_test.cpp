// The madengine daemon, madengine-ctl and madstorm as processes, as systemd
// and an operator see them (label sim): sd_notify on a NOTIFY_SOCKET the test
// reads (READY=1, STATUS=, WATCHDOG=1), SIGHUP reloading the log level,
// reopening the log and naming what waits for a restart, journald's format
// when stderr is the journal, the metrics endpoint's counters moving while
// madstorm storms the embedded madengine, exit status 2 on a bad flag or
// value, --version, an admin socket in a folder that does not exist, and
// the log on stderr by default.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "madengine_version.h"
#include "service_helpers.hpp"

namespace madengine::service {
namespace {

namespace st = service_test;
using Clock = std::chrono::steady_clock;

// A child process with extra environment, stdout and stderr to `log`.
pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 1);
  ::dup2(fd, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  ::_exit(127);
}

int stop(pid_t pid) {
  ::kill(pid, SIGTERM);
  int status = 0;
  for (int i = 0; i < 200; ++i) {  // 10 s
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool wait_for_text(const std::string& path, const std::string& what, int limit_ms) {
  const auto end = Clock::now() + std::chrono::milliseconds(limit_ms);
  while (Clock::now() < end) {
    if (slurp(path).find(what) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::vector<std::string> daemon_args(const std::string& extra_config = {}) {
  std::vector<std::string> a = {MADENGINE_BIN, "--transport", "sim", "--generate", "ft2:8", "--cores", "1",
                                "--admin-socket", ""};
  if (!extra_config.empty()) {
    a.push_back("--config");
    a.push_back(extra_config);
  }
  return a;
}

TEST(ServiceDaemon, NotifiesReadyStatusAndWatchdog) {
  const auto dir = st::temp_dir("notify");
  const std::string sock = (dir / "notify").string();
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, sock.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  const pid_t pid = spawn(daemon_args(), {"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"}, (dir / "log").string());
  bool ready = false, watchdog = false, status = false;
  std::string all;
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < end && !(ready && watchdog && status)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) continue;
    const std::string msg(buf, static_cast<std::size_t>(r));
    all += msg + "|";
    ready |= msg.find("READY=1") != std::string::npos;
    watchdog |= msg.find("WATCHDOG=1") != std::string::npos;
    status |= msg.find("STATUS=MASTER (subnet up), epoch") != std::string::npos;
  }
  EXPECT_EQ(stop(pid), 0);
  ::close(fd);
  EXPECT_TRUE(ready) << all;
  EXPECT_TRUE(watchdog) << all;
  EXPECT_TRUE(status) << all;
  std::filesystem::remove_all(dir);
}

TEST(ServiceDaemon, HangupReloadsTheLogLevelAndReopensTheLog) {
  const auto dir = st::temp_dir("sighup");
  const std::string cfg = (dir / "madengine.toml").string(), log = (dir / "madengine.log").string();
  std::ofstream(cfg) << "[log]\nlevel = \"info\"\nfile = \"" << log << "\"\n";
  const pid_t pid = spawn(daemon_args(cfg), {}, (dir / "out").string());
  ASSERT_TRUE(wait_for_text(log, "subnet up", 30'000)) << slurp(log) << slurp(dir / "out");
  // logrotate moves the file away, the level is raised, then SIGHUP.
  std::filesystem::rename(log, log + ".1");
  std::ofstream(cfg) << "[log]\nlevel = \"debug\"\nfile = \"" << log << "\"\n";
  ::kill(pid, SIGHUP);
  EXPECT_TRUE(wait_for_text(log, "reloaded: log.level info -> debug", 10'000)) << slurp(log);
  // A bad edit keeps the daemon running with what it had.
  std::ofstream(cfg) << "[log]\nlevel = \"loud\"\n";
  ::kill(pid, SIGHUP);
  EXPECT_TRUE(wait_for_text(log, "SIGHUP: not reloaded", 10'000)) << slurp(log);
  EXPECT_EQ(::kill(pid, 0), 0);
  EXPECT_EQ(stop(pid), 0);
  std::filesystem::remove_all(dir);
}

// Keys the daemon cannot change while it runs are named in one warning;
// the priority is applied (on the SM's core, as madengine-ctl priority).
TEST(ServiceDaemon, HangupAppliesThePriorityAndNamesWhatNeedsARestart) {
  const auto dir = st::temp_dir("sighup-restart");
  const std::string cfg = (dir / "madengine.toml").string(), log = (dir / "madengine.log").string();
  std::ofstream(cfg) << "[sm]\npriority = 15\n[log]\nfile = \"" << log << "\"\n[perfmgr]\nenabled = true\n";
  const pid_t pid = spawn(daemon_args(cfg), {}, (dir / "out").string());
  ASSERT_TRUE(wait_for_text(log, "subnet up", 30'000)) << slurp(log) << slurp(dir / "out");
  std::ofstream(cfg) << "[sm]\npriority = 9\nrouting = \"updn\"\nlmc = 1\n[log]\nfile = \"" << log << "\"\n"
                     << "[metrics]\nlisten = \"127.0.0.1:0\"\n"
                     << "[perfmgr]\nenabled = true\ninterval_ms = 30000\noutstanding_max = 8\n"
                     << "[perfmgr.thresholds]\nsymbol_errors = 50\n";
  ::kill(pid, SIGHUP);
  EXPECT_TRUE(wait_for_text(log, "SIGHUP: reloading " + cfg, 10'000)) << slurp(log);
  EXPECT_TRUE(wait_for_text(log, "reloaded: sm.priority 15 -> 9", 10'000)) << slurp(log);
  EXPECT_TRUE(wait_for_text(log, "sm: priority 15 -> 9", 10'000)) << slurp(log);
  EXPECT_TRUE(wait_for_text(log, "reloaded: perfmgr: interval_ms 60000 -> 30000, thresholds", 10'000)) << slurp(log);
  EXPECT_TRUE(wait_for_text(log,
                            "SIGHUP: not applied until a restart (the values in use are kept): sm.lmc, sm.routing, "
                            "perfmgr.outstanding_max, metrics.listen",
                            10'000))
      << slurp(log);
  // Back to what runs, but for the log level (a line in the reopened log):
  // nothing waits for a restart any more, so no warning.
  std::filesystem::rename(log, log + ".1");
  std::ofstream(cfg) << "[sm]\npriority = 9\n[log]\nlevel = \"debug\"\nfile = \"" << log << "\"\n"
                     << "[perfmgr]\nenabled = true\ninterval_ms = 30000\n[perfmgr.thresholds]\nsymbol_errors = 50\n";
  ::kill(pid, SIGHUP);
  EXPECT_TRUE(wait_for_text(log, "reloaded: log.level info -> debug", 10'000)) << slurp(log);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(slurp(log).find("not applied until a restart"), std::string::npos) << slurp(log);
  EXPECT_EQ(stop(pid), 0);
  std::filesystem::remove_all(dir);
}

TEST(ServiceDaemon, JournalFormatWhenStderrIsTheJournal) {
  const auto dir = st::temp_dir("journal");
  const std::string out = (dir / "out").string();
  // The journal's stream is stderr itself: JOURNAL_STREAM names its device and inode.
  { std::ofstream touch(out); }
  struct stat s{};
  ASSERT_EQ(::stat(out.c_str(), &s), 0);
  const std::string js = "JOURNAL_STREAM=" + std::to_string(s.st_dev) + ":" + std::to_string(s.st_ino);
  const pid_t pid = spawn(daemon_args(), {js}, out);
  ASSERT_TRUE(wait_for_text(out, "subnet up", 30'000)) << slurp(out);
  EXPECT_EQ(stop(pid), 0);
  std::istringstream in(slurp(out));
  std::size_t lines = 0;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(^<[2-7]>[^0-9].*)"))) << line;  // a priority, no timestamp
  }
  EXPECT_GT(lines, 3u);
  std::filesystem::remove_all(dir);
}

// madstorm --embedded serves the embedded madengine's metrics: scraped while
// the storm runs, the SA's counters move from one scrape to the next.
TEST(ServiceDaemon, MetricsMoveDuringAMadstormRun) {
  const auto dir = st::temp_dir("storm-metrics");
  const std::string out = (dir / "out").string();
  const pid_t pid = spawn({MADSTORM_BIN, "--embedded", "ft2:8", "--embedded-metrics-listen", "127.0.0.1:0", "--duration",
                           "3000", "--repeat"},
                          {}, out);
  ASSERT_TRUE(wait_for_text(out, "/metrics (port ", 30'000)) << slurp(out);
  std::smatch m;
  const std::string text = slurp(out);
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(/metrics \(port (\d+)\))")));
  const unsigned port = std::stoul(m[1]);
  const std::string series = "madengine_sa_requests_received_total{record=\"PathRecord\",method=\"Get\"}";
  std::vector<double> seen;
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < end && ::waitpid(pid, nullptr, WNOHANG) == 0) {
    if (const auto v = st::metric(st::http_get(port), series)) seen.push_back(*v);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(out);
  std::size_t rises = 0;
  for (std::size_t i = 1; i < seen.size(); ++i) rises += seen[i] > seen[i - 1];
  EXPECT_GE(rises, 2u) << "scrapes: " << seen.size();
  std::filesystem::remove_all(dir);
}

// Bad flags and values exit 2 (the manual pages' usage error) with CLI11's
// message, in each tool.
TEST(ServiceDaemon, BadFlagsAndValuesExitTwo) {
  const struct {
    std::string cmd, says;
  } cases[] = {
      {std::string(MADENGINE_BIN) + " --no-such-flag", "--no-such-flag"},
      {std::string(MADENGINE_BIN) + " --priority 16", "--priority"},
      {std::string(MADENGINE_BIN) + " --transport ib", "--transport"},
      {std::string(MADENGINE_BIN) + " --cores many", "--cores"},
      {std::string(MADENGINE_CTL_BIN) + " --no-such-flag status", "--no-such-flag"},
      {std::string(MADENGINE_CTL_BIN), "A command is required"},
      {std::string(MADENGINE_CTL_BIN) + " frobnicate", "frobnicate"},
      {std::string(MADENGINE_CTL_BIN) + " priority 16", "16"},
      {std::string(MADENGINE_CTL_BIN) + " loglevel loud", "loud"},
      {std::string(MADENGINE_CTL_BIN) + " paths 0", "LID"},
      {std::string(MADSTORM_BIN) + " --no-such-flag", "--no-such-flag"},
      {std::string(MADSTORM_BIN) + " --sl 16", "--sl"},
      {std::string(MADSTORM_BIN) + " merge /nonexistent.json", "/nonexistent.json"},
  };
  for (const auto& c : cases) {
    int rc = 0;
    const std::string out = st::run(c.cmd + " 2>&1 >/dev/null", rc);  // stderr only
    EXPECT_EQ(rc, 2) << c.cmd << "\n" << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << c.cmd << "\n" << out;
    EXPECT_NE(out.find("--help"), std::string::npos) << c.cmd << "\n" << out;  // CLI11's pointer to the usage
  }
}

TEST(ServiceDaemon, VersionIsTheProjectsVersion) {
  for (const std::string tool : {MADENGINE_BIN, MADENGINE_CTL_BIN, MADSTORM_BIN}) {
    int rc = 0;
    const std::string out = st::run(tool + " --version 2>&1", rc);
    const std::string name = std::filesystem::path(tool).filename().string();
    EXPECT_EQ(rc, 0) << tool;
    EXPECT_EQ(out, name + " " + MADENGINE_VERSION_STRING + "\n") << tool;
  }
}

// One spelling of the generated-fabric spec: the parser's, in the daemon's
// and madstorm's help and in the parser's own error.
TEST(ServiceDaemon, FabricSpecIsSpelledOneWay) {
  const std::string spec = "random:SWITCHES:DEGREE:HOSTS[:SEED]";
  int rc = 0;
  for (const std::string tool : {MADENGINE_BIN, MADSTORM_BIN}) {
    const std::string help = st::run(tool + " --help 2>&1", rc);
    EXPECT_EQ(rc, 0) << tool;
    EXPECT_NE(help.find(spec), std::string::npos) << tool << "\n" << help;
    EXPECT_NE(help.find("ft2:RADIX[:LEAVES[:HOSTS_PER_LEAF]]"), std::string::npos) << tool;
  }
  const std::string err = st::run(std::string(MADENGINE_BIN) + " --transport sim --generate random:4 --exit-after-subnet-up 2>&1", rc);
  EXPECT_EQ(rc, 2) << err;
  EXPECT_NE(err.find(spec), std::string::npos) << err;
}

// Without log.file the log is on stderr (madengine(8)), stdout stays empty.
TEST(ServiceDaemon, LogsToStderrByDefault) {
  const std::string cmd = std::string(MADENGINE_BIN) + " --transport sim --generate ft2:4 --cores 1 --exit-after-subnet-up";
  int rc = 0;
  const std::string out = st::run(cmd + " 2>/dev/null", rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, "");
  const std::string err = st::run(cmd + " 2>&1 >/dev/null", rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(err.find("sm: subnet up"), std::string::npos) << err;
  EXPECT_NE(err.find("shutdown: done"), std::string::npos) << err;
}

// A mistyped admin socket path is an error naming it; no folder is made.
TEST(ServiceDaemon, AdminSocketInAMissingFolderIsAnError) {
  const auto dir = st::temp_dir("admin-missing");
  const std::string socket = (dir / "no-such-folder" / "admin.sock").string();
  int rc = 0;
  const std::string out = st::run(std::string(MADENGINE_BIN) + " --transport sim --generate ft2:4 --cores 1 --admin-socket '" +
                                      socket + "' --exit-after-subnet-up 2>&1",
                                  rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("admin.socket " + socket + ": directory " + (dir / "no-such-folder").string() + " does not exist"),
            std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "no-such-folder"));
  std::filesystem::remove_all(dir);
}

// SIGTERM to the exit status, and how long it took (-1: not ended in 10 s).
int stop_timed(pid_t pid, double& took_ms) {
  const auto t0 = Clock::now();
  const int status = stop(pid);
  took_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return status;
}

// The orderly stop ends with status 0 and says so; a core that never comes
// back (the hidden test fault wedges the SM's core, as a device call that
// does not return would) ends the shutdown forced, with status 70
// (EX_SOFTWARE) and an error line, within the second the daemon promises.
TEST(ServiceDaemon, SigtermStopsOrderlyAndAWedgedCoreForcesStatus70) {
  const auto dir = st::temp_dir("stop");
  const std::string clean_log = (dir / "clean").string(), wedged_log = (dir / "wedged").string();
  const pid_t clean = spawn(daemon_args(), {}, clean_log);
  ASSERT_TRUE(wait_for_text(clean_log, "sm: subnet up", 30000)) << slurp(clean_log);
  double took_ms = 0;
  EXPECT_EQ(stop_timed(clean, took_ms), 0) << slurp(clean_log);
  std::printf("sim, orderly: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_LT(took_ms, 1000) << slurp(clean_log);
  EXPECT_NE(slurp(clean_log).find("shutdown: done"), std::string::npos) << slurp(clean_log);
  EXPECT_EQ(slurp(clean_log).find("forced"), std::string::npos) << slurp(clean_log);

  std::vector<std::string> args = daemon_args();
  args.insert(args.end(), {"--sim-wedge-core-ms", "8000"});
  const pid_t wedged = spawn(args, {}, wedged_log);
  ASSERT_TRUE(wait_for_text(wedged_log, "test fault: the SM's core is wedged", 30000)) << slurp(wedged_log);
  EXPECT_EQ(stop_timed(wedged, took_ms), 70) << slurp(wedged_log);
  std::printf("sim, wedged core: SIGTERM to exit %.0f ms wall\n", took_ms);
  EXPECT_LT(took_ms, 3000) << slurp(wedged_log);  // 1 s by design; far from the 8 s wedge
  EXPECT_NE(slurp(wedged_log).find("exiting with status 70 (forced)"), std::string::npos) << slurp(wedged_log);
  EXPECT_EQ(slurp(wedged_log).find("shutdown: done"), std::string::npos) << slurp(wedged_log);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace madengine::service
