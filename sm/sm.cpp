// SubnetManager (see sm.hpp): one task loops heavy sweep -> wait (light
// sweeps, traps, multicast changes) -> heavy sweep. Everything but status()
// runs on the SM's engine core, so its state needs no locks.
#include "sm/sm.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <unordered_set>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/switch_graph.hpp"

namespace madengine::sm {

namespace {

constexpr Nanos kIdleStepNs = 20 * kNanosPerMilli;  // how often the idle loop looks for traps and requests

double seconds(Nanos a, Nanos b) { return static_cast<double>(b - a) / 1e9; }

template <typename T>
std::span<const std::uint8_t> bytes_of(const T& v) noexcept {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}

}  // namespace

// Responses on the SM's core: a standby's replication answers (SA GetTable
// responses, RMPP segments included) go to the replica client, the rest to
// the transaction manager.
class SubnetManager::ResponseHook final : public MadHandler {
 public:
  ResponseHook(TransactionManager& t, ha::ReplicaClient* r) : txn_(t), replica_(r) {}
  void on_mad(MadBuf& buf, CoreContext&) noexcept override {
    if (replica_ != nullptr && replica_->on_response(buf)) return;
    txn_.on_response(buf);
  }

 private:
  TransactionManager& txn_;
  ha::ReplicaClient* replica_;
};

class SubnetManager::SmaHandler final : public MadHandler {
 public:
  explicit SmaHandler(SubnetManager& sm) : sm_(sm) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { sm_.on_sm_mad(buf, ctx); }

 private:
  SubnetManager& sm_;
};

SubnetManager::SubnetManager(Engine& engine, Transport& transport, SmConfig config, sa::SnapshotStore& store)
    : engine_(engine), transport_(transport), cfg_(std::move(config)), store_(store) {
  if (cfg_.core >= engine.cores()) throw std::invalid_argument("SmConfig.core is not an engine core");
  if (cfg_.window_smps_max == 0 || cfg_.window_per_dest_max == 0)
    throw std::invalid_argument("SmConfig windows must be >= 1");
  if (cfg_.light_sweep_interval_ms < 100) throw std::invalid_argument("SmConfig.light_sweep_interval_ms must be >= 100");
  if (cfg_.priority > wire::kSmPriorityMax) throw std::invalid_argument("SmConfig.priority must be 0..15");
  if (cfg_.ha_poll_interval_ms == 0 || cfg_.ha_poll_retries == 0)
    throw std::invalid_argument("SmConfig.ha_poll_interval_ms and ha_poll_retries must be >= 1");
  if (!cfg_.guid2lid_path.empty()) {
    Guid2LidError err;
    if (!load_guid2lid(cfg_.guid2lid_path, guid2lid_, err))
      throw std::invalid_argument("guid2lid " + cfg_.guid2lid_path + ": line " + std::to_string(err.line) + ": " + err.what);
  }
  Core& core = engine.core(cfg_.core);
  sched_ = std::make_unique<Scheduler>(core.clock(), SchedulerConfig{.tasks_max = 16});
  txn_ = std::make_unique<TransactionManager>(
      core.clock(), core,
      TransactionConfig{.core_id = static_cast<std::uint8_t>(cfg_.core),
                        .window_max = cfg_.window_smps_max,
                        .window_per_dest_max = cfg_.window_per_dest_max,
                        .queue_max = cfg_.window_smps_max});
  queue_ = std::make_unique<SmpQueue>(*txn_, cfg_.window_smps_max,
                                      RequestOptions{.timeout_ms = cfg_.timeout_ms, .retries = cfg_.retries});
  if (cfg_.restore_sa_state) {
    if (cfg_.ha_replica_interval_ms == 0) throw std::invalid_argument("SmConfig.ha_replica_interval_ms must be >= 1");
    replica_ = std::make_unique<ha::ReplicaClient>(core.clock(), core, cfg_.core);
  }
  sa_state_restored_ = cfg_.sa_state_restored;
  hook_ = std::make_unique<ResponseHook>(*txn_, replica_.get());
  sma_ = std::make_unique<SmaHandler>(*this);
  ha_ = std::make_unique<ha::HaAgent>(
      *sched_, *txn_, core,
      ha::SmIdentity{.guid = transport.local_port().port_guid, .priority = cfg_.priority, .sm_key = cfg_.sm_key},
      transport.local_port().port_num,
      ha::HaConfig{.poll_interval_ms = cfg_.ha_poll_interval_ms,
                   .poll_retries = cfg_.ha_poll_retries,
                   .poll_timeout_ms = cfg_.ha_poll_timeout_ms,
                   .m_key = cfg_.m_key});
  ha_->set_on_transition([this](const ha::Transition& t) {
    // A new mastership reprograms what it needs and re-registers clients once.
    if (t.to == wire::SmState::kMaster) {
      role_.mastership_new = true;
      role_.sa_state_decided = false;
    }
    if (t.to == wire::SmState::kStandby) replica_now_ = true;
    publish_ha_status();
  });
  // The device life cycle pauses, re-sends or fails the SM's SMPs when its port's device goes and returns.
  engine.add_transaction_manager(cfg_.core, *txn_, transport.local_port().port_num);
  engine.add_poller(cfg_.core, *sched_);
  if (replica_) engine.add_poller(cfg_.core, *replica_);
  engine.set_response_hook(cfg_.core, *hook_);
  const auto fixed = OwnerSelector::fixed(cfg_.core);
  for (const auto klass : {wire::MgmtClass::kSubnLid, wire::MgmtClass::kSubnDirected}) {
    const auto k = static_cast<std::uint8_t>(klass);
    engine.add_handler(DispatchKey{k, wire::method::kGet, wire::smp_attr::kSmInfo}, *sma_, fixed);
    engine.add_handler(DispatchKey{k, wire::method::kSet, wire::smp_attr::kSmInfo}, *sma_, fixed);
    engine.add_handler(DispatchKey{k, wire::method::kTrap, wire::smp_attr::kNotice}, *sma_, fixed);
  }
  if (cfg_.mcast != nullptr) cfg_.mcast->set_listener(&SubnetManager::mcast_changed, this);
  ha_->start();
  status_.state = ha_->state();
  sched_->spawn(ha_->poll_loop());
  sched_->spawn(run());
  if (replica_) sched_->spawn(replica_loop());
}

SubnetManager::~SubnetManager() {
  if (cfg_.mcast != nullptr) cfg_.mcast->set_listener(nullptr, nullptr);
  // Task frames first (they reference the queue), then completions are
  // dropped while the transaction manager cancels what is left.
  sched_.reset();
  queue_->close();
  txn_.reset();
}

void SubnetManager::mcast_changed(void* self) noexcept {
  static_cast<SubnetManager*>(self)->mcast_dirty_.store(true, std::memory_order_relaxed);
}

SmStatus SubnetManager::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

bool SubnetManager::wait_for(const std::function<bool(const SmStatus&)>& pred, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return pred(status_); });
}

void SubnetManager::publish_ha_status() {
  const wire::SmState state = ha_->state();
  const std::uint64_t polled = ha_->machine().polled_guid();
  const ha::HaCounters c = ha_->counters();
  update_status([&](SmStatus& s) {
    s.state = state;
    s.polled_guid = polled;
    s.ha = c;
    s.ha_transitions = c.transitions;
  });
}

void SubnetManager::update_status(const std::function<void(SmStatus&)>& fn) {
  {
    std::lock_guard lock(mu_);
    fn(status_);
  }
  cv_.notify_all();
}

// ---- the SM's SMA: SMInfo and traps -------------------------------------------

void SubnetManager::on_sm_mad(MadBuf& buf, CoreContext& ctx) noexcept {
  wire::MadHeader& h = buf.hdr();
  if (h.method == wire::method::kTrap) {
    ++traps_;
    const auto notice = wire::decode_smp_notice(smp_data(buf));
    const std::uint16_t trap = notice && notice->is_generic() ? notice->trap_number.get() : 0;
    if (trap == wire::trap::kLinkStateChange) {
      spdlog::info("sm: trap 128 (link state change) from LID {}: heavy sweep", notice->issuer_lid.get());
      heavy_requested_.store(true, std::memory_order_relaxed);
    } else if (trap == wire::trap::kLocalChanges) {
      // Another SM's priority or IsSM changed: a master looks again (IBA 14.4.1.1).
      spdlog::info("sm: trap 144 (local changes) from LID {}", notice->issuer_lid.get());
      ha_->on_trap144();
    } else {
      spdlog::info("sm: trap {} from LID {}", trap, notice ? notice->issuer_lid.get() : 0);
    }
    // Repress the trap so the SMA stops repeating it (IBA 14.2.5.1).
    h.method = wire::method::kTrapRepress;
    ctx.tx().send(buf);
    if (notice) {
      // Subscribers get it as a Report (IBA 13.4.8.3); an SMP Trap has no
      // room for IssuerGID, so it is filled from the issuer's LID.
      wire::Notice n = *notice;
      if (current_ != nullptr) {
        if (const fabric::EndPort* e = current_->end_port_by_lid(n.issuer_lid.get())) {
          const fabric::Node& node = current_->fabric.nodes[e->node];
          const std::uint64_t guid = node.ports[e->port].guid != 0 ? node.ports[e->port].guid : node.node_guid;
          n.issuer_gid = {wire::be64::from(current_->subnet_prefix), wire::be64::from(guid)};
        }
      }
      notify(n);
    }
    const std::uint64_t n = traps_;
    update_status([n](SmStatus& s) { s.traps = n; });
    return;
  }
  // SubnGet/SubnSet(SMInfo): the HA agent answers and acts (IBA 14.4).
  ha_->on_sminfo(buf, ctx);
  ++sminfo_answered_;
  const std::uint64_t n = sminfo_answered_;
  update_status([n](SmStatus& s) { s.sminfo_answered = n; });
  publish_ha_status();
}

// ---- the main loop --------------------------------------------------------------

Task<void> SubnetManager::run() {
  // A standby re-reads the fabric now and then (discovery only, nothing is
  // written) to keep its prepared snapshot current: every second while it
  // has none (the master may not have numbered the fabric yet), else every
  // 6 light sweep intervals.
  const Nanos light_ns = Nanos{cfg_.light_sweep_interval_ms} * kNanosPerMilli;
  Nanos next_warm = 0;
  bool refresh_warm = false;
  for (;;) {
    heavy_requested_.store(false, std::memory_order_relaxed);
    ha_->take_sweep_request();
    // Only DISCOVERING and MASTER configure; STANDBY and NOTACTIVE leave the
    // fabric to the master and wait for the agent (poll failure, HANDOVER).
    if (sweeping() || refresh_warm) {
      co_await heavy_sweep();
      next_warm = sched_->clock().now_ns() + (warm_ != nullptr ? 6 * light_ns : std::min<Nanos>(light_ns, kNanosPerSecond));
    }
    refresh_warm = false;
    Nanos next_light = sched_->clock().now_ns() + light_ns;
    for (;;) {
      const Wake w = co_await sched_->sleep_for(kIdleStepNs);
      if (!w) co_return;
      if (ha_->take_sweep_request()) break;
      if (!sweeping()) {
        if (ha_->state() == wire::SmState::kStandby && sched_->clock().now_ns() >= next_warm) {
          refresh_warm = true;
          break;
        }
        continue;
      }
      if (ha_->machine().handover_pending() || ha_->machine().awaiting_handover()) continue;  // quiet until settled
      if (heavy_requested_.load(std::memory_order_relaxed)) break;
      if (current_ == nullptr) break;  // the last heavy sweep failed: try again
      if (mcast_dirty_.exchange(false, std::memory_order_relaxed)) {
        const std::uint32_t n = co_await program_mcast(current_->fabric);
        if (n != 0) {
          // The SA's MFTRecords follow at once; the epoch stays (nothing unicast changed).
          current_->mfts->store(mft_view(current_->fabric));
          spdlog::info("sm: multicast groups changed: {} MFT blocks written", n);
        }
      }
      if (sched_->clock().now_ns() < next_light) continue;
      const bool changed = co_await light_sweep();
      next_light = sched_->clock().now_ns() + light_ns;
      if (changed) break;
    }
  }
}

Task<bool> SubnetManager::light_sweep() {
  const std::uint64_t smps0 = queue_->submitted();
  const std::uint8_t port_num = transport_.local_port().port_num;
  auto changed = std::make_shared<bool>(false);
  const auto snap = current_;
  std::uint64_t lid_routed = 0;
  for (const fabric::Node& n : snap->fabric.nodes) {
    if (!n.is_switch()) continue;
    const wire::DrPath path = n.dr_path;
    // The fabric is programmed: ask each switch by its LID, through the
    // LFTs we wrote, so the switches on the way do no SMA work. A switch
    // that does not answer (dead, or a route broken) escalates to a heavy
    // sweep, which is directed-route.
    const bool by_lid = cfg_.lid_routed_light_sweep && n.base_lid != 0 && path.hops != 0;
    lid_routed += by_lid ? 1 : 0;
    const MadBuf get = by_lid ? make_lid_request(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, n.base_lid, port_num,
                                                 {}, cfg_.m_key)
                              : make_dr_request(wire::method::kGet, wire::smp_attr::kSwitchInfo, 0, path, port_num, {},
                                                cfg_.m_key);
    queue_->submit(get, [this, changed, path, port_num](const TxnResult& r) {
      const auto si = smp_response_ok(r) ? wire::decode<wire::SwitchInfo>(smp_data(r.response)) : std::nullopt;
      if (!si) {
        *changed = true;  // a switch stopped answering
        return;
      }
      if (si->port_state_change() == 0) return;
      *changed = true;
      wire::SwitchInfo clear = *si;
      clear.prepare_for_set(true);  // write 1 to clear (IBA 14.2.5.4)
      queue_->submit(make_dr_request(wire::method::kSet, wire::smp_attr::kSwitchInfo, 0, path, port_num,
                                     bytes_of(clear), cfg_.m_key),
                     nullptr);
    });
  }
  const std::uint16_t want_lid = sm_lid_;
  queue_->submit(make_dr_request(wire::method::kGet, wire::smp_attr::kPortInfo, local_port_, wire::DrPath{}, port_num, {},
                                 cfg_.m_key),
                 [changed, want_lid](const TxnResult& r) {
                   const auto pi = smp_response_ok(r) ? wire::decode<wire::PortInfo>(smp_data(r.response)) : std::nullopt;
                   if (!pi || pi->state() != wire::PortState::kActive || pi->lid.get() != want_lid) *changed = true;
                 });
  co_await queue_->drained();
  const std::uint64_t smps = queue_->submitted() - smps0;
  const bool ch = *changed;
  if (ch) spdlog::info("sm: light sweep ({} SMPs) saw a change: heavy sweep", smps);
  update_status([smps, lid_routed](SmStatus& s) {
    ++s.light_sweeps;
    s.last_light_smps = smps;
    s.last_light_lid_routed = lid_routed;
  });
  co_return ch;
}

Task<std::uint32_t> SubnetManager::program_mcast(const fabric::Fabric& f) {
  if (cfg_.mcast == nullptr) co_return 0;
  const auto mfts = compute_mfts(f, cfg_.mcast->groups());
  auto written = std::make_shared<std::uint32_t>(0);
  const std::uint8_t port_num = transport_.local_port().port_num;
  std::map<std::pair<std::uint64_t, MftKey>, wire::MftBlock> next;
  for (const auto& [sw, blocks] : mfts) {
    for (const auto& [key, blk] : blocks) next.emplace(std::pair{f.nodes[sw].node_guid, key}, blk);
  }
  // Blocks that held groups before and no longer do are written as zeros.
  for (const auto& [k, blk] : mft_programmed_)
    if (!next.contains(k)) next.emplace(k, wire::MftBlock{});
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) by_guid.emplace(f.nodes[i].node_guid, i);
  for (const auto& [k, blk] : next) {
    const auto prev = mft_programmed_.find(k);
    if (prev != mft_programmed_.end() &&
        std::equal(prev->second.port_masks.begin(), prev->second.port_masks.end(), blk.port_masks.begin()))
      continue;
    const auto it = by_guid.find(k.first);
    if (it == by_guid.end()) continue;
    const auto key = k;
    const wire::MftBlock b = blk;
    queue_->submit(make_dr_request(wire::method::kSet, wire::smp_attr::kMulticastFwdTable,
                                   wire::mft_modifier(k.second.position, k.second.block), f.nodes[it->second].dr_path,
                                   port_num, bytes_of(blk), cfg_.m_key),
                   [this, key, b, written](const TxnResult& r) {
                     if (!smp_response_ok(r)) return;
                     mft_programmed_[key] = b;
                     ++*written;
                   });
  }
  co_await queue_->drained();
  co_return *written;
}

// ---- SA state handed on (issue 8) -------------------------------------------------

std::uint64_t replica_max_age_ms(const SmConfig& c) noexcept {
  if (c.ha_replica_max_age_ms != 0) return c.ha_replica_max_age_ms;
  const std::uint64_t poll_timeout_ms =
      c.ha_poll_timeout_ms != 0 ? c.ha_poll_timeout_ms : std::min<std::uint32_t>(c.ha_poll_interval_ms, 1000);
  return 3 * std::uint64_t{c.ha_replica_interval_ms} +
         std::uint64_t{c.ha_poll_retries} * (c.ha_poll_interval_ms + poll_timeout_ms);
}

// A STANDBY copies the master's SA state: right after it became STANDBY, then
// every ha_replica_interval_ms. The master's SA is at the SM LID our port
// reports (the master programmed it), else at the LID the sweep found.
Task<void> SubnetManager::replica_loop() {
  const Nanos interval = Nanos{cfg_.ha_replica_interval_ms} * kNanosPerMilli;
  Nanos next = 0;
  for (;;) {
    const Wake w = co_await sched_->sleep_for(std::min(interval, kIdleStepNs));
    if (!w) co_return;
    const Nanos now = sched_->clock().now_ns();
    if (ha_->state() != wire::SmState::kStandby || (now < next && !replica_now_)) continue;
    replica_now_ = false;
    next = now + interval;
    const LocalPort lp = transport_.local_port();
    std::uint16_t master_lid = lp.sm_lid != lp.lid ? lp.sm_lid : 0;
    if (master_lid == 0) {
      for (const ha::FoundSm& p : ha_->peers())
        if (p.at.port_guid == ha_->machine().polled_guid()) master_lid = p.at.lid;
    }
    if (master_lid == 0) continue;
    // Subscribers' LIDs from our own view of the fabric (the SA re-resolves
    // them from each snapshot it serves).
    std::shared_ptr<const sa::Snapshot> view = warm_ != nullptr ? warm_ : current_;
    ha::LidOfGid lid_of = [view](const wire::Gid& g) -> std::uint16_t {
      if (view == nullptr) return 0;
      const auto it = view->by_port_guid.find(g.guid.get());
      return it == view->by_port_guid.end() ? 0 : view->fabric.lid_of(it->second);
    };
    replica_->start(ha::SaTarget{.lid = master_lid, .sl = lp.sm_sl, .pkey_index = 0, .port_num = lp.port_num},
                    cfg_.sm_key, interval, std::move(lid_of));
    const ha::ReplicaCounters c = replica_->counters();
    update_status([c](SmStatus& s) { s.replica = c; });
  }
}

// Once per mastership, before its first publication: hand the SA the state
// we can vouch for (the previous master's, replicated while we were STANDBY;
// or what our owner restored from a fresh journal before start) and ask
// clients to reregister (PortInfo.ClientReregister, IBA 14.4.11) only
// without it. Returns whether to ask.
bool SubnetManager::settle_sa_state() {
  role_.sa_state_decided = true;
  const Nanos now = sched_->clock().now_ns();
  const auto bound_ns = static_cast<Nanos>(replica_max_age_ms(cfg_)) * kNanosPerMilli;
  bool ask = true;
  const char* why = "no replica or journal of the SA state";
  if (replica_ != nullptr && replica_->image().has_value()) {
    const Nanos age = now - replica_->image_at_ns();
    ask = ha::must_ask_clients_to_reregister(true, age, bound_ns);
    if (!ask) {
      std::optional<sa::SaStateImage> img = replica_->take_image();
      spdlog::info("sm: takeover: SA state from the last replica ({} ms old): {} services, {} groups, {} subscriptions",
                   age / kNanosPerMilli, img->services.size(), img->groups.size(), img->subscriptions.size());
      cfg_.restore_sa_state(std::move(*img));
      update_status([](SmStatus& s) { ++s.sa_state_handed_on; });
    } else {
      why = "the last replica is too old";
    }
  } else if (sa_state_restored_) {
    ask = false;  // the owner vouched (fresh journal) before start
    spdlog::info("sm: SA state restored before start: clients are not asked to reregister");
  }
  sa_state_restored_ = false;
  if (ask) spdlog::info("sm: new mastership: {}: clients are asked to reregister", why);
  update_status([ask](SmStatus& s) { ++(ask ? s.reregister_masterships : s.vouched_masterships); });
  return ask;
}

// ---- a standby's prepared snapshot ----------------------------------------------

RoutingOptions SubnetManager::routing_options() const {
  RoutingOptions o;
  o.algo = cfg_.routing;
  o.chain = cfg_.routing_chain;
  o.root_guids = cfg_.root_guids;
  o.threads = std::max(1u, cfg_.routing_threads);
  o.vls_max = data_vls_of_cap(cfg_.operational_vls);  // the data VLs bring-up enables
  return o;
}

void SubnetManager::prepare_warm(fabric::Fabric f, const std::vector<std::uint16_t>& current_lids, const LocalPort& lp) {
  warm_.reset();
  Guid2Lid map = guid2lid_;  // the master's LIDs as the ports report them; our map is not touched
  const LidAssignReport lids = assign_lids(f, map, cfg_.lmc, current_lids);
  if (lids.assigned_new != 0 || lids.conflicts != 0) return;  // the master has not numbered everything yet
  RoutingResult routes = compute_routes(f, routing_options());
  if (!routes.ok()) return;
  auto snap = std::make_shared<sa::Snapshot>();
  snap->paths = sa::PathDb::build(f, routes.lfts, routes.top_lid, engine_.cores(), std::max(1u, cfg_.path_db_threads),
                                  &routes.layers);
  snap->lfts = std::move(routes.lfts);
  warm_routes_ = std::move(routes);
  snap->top_lid = routes.top_lid;
  snap->subnet_prefix = lp.subnet_prefix;
  snap->sm = sa::SmIdentity{.port_guid = lp.port_guid,
                            .lid = lp.lid,
                            .sl = cfg_.sm_sl,
                            .priority = cfg_.priority,
                            .state = static_cast<std::uint8_t>(wire::SmState::kMaster),
                            .sm_key = cfg_.sm_key,
                            .act_count = 0,
                            .subnet_timeout = cfg_.subnet_timeout};
  fill_tables(f, *snap);
  snap->fabric = std::move(f);
  snap->index();
  warm_ = std::move(snap);
  update_status([](SmStatus& s) { ++s.prepared_snapshots; });
  spdlog::info("sm: standby prepared a snapshot of the master's fabric ({} nodes, top LID {})",
               warm_->fabric.nodes.size(), warm_->top_lid);
}

// The takeover sweep found every port it reached at the LID the prepared
// snapshot has: publish that now (the dead master's port stays in it until
// the final publication of this sweep).
bool SubnetManager::publish_warm(const fabric::Fabric& f, const std::vector<std::uint16_t>& current_lids) {
  std::unordered_map<std::uint64_t, std::uint16_t> warm_lids;
  for (const fabric::EndPort e : warm_->fabric.end_ports()) {
    const fabric::Node& n = warm_->fabric.nodes[e.node];
    warm_lids.emplace(n.ports[e.port].guid, warm_->fabric.lid_of(e));
  }
  const auto ends = f.end_ports();
  if (ends.size() != current_lids.size()) return false;
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const auto it = warm_lids.find(f.nodes[ends[i].node].ports[ends[i].port].guid);
    if (it == warm_lids.end() || current_lids[i] == 0 || it->second != current_lids[i]) return false;
  }
  warm_->epoch = ++epoch_;
  warm_->sm.act_count = ha_->act_count();
  current_ = warm_;
  current_routes_ = std::move(warm_routes_);
  store_.publish(std::shared_ptr<const sa::Snapshot>(warm_));
  spdlog::info("sm: takeover: LIDs as prepared, SA answering from epoch {} while routing and programming run", epoch_);
  warm_.reset();
  return true;
}

void SubnetManager::notify(const wire::Notice& n) noexcept {
  if (!cfg_.on_notice) return;
  try {
    cfg_.on_notice(n);
  } catch (...) {
    spdlog::warn("sm: notice for trap {} not passed on (out of memory)", n.trap_number.get());
  }
}

// Traps 64/65 (IBA 13.4.8.2, as OpenSM's port and drop managers send them):
// end ports in this publication and not the last one, and the reverse. The
// first publication of this SM reports nothing: it knows of no change.
std::uint32_t SubnetManager::report_gid_changes(const sa::Snapshot& snap) {
  std::unordered_set<std::uint64_t> now;
  now.reserve(snap.by_port_guid.size());
  for (const auto& [guid, e] : snap.by_port_guid) now.insert(guid);
  std::uint32_t n = 0;
  auto trap = [&](std::uint16_t number, std::uint64_t guid) {
    wire::Notice notice = wire::make_generic_notice(wire::notice_type::kSubnetManagement,
                                                    wire::notice_producer::kClassManager, number, snap.sm.lid);
    wire::NoticeDetailsGid d{};
    d.gid = {wire::be64::from(snap.subnet_prefix), wire::be64::from(guid)};
    notice.set_details(d);
    notice.issuer_gid = {wire::be64::from(snap.subnet_prefix), wire::be64::from(snap.sm.port_guid)};
    notify(notice);
    ++n;
  };
  if (in_service_known_) {
    for (const std::uint64_t g : now)
      if (!in_service_.contains(g)) trap(wire::trap::kGidInService, g);
    for (const std::uint64_t g : in_service_)
      if (!now.contains(g)) trap(wire::trap::kGidOutOfService, g);
  }
  in_service_.swap(now);
  in_service_known_ = true;
  if (n != 0) spdlog::info("sm: {} GID in/out of service traps for subscribers", n);
  return n;
}

// P_Key tables and MFTs as programmed, for the SA's records and checks.
void SubnetManager::fill_tables(const fabric::Fabric& f, sa::Snapshot& snap) const {
  fill_port_tables(f, tables_, snap);  // SL2VL, VLArb, GUIDInfo as read (sm/tables)
  snap.port_tables.resize(f.nodes.size());
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) {
    const fabric::Node& n = f.nodes[i];
    snap.port_tables[i].resize(n.ports.size());
    if (n.is_switch()) continue;
    for (std::uint8_t p = 1; p < n.ports.size(); ++p) {
      const auto it = programmed_.pkeys.find(n.ports[p].guid);
      if (n.ports[p].guid != 0 && it != programmed_.pkeys.end()) snap.port_tables[i][p].pkeys = it->second;
    }
  }
  snap.mfts->store(mft_view(f));
}

std::vector<sa::SwitchMft> SubnetManager::mft_view(const fabric::Fabric& f) const {
  std::unordered_map<std::uint64_t, fabric::NodeId> by_guid;
  for (fabric::NodeId i = 0; i < f.nodes.size(); ++i) by_guid.emplace(f.nodes[i].node_guid, i);
  std::vector<sa::SwitchMft> mfts;
  std::map<fabric::NodeId, std::size_t> mft_of;
  for (const auto& [key, blk] : mft_programmed_) {
    const auto it = by_guid.find(key.first);
    if (it == by_guid.end()) continue;
    auto [slot, fresh] = mft_of.emplace(it->second, mfts.size());
    if (fresh) mfts.push_back(sa::SwitchMft{.node = it->second, .masks = {}});
    sa::SwitchMft& m = mfts[slot->second];
    for (std::size_t i = 0; i < wire::kMftBlockSize; ++i) {
      const std::size_t mlid_index = std::size_t{key.second.block} * wire::kMftBlockSize + i;
      if (m.masks.size() <= mlid_index) m.masks.resize(mlid_index + 1);
      auto& positions = m.masks[mlid_index];
      if (positions.size() <= key.second.position) positions.resize(key.second.position + 1u, 0);
      positions[key.second.position] = blk.mask(i);
    }
  }
  return mfts;
}

Task<void> SubnetManager::heavy_sweep() {
  const Clock& clock = sched_->clock();
  SweepStats st;
  const Nanos t0 = clock.now_ns();
  const std::uint64_t smps0 = queue_->submitted();
  const LocalPort lp = transport_.local_port();
  DiscoveryResult d = co_await discover(*queue_, DiscoveryOptions{.port_num = lp.port_num, .m_key = cfg_.m_key});
  const Nanos t1 = clock.now_ns();
  st.discovery_s = seconds(t0, t1);
  st.discovery_smps = queue_->submitted() - smps0;
  st.discovery_errors = d.errors;
  fabric::Fabric& f = d.fabric;
  st.nodes = static_cast<std::uint32_t>(f.nodes.size());
  st.switches = static_cast<std::uint32_t>(f.switch_count());
  st.cas = st.nodes - st.switches;
  st.links = d.links();
  if (d.local_node == fabric::kNoNode) {
    st.error = "the local port did not answer NodeInfo";
    spdlog::error("sm: heavy sweep failed: {}", st.error);
    update_status([&st](SmStatus& s) { s.last_heavy = st; });
    co_return;
  }
  // What appeared and vanished since the last sweep.
  std::unordered_set<std::uint64_t> before;
  if (current_ != nullptr)
    for (const auto& n : current_->fabric.nodes) before.insert(n.node_guid);
  for (const auto& n : f.nodes) st.new_nodes += before.erase(n.node_guid) == 0 ? 1 : 0;
  st.vanished_nodes = static_cast<std::uint32_t>(before.size());
  spdlog::info("sm: discovery: {} nodes ({} switches, {} CAs), {} links, {} new, {} vanished, {} SMPs, {} errors, {:.6f} s",
               st.nodes, st.switches, st.cas, st.links, st.new_nodes, st.vanished_nodes, st.discovery_smps,
               d.errors, st.discovery_s);

  // Election: the other SMs found through IsSM, and whether we configure.
  const std::uint16_t own_lid = f.lid_of(fabric::EndPort{d.local_node, d.local_port});
  const ha::SweepDecision decision = co_await ha_->after_discovery(*queue_, f, lp.port_guid, own_lid);
  publish_ha_status();
  if (!decision.program) {
    spdlog::info("sm: {} with {} other SM(s): fabric left as it is", wire::to_string(ha_->state()), decision.peers);
    update_status([](SmStatus& s) { ++s.sweeps_not_programmed; });
    if (ha_->state() == wire::SmState::kStandby) {
      const std::vector<std::uint16_t> reported = d.current_lids();  // before the fabric is moved out
      prepare_warm(std::move(d.fabric), reported, lp);
    }
    co_return;
  }
  if (role_.mastership_new && !role_.sa_state_decided) role_.reregister = settle_sa_state();
  if (current_ == nullptr && warm_ != nullptr && publish_warm(f, d.current_lids())) {
    const std::uint64_t e = epoch_;
    update_status([e](SmStatus& s) {
      s.epoch = e;
      ++s.early_publications;
      ++s.prepared_publications;
    });
  }
  warm_.reset();
  if (decision.assert_all && current_ != nullptr) {
    // Handed a subnet or joined to one: rewrite every port and table (SM LID
    // included) rather than trust what another master left.
    programmed_ = ProgrammedState{};
    mft_programmed_.clear();
  }

  // CPU phases are timed with the steady clock: on the sim transport the
  // engine clock is simulated time, which does not move while we compute.
  const auto w1 = std::chrono::steady_clock::now();
  const LidAssignReport lids = assign_lids(f, guid2lid_, cfg_.lmc, d.current_lids());
  st.lids_new = lids.assigned_new;
  if (!cfg_.guid2lid_path.empty()) {
    Guid2LidError err;
    if (!save_guid2lid(cfg_.guid2lid_path, guid2lid_, err)) spdlog::warn("sm: cannot save guid2lid: {}", err.what);
  }
  const auto w2 = std::chrono::steady_clock::now();
  st.lids_s = std::chrono::duration<double>(w2 - w1).count();
  if (lids.assigned_new != 0 || lids.conflicts != 0 || lids.exhausted != 0)
    spdlog::info("sm: LIDs: {} kept from map, {} kept current, {} new, {} conflicts, {} exhausted", lids.kept_from_map,
                 lids.kept_current, lids.assigned_new, lids.conflicts, lids.exhausted);

  // Incremental: destinations the change since the last publication leaves
  // alone keep their routes (an unchanged fabric writes no LFT block).
  RoutingResult routes =
      current_ != nullptr
          ? compute_routes(f, routing_options(), PreviousRoutes{&current_->fabric, &current_routes_, &current_->lfts})
          : compute_routes(f, routing_options());
  const auto w3 = std::chrono::steady_clock::now();
  st.routing_s = std::chrono::duration<double>(w3 - w2).count();
  if (!routes.ok()) {
    st.error = "routing: " + routes.error;
    spdlog::error("sm: heavy sweep failed: {}", st.error);
    update_status([&st](SmStatus& s) { s.last_heavy = st; });
    co_return;
  }
  st.top_lid = routes.top_lid;
  st.routing_engine = to_string(routes.engine);
  st.routing_vls = routes.layers.count();
  st.lids_rerouted = routes.lids_rerouted;
  for (const std::string& why : routes.failed) spdlog::warn("sm: routing: {} (next engine of the chain)", why);
  spdlog::info("sm: routing: {} on {} SL/VL(s), {} LIDs routed{}{}; {:.3f} s (hop tables {:.3f}, LFTs {:.3f}, layers {:.3f})",
               st.routing_engine, st.routing_vls, st.lids_rerouted, routes.incremental ? " (incremental)" : "",
               routes.full_reason.empty() ? "" : " (full: " + routes.full_reason + ")", st.routing_s, routes.hop_tables_s,
               routes.lfts_s, routes.layers_s);
  sm_lid_ = f.lid_of(fabric::EndPort{d.local_node, d.local_port});
  local_port_ = d.local_port;

  auto snap = std::make_shared<sa::Snapshot>();
  // Every route kept on the same fabric: the current publication's path
  // database answers the same (renumbered), so it is not built again.
  const bool same_routes = current_ != nullptr && routes.incremental && routes.lids_rerouted == 0 &&
                           !routes.layers.layered() && routes.top_lid == current_->top_lid;
  if (!same_routes || !sa::PathDb::reuse(current_->paths, current_->fabric, f, snap->paths))
    snap->paths = sa::PathDb::build(f, routes.lfts, routes.top_lid, engine_.cores(), std::max(1u, cfg_.path_db_threads),
                                    &routes.layers);
  const auto w4 = std::chrono::steady_clock::now();
  st.path_db_s = std::chrono::duration<double>(w4 - w3).count();
  const Nanos t4 = clock.now_ns();

  // A master that took over (or restarted) with every LID already known
  // publishes before programming: paths and records do not depend on the
  // writes that follow, so the SA answers now rather than after the whole
  // fabric has been rewritten. P_Key tables and MFTs join at the next publish.
  if (current_ == nullptr && ha_->state() == wire::SmState::kMaster && lids.assigned_new == 0 && lids.conflicts == 0 &&
      lids.exhausted == 0) {
    auto pre = std::make_shared<sa::Snapshot>();
    pre->paths = snap->paths;
    pre->epoch = ++epoch_;
    pre->lfts = routes.lfts;
    pre->top_lid = routes.top_lid;
    pre->sm = sa::SmIdentity{.port_guid = lp.port_guid,
                             .lid = sm_lid_,
                             .sl = cfg_.sm_sl,
                             .priority = cfg_.priority,
                             .state = static_cast<std::uint8_t>(ha_->state()),
                             .sm_key = cfg_.sm_key,
                             .act_count = ha_->act_count(),
                             .subnet_timeout = cfg_.subnet_timeout};
    pre->subnet_prefix = lp.subnet_prefix;
    fill_tables(f, *pre);
    pre->fabric = f;
    pre->index();
    current_ = pre;
    store_.publish(pre);
    spdlog::info("sm: LIDs unchanged: SA answering from epoch {} while the fabric is programmed", epoch_);
    const std::uint64_t e = epoch_;
    update_status([e](SmStatus& s) {
      s.epoch = e;
      ++s.early_publications;
    });
  }

  BringupConfig bc;
  bc.port_num = lp.port_num;
  bc.sm_lid = sm_lid_;
  bc.sm_sl = cfg_.sm_sl;
  bc.subnet_timeout = cfg_.subnet_timeout;
  bc.life_time_value = cfg_.life_time_value;
  bc.operational_vls = cfg_.operational_vls;
  bc.m_key = cfg_.m_key;
  bc.m_key_lease_period = cfg_.m_key_lease_period;
  bc.m_key_protect_bits = cfg_.m_key_protect_bits;
  bc.client_reregister = role_.mastership_new && role_.reregister;
  st.bringup = co_await bring_up(*queue_, d, routes, bc, programmed_);
  st.mft_blocks_written = co_await program_mcast(f);
  mcast_dirty_.store(false, std::memory_order_relaxed);
  // After bring-up: OperationalVLs are final, and only changed ports are read.
  const Nanos t_tables = clock.now_ns();
  const TablesReport tables = co_await read_port_tables(
      *queue_, d, TablesOptions{.port_num = lp.port_num, .m_key = cfg_.m_key, .switch_ports = cfg_.read_switch_port_tables},
      tables_);
  st.tables_smps = tables.smps;
  st.tables_ports_read = tables.ports_read;
  const Nanos t5 = clock.now_ns();
  st.tables_s = seconds(t_tables, t5);
  st.programming_s = seconds(t4, t5);
  st.smps = queue_->submitted() - smps0;
  st.total_s = seconds(t0, t5);
  // On a simulated clock the CPU phases took no simulated time: add them.
  if (t4 == t1) st.total_s += st.lids_s + st.routing_s + st.path_db_s;
  st.ok = st.bringup.errors == 0;

  ha_->note_activity();
  if (st.ok) role_.mastership_new = false;

  snap->epoch = ++epoch_;
  snap->lfts = std::move(routes.lfts);
  snap->top_lid = routes.top_lid;
  current_routes_ = std::move(routes);
  snap->sm = sa::SmIdentity{.port_guid = lp.port_guid,
                            .lid = sm_lid_,
                            .sl = cfg_.sm_sl,
                            .priority = cfg_.priority,
                            .state = static_cast<std::uint8_t>(ha_->state()),
                            .sm_key = cfg_.sm_key,
                            .act_count = ha_->act_count(),
                            .subnet_timeout = cfg_.subnet_timeout};
  snap->subnet_prefix = lp.subnet_prefix;
  fill_tables(f, *snap);
  snap->fabric = std::move(f);
  snap->index();
  current_ = snap;
  store_.publish(snap);
  st.gid_traps = report_gid_changes(*snap);

  const BringupReport& b = st.bringup;
  spdlog::info("sm: programmed: {} SwitchInfo, {} LFT blocks, {} PortInfo, {} armed, {} activated, {} P_Key, {} MFT blocks, {} errors",
               b.switch_info_sets, b.lft_blocks_written, b.port_info_sets, b.ports_armed, b.ports_activated, b.pkey_sets,
               st.mft_blocks_written, b.errors);
  spdlog::info("sm: tables: {} ports read, {} kept, {} SMPs, {} errors, {:.6f} s; {} GID traps", tables.ports_read,
               tables.ports_kept, tables.smps, tables.errors, st.tables_s, st.gid_traps);
  spdlog::info("sm: subnet up (epoch {}): {} nodes, {} switches, {} CAs, {} links, top LID {}, SM LID {}, {} SMPs; "
               "discovery {:.6f} s, LIDs {:.6f} s, routing {:.6f} s, path db {:.6f} s, programming {:.6f} s, total {:.6f} s",
               epoch_, st.nodes, st.switches, st.cas, st.links, st.top_lid, sm_lid_, st.smps, st.discovery_s, st.lids_s,
               st.routing_s, st.path_db_s, st.programming_s, st.total_s);
  const std::uint64_t epoch = epoch_;
  const std::uint16_t sm_lid = sm_lid_;
  const wire::SmState state = ha_->state();
  update_status([&](SmStatus& s) {
    s.subnet_up = s.subnet_up || st.ok;
    s.state = state;
    s.sm_lid = sm_lid;
    s.epoch = epoch;
    ++s.heavy_sweeps;
    s.last_heavy = st;
  });
}

}  // namespace madengine::sm
