// The C ABI's node, status, paths, events and vendor MAD handlers
// (madengine/madengine.h) over madengine::node::Node.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>

#include "node/c_api.hpp"
#include "node/internal_node.hpp"
#include "node/logging.hpp"
#include "node/perfmgr_keys.hpp"

namespace madengine::capi {

namespace {

thread_local std::string t_last_error;
thread_local int t_callback_depth = 0;

void copy_out(char* err, std::size_t errlen, const std::string& msg) noexcept {
  if (err == nullptr || errlen == 0) return;
  const std::size_t n = std::min(errlen - 1, msg.size());
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// [log] as the daemon applies it, when the TOML names it; else stderr in
// the daemon's format, unless the embedder set a logger of its own.
void apply_log(const node::NodeConfig& c) {
  if (c.given.contains("log.file") || c.given.contains("log.level")) node::apply_log_config(c.log);
  else node::log_to_stderr_unless_set();
}

me_notice to_c(const wire::Notice& n) {
  me_notice c{};
  c.is_generic = static_cast<std::uint8_t>(n.is_generic());
  c.type = static_cast<std::uint8_t>(n.type());
  c.producer_or_vendor = static_cast<std::uint32_t>(n.producer_type());  // VendorID in the same bits
  c.trap_number = n.trap_number.get();
  c.issuer_lid = n.issuer_lid.get();
  c.toggle = static_cast<std::uint8_t>(n.notice_toggle());
  c.count = static_cast<std::uint16_t>(n.notice_count());
  std::memcpy(c.data_details, n.data_details.data(), sizeof c.data_details);
  c.issuer_gid_prefix = n.issuer_gid.prefix.get();
  c.issuer_gid_guid = n.issuer_gid.guid.get();
  return c;
}

void to_c(const MadBuf& b, me_mad& m) noexcept {
  std::memcpy(m.data, b.mad.bytes.data(), sizeof m.data);
  m.length = b.len;
  m.lid = b.addr.lid;
  m.remote_qpn = b.addr.remote_qpn;
  m.qkey = b.addr.qkey;
  m.sl = b.addr.sl;
  m.pkey_index = b.addr.pkey_index;
  m.port_num = b.addr.port_num;
}

void from_c(const me_mad& m, MadBuf& b) noexcept {
  std::memcpy(b.mad.bytes.data(), m.data, sizeof m.data);
  b.len = static_cast<std::uint16_t>(std::min<std::uint32_t>(m.length, wire::kMadSize));
  b.addr.lid = m.lid;
  b.addr.remote_qpn = m.remote_qpn;
  b.addr.qkey = m.qkey;
  b.addr.sl = m.sl;
  b.addr.pkey_index = m.pkey_index;
  b.addr.port_num = m.port_num;
}

// What me_set_* registered, as the node's C++ hooks.
// me_port_errors.over uses PortAlarm's bits: bit i is the error Counter kFirstError + i.
static_assert(ME_PERF_SYMBOL_ERRORS == 1u << (static_cast<unsigned>(perfmgr::Counter::kSymbolErrors) - perfmgr::kFirstError));
static_assert(ME_PERF_LINK_ERROR_RECOVERY == 1u << (static_cast<unsigned>(perfmgr::Counter::kLinkErrorRecovery) - perfmgr::kFirstError));
static_assert(ME_PERF_LINK_DOWNED == 1u << (static_cast<unsigned>(perfmgr::Counter::kLinkDowned) - perfmgr::kFirstError));
static_assert(ME_PERF_RCV_ERRORS == 1u << (static_cast<unsigned>(perfmgr::Counter::kRcvErrors) - perfmgr::kFirstError));
static_assert(ME_PERF_XMIT_DISCARDS == 1u << (static_cast<unsigned>(perfmgr::Counter::kXmitDiscards) - perfmgr::kFirstError));
static_assert(ME_PERF_XMIT_WAIT == 1u << (static_cast<unsigned>(perfmgr::Counter::kXmitWait) - perfmgr::kFirstError));

// The performance manager ([perfmgr]) and the port errors callback: beside
// NodeHooks, whose layout the C++ ABI fixes.
node::InternalOptions options_of(const me_node& n) {
  node::InternalOptions o;
  o.perfmgr = n.perfmgr;
  if (n.port_errors != nullptr)
    o.on_port_alarm = [fn = n.port_errors, user = n.port_errors_user](const perfmgr::PortAlarm& a) {
      me_port_errors c{};
      c.node_guid = a.node_guid;
      c.port_guid = a.port_guid;
      c.port_num = a.port_num;
      c.is_switch = a.is_switch ? 1 : 0;
      c.lid = a.lid;
      const std::size_t len = std::min(a.name.size(), sizeof c.name - 1);
      std::memcpy(c.name, a.name.data(), len);
      c.over = a.counters;
      c.symbol_errors = at(a.change, perfmgr::Counter::kSymbolErrors);
      c.link_error_recovery = at(a.change, perfmgr::Counter::kLinkErrorRecovery);
      c.link_downed = at(a.change, perfmgr::Counter::kLinkDowned);
      c.rcv_errors = at(a.change, perfmgr::Counter::kRcvErrors);
      c.xmit_discards = at(a.change, perfmgr::Counter::kXmitDiscards);
      c.xmit_wait = at(a.change, perfmgr::Counter::kXmitWait);
      c.interval_s = a.interval_s;
      CallbackScope scope;
      fn(user, &c);
    };
  return o;
}

node::NodeHooks hooks_of(const me_node& n) {
  node::NodeHooks h;
  if (n.subnet_up != nullptr)
    h.events.subnet_up = [fn = n.subnet_up, user = n.subnet_up_user](std::uint64_t epoch) {
      CallbackScope scope;
      fn(user, epoch);
    };
  if (n.sm_state != nullptr)
    h.events.sm_state = [fn = n.sm_state, user = n.sm_state_user](wire::SmState from, wire::SmState to) {
      CallbackScope scope;
      fn(user, static_cast<std::int32_t>(from), static_cast<std::int32_t>(to));
    };
  if (n.notice != nullptr)
    h.events.notice = [fn = n.notice, user = n.notice_user](const wire::Notice& notice) {
      const me_notice c = to_c(notice);
      CallbackScope scope;
      fn(user, &c);
    };
  if (n.port_change != nullptr)
    h.events.port_change = [fn = n.port_change, user = n.port_change_user](const node::PortChange& p) {
      const me_port_change c{.node_guid = p.node_guid,
                             .port_guid = p.port_guid,
                             .port_num = p.port_num,
                             .is_switch = static_cast<std::uint8_t>(p.is_switch ? 1 : 0),
                             .old_lid = p.old_lid,
                             .new_lid = p.new_lid,
                             .old_state = p.old_state,
                             .new_state = p.new_state,
                             .epoch = p.epoch};
      CallbackScope scope;
      fn(user, &c);
    };
  if (n.routing != nullptr) h.routing = routing_hook(n.routing, n.routing_user);
  for (const me_node::VendorHandler& v : n.vendor)
    h.vendor_classes.push_back(node::VendorClassHandler{
        .mgmt_class = v.mgmt_class, .handler = [fn = v.fn, user = v.user](const MadBuf& req, MadBuf& resp) {
          me_mad in{}, out{};
          to_c(req, in);
          to_c(resp, out);
          CallbackScope scope;
          const bool send = fn(user, &in, &out) != 0;
          if (send) from_c(out, resp);
          return send;
        }});
  return h;
}

bool bad(const me_node* n) noexcept {
  if (n != nullptr) return false;
  set_error("null node handle");
  return true;
}

// The setters: before the first start only.
template <typename Fn>
int set_hook(me_node* n, Fn&& assign) noexcept {
  if (bad(n)) return ME_ERR_INVALID;
  if (CallbackScope::active()) return fail(ME_ERR_CONTEXT, "callbacks and handlers are not set from a callback");
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    std::lock_guard lock(n->life);
    if (n->node) return fail(ME_ERR_STATE, "callbacks and handlers are set before me_node_start");
    return assign(*n);
  } catch (...) {
    return current_exception_status();
  }
}

}  // namespace

NodeCall::NodeCall(me_node& n) noexcept : n_(n) {
  std::lock_guard lock(n.mu);
  if (n.closing.load(std::memory_order_relaxed)) return;
  ++n.calls;
  ok_ = true;
  node_ = n.node.get();
}

NodeCall::~NodeCall() {
  if (!ok_) return;
  std::lock_guard lock(n_.mu);
  if (--n_.calls == 0) n_.idle.notify_all();
}

void set_error(std::string_view message) noexcept {
  try {
    t_last_error.assign(message);
  } catch (...) {
    t_last_error.clear();
  }
}

int fail(int status, std::string_view message) noexcept {
  set_error(message);
  return status;
}

int current_exception_status() noexcept {
  try {
    throw;
  } catch (const node::ConfigError& e) {
    return fail(ME_ERR_CONFIG, e.what());
  } catch (const std::bad_alloc&) {
    return fail(ME_ERR_NO_MEMORY, "out of memory");
  } catch (const std::invalid_argument& e) {
    return fail(ME_ERR_CONFIG, e.what());  // the SM's and SA's checks of their configuration
  } catch (const std::logic_error& e) {
    return fail(ME_ERR_STATE, e.what());
  } catch (const std::runtime_error& e) {
    return fail(ME_ERR_TRANSPORT, e.what());
  } catch (const std::exception& e) {
    return fail(ME_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(ME_ERR_INTERNAL, "unknown error");
  }
}

CallbackScope::CallbackScope() noexcept { ++t_callback_depth; }
CallbackScope::~CallbackScope() { --t_callback_depth; }
bool CallbackScope::active() noexcept { return t_callback_depth > 0; }

}  // namespace madengine::capi

using namespace madengine;
using capi::CallbackScope;
using capi::current_exception_status;
using capi::fail;
using capi::NodeCall;

extern "C" {

const char* me_version(void) {
  return ME_VERSION_STRING;
}

const char* me_strerror(int status) {
  switch (status) {
    case ME_OK: return "success";
    case ME_ERR_INVALID: return "invalid argument";
    case ME_ERR_CONFIG: return "bad configuration";
    case ME_ERR_STATE: return "not allowed in the node's state";
    case ME_ERR_TRANSPORT: return "the transport did not open";
    case ME_ERR_TIMEOUT: return "timed out";
    case ME_ERR_NO_SUBNET: return "no epoch published yet";
    case ME_ERR_NO_PATH: return "no path";
    case ME_ERR_CONTEXT: return "not allowed from a callback";
    case ME_ERR_NO_MEMORY: return "out of memory";
    case ME_ERR_INTERNAL: return "internal error";
    default: return "unknown status";
  }
}

const char* me_last_error(void) {
  return capi::t_last_error.c_str();
}

me_node* me_node_create(const char* toml, char* err, std::size_t errlen) {
  try {
    auto n = std::make_unique<me_node>();
    n->cfg = node::parse_config(toml != nullptr ? toml : "", "<toml>");
    n->perfmgr = node::parse_perfmgr_config(toml != nullptr ? toml : "", "<toml>");
    node::validate(n->cfg);
    capi::apply_log(n->cfg);
    capi::copy_out(err, errlen, "");
    return n.release();
  } catch (...) {
    current_exception_status();
    capi::copy_out(err, errlen, capi::t_last_error);
    return nullptr;
  }
}

int me_node_start(me_node* n) {
  if (capi::bad(n)) return ME_ERR_INVALID;
  if (CallbackScope::active()) return fail(ME_ERR_CONTEXT, "me_node_start from a callback");
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    std::lock_guard life(n->life);
    if (!n->node) {
      auto made = std::make_unique<node::InternalNode>(n->cfg, capi::hooks_of(*n), capi::options_of(*n));
      std::lock_guard lock(n->mu);
      n->node = std::move(made);
    }
    if (n->node->started()) return fail(ME_ERR_STATE, "the node is running (or still stopping)");
    n->node->start();
    return ME_OK;
  } catch (...) {
    return current_exception_status();
  }
}

int me_node_wait_subnet_up(me_node* n, std::uint32_t timeout_ms) {
  if (capi::bad(n)) return ME_ERR_INVALID;
  if (CallbackScope::active()) return fail(ME_ERR_CONTEXT, "me_node_wait_subnet_up from a callback");
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    node::InternalNode* nd = call.node();
    if (nd == nullptr || !nd->started()) return fail(ME_ERR_STATE, "the node is not started");
    // In slices, so a stop or a destroy ends the wait within one. On the SM's
    // status only: Node::wait_subnet_up would pump a sim node that a stop
    // just left unstarted, beside a restart's driver.
    constexpr auto kSlice = std::chrono::milliseconds(50);
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (nd->sm().wait_subnet_up(std::clamp(left, std::chrono::milliseconds(0), kSlice))) return ME_OK;
      if (n->closing.load(std::memory_order_relaxed)) return fail(ME_ERR_STATE, "the node was destroyed while waiting");
      if (!nd->started()) return fail(ME_ERR_STATE, "the node was stopped while waiting");
      if (left <= kSlice) break;
    }
    return fail(ME_ERR_TIMEOUT, "the subnet did not come up within " + std::to_string(timeout_ms) + " ms");
  } catch (...) {
    return current_exception_status();
  }
}

int me_node_stop(me_node* n) {
  if (capi::bad(n)) return ME_ERR_INVALID;
  if (CallbackScope::active()) return fail(ME_ERR_CONTEXT, "me_node_stop from a callback");
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    std::lock_guard life(n->life);
    if (n->node && !n->node->stop_within(std::chrono::milliseconds(ME_NODE_STOP_WAIT_MS)))
      return fail(ME_ERR_TIMEOUT, "a thread of the node (an engine core, the simulated fabric's driver or the event "
                                  "thread) is still inside a call after " +
                                      std::to_string(ME_NODE_STOP_WAIT_MS) + " ms: the node is still stopping");
    return ME_OK;
  } catch (...) {
    return current_exception_status();
  }
}

void me_node_destroy(me_node* n) {
  if (n == nullptr) return;
  if (CallbackScope::active()) {
    fail(ME_ERR_CONTEXT, "me_node_destroy from a callback: the node was not freed");
    return;
  }
  try {
    {
      // New calls are refused from here; waits see `closing` within a slice.
      std::unique_lock lock(n->mu);
      n->closing.store(true, std::memory_order_relaxed);
      n->idle.wait(lock, [n] { return n->calls == 0; });
    }
    delete n;
  } catch (...) {
    current_exception_status();
  }
}

int me_node_get_status(me_node* n, struct me_node_status* out) {
  if (capi::bad(n)) return ME_ERR_INVALID;
  if (out == nullptr) return fail(ME_ERR_INVALID, "null status");
  *out = me_node_status{};
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    if (call.node() == nullptr) return ME_OK;  // not started yet: nothing to report
    const node::NodeStatus s = call.node()->status();
    out->subnet_up = s.subnet_up ? 1 : 0;
    out->sm_state = static_cast<std::int32_t>(s.state);
    out->sm_lid = s.sm_lid;
    out->epoch = s.epoch;
    out->heavy_sweeps = s.heavy_sweeps;
    out->light_sweeps = s.light_sweeps;
    out->traps = s.traps;
    out->events_dropped = s.events_dropped;
    return ME_OK;
  } catch (...) {
    return current_exception_status();
  }
}

int me_path_query(me_node* n, std::uint16_t slid, std::uint16_t dlid, struct me_path* out) {
  if (capi::bad(n)) return ME_ERR_INVALID;
  if (out == nullptr) return fail(ME_ERR_INVALID, "null path");
  *out = me_path{};
  try {
    NodeCall call(*n);
    if (!call.ok()) return fail(ME_ERR_STATE, "the node is being destroyed");
    if (call.node() == nullptr) return fail(ME_ERR_NO_SUBNET, "the node is not started");
    node::PathInfo p;
    switch (call.node()->path(slid, dlid, p)) {
      case node::PathResult::kNoEpoch: return fail(ME_ERR_NO_SUBNET, "no epoch published yet");
      case node::PathResult::kNoPath:
        return fail(ME_ERR_NO_PATH, "no path from LID " + std::to_string(slid) + " to LID " + std::to_string(dlid));
      case node::PathResult::kOk: break;
    }
    *out = me_path{.slid = p.slid,
                   .dlid = p.dlid,
                   .sgid_prefix = p.sgid_prefix,
                   .sgid_guid = p.sgid_guid,
                   .dgid_prefix = p.dgid_prefix,
                   .dgid_guid = p.dgid_guid,
                   .pkey = p.pkey,
                   .sl = p.sl,
                   .mtu = p.mtu,
                   .rate = p.rate,
                   .packet_life = p.packet_life,
                   .hop_limit = p.hop_limit,
                   .reversible = static_cast<std::uint8_t>(p.reversible ? 1 : 0),
                   .hops = p.hops,
                   .epoch = p.epoch,
                   .reserved = {}};
    return ME_OK;
  } catch (...) {
    return current_exception_status();
  }
}

int me_set_subnet_up_callback(me_node* n, me_subnet_up_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.subnet_up = fn;
    x.subnet_up_user = user;
    return ME_OK;
  });
}

int me_set_sm_state_callback(me_node* n, me_sm_state_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.sm_state = fn;
    x.sm_state_user = user;
    return ME_OK;
  });
}

int me_set_notice_callback(me_node* n, me_notice_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.notice = fn;
    x.notice_user = user;
    return ME_OK;
  });
}

int me_set_port_change_callback(me_node* n, me_port_change_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.port_change = fn;
    x.port_change_user = user;
    return ME_OK;
  });
}

int me_set_port_errors_callback(me_node* n, me_port_errors_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.port_errors = fn;
    x.port_errors_user = user;
    return ME_OK;
  });
}

int me_set_routing_callback(me_node* n, me_routing_fn fn, void* user) {
  return capi::set_hook(n, [&](me_node& x) {
    x.routing = fn;
    x.routing_user = user;
    return ME_OK;
  });
}

int me_register_mad_handler(me_node* n, std::uint8_t mgmt_class, me_mad_handler_fn fn, void* user) {
  if (!node::is_vendor_class(mgmt_class) || fn == nullptr)
    return fail(ME_ERR_INVALID, "vendor classes are 0x09 and 0x30-0x4f, with a handler");
  return capi::set_hook(n, [&](me_node& x) -> int {
    for (const me_node::VendorHandler& v : x.vendor)
      if (v.mgmt_class == mgmt_class) return fail(ME_ERR_INVALID, "vendor class registered twice");
    x.vendor.push_back({mgmt_class, fn, user});
    return ME_OK;
  });
}

}  // extern "C"
