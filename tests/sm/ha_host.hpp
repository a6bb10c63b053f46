// A small SM host for HA tests: its own engine on a transport, discovery and
// an HaAgent, swept as the agent says (DISCOVERING/MASTER sweep; a master
// re-sweeps every sweep_ms to find new SMs). It programs nothing: what it
// shows is the election, polling and handover on the wire. Used by the sim
// tests (driven with poll_all_once) and the ibsim tests (engine threads).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "engine/engine.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/ha/ha_agent.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm::ha::testing {

class FnHandler final : public MadHandler {
 public:
  explicit FnHandler(std::function<void(MadBuf&, CoreContext&)> fn) : fn_(std::move(fn)) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { fn_(buf, ctx); }

 private:
  std::function<void(MadBuf&, CoreContext&)> fn_;
};

// Torn down like the SubnetManager: task frames, then the queue is closed,
// then the transaction manager cancels what is left.
class HaHost {
 public:
  // `transport` must be open with AgentSpec{.smi = true, .is_sm = true}.
  // `clock` nullptr: the engine's own steady clock.
  HaHost(Transport& transport, const Clock* clock, std::uint8_t priority, HaConfig cfg, std::uint64_t sm_key = 1,
         std::uint32_t sweep_ms = 300)
      : transport_(transport), engine_(EngineConfig{.cores = 1, .pin = false, .clock = clock}), sweep_ms_(sweep_ms) {
    engine_.add_transport(transport, 0);
    const Clock& c = engine_.core(0).clock();
    sched_ = std::make_unique<Scheduler>(c, SchedulerConfig{.tasks_max = 8});
    txn_ = std::make_unique<TransactionManager>(
        c, engine_.core(0), TransactionConfig{.core_id = 0, .window_max = 64, .window_per_dest_max = 4, .queue_max = 64});
    queue_ = std::make_unique<SmpQueue>(*txn_, 64, RequestOptions{.timeout_ms = 100, .retries = 2});
    agent_ = std::make_unique<HaAgent>(
        *sched_, *txn_, engine_.core(0),
        SmIdentity{.guid = transport.local_port().port_guid, .priority = priority, .sm_key = sm_key},
        transport.local_port().port_num, cfg);
    engine_.add_poller(0, *txn_);
    engine_.add_poller(0, *sched_);
    engine_.add_poller(0, *queue_);
    engine_.set_response_hook(0, responses_);
    for (const auto klass : {wire::MgmtClass::kSubnLid, wire::MgmtClass::kSubnDirected}) {
      const auto k = static_cast<std::uint8_t>(klass);
      engine_.add_handler(DispatchKey{k, wire::method::kGet, wire::smp_attr::kSmInfo}, sma_, OwnerSelector::fixed(0));
      engine_.add_handler(DispatchKey{k, wire::method::kSet, wire::smp_attr::kSmInfo}, sma_, OwnerSelector::fixed(0));
      engine_.add_handler(DispatchKey{k, wire::method::kTrap, wire::smp_attr::kNotice}, trap_, OwnerSelector::fixed(0));
    }
    agent_->set_on_transition([this](const Transition& t) {
      state_.store(static_cast<std::uint8_t>(t.to), std::memory_order_release);
      std::lock_guard lock(mu_);
      log_.push_back(t);
    });
    agent_->start();
    sched_->spawn(agent_->poll_loop());
    sched_->spawn(run());
  }
  ~HaHost() {
    engine_.stop();
    engine_.quiesce();
    sched_.reset();
    queue_->close();
    txn_.reset();
  }
  HaHost(const HaHost&) = delete;
  HaHost& operator=(const HaHost&) = delete;

  Engine& engine() noexcept { return engine_; }
  // Owner-core state: read only when the engine is not running threads.
  HaAgent& agent() noexcept { return *agent_; }
  // Any thread.
  wire::SmState state() const noexcept { return static_cast<wire::SmState>(state_.load(std::memory_order_acquire)); }
  std::uint64_t programmed() const noexcept { return programmed_.load(std::memory_order_acquire); }
  std::uint64_t asserted() const noexcept { return asserted_.load(std::memory_order_acquire); }
  std::uint64_t guid() const noexcept { return transport_.local_port().port_guid; }
  std::vector<Transition> log() const {
    std::lock_guard lock(mu_);
    return log_;
  }

 private:
  Task<void> run() {
    bool sweep = true;
    Nanos next = 0;
    for (;;) {
      const wire::SmState st = agent_->state();
      const bool sweeping = st == wire::SmState::kDiscovering || st == wire::SmState::kMaster;
      if (sweeping && (sweep || sched_->clock().now_ns() >= next)) {
        sweep = false;
        agent_->sweep_started();
        DiscoveryResult d = co_await discover(*queue_, DiscoveryOptions{.port_num = transport_.local_port().port_num});
        const std::uint16_t own_lid = transport_.local_port().lid;
        const SweepDecision dec = co_await agent_->after_discovery(*queue_, d.fabric, guid(), own_lid);
        if (dec.program) {
          agent_->note_activity();
          programmed_.fetch_add(1, std::memory_order_acq_rel);
        }
        if (dec.assert_all) asserted_.fetch_add(1, std::memory_order_acq_rel);
        next = sched_->clock().now_ns() + Nanos{sweep_ms_} * kNanosPerMilli;
      }
      const Wake w = co_await sched_->sleep_for(10 * kNanosPerMilli);
      if (!w) co_return;
      if (agent_->take_sweep_request()) sweep = true;
    }
  }
  void on_trap(MadBuf& buf, CoreContext& ctx) noexcept {
    agent_->on_trap144();
    buf.hdr().method = wire::method::kTrapRepress;
    ctx.tx().send(buf);
  }

  Transport& transport_;
  Engine engine_;
  std::uint32_t sweep_ms_;
  std::unique_ptr<Scheduler> sched_;
  std::unique_ptr<TransactionManager> txn_;
  std::unique_ptr<SmpQueue> queue_;
  std::unique_ptr<HaAgent> agent_;
  FnHandler sma_{[this](MadBuf& b, CoreContext& ctx) { agent_->on_sminfo(b, ctx); }};
  FnHandler trap_{[this](MadBuf& b, CoreContext& ctx) { on_trap(b, ctx); }};
  FnHandler responses_{[this](MadBuf& b, CoreContext&) { txn_->on_response(b); }};
  std::atomic<std::uint8_t> state_{static_cast<std::uint8_t>(wire::SmState::kNotActive)};
  std::atomic<std::uint64_t> programmed_{0}, asserted_{0};
  mutable std::mutex mu_;
  std::vector<Transition> log_;
};

}  // namespace madengine::sm::ha::testing
