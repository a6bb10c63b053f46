// The device life cycle as code above the engine sees it: events about a
// port (LID/SM LID/state changed, device lost, device back) with the
// refreshed LocalPort, and reports of what the engine did to the
// transactions in flight (re-sent after the device returned, or failed with
// kDeviceLost once EngineConfig::device_wait_ms passed). Nobody above the
// engine holds a transport; this is all they get.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

#include "engine/transaction.hpp"
#include "madengine/engine/transport.hpp"

namespace madengine {

// A manager registered for every transport of the engine, not one port.
inline constexpr std::uint16_t kAnyPort = 0xffff;

struct PortEvent {
  std::uint8_t port_num = 0;          // the engine's port (TransportSlot::port_num)
  DeviceEvent event = DeviceEvent::kNone;
  LocalPort port{};                   // as the transport reported it with this event
};

// What one core did to one TransactionManager because of one transport.
struct TxnReport {
  std::uint8_t port_num = 0;
  std::uint16_t core = 0;
  bool resent = false;                // true: re-sent with their TIDs; false: failed
  TxnStatus why = TxnStatus::kOk;     // kDeviceLost when failed
  std::size_t count = 0;              // requests acted on
  std::span<const std::uint64_t> tids;  // their wire TIDs (the first kReportTidsMax); valid during the call
};
inline constexpr std::size_t kReportTidsMax = 8192;

// Registered on a core (Engine::add_lifecycle_listener) and called on that
// core's thread, between bursts. Events are coalesced: a listener that is
// slower than the port sees the latest event and LocalPort, never a stale one.
class LifecycleListener {
 public:
  virtual ~LifecycleListener() = default;
  virtual void on_port_event(const PortEvent& ev) noexcept = 0;
  virtual void on_txn_report(const TxnReport& /*report*/) noexcept {}
};

// One transport's life-cycle state, shared by all cores. The owner core is
// the only writer; other cores poll `epoch` and `seq` between bursts and take
// the mutex only when one changed (rare: life-cycle events).
struct TransportLife {
  // Even: the device is present; odd: it is lost. Bumped by the owner core
  // after it stopped (lost) or restarted (back) rx/tx on the transport;
  // release, pairs with the acquire loads of the cores that watch it.
  std::atomic<std::uint32_t> epoch{0};
  // Bumped (release) after every published event; acquire on the readers.
  std::atomic<std::uint32_t> seq{0};
  mutable std::mutex mu;  // guards the two fields below
  PortEvent last{};
};

}  // namespace madengine
