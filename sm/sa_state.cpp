// SA state handed on across masterships (see sm.hpp and docs/ha.md): a
// standby copies the master's SA state; a new master settles, once, whether
// it can vouch for the clients' registrations or must ask them to reregister.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "sm/lids/lid_assign.hpp"
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
// reports (the master programmed it), else at the LID the sweep found if no
// other port carries it (master_lid_unique_).
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
    if (master_lid == 0) master_lid = master_lid_unique_;
    if (master_lid == 0) continue;
    phase(SmPhase::kReplicaCopy);
    start_replica_round(master_lid, interval);
  }
}

bool SubnetManager::start_replica_round(std::uint16_t master_lid, Nanos timeout_ns) {
  const LocalPort lp = transport_.local_port();
  // Subscribers' LIDs from our own view of the fabric (the SA re-resolves
  // them from each snapshot it serves).
  std::shared_ptr<const sa::Snapshot> view = warm_ != nullptr ? warm_ : current_;
  ha::LidOfGid lid_of = [view](const wire::Gid& g) -> std::uint16_t {
    if (view == nullptr) return 0;
    const auto it = view->by_port_guid.find(g.guid.get());
    return it == view->by_port_guid.end() ? 0 : view->fabric.lid_of(it->second);
  };
  replica_lid_ = master_lid;
  return replica_->start(ha::SaTarget{.lid = master_lid, .sl = lp.sm_sl, .pkey_index = 0, .port_num = lp.port_num},
                         cfg_.sm_key, timeout_ns, std::move(lid_of));
}

Task<void> SubnetManager::final_replica_round() {
  role_.handed_by_live_master = false;
  // Only a master we copied from, and whose copy we would vouch with.
  if (replica_ == nullptr || replica_lid_ == 0 || !replica_->image().has_value()) co_return;
  const Nanos timeout = Nanos{cfg_.ha_replica_interval_ms} * kNanosPerMilli;
  const std::uint64_t complete = replica_->counters().complete;
  if (!start_replica_round(replica_lid_, timeout)) co_return;
  const Nanos deadline = sched_->clock().now_ns() + timeout;
  while (replica_->in_flight() && sched_->clock().now_ns() < deadline) {
    const Wake w = co_await sched_->sleep_for(kReplicaStepNs / 4);
    if (!w) co_return;
  }
  if (replica_->counters().complete != complete)
    spdlog::info("sm: handed the subnet: the SA state copied once more from the master that handed it");
  else
    spdlog::warn("sm: handed the subnet: the last copy from the master that handed it did not complete: the "
                 "standby's last copy is used");
}

// Once per mastership, before its first publication: hand the SA the state
// we can vouch for (the previous master's, replicated while we were STANDBY;
// or what our owner restored from a fresh journal before start) and ask
// clients to reregister (PortInfo.ClientReregister, IBA 14.4.11) only
// without it. Returns whether to ask.
bool SubnetManager::settle_sa_state(const DiscoveryResult& d) {
  role_.sa_state_decided = true;
  role_.vouched_sm_lid = 0;
  const Nanos now = sched_->clock().now_ns();
  const auto bound_ns = static_cast<Nanos>(replica_max_age_ms(cfg_)) * kNanosPerMilli;
  bool ask = true;
  const char* why = "no replica or journal of the SA state";
  if (replica_ != nullptr && replica_->image().has_value()) {
    // How much of the master's life the copy misses: from the copy to the
    // master's last answered poll (the takeover itself comes a polling
    // budget later, with nothing registered meanwhile).
    // Our device lost since that answer: we polled no more, and the master
    // may have lived (and registered clients) until now.
    const Nanos answered = ha_->last_poll_answer_ns();
    const Nanos last_alive = answered >= 0 && device_lost_ns_ < answered ? answered : now;
    const Nanos age = std::max<Nanos>(0, last_alive - replica_->image_at_ns());
    ask = ha::must_ask_clients_to_reregister(true, age, bound_ns);
    if (!ask) {
      std::optional<sa::SaStateImage> img = replica_->take_image();
      spdlog::info("sm: takeover: SA state from the last replica ({} ms old): {} services, {} groups, {} subscriptions",
                   age / kNanosPerMilli, img->services.size(), img->groups.size(), img->subscriptions.size());
      cfg_.restore_sa_state(std::move(*img));
      role_.vouched_sm_lid = replica_lid_;
      update_status([](SmStatus& s) { ++s.sa_state_handed_on; });
    } else {
      why = "the last replica is too old";
    }
  } else if (sa_state_restored_) {
    // The owner restored a fresh journal before start. It vouches unless
    // another SM numbered the subnet since: that SM's SA took registrations
    // our journal lacks (two subnets joined, an interim master).
    const std::string elsewhere = numbered_elsewhere(d);
    if (elsewhere.empty()) {
      ask = false;
      spdlog::info("sm: SA state restored before start: clients are not asked to reregister");
    } else {
      spdlog::info("sm: SA state restored before start, but {}: another SM numbered the subnet since", elsewhere);
      why = "the journal restored at start is older than another SM's numbering";
    }
  }
  sa_state_restored_ = false;
  if (ask) spdlog::info("sm: new mastership: {}: clients are asked to reregister", why);
  update_status([ask](SmStatus& s) {
    ++(ask ? s.reregister_masterships : s.vouched_masterships);
    s.sa_state_current = !ask;
  });
  return ask;
}

std::string SubnetManager::numbered_elsewhere(const DiscoveryResult& d) const {
  const std::vector<fabric::EndPort> ends = d.fabric.end_ports();
  const std::vector<std::uint16_t> lids = d.current_lids();
  for (std::size_t i = 0; i < ends.size() && i < lids.size(); ++i) {
    if (lids[i] == 0) continue;  // reset or new: nobody numbered it
    const std::uint64_t guid = end_port_guid(d.fabric, ends[i]);
    const auto it = guid2lid_.find(guid);
    if (it == guid2lid_.end() || it->second.min_lid != lids[i])
      return fmt::format("port {:#018x} carries LID {}, which our guid2lid does not give it", guid, lids[i]);
  }
  return {};
}

// Besides a whole mastership's ask, a port's clients are asked to reregister
// (IBA 14.4.11) when our SA may not hold what they registered, as OpenSM
// asks: the port's MasterSMLID is neither the SM LID we program nor that of
// the master whose replica we restored (its clients registered with another
// SA: a subnet joined, a master that died before it numbered them); the
// port is new since our last clean publication (SM LIDs of joined subnets
// may be equal, so the LID alone does not tell); at a takeover, the port
// was not among those our last standby refresh found the master had
// numbered (it joined since: had the master asked it, no replica says);
// or the port was in the part we handed to another master, whose SA does not hold it until
// that master has asked it (which our replica of that SA cannot tell us).
void SubnetManager::note_reregister_ports(const fabric::Fabric& f, std::uint16_t sm_lid) {
  const std::size_t before = reregister_ports_.size();
  const bool known = !role_.mastership_new && current_ != nullptr;
  for (const fabric::EndPort e : f.end_ports()) {
    const fabric::Node& n = f.nodes[e.node];
    if (n.is_switch()) continue;
    const fabric::Port& p = n.ports[e.port];
    const std::uint16_t had = p.info.master_sm_lid.get();
    const bool other_sa = had != sm_lid && had != role_.vouched_sm_lid;
    const bool joined = known && !current_->by_port_guid.contains(p.guid);
    const bool unseen = role_.mastership_new && !seen_as_standby_.empty() && !seen_as_standby_.contains(p.guid);
    if (other_sa || joined || unseen) reregister_ports_.insert(p.guid);
  }
  seen_as_standby_.clear();
  if (role_.mastership_new && !handed_part_.empty()) {
    spdlog::info("sm: new mastership: the {} ports of the part we handed to another master are asked to reregister",
                 handed_part_.size());
    reregister_ports_.insert(handed_part_.begin(), handed_part_.end());
    handed_part_.clear();
  }
  if (reregister_ports_.size() != before)
    spdlog::info("sm: {} ports whose clients registered with another SA are asked to reregister",
                 reregister_ports_.size() - before);
}

void SubnetManager::note_master_lid(const DiscoveryResult& d) {
  master_lid_unique_ = 0;
  std::uint16_t lid = 0;
  for (const ha::FoundSm& p : ha_->peers())
    if (p.at.port_guid == ha_->machine().polled_guid()) lid = p.at.lid;
  if (lid == 0) return;
  const std::vector<fabric::EndPort> ends = d.fabric.end_ports();
  const std::vector<std::uint16_t> lids = d.current_lids();
  unsigned holders = 0;
  for (std::size_t i = 0; i < ends.size() && i < lids.size(); ++i) {
    const fabric::Node& n = d.fabric.nodes[ends[i].node];
    const unsigned span = n.is_switch() ? 1u : 1u << n.ports[ends[i].port].info.lmc();
    if (lids[i] != 0 && lid >= lids[i] && lid < lids[i] + span) ++holders;
  }
  if (holders == 1) master_lid_unique_ = lid;
  else spdlog::info("sm: standby: the master's LID {} is carried by {} ports: no replica from it until it is unique", lid, holders);
}

void SubnetManager::remember_handed_part() {
  if (current_ == nullptr) return;
  for (const fabric::EndPort e : current_->fabric.end_ports()) {
    const fabric::Node& n = current_->fabric.nodes[e.node];
    if (!n.is_switch() && n.ports[e.port].guid != 0) handed_part_.insert(n.ports[e.port].guid);
  }
  spdlog::info("sm: our part ({} ports) goes to another master: should we be master again, its clients are asked to "
               "reregister",
               handed_part_.size());
}


}  // namespace madengine::sm
