// The simulator's time and event queue. The simulator owns time: a
// ManualClock that moves only from one event to the next, so a run is a pure
// function of the topology, the seed and the inputs, and replays exactly.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "madengine/engine/clock.hpp"

namespace madengine::sim {

enum class EventKind : std::uint8_t {
  kSmaRequest,  // a = packet slot: an SMP reached its SMA (or an SM endpoint)
  kDeliver,     // a = packet slot, b = endpoint: a MAD reaches an endpoint
  kLinkDown,    // a = global port index (either end)
  kLinkUp,      // a = global port index
  kNodeMute,    // a = node: stops answering SMPs
  kNodeUnmute,  // a = node
  kNodeReset,   // a = node: loses LIDs, LFT and port states
  kNodeKill,    // a = node: dies (links down, endpoints lose their device)
  kNodeRevive,  // a = node
};

struct Event {
  Nanos at_ns;
  std::uint64_t seq;  // ties broken by insertion order: deterministic
  EventKind kind;
  std::uint32_t a;
  std::uint32_t b;
};

class EventQueue {
 public:
  void push(Nanos at_ns, EventKind kind, std::uint32_t a, std::uint32_t b = 0) {
    heap_.push(Event{at_ns, next_seq_++, kind, a, b});
  }
  bool empty() const noexcept { return heap_.empty(); }
  std::size_t size() const noexcept { return heap_.size(); }
  const Event& top() const noexcept { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& x, const Event& y) const noexcept {
      return x.at_ns != y.at_ns ? x.at_ns > y.at_ns : x.seq > y.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace madengine::sim
