// The performance manager's settings ([perfmgr] in the daemon's TOML; the
// node reads them, docs/operations.md lists them).
#pragma once

#include <cstdint>
#include <string>

namespace madengine::perfmgr {

// A port whose error counter rises by at least this much between two reads
// is reported (logged once and an event) until a read shows it below again;
// 0 turns a counter's check off.
struct ErrorThresholds {
  std::uint32_t symbol_errors = 10;
  std::uint32_t link_error_recovery = 1;
  std::uint32_t link_downed = 1;
  std::uint32_t rcv_errors = 10;
  std::uint32_t xmit_discards = 100;
  std::uint32_t xmit_wait = 0;  // congestion rather than a fault: off unless asked
};

struct PerfMgrConfig {
  bool enabled = false;
  // Every port is read once per interval, the reads spread evenly over it
  // (OpenSM's perfmgr_sweep_time_s is 180 s).
  std::uint32_t interval_ms = 60'000;
  // PerfMgt MADs in flight at once (OpenSM's perfmgr_max_outstanding_queries: 500).
  std::uint32_t outstanding_max = 64;
  std::uint32_t timeout_ms = 500;   // per attempt
  std::uint32_t retries = 1;
  // While the SA receives more than this many requests a second (a query
  // storm: nodes restarting, a job starting), reads go at a quarter of
  // their pace: the SA's answers come first, and a round takes at most four
  // intervals. 0: the same pace always.
  std::uint32_t sa_busy_qps = 1000;
  ErrorThresholds thresholds;
  // OpenSM's node-name-map format; empty: NodeDescription names nodes.
  std::string node_name_map;
  // Ports whose series the metrics endpoint exports (the rest are counted
  // as dropped series): bounds a scrape's size on a large fabric.
  std::uint32_t metrics_ports_max = 4096;
};

}  // namespace madengine::perfmgr
