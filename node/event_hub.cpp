// The node's event queue and thread (see event_hub.hpp).
#include "node/event_hub.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "sm/sm.hpp"

namespace madengine::node {

namespace {

// Ports by (node GUID, port number): what a PortChange compares.
struct PortSeen {
  std::uint64_t port_guid = 0;
  std::uint16_t lid = 0;
  std::uint8_t state = 0;
  bool is_switch = false;
};
using PortKey = std::pair<std::uint64_t, std::uint8_t>;

std::map<PortKey, PortSeen> ports_of(const sa::Snapshot& s) {
  std::map<PortKey, PortSeen> out;
  const fabric::Fabric& f = s.fabric;
  for (fabric::NodeId id = 0; id < f.nodes.size(); ++id) {
    const fabric::Node& n = f.nodes[id];
    const std::uint8_t first = n.is_switch() ? 0 : 1;
    for (std::uint8_t p = first; p <= n.num_ports() && p < n.ports.size(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!n.is_switch() && !port.linked()) continue;  // a CA port nobody reached
      const std::uint16_t lid = n.is_switch() ? (p == 0 ? n.base_lid : 0) : f.lid_of({id, p});
      out[{n.node_guid, p}] = PortSeen{port.guid, lid, port.state, n.is_switch()};
    }
  }
  return out;
}

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

EventHub::EventHub(NodeEvents events, const sa::SnapshotStore& store) : ev_(std::move(events)), store_(store) {}

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
  if (const auto snap = store_.current(); snap && snap != last_) {
    if (last_ && ev_.port_change) n += port_changes(*snap);
    last_ = snap;
  }
  return n;
}

std::size_t EventHub::port_changes(const sa::Snapshot& now) {
  const auto before = ports_of(*last_);
  const auto after = ports_of(now);
  std::size_t n = 0;
  auto report = [&](const PortKey& k, const PortSeen* was, const PortSeen* is) {
    const PortSeen& any = is != nullptr ? *is : *was;
    const PortChange c{.node_guid = k.first,
                       .port_guid = any.port_guid,
                       .port_num = k.second,
                       .is_switch = any.is_switch,
                       .old_lid = was != nullptr ? was->lid : std::uint16_t{0},
                       .new_lid = is != nullptr ? is->lid : std::uint16_t{0},
                       .old_state = was != nullptr ? was->state : std::uint8_t{0},
                       .new_state = is != nullptr ? is->state : std::uint8_t{0},
                       .epoch = now.epoch};
    call("port_change", ev_.port_change, c);
    ++n;
  };
  for (const auto& [k, was] : before) {
    const auto it = after.find(k);
    if (it == after.end()) report(k, &was, nullptr);
    else if (it->second.lid != was.lid || it->second.state != was.state) report(k, &was, &it->second);
  }
  for (const auto& [k, is] : after)
    if (!before.contains(k)) report(k, nullptr, &is);
  return n;
}

}  // namespace madengine::node
