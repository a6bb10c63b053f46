// The SA worker's state operations (see core_worker.hpp): Set and Delete of
// ServiceRecords, MCMemberRecords (joins and leaves) and InformInfo, on the
// state core, for requesters the SA can place.
#include <algorithm>
#include <cstring>

#include "fabric/link_rate.hpp"
#include "sa/server/core_worker.hpp"
#include "sa/server/path_query.hpp"

namespace madengine::sa {

void SaServer::CoreWorker::modify(MadBuf& req, AtomicCounters::Kind& k, bool set, Nanos now_ns) noexcept {
  auto& sa = req.as<wire::SaMad>();
  const std::uint16_t attr = sa.hdr.attr_id.get();
  const std::uint64_t mask = sa.comp_mask.get();
  if (id_ != cfg_.state_core) return error(req, wire::status::kMethodAttrUnsupported, k);  // misrouted
  const Requester who = requester_of(req);
  // A requester the SA cannot place (no GRH, a LID our subnet does not
  // give) owns nothing it could register: refused, as OpenSM refuses it
  // ("unknown LID", ERR_REQ_INVALID). Kept, it would be stored under a
  // zero GID that its port never matches again.
  if (who.gid.guid.get() == 0) return error(req, st::kReqInvalid, k);
  std::uint16_t status = st::kReqInvalid;
  try {
    switch (attr) {
      case a::kServiceRecord: {
        wire::ServiceRecord r, out{};
        std::memcpy(&r, sa.data.data(), sizeof(r));
        status = set ? server_.services_.set(r, mask, who, now_ns, out) : server_.services_.erase(r, mask, who, out);
        // The answer to a Set or Delete hides the key as a Get's does (IBA
        // 15.2.5.14; OpenSM's osmtest checks that it reads back zero).
        if (!trusted(sa)) out.service_key.fill(0);
        if (status == 0) return answer_changed(req, &out, sizeof(out), k);
        break;
      }
      case a::kMcMemberRecord: {
        wire::McMemberRecord r, out{};
        std::memcpy(&r, sa.data.data(), sizeof(r));
        status = set ? server_.groups_.join(r, mask, join_context(r, who), out) : server_.groups_.leave(r, mask, who, out);
        if (status == 0) return answer_changed(req, &out, sizeof(out), k);
        break;
      }
      case a::kInformInfo: {
        if (!set) return error(req, wire::status::kMethodAttrUnsupported, k);
        wire::InformInfo r;
        std::memcpy(&r, sa.data.data(), sizeof(r));
        status = server_.subs_.set(r, who, req.addr);
        if (status == 0) return answer_changed(req, &r, sizeof(r), k);
        break;
      }
      default: return error(req, wire::status::kMethodAttrUnsupported, k);
    }
  } catch (...) {
    status = st::kNoResources;
  }
  error(req, status, k);
}

McJoinContext SaServer::CoreWorker::join_context(const wire::McMemberRecord& r, const Requester& who) {
  McJoinContext c;
  c.who = who;
  c.packet_life = snap_->sm.subnet_timeout;
  if (!mc_defaults_valid_) {
    // OpenSM's defaults for a group created without MTU/rate: the smallest of any CA port.
    mc_mtu_ = 5;
    mc_rate_ = 0;
    for (const auto& n : snap_->fabric.nodes) {
      if (n.is_switch()) continue;
      for (std::size_t p = 1; p < n.ports.size(); ++p) {
        if (!n.ports[p].linked()) continue;
        if (n.ports[p].mtu != 0) mc_mtu_ = std::min(mc_mtu_, n.ports[p].mtu);
        const std::uint8_t rc = fabric::port_rate_code(n, static_cast<std::uint8_t>(p));
        mc_rate_ = mc_rate_ == 0 ? rc : wire::rate_min(mc_rate_, rc);
      }
    }
    if (mc_rate_ == 0) mc_rate_ = wire::rate_code::k10Gbps;
    // The MLIDs every switch can forward (OpenSM: the least MulticastFDBCap).
    std::uint32_t mft_cap = std::uint32_t{kMlidLast} - kMlidFirst + 1;
    for (const auto& n : snap_->fabric.nodes)
      if (n.is_switch() && n.switch_info.multicast_fdb_cap.get() != 0)
        mft_cap = std::min<std::uint32_t>(mft_cap, n.switch_info.multicast_fdb_cap.get());
    server_.groups_.set_mlid_last(static_cast<std::uint16_t>(kMlidFirst + mft_cap - 1));
    mc_defaults_valid_ = true;
  }
  c.default_mtu = mc_mtu_;
  c.default_rate = mc_rate_;
  if (!snap_->local_prefix(r.port_gid.prefix.get())) return c;
  const auto it = snap_->by_port_guid.find(r.port_gid.guid.get());
  if (it == snap_->by_port_guid.end()) return c;
  const fabric::EndPort e = it->second;
  const auto& port = snap_->fabric.nodes[e.node].ports[e.port];
  c.port_guid = r.port_gid.guid.get();
  if (port.mtu != 0) c.port_mtu = port.mtu;
  c.port_rate = fabric::link_rate_code(snap_->fabric, e.node, e.port);
  const auto keys = port_pkeys(*snap_, e);
  c.port_pkeys.assign(keys.begin(), keys.end());
  c.requester_pkeys = requester_pkeys(who.lid);
  return c;
}

Requester SaServer::CoreWorker::requester_of(const MadBuf& req) const noexcept {
  Requester r;
  r.lid = req.addr.lid;
  if (req.addr.has_grh) {
    r.gid = req.addr.gid;
  } else if (snap_ != nullptr) {
    if (const auto* e = snap_->end_port_by_lid(req.addr.lid)) {
      const auto& n = snap_->fabric.nodes[e->node];
      const std::uint64_t g = n.ports[e->port].guid != 0 ? n.ports[e->port].guid : n.node_guid;
      r.gid = {wire::be64::from(snap_->subnet_prefix), wire::be64::from(g)};
    }
  }
  return r;
}

}  // namespace madengine::sa
