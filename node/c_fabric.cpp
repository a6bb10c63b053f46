// The C ABI's fabric read access and routing hook (madengine/madengine.h)
// over FabricView, LftTable and the C++ RoutingHook.
#include <algorithm>
#include <cstring>
#include <string>

#include "node/c_api.hpp"

namespace madengine::capi {

namespace {

// An entry point's body: whatever it throws (a message that could not be
// built) becomes a status, never an exception through the C ABI.
template <typename Fn>
int guard(Fn&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return current_exception_status();
  }
}

bool bad(const me_fabric* f) {
  if (f != nullptr && !f->view.empty()) return false;
  set_error("null fabric handle");
  return true;
}

// Whether `node` is a node of the view; the reason recorded when not.
bool node_ok(const me_fabric* f, std::uint32_t node) {
  if (bad(f)) return false;
  if (node < f->view.node_count()) return true;
  set_error("no node " + std::to_string(node));
  return false;
}

// Whether the routing callback may touch the entry of (node, lid); the
// reason recorded when not.
bool lft_entry_ok(const me_lfts* l, std::uint32_t node, std::uint16_t lid) {
  if (l == nullptr || l->table == nullptr) {
    set_error("null LFT handle");
    return false;
  }
  if (node >= l->fabric->node_count() || !l->fabric->node(node).is_switch()) {
    set_error("node " + std::to_string(node) + " is not a switch");
    return false;
  }
  if (lid == 0 || lid > l->table->top_lid()) {
    set_error("LID " + std::to_string(lid) + " is not a unicast LID of this fabric (top " +
              std::to_string(l->table->top_lid()) + ")");
    return false;
  }
  return true;
}

}  // namespace

node::RoutingHook routing_hook(me_routing_fn fn, void* user) {
  return [fn, user](const node::FabricView& f, node::LftTable& lfts, std::string& error) {
    me_lfts l;
    l.table = &lfts;
    l.fabric = &f;
    const me_fabric view{f};
    int rc = 0;
    {
      CallbackScope scope;
      rc = fn(user, &view, &l);
    }
    if (rc == 0) return true;
    error = l.error.empty() ? "the routing callback returned " + std::to_string(rc) : l.error;
    return false;
  };
}

}  // namespace madengine::capi

using namespace madengine;
using capi::fail;

extern "C" {

me_fabric* me_node_fabric(me_node* n) {
  if (n == nullptr) {
    fail(ME_ERR_INVALID, "null node handle");
    return nullptr;
  }
  try {
    capi::NodeCall call(*n);
    if (!call.ok()) {
      fail(ME_ERR_STATE, "the node is being destroyed");
      return nullptr;
    }
    if (call.node() == nullptr) {
      fail(ME_ERR_NO_SUBNET, "the node is not started");
      return nullptr;
    }
    node::FabricView v = call.node()->fabric_view();
    if (v.empty()) {
      fail(ME_ERR_NO_SUBNET, "no epoch published yet");
      return nullptr;
    }
    return new me_fabric{std::move(v)};
  } catch (...) {
    capi::current_exception_status();
    return nullptr;
  }
}

void me_fabric_release(me_fabric* f) { delete f; }

std::uint64_t me_fabric_epoch(const me_fabric* f) { return f != nullptr ? f->view.epoch() : 0; }
std::uint32_t me_fabric_node_count(const me_fabric* f) {
  return f != nullptr ? static_cast<std::uint32_t>(f->view.node_count()) : 0;
}
std::uint32_t me_fabric_port_count(const me_fabric* f) {
  return f != nullptr ? static_cast<std::uint32_t>(f->view.port_count()) : 0;
}
std::uint32_t me_fabric_link_count(const me_fabric* f) {
  return f != nullptr ? static_cast<std::uint32_t>(f->view.link_count()) : 0;
}
std::uint16_t me_fabric_top_lid(const me_fabric* f) { return f != nullptr ? f->view.top_lid() : 0; }

int me_fabric_node(const me_fabric* f, std::uint32_t node, struct me_node_info* out) {
  return capi::guard([&]() -> int {
    if (!capi::node_ok(f, node)) return ME_ERR_INVALID;
    if (out == nullptr) return fail(ME_ERR_INVALID, "null node info");
    const node::FabricNode n = f->view.node(node);
    *out = me_node_info{};
    out->node_guid = n.node_guid;
    out->system_guid = n.system_guid;
    out->type = static_cast<std::int32_t>(n.kind);
    out->num_ports = n.num_ports;
    out->lmc = n.lmc;
    out->lid = n.lid;
    const std::size_t len = std::min(n.description.size(), sizeof out->description - 1);
    std::memcpy(out->description, n.description.data(), len);
    out->description[len] = '\0';
    return ME_OK;
  });
}

namespace {

// Whether `node` has `port` (1..N, and 0 on a switch); `err` set and the
// reason recorded when not.
bool port_ok(const me_fabric* f, std::uint32_t node, std::uint8_t port, bool has_out, int& err) {
  err = ME_ERR_INVALID;
  if (!capi::node_ok(f, node)) return false;
  if (!has_out) {
    err = fail(ME_ERR_INVALID, "null output");
    return false;
  }
  const node::FabricNode n = f->view.node(node);
  if (port > n.num_ports || (port == 0 && !n.is_switch())) {
    err = fail(ME_ERR_INVALID, "node " + std::to_string(node) + " has no port " + std::to_string(port));
    return false;
  }
  return true;
}

}  // namespace

int me_fabric_port(const me_fabric* f, std::uint32_t node, std::uint8_t port, struct me_port_info* out) {
  return capi::guard([&]() -> int {
    int err = ME_OK;
    if (!port_ok(f, node, port, out != nullptr, err)) return err;
    const node::FabricPort p = f->view.port(node, port);
    *out = me_port_info{};
    out->port_guid = p.guid;
    out->lid = p.lid;
    out->lmc = f->view.node(node).lmc;
    out->state = p.state;
    out->peer_node = p.linked() ? p.peer : ME_NO_NODE;
    out->peer_port = p.peer_port;
    out->link_width = p.link_width;
    out->link_speed = p.link_speed;
    out->mtu = p.mtu;
    return ME_OK;
  });
}

int me_fabric_port_link(const me_fabric* f, std::uint32_t node, std::uint8_t port, struct me_port_link* out) {
  return capi::guard([&]() -> int {
    int err = ME_OK;
    if (!port_ok(f, node, port, out != nullptr, err)) return err;
    const node::PortLink l = f->view.port_link(node, port);
    *out = me_port_link{};
    out->width = l.width;
    out->speed = l.speed;
    out->speed_ext = l.speed_ext;
    out->speed_ext2 = l.speed_ext2;
    out->port_rate = l.port_rate;
    out->link_rate = l.link_rate;
    out->mtu_cap = l.mtu_cap;
    out->vl_cap = l.vl_cap;
    out->op_vls = l.op_vls;
    out->data_mbps = l.data_mbps;
    return ME_OK;
  });
}

int me_fabric_lid_owner(const me_fabric* f, std::uint16_t lid, std::uint32_t* node, std::uint8_t* port) {
  return capi::guard([&]() -> int {
    if (capi::bad(f)) return ME_ERR_INVALID;
    if (lid == 0) return fail(ME_ERR_INVALID, "LID 0");
    const std::optional<node::EndPort> e = f->view.end_port_by_lid(lid);
    if (!e) return fail(ME_ERR_INVALID, "no port has LID " + std::to_string(lid));
    if (node != nullptr) *node = e->node;
    if (port != nullptr) *port = e->port;
    return ME_OK;
  });
}

int me_fabric_lft_port(const me_fabric* f, std::uint32_t node, std::uint16_t lid) {
  return capi::guard([&]() -> int {
    if (!capi::node_ok(f, node)) return ME_ERR_INVALID;
    if (!f->view.node(node).is_switch()) return fail(ME_ERR_INVALID, "node " + std::to_string(node) + " is not a switch");
    return f->view.lft_port(node, lid);
  });
}

int me_lft_set(me_lfts* l, std::uint32_t node, std::uint16_t lid, std::uint8_t port) {
  return capi::guard([&]() -> int {
    if (!capi::lft_entry_ok(l, node, lid)) return ME_ERR_INVALID;
    if (!l->table->set(node, lid, port))
      return fail(ME_ERR_INVALID, "switch " + std::to_string(node) + " has no port " + std::to_string(port));
    return ME_OK;
  });
}

int me_lft_get(const me_lfts* l, std::uint32_t node, std::uint16_t lid) {
  return capi::guard([&]() -> int {
    return capi::lft_entry_ok(l, node, lid) ? int{l->table->get(node, lid)} : int{ME_ERR_INVALID};
  });
}

void me_lfts_error(me_lfts* l, const char* message) {
  if (l == nullptr || message == nullptr) return;
  try {
    l->error = message;
  } catch (...) {
    l->error.clear();
  }
}

}  // extern "C"
