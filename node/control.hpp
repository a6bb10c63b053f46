// The node's control interface for the project's own tools (madstorm's
// embedded run, the daemon's service, madsim) and tests: snapshots of its
// counters across SA, SM and journal, and the simulated fabric, read without
// the caller reaching the SM, SA or engine. Private: not part of libmadengine.
#pragma once

#include <cstdint>

#include "madengine/node/node.hpp"

namespace madengine::sim {
class Fabric;
}

namespace madengine::node {

class InternalNode;

// The SA's requests, every record type and method summed.
struct SaTotals {
  std::uint64_t received = 0;
  std::uint64_t answered = 0;
  std::uint64_t busy = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t dropped = 0;  // admitted but never answered: must stay 0
};

// What the SM's last heavy sweep found and how long its compute steps took.
struct HeavySweepSummary {
  std::uint32_t nodes = 0, switches = 0, cas = 0, links = 0;
  std::uint64_t smps = 0;
  double routing_s = 0, path_db_s = 0, total_s = 0;
  bool ok = false;
};

struct CountersSnapshot {
  NodeStatus node;
  SaTotals sa;
  HeavySweepSummary last_heavy;
  std::uint64_t journal_written = 0, journal_failed = 0;
};

class NodeControl {
 public:
  explicit NodeControl(InternalNode& node) noexcept : node_(node) {}

  // Any thread: the SA's per-core atomics and the SM's status under its lock.
  CountersSnapshot counters() const;
  // sim: the fabric the node is attached to (for the hosts and the checks
  // a tool runs on it); else nullptr.
  sim::Fabric* sim_fabric() const noexcept;

 private:
  InternalNode& node_;
};

}  // namespace madengine::node
