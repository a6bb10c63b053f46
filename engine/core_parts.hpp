// Core's private parts shared by the files that hold its roles: core.cpp
// (set-up, dispatch, the datapath, the loop), core_lifecycle.cpp (device
// events) and core_idle.cpp (waking and blocking).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/core.hpp"
#include "engine/sole_wait.hpp"

namespace madengine {

// One writer per counter: a relaxed load+store is enough and avoids a locked
// add; snapshots on other threads read with relaxed loads.
inline void bump(std::atomic<std::uint64_t>& a, std::uint64_t n = 1) noexcept {
  a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

inline constexpr std::uint32_t kStreakAfterWait = 1u << 30;  // above any spin budget
inline constexpr std::size_t kNoHandlerBuckets = 64;

struct Core::Counters {
  alignas(kCacheLineBytes) std::atomic<std::uint64_t> rx{0};
  std::atomic<std::uint64_t> tx{0};
  std::atomic<std::uint64_t> handled{0};
  std::atomic<std::uint64_t> handed_off{0};
  std::atomic<std::uint64_t> ring_full{0};
  std::atomic<std::uint64_t> no_handler{0};
  std::atomic<std::uint64_t> malformed{0};
  std::atomic<std::uint64_t> unsupported_sent{0};
  std::atomic<std::uint64_t> tx_full{0};
  std::atomic<std::uint64_t> tx_busy{0};
  std::atomic<std::uint64_t> tx_no_route{0};
  std::atomic<std::uint64_t> rx_alloc_failures{0};
  std::atomic<std::uint64_t> device_events{0};
  std::atomic<std::uint64_t> device_lost{0};
  std::atomic<std::uint64_t> device_back{0};
  std::atomic<std::uint64_t> tx_device_lost{0};
  std::atomic<std::uint64_t> txn_resent{0};
  std::atomic<std::uint64_t> txn_failed_device{0};
  std::atomic<std::uint64_t> idle_loops{0};
  std::atomic<std::uint64_t> loops{0};
  std::atomic<std::uint64_t> idle_blocks{0};
  std::atomic<std::uint64_t> idle_wake_event{0};
  std::atomic<std::uint64_t> idle_wake_fd{0};
  std::atomic<std::uint64_t> idle_wake_timeout{0};
  std::atomic<std::uint64_t> busy_loop_max_ns{0};
  std::atomic<std::uint64_t> busy_loops_over_1ms{0};
  // Open-addressed (class, method, attribute) buckets; key + 1, 0 = empty.
  std::array<std::atomic<std::uint64_t>, kNoHandlerBuckets> bucket_key{};
  std::array<std::atomic<std::uint64_t>, kNoHandlerBuckets> bucket_count{};
  std::atomic<std::uint64_t> bucket_other{0};
};

struct Core::LocalTransport {
  Transport* transport = nullptr;
  std::uint16_t index = 0;
  std::vector<MadBuf*> spare;    // rx_burst_max buffers handed to rx_burst
  std::uint32_t spare_len = 0;
  std::vector<MadBuf*> pending;  // tx backlog for this transport, tx_queue_depth
  std::uint32_t pending_len = 0;
  bool lost = false;  // kDeviceLost seen, kDeviceBack not yet: no rx, tx dropped
  SoleWait* sole = nullptr;  // the transport's, if its wait fd may have to be waited on alone (see block())
};

}  // namespace madengine
