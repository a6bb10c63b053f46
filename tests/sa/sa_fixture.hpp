// Test fixture for the SA server: a routed fabric from fabric_builders.hpp
// turned into a published Snapshot with raw attributes filled in (as the SM
// would after discovery), and an in-process client that drives an Engine over
// the loopback transport, reassembling RMPP answers with the engine's own
// RmppReceiver (its ACKs go back to the SA through the same transport).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "engine/loopback_transport.hpp"
#include "fabric_builders.hpp"
#include "engine/engine.hpp"
#include "engine/rmpp.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/link_rate.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

namespace madengine::sa::testing {

inline constexpr std::uint64_t kTestSmKey = 0x5a5a'0000'0001ull;

struct Built {
  std::shared_ptr<Snapshot> snap;
  sm::RoutingResult routes;
};

// Fills what discovery would have read (NodeInfo, NodeDescription, PortInfo,
// SwitchInfo), routes, builds the path database and indexes.
inline Built build_snapshot(fabric::Fabric f, std::uint64_t epoch = 1, unsigned shards = 2, std::uint8_t lmc = 0) {
  for (auto& n : f.nodes)
    for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;  // 4x QDR, 4096
  sm::Guid2Lid map;
  sm::assign_lids(f, map, lmc);
  Built b;
  b.routes = sm::compute_routes(f, {});
  for (fabric::NodeId id = 0; id < f.nodes.size(); ++id) {
    auto& n = f.nodes[id];
    n.node_info.base_version = 1;
    n.node_info.class_version = 1;
    n.node_info.set_type(n.is_switch() ? wire::NodeType::kSwitch : wire::NodeType::kCa);
    n.node_info.num_ports = n.num_ports();
    n.node_info.system_image_guid = wire::be64::from(n.system_guid);
    n.node_info.node_guid = wire::be64::from(n.node_guid);
    n.node_info.partition_cap = wire::be16::from(n.is_switch() ? 8 : 128);
    n.node_info.device_id = wire::be16::from(0x1003);
    n.node_info.set_vendor_id(0x02c9);
    n.node_desc.set_text(n.description);
    for (std::uint8_t p = n.is_switch() ? 0 : 1; p <= n.num_ports(); ++p) {
      auto& pi = n.ports[p].info;
      const std::uint16_t lid = n.is_switch() ? n.base_lid : (p < n.port_lids.size() ? n.port_lids[p] : 0);
      pi.lid = wire::be16::from(lid);
      pi.gid_prefix = wire::be64::from(wire::kDefaultSubnetPrefix);
      pi.master_sm_lid = wire::be16::from(0);
      pi.local_port_num = p;
      pi.link_width_active = 2;
      pi.link_width_supported = 3;
      pi.link_width_enabled = 3;
      pi.set_link_speed_active(4);
      pi.set_port_state(n.ports[p].linked() || p == 0 ? 4 : 1);
      pi.set_mtu_cap(5);
      pi.set_neighbor_mtu(5);
      pi.set_lmc(n.is_switch() ? 0 : n.lmc);
      pi.set_subnet_timeout(18);
    }
    if (n.is_switch()) {
      n.switch_info.linear_fdb_cap = wire::be16::from(49152);
      n.switch_info.multicast_fdb_cap = wire::be16::from(4096);
      n.switch_info.linear_fdb_top = wire::be16::from(b.routes.top_lid);
      n.switch_info.set_life_time_value(18);
    }
  }
  auto s = std::make_shared<Snapshot>();
  s->epoch = epoch;
  s->top_lid = b.routes.top_lid;
  s->lfts = b.routes.lfts;
  s->paths = PathDb::build(f, b.routes.lfts, b.routes.top_lid, shards, 1);
  s->fabric = std::move(f);
  s->index();
  // The SM runs on the first CA port.
  for (const auto e : s->fabric.end_ports())
    if (!s->fabric.nodes[e.node].is_switch()) {
      s->sm.lid = s->fabric.lid_of(e);
      s->sm.port_guid = s->fabric.nodes[e.node].ports[e.port].guid;
      s->sm.state = 3;
      s->sm.priority = 1;
      s->sm.sm_key = kTestSmKey;
      break;
    }
  b.snap = std::move(s);
  return b;
}

inline std::vector<std::uint16_t> ca_lids(const Snapshot& s) {
  std::vector<std::uint16_t> out;
  for (const auto e : s.fabric.end_ports())
    if (!s.fabric.nodes[e.node].is_switch()) out.push_back(s.fabric.lid_of(e));
  return out;
}

inline std::uint64_t port_guid_of_lid(const Snapshot& s, std::uint16_t lid) {
  const auto* e = s.end_port_by_lid(lid);
  return e == nullptr ? 0 : s.fabric.nodes[e->node].ports[e->port].guid;
}

inline wire::Gid gid_of(std::uint64_t guid) {
  return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(guid)};
}

template <typename Rec>
MadBuf sa_request(std::uint8_t method, std::uint16_t attr, std::uint64_t mask, const Rec& rec, std::uint64_t tid,
                  std::uint16_t from_lid) {
  MadBuf b;
  auto& sa = b.as<wire::SaMad>();
  sa = wire::SaMad{};
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = 0x03;
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = method;
  sa.hdr.attr_id = wire::be16::from(attr);
  sa.hdr.tid = wire::be64::from(tid);
  sa.comp_mask = wire::be64::from(mask);
  static_assert(sizeof(Rec) <= wire::kSaDataSize);
  std::memcpy(sa.data.data(), &rec, sizeof(Rec));
  b.addr.lid = from_lid;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  return b;
}

struct Answer {
  MadBuf first;                       // the single MAD, or RMPP segment 1
  std::vector<std::uint8_t> payload;  // RMPP: the reassembled records
  bool rmpp = false;
  std::uint16_t status() const { return first.as<wire::SaMad>().hdr.status.get(); }
  std::uint16_t attr_offset() const { return first.as<wire::SaMad>().attr_offset.get(); }
  template <typename Rec>
  std::vector<Rec> records() const {
    std::vector<Rec> out;
    for (std::size_t i = 0;; ++i) {
      auto r = wire::table_record<Rec>(payload, attr_offset(), i);
      if (!r) break;
      out.push_back(*r);
    }
    return out;
  }
  template <typename Rec>
  Rec record() const {
    Rec r;
    std::memcpy(&r, first.as<wire::SaMad>().data.data(), sizeof(Rec));
    return r;
  }
};

// The engine, the loopback port, the SA and a client on the other side.
class SaHarness : public TxSink {
 public:
  explicit SaHarness(std::shared_ptr<const Snapshot> snap, SaServerConfig cfg = {}, std::uint16_t cores = 1)
      : clock_(1'000'000'000), lo_("lo", 1, 8192), receiver_(clock_, *this, &SaHarness::on_recv, this, {}) {
    EngineConfig ec;
    ec.cores = cores;
    ec.pin = false;
    ec.clock = &clock_;
    ec.pool.tx_queue_depth = 4096;
    engine_ = std::make_unique<Engine>(ec);
    lo_.open({});
    engine_->add_transport(lo_, 0);
    store_.publish(std::move(snap));
    server_ = std::make_unique<SaServer>(*engine_, store_, cfg);
  }
  ~SaHarness() override { engine_->quiesce(); }

  void publish(std::shared_ptr<const Snapshot> s) { store_.publish(std::move(s)); }
  SnapshotStore& store() { return store_; }
  bool inject(const MadBuf& b) { return lo_.inject(b); }
  // Client side TxSink: the receiver's ACKs go back to the SA.
  bool send(const MadBuf& b) noexcept override { return lo_.inject(b); }

  // Runs the engine until nothing moves; collects answers by TID.
  void pump(int idle_rounds = 4) {
    int idle = 0;
    std::vector<MadBuf> out(256);
    while (idle < idle_rounds) {
      std::size_t work = engine_->poll_all_once();
      const std::size_t n = lo_.take_sent(out);
      work += n;
      for (std::size_t i = 0; i < n; ++i) take(out[i]);
      receiver_.poll(clock_.now_ns());
      idle = work == 0 ? idle + 1 : 0;
    }
  }

  // Sends a request and returns its answer (nullopt if none came).
  std::optional<Answer> ask(const MadBuf& req) {
    const std::uint64_t tid = req.hdr().tid.get();
    answers_.erase(tid);
    EXPECT_TRUE(inject(req));
    pump();
    const auto it = answers_.find(tid);
    if (it == answers_.end()) return std::nullopt;
    return it->second;
  }

  std::map<std::uint64_t, Answer>& answers() { return answers_; }
  std::vector<MadBuf>& others() { return others_; }  // Reports and anything not an answer
  std::vector<MadBuf>& acks() { return acks_; }      // RMPP ACKs the SA sent
  std::uint64_t answers_to(std::uint64_t tid) const { return count_.count(tid) ? count_.at(tid) : 0; }
  ManualClock& clock() { return clock_; }
  SaServer& server() { return *server_; }
  Engine& engine() { return *engine_; }
  LoopbackTransport& port() { return lo_; }

 private:
  void take(const MadBuf& m) {
    const auto& sa = m.as<wire::SaMad>();
    if (!sa.hdr.is_response()) {
      others_.push_back(m);
      return;
    }
    if (sa.rmpp.active() && sa.rmpp.rmpp_type() == wire::RmppType::kAck) {
      acks_.push_back(m);  // the SA acknowledging a request sent as a transfer
      return;
    }
    if (sa.rmpp.active()) {
      receiver_.on_mad(m);
      return;
    }
    ++count_[sa.hdr.tid.get()];
    answers_[sa.hdr.tid.get()] = Answer{m, {}, false};
  }
  static void on_recv(void* user, const RmppRecvDone& d) noexcept {
    auto* self = static_cast<SaHarness*>(user);
    if (d.outcome != RmppOutcome::kDone) return;
    Answer a{*d.first, std::vector<std::uint8_t>(d.payload.begin(), d.payload.end()), true};
    ++self->count_[d.key.tid];
    self->answers_[d.key.tid] = std::move(a);
  }

  ManualClock clock_;
  LoopbackTransport lo_;
  RmppReceiver receiver_;
  SnapshotStore store_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<SaServer> server_;
  std::map<std::uint64_t, Answer> answers_;
  std::map<std::uint64_t, std::uint64_t> count_;
  std::vector<MadBuf> others_;
  std::vector<MadBuf> acks_;
};

}  // namespace madengine::sa::testing
