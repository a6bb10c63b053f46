// A node: one madengine instance on a port, the assembly of transport
// (umad, the in-process sim, or the embedder's own), engine, SA, SM, HA
// (replica), SA journal and traps, built from the daemon's configuration.
// The `madengine` daemon, madstorm --embedded, the tests and libmadengine's
// C ABI all use it. Threading contract: docs/embedding.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/engine/transport.hpp"
#include "madengine/export.h"
#include "madengine/node/config.hpp"
#include "madengine/node/events.hpp"
#include "madengine/node/fabric_view.hpp"
#include "madengine/wire/smp/sm_info.hpp"

namespace madengine::node {

// Answers one request of a vendor-specific class (0x09, 0x30-0x4F) on the
// engine core that received it; several cores may call it at once. `response`
// arrives as a copy of the request turned into its response (GetResp for
// Get and Set, status 0, same TID and address); return true to send it.
using VendorMadHandler = std::function<bool(const MadBuf& request, MadBuf& response)>;

struct VendorClassHandler {
  std::uint8_t mgmt_class = 0;
  VendorMadHandler handler;
};

// 0x09 (vendor range 1) and 0x30-0x4F (vendor range 2, with OUI), IBA 13.4.4.
constexpr bool is_vendor_class(std::uint8_t mgmt_class) noexcept {
  return mgmt_class == 0x09 || (mgmt_class >= 0x30 && mgmt_class <= 0x4f);
}

// What the embedder plugs in; fixed at construction.
struct NodeHooks {
  NodeEvents events;
  RoutingHook routing;  // empty: the SM's engines (sm.routing)
  std::vector<VendorClassHandler> vendor_classes;
  // Not null: the node runs on this transport (not yet opened; it must
  // outlive the node) instead of the one transport.kind names.
  Transport* transport = nullptr;
};

struct NodeStatus {
  bool subnet_up = false;
  wire::SmState state = wire::SmState::kNotActive;
  std::uint16_t sm_lid = 0;
  std::uint64_t epoch = 0;
  std::uint64_t heavy_sweeps = 0;
  std::uint64_t light_sweeps = 0;
  std::uint64_t traps = 0;
  std::uint64_t events_dropped = 0;  // notices and state changes the event queue had no room for
};

// A PathRecord as the SA would answer it for (SLID, DLID), plus the
// switch-to-switch hops of the routed path.
struct PathInfo {
  std::uint16_t slid = 0, dlid = 0;
  std::uint64_t sgid_prefix = 0, sgid_guid = 0;
  std::uint64_t dgid_prefix = 0, dgid_guid = 0;
  std::uint16_t pkey = 0;
  std::uint8_t sl = 0;
  std::uint8_t mtu = 0;          // IBA MTU code (4 = 2048)
  std::uint8_t rate = 0;         // IBA rate code
  std::uint8_t packet_life = 0;  // IBA code
  std::uint8_t hop_limit = 0;
  bool reversible = false;
  std::uint8_t hops = 0;
  std::uint64_t epoch = 0;
};

enum class PathResult : std::uint8_t { kOk, kNoEpoch, kNoPath };

class Node {
 public:
  // Builds and wires everything; nothing runs yet. Throws ConfigError (bad
  // config or topology) or std::runtime_error (the transport does not open).
  MADENGINE_API explicit Node(const NodeConfig& cfg, NodeHooks hooks = {});
  MADENGINE_API ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // umad (or an embedder's transport): one thread per engine core. sim: a
  // thread that drives the simulated fabric at transport.sim_speed. Both:
  // the event thread. Throws std::logic_error if already started.
  MADENGINE_API void start();
  // Joins every thread the node started; idempotent.
  MADENGINE_API void stop() noexcept;
  MADENGINE_API bool started() const noexcept;

  // sim without start(): one turn of every engine core on the calling
  // thread; when nothing was due, advances the fabric's clock by step_ns.
  // Returns the work done (0 when started or not sim).
  MADENGINE_API std::size_t pump(Nanos step_ns = 10 * kNanosPerMicro);
  // Started: waits in wall time. sim not started: pumps until subnet up or
  // `limit` of simulated time passed.
  MADENGINE_API bool wait_subnet_up(std::chrono::milliseconds limit);
  // Not started: delivers pending events on the calling thread; returns how many.
  MADENGINE_API std::size_t dispatch_events();

  // Any thread.
  MADENGINE_API NodeStatus status() const;
  // The current epoch (empty before the first publication).
  MADENGINE_API FabricView fabric_view() const;
  // Answered in process from the current epoch, as a PathRecord Get by LIDs.
  MADENGINE_API PathResult path(std::uint16_t slid, std::uint16_t dlid, PathInfo& out) const;

  MADENGINE_API bool is_sim() const noexcept;
  MADENGINE_API const NodeConfig& config() const noexcept;

  struct Parts;  // node/parts.hpp

 protected:
  // node/internal_node.hpp: the project's own daemon, tools and tests reach
  // the parts (their headers are private; none of this is exported).
  explicit Node(std::unique_ptr<Parts> parts) noexcept;
  Parts& parts() noexcept { return *p_; }
  const Parts& parts() const noexcept { return *p_; }

 private:
  std::unique_ptr<Parts> p_;
};

}  // namespace madengine::node
