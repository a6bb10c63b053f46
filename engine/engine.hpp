// The object a daemon or library user builds: the buffer pool, the two core
// meshes of rings, the dispatcher and the worker cores, wired together.
// Configure (transports, handlers, pollers), start(), stop(); counters any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "engine/core.hpp"
#include "engine/dispatch.hpp"
#include "engine/lifecycle.hpp"
#include "engine/mad_pool.hpp"
#include "engine/poller.hpp"
#include "engine/thread_exit.hpp"
#include "madengine/engine/transport.hpp"

namespace madengine {

struct EngineConfig {
  std::uint16_t cores = 1;         // also the default of pool.cores, which must match
  PoolBounds pool{};               // pool.cores is overwritten with `cores`
  bool pin = true;                 // pin core i to the (first_cpu + i)-th CPU the process may use,
  unsigned first_cpu = 0;          // wrapping around; a refusal is logged, not fatal
  bool answer_unsupported = false; // answer requests nobody handles with kMethodAttrUnsupported
  IdleBackoff backoff{};
  const Clock* clock = nullptr;    // nullptr: a SteadyClock owned by the engine
  // How long requests through a lost device wait for it (then they fail with
  // kDeviceLost; requests made while it stays lost fail at the next check).
  std::uint32_t device_wait_ms = 10'000;
};

struct EngineStats {
  std::vector<CoreSnapshot> cores;
  PoolStats pool;
  std::vector<RingStats> rx_mesh;  // [from * cores + to], zeros on the diagonal
  std::vector<RingStats> tx_mesh;
  CoreCounters total() const noexcept;  // the per-core counters summed
};

class Engine {
 public:
  // Throws std::invalid_argument on bad bounds; allocates everything here.
  explicit Engine(const EngineConfig& config);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();  // stops if running

  // Setup, before start(). The transport is opened by the caller and must
  // outlive the engine; its core runs its rx/tx bursts. Outgoing MADs pick
  // their transport by MadAddr::port_num (default: the transport's local port).
  void add_transport(Transport& transport, std::uint16_t core, std::optional<std::uint8_t> port_num = std::nullopt);
  void add_handler(const DispatchKey& key, MadHandler& handler, OwnerSelector owner);
  void set_response_hook(std::uint16_t core, MadHandler& hook);
  void add_poller(std::uint16_t core, Poller& poller);
  // Device life cycle (lifecycle.hpp). A TransactionManager built on
  // core(core) is registered here instead of add_poller(): the core polls it,
  // pauses it while the device of `port_num` (kAnyPort: any) is lost, re-sends
  // its requests when the device is back and fails them with kDeviceLost after
  // device_wait_ms. Listeners run on `core` and hear port events (coalesced:
  // the latest of each transport) and every such action (which TIDs, and why).
  void add_transaction_manager(std::uint16_t core, TransactionManager& txn, std::uint16_t port_num = kAnyPort);
  void add_lifecycle_listener(std::uint16_t core, LifecycleListener& listener);
  // The LocalPort the transport serving `port_num` last reported (refreshed
  // on every device event); nullopt if no transport serves it. Any thread.
  std::optional<LocalPort> local_port(std::uint8_t port_num) const;

  // Starts one thread per core. Throws std::logic_error if already running.
  void start();
  // Stops and joins every core, then returns every buffer still in a ring to
  // the pool: afterwards pool().in_use() is 0 unless a handler kept one.
  void stop() noexcept;
  // The same in two steps with a bound: every core is told to stop (each
  // sees it at its next loop turn), then joined if it ends by `deadline`.
  // False when a core is still inside a call at the deadline (running()
  // stays true; stop() or a later stop_until() joins it).
  void request_stop() noexcept;
  bool stop_until(StopDeadline deadline) noexcept;
  bool running() const noexcept { return !threads_.empty(); }

  // Drives every core once from the calling thread instead of start():
  // deterministic tests and single-threaded benchmarks. Returns the work done.
  std::size_t poll_all_once() noexcept;
  // After poll_all_once() use: release() every core and drain the rings.
  void quiesce() noexcept;

  EngineStats stats() const;
  std::uint16_t cores() const noexcept { return shared_.cores; }
  MadPool& pool() noexcept { return *pool_; }
  const Dispatcher& dispatcher() const noexcept { return dispatcher_; }
  Core& core(std::uint16_t id) { return *cores_.at(id); }

 private:
  void drain_rings() noexcept;
  void check_stopped(const char* what) const;

  EngineConfig config_;
  SteadyClock steady_;
  std::unique_ptr<MadPool> pool_;
  Dispatcher dispatcher_;
  CoreShared shared_;
  std::vector<std::unique_ptr<Core>> cores_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<ThreadExit>> exits_;  // [core], marked as its thread ends
  std::atomic<bool> stop_{false};
};

}  // namespace madengine
