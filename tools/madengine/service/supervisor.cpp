// sd_notify, liveness and the journald log format (see supervisor.hpp).
#include "service/supervisor.hpp"

#include <fmt/format.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "service/port_states.hpp"

namespace madengine::service {

namespace {

// A beat counter written by its core and read by the supervisor.
std::atomic_ref<std::uint64_t> beat_ref(std::vector<std::uint64_t>& v, std::size_t i) { return std::atomic_ref(v[i]); }

// spdlog level -> syslog priority, written as sd-daemon(3)'s "<N>" prefix.
class SyslogPriority final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    static constexpr char kPriority[] = {'7', '7', '6', '4', '3', '2', '6'};  // trace..critical, off
    const auto i = static_cast<std::size_t>(msg.level);
    dest.push_back(i < sizeof kPriority ? kPriority[i] : '6');
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SyslogPriority>(); }
};

}  // namespace

bool stderr_is_journal() noexcept {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (js == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st{};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

void apply_daemon_log(const node::LogSection& log) {
  // Without log.file the daemon logs to stderr (madengine(8)); spdlog's own
  // default logger writes to stdout.
  if (log.file.empty())
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("madengine", std::make_shared<spdlog::sinks::stderr_color_sink_mt>()));
  node::apply_log_config(log);
  if (log.file.empty() && stderr_is_journal()) {
    // The journal stamps each line itself and reads the priority prefix.
    auto f = std::make_unique<spdlog::pattern_formatter>();
    f->add_flag<SyslogPriority>('*').set_pattern("<%*>%v");
    spdlog::set_formatter(std::move(f));
  }
}

Supervisor::Supervisor(node::NodeControl node)
    : node_(node), beats_seen_(std::make_shared<std::vector<std::uint64_t>>(node.cores(), 0)) {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) > 0) watchdog_usec_ = usec;
}

Supervisor::~Supervisor() = default;

std::string Supervisor::status_line() const {
  const node::SmStatus s = node_.sm_status();
  PortStates pc;
  if (const node::FabricView epoch = node_.fabric_view(); !epoch.empty()) pc = count_ports(epoch);
  const std::uint64_t active = pc.by_state[static_cast<std::size_t>(wire::PortState::kActive)], ports = pc.linked;
  return fmt::format("{}{}, epoch {}, {} of {} linked ports active, {} heavy / {} light sweeps", wire::to_string(s.state),
                     s.subnet_up ? " (subnet up)" : "", s.epoch, active, ports, s.heavy_sweeps, s.light_sweeps);
}

void Supervisor::tick() {
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_check_) {
    next_check_ = now + std::chrono::seconds(1);
    check();
  }
  if (watchdog_usec_ != 0 && healthy_ && now >= next_watchdog_) {
    next_watchdog_ = now + std::chrono::microseconds(watchdog_usec_ / 2);
    sd_notify(0, "WATCHDOG=1");
  }
}

void Supervisor::check() {
  // Alive: every core ran the beat posted a check ago, and the SM's task
  // loop turned since (or is inside a heavy sweep shorter than kSweepStallMaxMs).
  bool alive = beat_ > 0;
  for (std::uint16_t c = 0; c < node_.cores(); ++c)
    alive = alive && beat_ref(*beats_seen_, c).load(std::memory_order_relaxed) >= beat_;
  const std::uint64_t turns = node_.sm_loop_turns();
  const Nanos sweep_ns = node_.sweep_started_ns();
  const auto now = std::chrono::steady_clock::now();
  if (sweep_ns != sweep_seen_ns_) {
    sweep_seen_ns_ = sweep_ns;
    sweep_seen_at_ = now;
  }
  const bool sweeping_ok = sweep_ns >= 0 && now - sweep_seen_at_ < std::chrono::milliseconds(kSweepStallMaxMs);
  alive = alive && (turns != sm_turns_ || sweeping_ok);
  sm_turns_ = turns;
  if (healthy_ && !alive) spdlog::warn("watchdog: an engine core or the SM's loop did not answer within a second");
  healthy_ = alive;

  ++beat_;
  for (std::uint16_t c = 0; c < node_.cores(); ++c) {
    auto seen = beats_seen_;
    const std::uint64_t b = beat_;
    node_.post(c, [seen, c, b] { beat_ref(*seen, c).store(b, std::memory_order_relaxed); });
  }
  node_.refresh_sm_status(std::chrono::milliseconds(0));  // read at the next check

  const node::SmStatus s = node_.sm_status();
  std::string msg;
  if (!ready_sent_ && (s.subnet_up || s.state == wire::SmState::kStandby)) {
    ready_sent_ = true;
    msg = "READY=1\n";
    spdlog::info("ready: {}", s.subnet_up ? "subnet up" : "standby");
  }
  const std::string line = status_line();
  if (line != last_status_ || !msg.empty()) {
    last_status_ = line;
    msg += "STATUS=" + line;
  }
  if (!msg.empty()) sd_notify(0, msg.c_str());
}

void Supervisor::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

}  // namespace madengine::service
