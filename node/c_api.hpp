// The C ABI's handles and its guard (madengine/madengine.h): what
// c_node.cpp and c_fabric.cpp share. Every entry point catches everything
// and turns it into a status with a thread-local message.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "madengine/madengine.h"
#include "madengine/node/fabric_view.hpp"
#include "madengine/node/node.hpp"
#include "perfmgr/perf_config.hpp"
#include "node/internal_node.hpp"

struct me_fabric {
  madengine::node::FabricView view;
};

struct me_lfts {
  madengine::node::LftTable* table = nullptr;
  const madengine::node::FabricView* fabric = nullptr;
  std::string error;
};

// Two locks: `life` is held through a start or a stop (which can take up to
// the stop bound) and by the setters; `mu` only for a moment, to claim a
// call (NodeCall) and read `node`, so a query never waits for a stop.
// me_node_destroy waits until no call is in flight before it frees anything.
struct me_node {
  madengine::node::NodeConfig cfg;
  madengine::perfmgr::PerfMgrConfig perfmgr;  // [perfmgr] of the same TOML
  std::mutex life;                 // start, stop and the setters, one at a time
  std::mutex mu;                   // node, calls, closing
  std::condition_variable idle;    // calls fell to 0
  std::unique_ptr<madengine::node::InternalNode> node;  // made at the first start, under both locks
  unsigned calls = 0;              // entry points running on this handle
  std::atomic<bool> closing{false};  // me_node_destroy began: new calls refused, waits end
  // What me_set_* registered, handed to the node at the first start.
  me_subnet_up_fn subnet_up = nullptr;
  void* subnet_up_user = nullptr;
  me_sm_state_fn sm_state = nullptr;
  void* sm_state_user = nullptr;
  me_notice_fn notice = nullptr;
  void* notice_user = nullptr;
  me_port_change_fn port_change = nullptr;
  void* port_change_user = nullptr;
  me_port_errors_fn port_errors = nullptr;
  void* port_errors_user = nullptr;
  me_routing_fn routing = nullptr;
  void* routing_user = nullptr;
  struct VendorHandler {
    std::uint8_t mgmt_class;
    me_mad_handler_fn fn;
    void* user;
  };
  std::vector<VendorHandler> vendor;
};

namespace madengine::capi {

// The calling thread's last error (me_last_error).
void set_error(std::string_view message) noexcept;
int fail(int status, std::string_view message) noexcept;
// The status of the exception being handled, its message recorded.
int current_exception_status() noexcept;

// Set on a thread while it runs one of the embedder's callbacks: the calls
// that would join that thread (or wait on it) refuse with ME_ERR_CONTEXT.
class CallbackScope {
 public:
  CallbackScope() noexcept;
  ~CallbackScope();
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  static bool active() noexcept;
};

// An entry point's claim on a node handle for as long as it runs: counted,
// so me_node_destroy waits for it; refused once the destroy began. node()
// is the node as the claim found it (null before the first start); it stays
// valid for the claim's life (the node is only ever freed by the destroy).
class NodeCall {
 public:
  explicit NodeCall(me_node& n) noexcept;
  ~NodeCall();
  NodeCall(const NodeCall&) = delete;
  NodeCall& operator=(const NodeCall&) = delete;
  bool ok() const noexcept { return ok_; }
  madengine::node::InternalNode* node() const noexcept { return node_; }

 private:
  me_node& n_;
  bool ok_ = false;
  madengine::node::InternalNode* node_ = nullptr;
};

// The routing hook that calls the C callback with a borrowed me_fabric.
node::RoutingHook routing_hook(me_routing_fn fn, void* user);

}  // namespace madengine::capi
