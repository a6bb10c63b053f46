// The one interface between the engine and a MAD transport (umad, sim,
// verbs-ud). The fast path is two burst calls; everything else is setup,
// port attributes and the device life cycle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "madengine/engine/mad_buf.hpp"

namespace madengine {

enum class PortState : std::uint8_t { kNop = 0, kDown = 1, kInit = 2, kArmed = 3, kActive = 4 };

// What the engine needs to know of its local port, refreshed by poll_events().
struct LocalPort {
  std::uint64_t node_guid = 0;
  std::uint64_t port_guid = 0;
  std::uint64_t subnet_prefix = wire::kDefaultSubnetPrefix;
  std::uint16_t lid = 0;
  std::uint8_t lmc = 0;
  std::uint16_t sm_lid = 0;
  std::uint8_t sm_sl = 0;
  std::uint8_t port_num = 1;
  PortState state = PortState::kDown;
  bool is_switch = false;  // SM on a switch's port 0
};

// Device life-cycle events a transport reports (engine/lifecycle acts on them).
enum class DeviceEvent : std::uint8_t {
  kNone,
  kPortChanged,   // LID, SM LID or state changed; LocalPort was refreshed
  kDeviceLost,    // port or device vanished or reset: every handle is stale
  kDeviceBack,    // it returned and open() succeeded again
};

// Which MADs the transport should deliver to us unsolicited.
struct AgentSpec {
  bool smi = false;        // QP0: SMP responses, traps and SMInfo requests from other SMs
  bool is_sm = false;      // declare IsSM on the port (issm device on umad)
  bool sa_server = false;  // QP1: unsolicited SA requests (class 0x03)
  bool gsi_client = false; // QP1: responses to our own GSI requests
  // QP1: requests of these vendor-specific classes (0x09, 0x30-0x4F; class
  // version 1), answered by the embedder (madengine/node/node.hpp).
  std::vector<std::uint8_t> vendor_classes;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const noexcept = 0;

  // Opens the device and registers agents; false with a logged reason if it cannot.
  virtual bool open(const AgentSpec& agents) = 0;
  virtual void close() noexcept = 0;
  virtual const LocalPort& local_port() const noexcept = 0;

  // Fast path. rx_burst fills the caller's buffers (all of them owned by the
  // caller before and after) and returns how many it filled; it never blocks.
  // tx_burst sends as many as it can without blocking and returns that count;
  // the caller keeps ownership of every buffer (the transport copies).
  virtual std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept = 0;
  virtual std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept = 0;

  // Life cycle: polled from the owning core between bursts.
  virtual DeviceEvent poll_events() noexcept = 0;

  // A file descriptor that poll() reports readable when rx_burst would
  // return something, or -1 if there is none (the core then wakes for this
  // transport only at its idle cap). Lets an idle core block instead of
  // spinning; may change after a device event (reopen), so ask each time.
  virtual int wait_fd() const noexcept { return -1; }
};

}  // namespace madengine
