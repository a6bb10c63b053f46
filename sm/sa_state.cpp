// SA state handed on across masterships (see sm.hpp and docs/ha.md): a
// standby copies the master's SA state; a new master settles, once, whether
// it can vouch for the clients' registrations or must ask them to reregister.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "sm/sm.hpp"

namespace madengine::sm {

namespace {

constexpr Nanos kReplicaStepNs = 20 * kNanosPerMilli;  // how often the replica loop looks at its state

}  // namespace

std::uint64_t replica_max_age_ms(const SmConfig& c) noexcept {
  if (c.ha_replica_max_age_ms != 0) return c.ha_replica_max_age_ms;
  return 3 * std::uint64_t{c.ha_replica_interval_ms};
}

// A STANDBY copies the master's SA state: right after it became STANDBY, then
// every ha_replica_interval_ms. The master's SA is at the SM LID our port
// reports (the master programmed it), else at the LID the sweep found.
Task<void> SubnetManager::replica_loop() {
  const Nanos interval = Nanos{cfg_.ha_replica_interval_ms} * kNanosPerMilli;
  Nanos next = 0;
  ha::ReplicaCounters seen;
  bool behind = false;  // rounds fail or outlast the interval: said once, until one completes
  for (;;) {
    const Wake w = co_await sched_->sleep_for(std::min(interval, kReplicaStepNs));
    if (!w) co_return;
    const Nanos now = sched_->clock().now_ns();
    if (const ha::ReplicaCounters& c = replica_->counters(); c != seen) {
      if (c.complete != seen.complete && behind) {
        spdlog::info("sm: replica: copying the master's SA state again ({} ms a round)", c.last_round_us / 1000);
        behind = false;
      } else if ((c.failed != seen.failed || c.timed_out != seen.timed_out) && c.complete == seen.complete && !behind) {
        spdlog::warn("sm: replica: a copy of the master's SA state {} (ha_replica_interval_ms {}): a takeover "
                     "now may have to ask clients to reregister",
                     c.failed != seen.failed ? "failed: " + replica_->last_error() : std::string("did not complete in time"),
                     cfg_.ha_replica_interval_ms);
        behind = true;
      }
      seen = c;
      update_status([c](SmStatus& s) { s.replica = c; });
    }
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
    phase(SmPhase::kReplicaCopy);
    replica_->start(ha::SaTarget{.lid = master_lid, .sl = lp.sm_sl, .pkey_index = 0, .port_num = lp.port_num},
                    cfg_.sm_key, interval, std::move(lid_of));
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
    // How much of the master's life the copy misses: from the copy to the
    // master's last answered poll (the takeover itself comes a polling
    // budget later, with nothing registered meanwhile).
    const Nanos last_alive = ha_->last_poll_answer_ns() >= 0 ? ha_->last_poll_answer_ns() : now;
    const Nanos age = std::max<Nanos>(0, last_alive - replica_->image_at_ns());
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


}  // namespace madengine::sm
