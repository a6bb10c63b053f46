// Engine: builds the pool, the rx and tx meshes of SPSC rings (one ring per
// ordered pair of cores) and the cores, runs one pinned thread per core, and
// on stop returns every buffer still in flight to the pool.
#include "engine/engine.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

namespace madengine {

namespace {

PoolBounds with_cores(PoolBounds b, std::uint16_t cores) {
  b.cores = cores;
  return b;
}

std::uint16_t checked_cores(std::uint16_t cores) {
  if (cores == 0 || cores > kCoresMax)
    throw std::invalid_argument("EngineConfig: cores must be 1.." + std::to_string(kCoresMax));
  return cores;
}

// The CPUs this process may run on (cgroups and taskset narrow it), in order.
std::vector<unsigned> allowed_cpus() {
  std::vector<unsigned> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (unsigned c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

void pin_thread(std::thread& t, const std::vector<unsigned>& cpus, unsigned slot, std::uint16_t core) {
  if (cpus.empty()) {
    spdlog::warn("madengine: core {} not pinned: sched_getaffinity gave no CPUs", core);
    return;
  }
  const unsigned cpu = cpus[slot % cpus.size()];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // A container may still refuse: run unpinned rather than not at all.
  if (const int rc = pthread_setaffinity_np(t.native_handle(), sizeof(set), &set); rc != 0)
    spdlog::warn("madengine: core {} not pinned to CPU {}: {}", core, cpu, std::strerror(rc));
}

}  // namespace

CoreCounters EngineStats::total() const noexcept {
  CoreCounters t;
  for (const CoreSnapshot& s : cores) {
    const CoreCounters& c = s.counters;
    t.rx += c.rx;
    t.tx += c.tx;
    t.handled += c.handled;
    t.handed_off += c.handed_off;
    t.ring_full += c.ring_full;
    t.no_handler += c.no_handler;
    t.malformed += c.malformed;
    t.unsupported_sent += c.unsupported_sent;
    t.tx_full += c.tx_full;
    t.tx_busy += c.tx_busy;
    t.tx_no_route += c.tx_no_route;
    t.rx_alloc_failures += c.rx_alloc_failures;
    t.device_events += c.device_events;
    t.device_lost += c.device_lost;
    t.device_back += c.device_back;
    t.tx_device_lost += c.tx_device_lost;
    t.txn_resent += c.txn_resent;
    t.txn_failed_device += c.txn_failed_device;
    t.idle_loops += c.idle_loops;
    t.loops += c.loops;
    t.idle_blocks += c.idle_blocks;
    t.idle_wake_event += c.idle_wake_event;
    t.idle_wake_fd += c.idle_wake_fd;
    t.idle_wake_timeout += c.idle_wake_timeout;
    t.busy_loop_max_ns = std::max(t.busy_loop_max_ns, c.busy_loop_max_ns);
    t.busy_loops_over_1ms += c.busy_loops_over_1ms;
  }
  return t;
}

Engine::Engine(const EngineConfig& config)
    : config_(config),
      pool_(std::make_unique<MadPool>(with_cores(config.pool, checked_cores(config.cores)))),
      dispatcher_(config.cores) {
  shared_.pool = pool_.get();
  shared_.dispatcher = &dispatcher_;
  shared_.clock = config.clock != nullptr ? config.clock : &steady_;
  shared_.cores = config.cores;
  shared_.answer_unsupported = config.answer_unsupported;
  shared_.backoff = config.backoff;
  shared_.device_wait_ns = Nanos{config.device_wait_ms} * kNanosPerMilli;
  shared_.port_to_transport.fill(-1);
  const std::size_t pairs = std::size_t{config.cores} * config.cores;
  shared_.rx_mesh.resize(pairs);
  shared_.tx_mesh.resize(pairs);
  for (std::uint16_t from = 0; from < config.cores; ++from) {
    for (std::uint16_t to = 0; to < config.cores; ++to) {
      if (from == to) continue;
      shared_.rx_mesh[from * config.cores + to] = std::make_unique<CoreRing>(config.pool.ring_depth);
      shared_.tx_mesh[from * config.cores + to] = std::make_unique<CoreRing>(config.pool.ring_depth);
    }
  }
  for (std::uint16_t c = 0; c < config.cores; ++c) shared_.wakers.push_back(std::make_unique<CoreWaker>());
  for (std::uint16_t c = 0; c < config.cores; ++c) cores_.push_back(std::make_unique<Core>(c, shared_));
}

Engine::~Engine() { stop(); }

void Engine::check_stopped(const char* what) const {
  if (running()) throw std::logic_error(std::string("Engine::") + what + ": engine is running");
}

void Engine::add_transport(Transport& transport, std::uint16_t core, std::optional<std::uint8_t> port_num) {
  check_stopped("add_transport");
  if (core >= shared_.cores) throw std::invalid_argument("Engine::add_transport: core out of range");
  const std::uint8_t port = port_num.value_or(transport.local_port().port_num);
  if (shared_.port_to_transport[port] >= 0)
    throw std::invalid_argument("Engine::add_transport: port " + std::to_string(port) + " already has a transport");
  const auto index = static_cast<std::uint16_t>(shared_.transports.size());
  shared_.transports.push_back(TransportSlot{&transport, core, port});
  try {
    cores_[core]->add_transport(index);
  } catch (...) {
    shared_.transports.pop_back();
    throw;
  }
  auto life = std::make_unique<TransportLife>();
  life->last = PortEvent{port, DeviceEvent::kNone, transport.local_port()};
  shared_.life.push_back(std::move(life));
  for (auto& c : cores_) c->on_transport_added();
  shared_.port_to_transport[port] = static_cast<std::int16_t>(index);
}

void Engine::add_transaction_manager(std::uint16_t core, TransactionManager& txn, std::uint16_t port_num) {
  check_stopped("add_transaction_manager");
  if (core >= shared_.cores) throw std::invalid_argument("Engine::add_transaction_manager: core out of range");
  cores_[core]->add_transaction_manager(txn, port_num);
}

void Engine::add_lifecycle_listener(std::uint16_t core, LifecycleListener& listener) {
  check_stopped("add_lifecycle_listener");
  if (core >= shared_.cores) throw std::invalid_argument("Engine::add_lifecycle_listener: core out of range");
  cores_[core]->add_listener(listener);
}

std::optional<LocalPort> Engine::local_port(std::uint8_t port_num) const {
  const std::int16_t idx = shared_.port_to_transport[port_num];
  if (idx < 0) return std::nullopt;
  const TransportLife& life = *shared_.life[static_cast<std::size_t>(idx)];
  const std::lock_guard<std::mutex> g(life.mu);
  return life.last.port;
}

void Engine::add_handler(const DispatchKey& key, MadHandler& handler, OwnerSelector owner) {
  check_stopped("add_handler");
  dispatcher_.add(key, handler, owner);
}

void Engine::set_response_hook(std::uint16_t core, MadHandler& hook) {
  check_stopped("set_response_hook");
  dispatcher_.set_response_hook(core, hook);
}

void Engine::add_poller(std::uint16_t core, Poller& poller) {
  check_stopped("add_poller");
  if (core >= shared_.cores) throw std::invalid_argument("Engine::add_poller: core out of range");
  cores_[core]->add_poller(poller);
}

void Engine::start() {
  check_stopped("start");
  stop_.store(false, std::memory_order_relaxed);
  threads_.reserve(cores_.size());
  exits_.clear();
  const std::vector<unsigned> cpus = config_.pin ? allowed_cpus() : std::vector<unsigned>{};
  for (std::uint16_t c = 0; c < shared_.cores; ++c) {
    Core* core = cores_[c].get();
    ThreadExit* exit = exits_.emplace_back(std::make_unique<ThreadExit>()).get();
    threads_.emplace_back([this, core, exit] {
      ThreadExit::Mark mark(*exit);
      core->run(stop_);
    });
    // Named for top -H, perf and /proc/PID/task/*/comm: "mad-core3".
    const std::string name = "mad-core" + std::to_string(c);
    ::pthread_setname_np(threads_.back().native_handle(), name.c_str());
    if (config_.pin) pin_thread(threads_.back(), cpus, config_.first_cpu + c, c);
  }
}

void Engine::stop() noexcept { stop_until(StopDeadline::max()); }

void Engine::request_stop() noexcept {
  if (threads_.empty()) return;
  // release: pairs with the acquire load in Core::run().
  stop_.store(true, std::memory_order_release);
  for (auto& w : shared_.wakers) w->wake();  // a blocked core sees stop_ at once
}

bool Engine::stop_until(StopDeadline deadline) noexcept {
  if (threads_.empty()) return true;
  request_stop();
  bool all = true;
  for (std::size_t c = 0; c < threads_.size(); ++c) all = join_until(threads_[c], *exits_[c], deadline) && all;
  if (!all) return false;
  threads_.clear();
  exits_.clear();
  // Every core has released what it held; what is left is in the rings.
  drain_rings();
  return true;
}

std::size_t Engine::poll_all_once() noexcept {
  std::size_t work = 0;
  for (auto& c : cores_) work += c->poll_once();
  return work;
}

void Engine::quiesce() noexcept {
  if (running()) return;
  for (auto& c : cores_) c->release();
  drain_rings();
}

void Engine::drain_rings() noexcept {
  MadBuf* batch[64];
  for (auto* mesh : {&shared_.rx_mesh, &shared_.tx_mesh}) {
    for (auto& ring : *mesh) {
      if (!ring) continue;
      while (const std::size_t n = ring->dequeue_burst(std::span<MadBuf*>(batch, std::size(batch))))
        pool_->free_bulk(MadPool::kNoCore, std::span<MadBuf* const>(batch, n));
    }
  }
}

EngineStats Engine::stats() const {
  EngineStats s;
  for (const auto& c : cores_) s.cores.push_back(c->snapshot());
  s.pool = pool_->stats();
  for (auto* mesh : {&shared_.rx_mesh, &shared_.tx_mesh}) {
    auto& out = mesh == &shared_.rx_mesh ? s.rx_mesh : s.tx_mesh;
    for (const auto& ring : *mesh) out.push_back(ring ? ring->stats() : RingStats{});
  }
  return s;
}

}  // namespace madengine
