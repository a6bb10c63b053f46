// HaAgent (see ha_agent.hpp). Every send is a callback-form transaction or a
// plain send, so the SMA path never waits; only after_discovery() and
// poll_loop() are coroutines.
#include "sm/ha/ha_agent.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::sm::ha {

HaAgent::HaAgent(Scheduler& sched, TransactionManager& txn, TxSink& tx, SmIdentity self, std::uint8_t port_num,
                 HaConfig cfg)
    : sched_(sched),
      txn_(txn),
      tx_(tx),
      sm_(self, StateMachineConfig{.poll_failures_max = cfg.poll_retries}),
      port_num_(port_num),
      cfg_(cfg) {
  if (cfg_.poll_interval_ms == 0) throw std::invalid_argument("HA poll_interval_ms must be >= 1");
  if (cfg_.poll_timeout_ms == 0) cfg_.poll_timeout_ms = std::min<std::uint32_t>(cfg_.poll_interval_ms, 1000);
}

const FoundSm* HaAgent::peer(std::uint64_t guid) const noexcept {
  for (const FoundSm& p : peers_)
    if (p.sm.guid == guid) return &p;
  return nullptr;
}

void HaAgent::apply(const Actions& a) noexcept {
  if (a.changed) {
    ++counters_.transitions;
    spdlog::info("sm/ha: {} -> {} ({}){}", wire::to_string(a.transition.from), wire::to_string(a.transition.to),
                 a.transition.reason,
                 sm_.polled_guid() != 0 ? fmt::format(", polling SM {:#018x}", sm_.polled_guid()) : std::string());
  }
  if (a.sweep) sweep_requested_ = true;
  // The ACKNOWLEDGE shows the state we had when the HANDOVER came (STANDBY):
  // OpenSM refuses an ACKNOWLEDGE from any other state.
  if (a.acknowledge_to != 0) send_set(a.acknowledge_to, wire::sm_info_mod::kAcknowledge, wire::SmState::kStandby);
  // A HANDOVER comes from a master (IBA 14.4.1 Table 183, OpenSM checks it):
  // it shows the MASTER we were until this very transition.
  if (a.handover_to != 0) send_set(a.handover_to, wire::sm_info_mod::kHandover, wire::SmState::kMaster);
  if (a.trap144_to != 0) send_trap144(a.trap144_to);
  // Last: what the owner publishes of the new state includes what was sent for it.
  if (a.changed && on_transition_) on_transition_(a.transition);
}

void HaAgent::send_set(std::uint64_t guid, std::uint32_t modifier, wire::SmState shown) noexcept {
  const FoundSm* p = peer(guid);
  if (p == nullptr) {
    if (modifier == wire::sm_info_mod::kAcknowledge) {
      pending_ack_ = guid;  // sent once the sweep has found its route
      return;
    }
    spdlog::warn("sm/ha: no route to SM {:#018x} for SMInfo Set {}; its next poll tells", guid, modifier);
    return;
  }
  wire::SmInfo ours = sm_.sm_info(act_count_, true);
  ours.set_state(shown);
  const MadBuf req = make_sminfo_set(modifier, p->at.path, port_num_, ours, cfg_.m_key);
  const TxnStatus st = txn_.request(req, RequestOptions{.timeout_ms = cfg_.set_timeout_ms, .retries = cfg_.set_retries},
                                    &HaAgent::on_set_done, this);
  if (st != TxnStatus::kOk) {
    spdlog::warn("sm/ha: SMInfo Set {} to {:#018x} not sent: {}", modifier, guid, static_cast<int>(st));
    return;
  }
  if (modifier == wire::sm_info_mod::kHandover) ++counters_.handovers_sent;
  if (modifier == wire::sm_info_mod::kAcknowledge) ++counters_.acks_sent;
  spdlog::info("sm/ha: sent SMInfo Set({}) to SM {:#018x}",
               modifier == wire::sm_info_mod::kHandover ? "HANDOVER" : "ACKNOWLEDGE", guid);
}

void HaAgent::on_set_done(void*, const TxnResult& r) noexcept {
  if (!r) {
    spdlog::warn("sm/ha: SMInfo Set got no answer (polling decides)");
    return;
  }
  const std::uint16_t status = r.response.hdr().status.get() & 0x7fff;
  if (status != 0) spdlog::warn("sm/ha: SMInfo Set refused with status {:#06x}", status);
}

void HaAgent::send_trap144(std::uint64_t guid) noexcept {
  const FoundSm* p = peer(guid);
  if (p == nullptr || p->at.lid == 0 || own_lid_ == 0) return;  // no LIDs yet: the master finds us by sweeping
  const MadBuf t = make_trap144(own_lid_, p->at.lid, port_num_, wire::port_cap::kIsSM);
  if (tx_.send(t)) ++counters_.traps144_sent;
}

Task<SweepDecision> HaAgent::after_discovery(SmpQueue& q, const fabric::Fabric& f, std::uint64_t own_port_guid,
                                             std::uint16_t own_lid) {
  own_lid_ = own_lid;
  const std::vector<SmPort> ports = find_sm_ports(f, own_port_guid);
  auto found = std::make_shared<std::vector<FoundSm>>();
  const std::uint64_t key = sm_.self().sm_key;
  for (const SmPort& at : ports) {
    q.submit(make_sminfo_get(at.path, port_num_, key, cfg_.m_key), [found, at, key](const TxnResult& r) {
      const auto p = decode_sminfo_reply(r, key);
      if (p) found->push_back(FoundSm{.at = at, .sm = *p});
    });
  }
  co_await q.drained();
  // Keep routes to SMs we still follow even if this sweep missed them.
  std::vector<FoundSm> next = *found;
  peers_ = std::move(next);
  std::vector<PeerSm> view;
  view.reserve(peers_.size());
  for (const FoundSm& p : peers_) {
    view.push_back(p.sm);
    spdlog::info("sm/ha: found SM {:#018x} LID {} priority {} state {}{}", p.sm.guid, p.at.lid, p.sm.priority,
                 wire::to_string(p.sm.state), p.sm.key_ok ? "" : " (other SM_Key: ignored)");
  }
  if (pending_ack_ != 0) {
    const std::uint64_t g = pending_ack_;
    pending_ack_ = 0;
    send_set(g, wire::sm_info_mod::kAcknowledge, wire::SmState::kStandby);
  }
  const Actions a = sm_.sweep_done(view);
  apply(a);
  release_held();  // what waited for the election sees its outcome
  co_return SweepDecision{.program = a.program,
                          .assert_all = a.assert_all,
                          .absorbed = a.absorbed,
                          .handed = a.handed,
                          .handed_part = a.handed_part,
                          .peers = peers_.size()};
}

void HaAgent::check_peers(SmpQueue& q, std::function<void(std::uint64_t guid)> on_new_master) const {
  const std::uint64_t key = sm_.self().sm_key;
  auto shared = std::make_shared<std::function<void(std::uint64_t)>>(std::move(on_new_master));
  for (const FoundSm& p : peers_) {
    if (!p.sm.key_ok || p.sm.state == wire::SmState::kMaster) continue;  // ignored, or the election knew it
    q.submit(make_sminfo_get(p.at.path, port_num_, key, cfg_.m_key), [shared, key](const TxnResult& r) {
      const auto now = decode_sminfo_reply(r, key);
      if (now && now->key_ok && now->state == wire::SmState::kMaster) (*shared)(now->guid);
    });
  }
}

Task<void> HaAgent::poll_loop() {
  const Nanos interval = Nanos{cfg_.poll_interval_ms} * kNanosPerMilli;
  for (;;) {
    const Wake w = co_await sched_.sleep_for(interval);
    if (!w) co_return;
    const std::uint64_t g = sm_.polled_guid();
    if (g == 0) continue;
    const FoundSm* p = peer(g);
    if (p == nullptr) {
      ++counters_.polls_failed;
      apply(sm_.poll_result(nullptr));
      continue;
    }
    const MadBuf req = make_sminfo_get(p->at.path, port_num_, sm_.self().sm_key, cfg_.m_key);
    ++counters_.polls;
    const TxnResult r = co_await txn_.request(req, RequestOptions{.timeout_ms = cfg_.poll_timeout_ms, .retries = 0});
    if (r.status == TxnStatus::kCancelled) co_return;
    if (sm_.polled_guid() != g) continue;  // the target changed while we waited
    const auto reply = decode_sminfo_reply(r, sm_.self().sm_key);
    if (!reply) ++counters_.polls_failed;
    else last_poll_answer_ns_ = sched_.clock().now_ns();
    apply(sm_.poll_result(reply ? &*reply : nullptr));
  }
}

void HaAgent::sweep_started() noexcept {
  if (sm_.state() != wire::SmState::kMaster || cfg_.election_hold_ms == 0) return;
  release_held();  // a sweep that never elected (its discovery failed)
  electing_ = true;
  sched_.spawn(release_after(++election_, Nanos{cfg_.election_hold_ms} * kNanosPerMilli));
}

Task<void> HaAgent::release_after(std::uint64_t election, Nanos hold) {
  const Wake w = co_await sched_.sleep_for(hold);
  if (w && election == election_) release_held();
}

void HaAgent::release_held() noexcept {
  electing_ = false;
  for (MadBuf& b : held_) answer(b, tx_);
  held_.clear();
}

void HaAgent::on_sminfo(MadBuf& buf, CoreContext& ctx) noexcept {
  constexpr std::size_t kHeldMax = 64;  // more waiting Gets are answered at once
  if (electing_ && buf.hdr().method == wire::method::kGet && held_.size() < kHeldMax) {
    held_.push_back(buf);
    ++counters_.gets_held;
    return;
  }
  answer(buf, ctx.tx());
}

void HaAgent::answer(MadBuf& buf, TxSink& tx) noexcept {
  wire::MadHeader& h = buf.hdr();
  const bool directed = h.klass() == wire::MgmtClass::kSubnDirected;
  const auto data = std::span<std::uint8_t>(buf.mad.bytes).subspan(offsetof(wire::Smp, data), wire::kSmpDataSize);
  const auto req = wire::decode<wire::SmInfo>(data);
  const std::uint64_t req_key = req ? req->sm_key.get() : 0;
  const std::uint64_t req_m_key = buf.as<wire::Smp>().m_key.get();
  // Our SMInfo as it was when the request came: the answer to a Set shows the
  // state before the transition (as OpenSM's does).
  wire::SmInfo ours =
      sm_.sm_info(act_count_, sminfo_shows_key(req_key, sm_.self().sm_key, req_m_key, cfg_.m_key));
  std::uint16_t status = 0;
  Actions actions;
  if (h.method == wire::method::kSet) {
    ++counters_.sets_received;
    if (!req) {
      status = kSmInfoSetRefused;
    } else {
      SetReply r = sm_.on_set(h.attr_mod.get(), *req);
      status = r.status;
      actions = r.actions;
      spdlog::info("sm/ha: SMInfo Set modifier {} from SM {:#018x} ({}): {}", h.attr_mod.get(), req->guid.get(),
                   wire::to_string(req->state()), status == 0 ? "accepted" : "refused");
    }
    if (status != 0) ++counters_.sets_refused;
  }
  h.method = wire::method::kGetResp;
  h.status = wire::be16::from(static_cast<std::uint16_t>(status | (directed ? 0x8000 : 0)));  // D bit on the way back
  std::fill(data.begin(), data.end(), std::uint8_t{0});
  wire::encode(ours, data);
  if (directed) buf.addr.lid = wire::kPermissiveLid;
  tx.send(buf);
  apply(actions);
}

}  // namespace madengine::sm::ha
