// SubnetManager (see sm.hpp): construction, status, the SM's own SMA
// (SMInfo and traps) and the main loop: heavy sweep -> wait (light sweeps,
// traps, multicast changes) -> heavy sweep. Everything but status() runs on
// the SM's engine core, so its state needs no locks; the sweeps are in
// sweep.cpp, what they publish in publish.cpp, the SA state handed on
// across masterships in sa_state.cpp.
#include "sm/sm.hpp"

#include <spdlog/spdlog.h>
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "engine/offload.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/notice.hpp"

namespace madengine::sm {

namespace {

constexpr std::size_t kChangedSwitchesMax = 64;  // switches noted between heavy sweeps
constexpr Nanos kIdleStepNs = 20 * kNanosPerMilli;  // how often the idle loop looks for traps and requests
// Multicast groups that keep changing (a reregistration storm: every host
// leaves and joins again) are programmed once they were quiet for an idle
// step, or this long after the first change: one pass of MFT writes for
// the storm, not one an idle step, each rewriting what the next undoes
// while its SMPs queue ahead of the SA's answers in the fabric.
constexpr Nanos kMcastSettleMaxNs = 200 * kNanosPerMilli;

}  // namespace

const char* to_string(SmPhase p) noexcept {
  switch (p) {
    case SmPhase::kDiscovery: return "discovery";
    case SmPhase::kLids: return "lids";
    case SmPhase::kRouting: return "routing";
    case SmPhase::kProgramming: return "programming";
    case SmPhase::kPublished: return "published";
    case SmPhase::kReplicaCopy: return "replica-copy";
  }
  return "?";
}

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

// Port events of our own device (the kernel's, where it gives them): the
// device back asks for a heavy sweep; a change of state or LID for the local
// PortInfo check at once, which tells our own programming (the LID we gave
// the port) from a cable pulled or put back.
class SubnetManager::PortWatch final : public LifecycleListener {
 public:
  explicit PortWatch(SubnetManager& sm) : sm_(sm) {}
  void on_port_event(const PortEvent& ev) noexcept override {
    if (ev.event == DeviceEvent::kDeviceLost) {
      spdlog::warn("sm: the device of our port {} is lost: SMPs wait for it, then fail", ev.port_num);
      sm_.role_.lids_from_fabric = true;  // another SM may number the subnet meanwhile
      ++sm_.device_losses_;
      sm_.device_lost_ns_ = sm_.sched_->clock().now_ns();
    } else if (ev.event == DeviceEvent::kDeviceBack) {
      spdlog::info("sm: our port {} is back: heavy sweep", ev.port_num);
      sm_.request_heavy_sweep();
    } else if (ev.event == DeviceEvent::kPortChanged) {
      sm_.local_check_now_ = true;
    }
  }

 private:
  SubnetManager& sm_;
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
  if (cfg_.local_port_check_ms == 0 || cfg_.standby_refresh_ms < 600)
    throw std::invalid_argument("SmConfig.local_port_check_ms must be >= 1 and standby_refresh_ms >= 600");
  if (cfg_.priority > wire::kSmPriorityMax) throw std::invalid_argument("SmConfig.priority must be 0..15");
  if (cfg_.ha_poll_interval_ms == 0 || cfg_.ha_poll_retries == 0)
    throw std::invalid_argument("SmConfig.ha_poll_interval_ms and ha_poll_retries must be >= 1");
  fabric_ = sa::FabricIdentity{.sm_port_guid = transport.local_port().port_guid, .subnet_prefix = cfg_.ports.subnet_prefix};
  epoch_ = cfg_.first_epoch;
  if (!cfg_.guid2lid_path.empty()) {
    Guid2LidError err;
    sa::FabricIdentity written_for;
    if (!load_guid2lid(cfg_.guid2lid_path, guid2lid_, err, &written_for))
      throw std::invalid_argument("guid2lid " + cfg_.guid2lid_path + ": line " + std::to_string(err.line) + ": " + err.what);
    // A file naming another port or fabric holds another subnet's LIDs: not
    // ours to keep. One naming none (OpenSM's, moved over) is honoured.
    if (written_for.known() && written_for != fabric_) {
      spdlog::warn("guid2lid {}: not used: written for {}, this is {}; its {} entries are ignored and the file is "
                   "rewritten for this fabric",
                   cfg_.guid2lid_path, sa::to_string(written_for), sa::to_string(fabric_), guid2lid_.size());
      guid2lid_.clear();
    }
    guid2lid_name_due_ = written_for != fabric_;
  }
  load_mkeys();
  Core& core = engine.core(cfg_.core);
  if (cfg_.compute == nullptr) own_compute_ = std::make_unique<ComputePool>();
  if (cfg_.io == nullptr) own_io_ = std::make_unique<ComputePool>();
  compute_ = cfg_.compute != nullptr ? cfg_.compute : own_compute_.get();
  io_ = cfg_.io != nullptr ? cfg_.io : own_io_.get();
  guid2lid_saved_ = guid2lid_;
  mailbox_ = std::make_shared<OffloadMailbox>(core);
  sched_ = std::make_unique<Scheduler>(core.clock(), SchedulerConfig{.tasks_max = 16});
  txn_ = std::make_unique<TransactionManager>(
      core.clock(), core,
      TransactionConfig{.core_id = static_cast<std::uint8_t>(cfg_.core),
                        .window_max = cfg_.window_smps_max,
                        .window_per_dest_max = cfg_.window_per_dest_max,
                        .queue_max = cfg_.window_smps_max});
  queue_ = std::make_unique<SmpQueue>(*txn_, cfg_.window_smps_max,
                                      RequestOptions{.timeout_ms = cfg_.timeout_ms, .retries = cfg_.retries},
                                      cfg_.window_per_dest_max);
  if (cfg_.restore_sa_state) {
    if (cfg_.ha_replica_interval_ms == 0) throw std::invalid_argument("SmConfig.ha_replica_interval_ms must be >= 1");
    replica_ = std::make_unique<ha::ReplicaClient>(core.clock(), core, cfg_.core);
  }
  sa_state_restored_ = cfg_.sa_state_restored;
  hook_ = std::make_unique<ResponseHook>(*txn_, replica_.get());
  sma_ = std::make_unique<SmaHandler>(*this);
  port_watch_ = std::make_unique<PortWatch>(*this);
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
      role_.lids_from_fabric = true;
      role_.handed_by_live_master = t.from == wire::SmState::kStandby && t.by_handover;
      // What an earlier mastership still meant to ask is settled anew.
      role_.ask_all = false;
      reregister_ports_.clear();
    }
    if (t.to == wire::SmState::kStandby) {
      replica_now_ = true;
      // Another master runs: clients may change their registrations with
      // it, so a journal restored at start no longer vouches for them.
      sa_state_restored_ = false;
    }
    update_status([](SmStatus& s) { s.sa_state_current = false; });  // a new mastership settles it again
    publish_ha_status();
    if (cfg_.on_transition) cfg_.on_transition(t.from, t.to);
  });
  // The device life cycle pauses, re-sends or fails the SM's SMPs when its port's device goes and returns.
  engine.add_transaction_manager(cfg_.core, *txn_, transport.local_port().port_num);
  engine.add_lifecycle_listener(cfg_.core, *port_watch_);
  engine.add_poller(cfg_.core, *mailbox_);
  engine.add_poller(cfg_.core, *sched_);
  engine.add_poller(cfg_.core, *queue_);
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
  status_.priority = cfg_.priority;
  sched_->spawn(ha_->poll_loop());
  run_task_ = sched_->spawn(run());
  if (replica_) sched_->spawn(replica_loop());
}

SubnetManager::~SubnetManager() {
  if (cfg_.mcast != nullptr) cfg_.mcast->set_listener(nullptr, nullptr);
  // No compute job resumes anything from here on (a job still running
  // finishes on its own); then task frames (they reference the queue), then
  // completions are dropped while the transaction manager cancels what is left.
  mailbox_->close();
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

void SubnetManager::set_priority(std::uint8_t priority) noexcept {
  if (priority > wire::kSmPriorityMax || priority == cfg_.priority) return;
  spdlog::info("sm: priority {} -> {}", cfg_.priority, priority);
  cfg_.priority = priority;  // what our snapshots report as the master's SMInfo
  ha_->set_priority(priority);
  update_status([&](SmStatus& s) { s.priority = priority; });
}

std::uint16_t SubnetManager::shown_sm_lid() const noexcept {
  // A standby (or a master that handed over) names the master its port
  // points at, not the LID of its own last sweep.
  return ha_->state() == wire::SmState::kMaster ? sm_lid_ : transport_.local_port().sm_lid;
}

void SubnetManager::refresh_status() noexcept {
  const TxnCounters c = txn_->counters();
  std::int64_t age_ms = -1;
  if (replica_ != nullptr && replica_->image().has_value())
    age_ms = (sched_->clock().now_ns() - replica_->image_at_ns()) / kNanosPerMilli;
  // The HA counters move with every poll, not only with a state change: a
  // standby's failed polls must be visible while it still stands by.
  const ha::HaCounters hc = ha_->counters();
  const LocalPort lp = transport_.local_port();
  const std::uint16_t sm_lid = shown_sm_lid();
  update_status([&](SmStatus& s) {
    s.sm_lid = sm_lid;
    s.port_lid = lp.lid;
    s.smps = c;
    s.replica_age_ms = age_ms;
    s.ha = hc;
    s.ha_transitions = hc.transitions;
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
      note_changed_switch(notice->issuer_lid.get());
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
    if (idle_) sched_->wake(run_task_);  // its sweep starts now, not at the next idle check
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
  if (idle_) sched_->wake(run_task_);  // a HANDOVER's sweep starts now, not at the next idle check
  ++sminfo_answered_;
  const std::uint64_t n = sminfo_answered_;
  update_status([n](SmStatus& s) { s.sminfo_answered = n; });
  publish_ha_status();
}

void SubnetManager::note_changed_switch(std::uint16_t lid) {
  const fabric::EndPort* e = current_ != nullptr ? current_->end_port_by_lid(lid) : nullptr;
  if (e == nullptr || !current_->fabric.nodes[e->node].is_switch()) {
    walk_reason_ = fmt::format("trap 128 from LID {}, not a switch we know", lid);
    return;
  }
  if (changed_switches_.size() >= kChangedSwitchesMax) {
    walk_reason_ = "many switches changed";
    return;
  }
  changed_switches_.push_back(current_->fabric.nodes[e->node].node_guid);
}

// ---- the main loop --------------------------------------------------------------

Task<void> SubnetManager::run() {
  // A standby re-reads the fabric now and then (discovery only, nothing is
  // written) to keep its prepared snapshot current: every standby_refresh_ms,
  // and while it has none (the master may not have numbered the fabric yet)
  // every light sweep interval, a sixth of that at most.
  const Nanos light_ns = Nanos{cfg_.light_sweep_interval_ms} * kNanosPerMilli;
  const Nanos refresh_ns = Nanos{cfg_.standby_refresh_ms} * kNanosPerMilli;
  const Nanos local_ns = Nanos{cfg_.local_port_check_ms} * kNanosPerMilli;
  Nanos next_warm = 0;
  bool refresh_warm = false;
  Nanos mcast_changed_since = -1;  // the first group change not programmed yet
  const auto turn = [this] { loop_turns_.store(loop_turns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); };
  for (;;) {
    turn();
    heavy_requested_.store(false, std::memory_order_relaxed);
    ha_->take_sweep_request();
    // Only DISCOVERING and MASTER configure; STANDBY and NOTACTIVE leave the
    // fabric to the master and wait for the agent (poll failure, HANDOVER).
    if (sweeping() || refresh_warm) {
      sweep_started_ns_.store(sched_->clock().now_ns(), std::memory_order_relaxed);
      co_await heavy_sweep();
      sweep_started_ns_.store(-1, std::memory_order_relaxed);
      next_warm = sched_->clock().now_ns() + (warm_ != nullptr ? refresh_ns : std::min(refresh_ns / 6, light_ns));
    }
    refresh_warm = false;
    Nanos next_light = sched_->clock().now_ns() + light_ns;
    Nanos next_local = sched_->clock().now_ns() + local_ns;
    for (;;) {
      idle_ = true;
      const Wake w = co_await sched_->sleep_for(kIdleStepNs);
      idle_ = false;
      if (!w) co_return;
      turn();
      if (ha_->take_sweep_request()) break;
      if (!sweeping()) {
        if (ha_->state() == wire::SmState::kStandby && sched_->clock().now_ns() >= next_warm) {
          refresh_warm = true;
          break;
        }
        continue;
      }
      if (ha_->machine().awaiting_handover()) continue;  // a lower master hands its part over first
      if (heavy_requested_.load(std::memory_order_relaxed)) break;
      if (current_ == nullptr) break;  // the last heavy sweep failed: try again
      const Nanos now = sched_->clock().now_ns();
      const bool changed_now = mcast_dirty_.exchange(false, std::memory_order_relaxed);
      if (changed_now && mcast_changed_since < 0) mcast_changed_since = now;
      if (mcast_changed_since >= 0 && (!changed_now || now - mcast_changed_since >= kMcastSettleMaxNs)) {
        mcast_changed_since = -1;
        const std::uint32_t n = co_await program_mcast(current_->fabric);
        if (n != 0) {
          // The SA's MFTRecords follow at once; the epoch stays (nothing unicast changed).
          current_->mfts->store(mft_view(current_->fabric));
          spdlog::info("sm: multicast groups changed: {} MFT blocks written", n);
        }
      }
      if (local_check_now_ || sched_->clock().now_ns() >= next_local) {
        local_check_now_ = false;
        const bool moved = co_await local_port_changed();
        next_local = sched_->clock().now_ns() + local_ns;
        if (moved) break;
      }
      const bool asked = light_requested_.exchange(false, std::memory_order_relaxed);
      if (!asked && (sched_->clock().now_ns() < next_light || !periodic_sweeps_.load(std::memory_order_relaxed))) continue;
      if (resweep_ && !asked) {
        // The last heavy sweep missed nodes (an SMA that did not answer, SMPs
        // lost) or failed to write a table: a light sweep would see neither
        // (no link changed), so sweep again, once per light sweep interval.
        resweep_ = false;
        break;
      }
      const bool changed = co_await light_sweep();
      next_light = sched_->clock().now_ns() + light_ns;
      if (changed) break;
    }
  }
}

}  // namespace madengine::sm
