// The C ABI's handles and its guard (madengine/madengine.h): what
// c_node.cpp and c_fabric.cpp share. Every entry point catches everything
// and turns it into a status with a thread-local message.
#pragma once

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

struct me_fabric {
  madengine::node::FabricView view;
};

struct me_lfts {
  std::vector<madengine::fabric::Lft>* lfts = nullptr;
  std::vector<std::uint32_t> index;  // NodeId -> index into *lfts (~0u: not a switch)
  const madengine::fabric::Fabric* fabric = nullptr;
  std::string error;
};

struct me_node {
  madengine::node::NodeConfig cfg;
  madengine::perfmgr::PerfMgrConfig perfmgr;  // [perfmgr] of the same TOML
  std::mutex mu;  // start, stop, destroy and the setters
  std::unique_ptr<madengine::node::Node> node;
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

// The routing hook that calls the C callback with a borrowed me_fabric.
sm::RoutingHook routing_hook(me_routing_fn fn, void* user);

}  // namespace madengine::capi
