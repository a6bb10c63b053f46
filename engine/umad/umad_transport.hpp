// The umad transport: libibumad agents on QP0 (SMI) and QP1 (SA server, GSI
// client) of one HCA port, on real hardware or on ibsim through umad2sim.
// Setup and life cycle are in umad_setup.cpp, the burst calls in umad_datapath.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/transport.hpp"
#include "engine/sole_wait.hpp"

namespace madengine {

struct UmadConfig {
  // Empty and 0: the first InfiniBand port (of the named CA, or of any)
  // that is ACTIVE, else the first whose physical link is up, else the
  // first; chosen at the first open and kept for the transport's life.
  std::string ca_name;
  int port_num = 0;
  // Life-cycle bounds: how often poll_events() reads the port's sysfs state,
  // and how often it tries to reopen a lost device.
  std::uint32_t state_check_interval_ms = 500;
  std::uint32_t reopen_interval_ms = 1000;
};

struct UmadCounters {
  std::uint64_t rx = 0;               // MADs handed to the caller
  std::uint64_t tx = 0;               // MADs accepted by umad_send
  std::uint64_t send_errors = 0;      // umad_send failures and bad send status
  std::uint64_t kernel_timeouts = 0;  // requests returned with status ETIMEDOUT
  std::uint64_t dropped = 0;          // received with a bad length, or unsendable
  std::uint64_t reopens = 0;          // successful reopen after kDeviceLost
  std::uint64_t tx_deferred = 0;      // bursts ended because ibsim's shim had no room (kept, sent later)
};

class UmadTransport final : public Transport, public SoleWait {
 public:
  // `clock` paces the life-cycle checks; it must outlive the transport.
  explicit UmadTransport(UmadConfig config, const Clock& clock);
  ~UmadTransport() override;
  UmadTransport(const UmadTransport&) = delete;
  UmadTransport& operator=(const UmadTransport&) = delete;

  std::string_view name() const noexcept override { return "umad"; }
  bool open(const AgentSpec& agents) override;
  void close() noexcept override;
  const LocalPort& local_port() const noexcept override { return port_; }

  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override;
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override;

  DeviceEvent poll_events() noexcept override;
  // The umad fd (readable when a MAD waits), -1 while closed or lost. Under
  // umad2sim it is the shim's fd: only the shim's poll() understands it, and
  // that poll() ignores every other fd in its set, so an idle core waits in
  // wait_alone() instead (one thread only ever calls into the shim).
  int wait_fd() const noexcept override { return fd_; }
  bool waits_alone() const noexcept override { return fd_ >= 0 && shim_fd_; }
  int wait_alone(Nanos timeout_ns) noexcept override;

  const UmadCounters& counters() const noexcept { return counters_; }
  bool is_open() const noexcept { return fd_ >= 0; }
  // The CA name and port actually opened (after defaults were resolved).
  std::string_view ca_name() const noexcept { return ca_resolved_.data(); }
  // Why the last open() or reopen failed, or why the device was lost ("" if neither).
  std::string_view last_error() const noexcept { return last_error_.data(); }
  // The file descriptor to poll() for readability between bursts (-1 if closed).
  int fd() const noexcept { return fd_; }

  // A burst also stops after this many discarded MADs (kernel timeouts, bad
  // lengths) so a storm of them cannot keep one rx_burst call busy forever.
  static constexpr std::size_t kRxDiscardsPerBurstMax = 64;

 private:
  bool open_device() noexcept;     // umad_open_port + agents + issm + LocalPort
  void close_device() noexcept;
  bool read_port(LocalPort& out) noexcept;  // umad_get_ca/umad_get_port
  bool choose_port() noexcept;              // resolves an empty CA name / port 0 once
  void lose(const char* why, int err) noexcept;
  void set_error(const char* what, int err) noexcept;
  // A datapath errno that means the device or its port is gone (not a bad MAD).
  void note_fatal(int err) noexcept {
    if (!fatal_pending_) fatal_errno_ = err;
    fatal_pending_ = true;
  }
  static bool is_fatal_errno(int err) noexcept;

  UmadConfig config_;
  const Clock& clock_;
  AgentSpec agents_{};
  LocalPort port_{};
  UmadCounters counters_{};
  // Fixed arrays, not std::string: they are written from noexcept life-cycle code.
  std::array<char, 64> ca_resolved_{};
  int port_resolved_ = -1;  // -1 until choose_port()
  std::array<char, 160> last_error_{};

  int fd_ = -1;
  bool shim_fd_ = false;  // fd_ is umad2sim's (umad_shim::is_shim_fd), asked at each open
  int shim_data_fd_ = -1;  // then the shim's socket to ibsim, written only when it has room (umad_shim.hpp)
  int issm_fd_ = -1;
  int smi_agent_[2] = {-1, -1};  // [0] class 0x01 (LID routed), [1] class 0x81 (directed route)
  int gsi_agent_ = -1;           // QP1: SA server or GSI client, everything not an SMP
  int perf_agent_ = -1;          // QP1: PerfMgt (class 0x04) client, for the performance manager's requests
  std::vector<std::pair<std::uint8_t, int>> vendor_agents_;  // QP1: (vendor class, agent), AgentSpec::vendor_classes
  bool want_open_ = false;       // open() succeeded once and close() was not called
  bool lost_ = false;            // reported kDeviceLost, not yet back
  bool fatal_pending_ = false;   // set by the datapath, consumed by poll_events()
  int fatal_errno_ = 0;
  Nanos next_state_check_ns_ = 0;
  Nanos next_reopen_ns_ = 0;

  // One receive and one send buffer (ib_user_mad header + 256-byte MAD),
  // allocated at open: the fast path only copies into them.
  std::unique_ptr<std::uint8_t[]> rx_umad_;
  std::unique_ptr<std::uint8_t[]> tx_umad_;
  std::size_t umad_hdr_size_ = 0;  // umad_size(): depends on the kernel ABI
};

}  // namespace madengine
