// An in-memory Transport for tests and the dispatch benchmark: a test thread
// injects MADs that the owning core receives, and reads back what the core
// transmitted. Both directions are bounded SPSC queues of MAD copies, so the
// transport behaves like a port: a full queue refuses, it never grows.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/ring.hpp"
#include "madengine/engine/transport.hpp"

namespace madengine {

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::string name, std::uint8_t port_num, std::size_t queue_depth);

  // Test side; one thread.
  bool inject(const MadBuf& buf) noexcept;               // false if the rx queue is full
  std::size_t take_sent(std::span<MadBuf> out) noexcept;  // copies out transmitted MADs
  // rx_burst returns these MADs round-robin, forever (benchmarks); empty span turns it off.
  // Set it before the engine starts.
  void set_replay(std::span<const MadBuf> mads);
  // When false, tx_burst counts and discards instead of queueing (benchmarks).
  void set_record_tx(bool record) noexcept { record_tx_ = record; }
  // Accept at most this many MADs per tx_burst call (back-pressure tests); 0 = no limit.
  void set_tx_burst_limit(std::size_t limit) noexcept { tx_burst_limit_ = limit; }
  std::uint64_t rx_count() const noexcept { return rx_count_.value.load(std::memory_order_relaxed); }
  std::uint64_t tx_count() const noexcept { return tx_count_.value.load(std::memory_order_relaxed); }

  // Transport
  std::string_view name() const noexcept override { return name_; }
  bool open(const AgentSpec& agents) override;
  void close() noexcept override { open_ = false; }
  const LocalPort& local_port() const noexcept override { return port_; }
  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override;
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override;
  DeviceEvent poll_events() noexcept override { return DeviceEvent::kNone; }

 private:
  // Fixed slots recycled through two SPSC rings: free -> queued -> free.
  struct Channel {
    explicit Channel(std::size_t depth);
    std::vector<MadBuf> slots;
    BoostRing<MadBuf, RingMode::kSpsc> free;    // consumer returns, producer takes
    BoostRing<MadBuf, RingMode::kSpsc> queued;  // producer fills, consumer takes
  };
  struct alignas(kCacheLineBytes) Count {
    std::atomic<std::uint64_t> value{0};
  };

  std::string name_;
  LocalPort port_;
  bool open_ = false;
  Channel rx_;  // test -> core
  Channel tx_;  // core -> test
  std::vector<MadBuf> replay_;
  std::size_t replay_next_ = 0;
  bool record_tx_ = true;
  std::size_t tx_burst_limit_ = 0;
  Count rx_count_;
  Count tx_count_;
};

}  // namespace madengine
