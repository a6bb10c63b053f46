// The node's counters in Prometheus' text exposition format (version
// 0.0.4), names prefixed madengine_, and the HTTP endpoint that serves them
// (libmicrohttpd, one thread of its own: never a MAD core). Everything is
// read from counters the node keeps anyway; a scrape takes no lock on the
// MAD path (the SA's and engine's counters are per-core atomics; the SM's
// status has its own mutex).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "node/control.hpp"

struct MHD_Daemon;

namespace madengine::service {

// How long a scrape waits for the SM's core to copy its counters.
inline constexpr std::uint32_t kRefreshWaitMs = 200;

class MetricsRenderer {
 public:
  explicit MetricsRenderer(node::NodeControl node) : node_(node) {}
  // Any thread; one scrape at a time (the port counts are cached per epoch).
  std::string render();

 private:
  node::NodeControl node_;
  std::mutex mu_;
  std::uint64_t ports_epoch_ = ~std::uint64_t{0};
  std::array<std::uint64_t, 5> ports_by_state_{};  // PortState 0..4 (NoChange, Down, Init, Armed, Active)
};

class MetricsServer {
 public:
  // Listens on `listen` ("HOST:PORT"; port 0 picks a free one) and answers
  // GET /metrics (and /) with render(). Throws std::runtime_error when the
  // address is bad or cannot be bound.
  MetricsServer(const std::string& listen, std::function<std::string()> render);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;
  unsigned port() const noexcept { return port_; }
  std::uint64_t scrapes() const noexcept { return scrapes_.load(std::memory_order_relaxed); }
  // The body of one scrape (the server's thread).
  std::string scrape();

 private:
  std::function<std::string()> render_;
  MHD_Daemon* daemon_ = nullptr;
  unsigned port_ = 0;
  std::atomic<std::uint64_t> scrapes_{0};
};

}  // namespace madengine::service
