// The node's events on their way to the embedder (NodeEvents): the SM's core
// queues notices and SMInfo state changes here (bounded; more are dropped
// and counted); the event thread, or dispatch() for a node nobody started,
// adds subnet up and each published epoch's change (traps 64/65 and port
// changes, from the store's feed), and calls the callbacks one at a time,
// in order, off every MAD core.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/thread_exit.hpp"
#include "madengine/node/events.hpp"
#include "perfmgr/perf_manager.hpp"
#include "sa/snapshot.hpp"

namespace madengine::sm {
class SubnetManager;
}

namespace madengine::node {

class EventHub {
 public:
  EventHub(NodeEvents events, const sa::SnapshotStore& store);
  ~EventHub();
  EventHub(const EventHub&) = delete;
  EventHub& operator=(const EventHub&) = delete;

  // The SM whose status says when the subnet is up (before start()).
  void attach(const sm::SubnetManager& sm) noexcept { sm_ = &sm; }

  // Any thread.
  void push_notice(const wire::Notice& n) noexcept;
  void push_transition(wire::SmState from, wire::SmState to) noexcept;
  // The performance manager's threshold reports (its core); delivered to
  // `on_alarm` (set before start(); not part of NodeEvents, whose layout
  // the C++ ABI fixes).
  using AlarmFn = std::function<void(const perfmgr::PortAlarm&)>;
  void set_port_alarm(AlarmFn on_alarm) { on_alarm_ = std::move(on_alarm); }
  void push_port_alarm(const perfmgr::PortAlarm& a) noexcept;
  std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed) + (changes_ ? changes_->dropped() : 0);
  }

  // The event thread (only when a callback is set). stop() joins it, except
  // when called from it (a callback): then it only asks it to end.
  void start();
  void stop() noexcept;
  // stop() with a bound: false when a callback still runs at `deadline`
  // (the thread ends after it; stop() waits for that).
  bool stop_until(StopDeadline deadline) noexcept;
  bool on_event_thread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }
  // Without the thread: delivers what is pending on the calling thread.
  std::size_t dispatch();

 private:
  struct Item {
    bool is_notice = false;
    std::shared_ptr<const perfmgr::PortAlarm> alarm;  // set: a port alarm
    wire::Notice notice{};
    wire::SmState from = wire::SmState::kNotActive, to = wire::SmState::kNotActive;
  };
  bool wanted() const noexcept;
  void push(const Item& item) noexcept;
  void run();
  std::size_t deliver();  // the thread or dispatch(); never both
  std::size_t epoch_change(const sa::EpochChange& c);

  NodeEvents ev_;
  AlarmFn on_alarm_;
  std::shared_ptr<sa::EpochFeed> changes_;  // with a notice or port_change callback
  const sm::SubnetManager* sm_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;  // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::atomic<std::uint64_t> dropped_{0};
  ThreadExit exit_;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  // Owned by whoever delivers.
  bool was_up_ = false;
};

}  // namespace madengine::node
