// The node's event queue and thread (see event_hub.hpp).
#include "node/event_hub.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

#include "sm/sm.hpp"

namespace madengine::node {

namespace {

// A callback that throws must not end the event thread.
template <typename Fn, typename... Args>
void call(const char* what, const Fn& fn, Args&&... args) noexcept {
  try {
    fn(std::forward<Args>(args)...);
  } catch (const std::exception& e) {
    spdlog::warn("node: the {} callback threw: {}", what, e.what());
  } catch (...) {
    spdlog::warn("node: the {} callback threw", what);
  }
}

}  // namespace

EventHub::EventHub(NodeEvents events, const sa::SnapshotStore& store) : ev_(std::move(events)) {
  if (ev_.notice || ev_.port_change) changes_ = store.subscribe();
}

EventHub::~EventHub() { stop(); }

bool EventHub::wanted() const noexcept {
  return ev_.subnet_up || ev_.sm_state || ev_.notice || ev_.port_change || on_alarm_;
}

void EventHub::push(const Item& item) noexcept {
  {
    std::lock_guard lock(mu_);
    if (queue_.size() >= ev_.queue_max) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    try {
      queue_.push_back(item);
    } catch (...) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  cv_.notify_one();
}

void EventHub::push_notice(const wire::Notice& n) noexcept {
  if (ev_.notice) push(Item{.is_notice = true, .notice = n});
}

void EventHub::push_transition(wire::SmState from, wire::SmState to) noexcept {
  if (ev_.sm_state) push(Item{.is_notice = false, .from = from, .to = to});
}

void EventHub::push_port_alarm(const perfmgr::PortAlarm& a) noexcept {
  if (!on_alarm_) return;
  try {
    push(Item{.is_notice = false, .alarm = std::make_shared<const perfmgr::PortAlarm>(a)});
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void EventHub::start() {
  if (!wanted() || thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }
  exit_.reset();
  thread_ = std::thread([this] {
    ThreadExit::Mark mark(exit_);
    run();
  });
}

void EventHub::stop() noexcept { stop_until(StopDeadline::max()); }

bool EventHub::stop_until(StopDeadline deadline) noexcept {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable() || on_event_thread()) return true;
  try {
    if (!join_until(thread_, exit_, deadline)) return false;
  } catch (...) {
    return false;  // the wait itself failed (a mutex error): the thread is left to a later stop()
  }
  thread_id_.store(std::thread::id{});
  return true;
}

void EventHub::run() {
  thread_id_.store(std::this_thread::get_id());
  const auto poll = std::chrono::milliseconds(std::max<std::uint32_t>(1, ev_.poll_ms));
  for (;;) {
    bool last = false;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, poll, [this] { return stopping_ || !queue_.empty(); });
      last = stopping_;
    }
    deliver();  // what happened before stop() is still delivered
    if (last) return;
  }
}

std::size_t EventHub::dispatch() { return wanted() ? deliver() : 0; }

std::size_t EventHub::deliver() {
  std::size_t n = 0;
  std::deque<Item> items;
  {
    std::lock_guard lock(mu_);
    items.swap(queue_);
  }
  for (const Item& it : items) {
    if (it.alarm) call("port alarm", on_alarm_, *it.alarm);
    else if (it.is_notice) call("notice", ev_.notice, it.notice);
    else call("sm_state", ev_.sm_state, it.from, it.to);
    ++n;
  }
  if (sm_ != nullptr && !was_up_) {
    const sm::SmStatus s = sm_->status();
    if (s.subnet_up) {
      was_up_ = true;
      if (ev_.subnet_up) call("subnet_up", ev_.subnet_up, s.epoch);
      ++n;
    }
  }
  if (changes_ && changes_->pending())
    for (const auto& change : changes_->take()) n += epoch_change(*change);
  return n;
}

// Traps 64/65 and port changes as the store derived them at publication.
std::size_t EventHub::epoch_change(const sa::EpochChange& c) {
  std::size_t n = 0;
  if (ev_.notice)
    for (const wire::Notice& trap : c.gid_traps) {
      call("notice", ev_.notice, trap);
      ++n;
    }
  if (ev_.port_change)
    for (const sa::PortDelta& d : c.ports) {
      const PortChange pc{.node_guid = d.node_guid,
                          .port_guid = d.port_guid,
                          .port_num = d.port_num,
                          .is_switch = d.is_switch,
                          .old_lid = d.old_lid,
                          .new_lid = d.new_lid,
                          .old_state = d.old_state,
                          .new_state = d.new_state,
                          .epoch = c.epoch};
      call("port_change", ev_.port_change, pc);
      ++n;
    }
  return n;
}

}  // namespace madengine::node
