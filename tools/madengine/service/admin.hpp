// The admin socket: a Unix stream socket (mode 0600, peers checked to be root
// or the daemon's own user) that answers one JSON object per line with one
// JSON object per line (madengine-ctl is its client; the protocol is in
// docs/operations.md). Commands that change or read the SM's state run on
// the SM's core through the node's mailbox; the socket's thread only waits
// for them, at most kCommandTimeoutMs. A malformed request gets
// {"ok":false,"error":...}, never a crash.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "node/control.hpp"

namespace madengine::service {

inline constexpr std::uint32_t kCommandTimeoutMs = 5000;   // a command posted to the SM's core
inline constexpr std::size_t kRequestBytesMax = 4096;      // one request line
inline constexpr std::uint32_t kClientIdleMs = 10'000;     // a connection that says nothing is closed

// The commands, independent of the socket (tests call it directly).
class AdminCommands {
 public:
  explicit AdminCommands(node::NodeControl node) : node_(node), started_(std::chrono::steady_clock::now()) {}
  // One request line -> one reply object (never throws).
  nlohmann::json handle_line(const std::string& line);
  nlohmann::json handle(const nlohmann::json& request);

 private:
  nlohmann::json status();
  nlohmann::json sweep(const nlohmann::json& request);
  nlohmann::json sms();
  nlohmann::json lfts();
  nlohmann::json paths(const nlohmann::json& request);
  nlohmann::json counters();
  nlohmann::json priority(const nlohmann::json& request);
  nlohmann::json handover();
  nlohmann::json loglevel(const nlohmann::json& request);
  // Fabric health (perf_admin.cpp): port states and link rates, ports with
  // error counters (as ibqueryerrors), one LID's port, route balance.
  nlohmann::json portstatus();
  nlohmann::json errors();
  nlohmann::json querylid(const nlohmann::json& request);
  nlohmann::json switchbalance(const nlohmann::json& request);
  nlohmann::json lidbalance(const nlohmann::json& request);
  node::NodeControl node_;
  std::chrono::steady_clock::time_point started_;
};

class AdminServer {
 public:
  // Binds `path` in a folder that must exist (none is created; a stale
  // socket is replaced, a live one is refused). Throws std::runtime_error
  // naming the path.
  AdminServer(const std::string& path, AdminCommands& commands);
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  void run() noexcept;
  void serve(int fd) noexcept;

  std::string path_;
  AdminCommands& commands_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd: ends run()
  std::thread thread_;
};

}  // namespace madengine::service
