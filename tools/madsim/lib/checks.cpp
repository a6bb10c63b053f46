// madsim's invariants, checked once the fabric is quiet (see world.hpp):
// one master per subnet, every reachable port ACTIVE with a unique LID,
// LIDs kept, LFT walks reaching every LID without a loop, PathRecords as the
// walk says, the SA's state as the clients left it, no query lost.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "lib/fabric_oracle.hpp"
#include "lib/policy.hpp"
#include "lib/rng.hpp"
#include "lib/world.hpp"
#include "madengine/wire/sa.hpp"

namespace madsim {

namespace sim = madengine::sim;
namespace wire = madengine::wire;
namespace node = madengine::node;
using madengine::kNanosPerMilli;
using madengine::kNanosPerSecond;

namespace {

// All pairs up to this many (switch, LID) walks; a seeded sample beyond.
constexpr std::size_t kLftPairsMax = 200'000;
// PathRecords asked per check: every (client, host) pair, in both shapes,
// again until this many, a sample beyond.
constexpr std::size_t kPathChecks = 1000;
constexpr std::uint8_t kHopsMax = 64;

bool is_up(const sim::Fabric& f, sim::PortIdx p) {
  const sim::PortIdx q = f.peer(p);
  return q != sim::kNoPortIdx && f.phys_state(p) == wire::PortPhysState::kLinkUp &&
         f.phys_state(q) == wire::PortPhysState::kLinkUp;
}

std::string port_name(const sim::Fabric& f, sim::PortIdx p) {
  return fmt::format("{}[{}]", f.description(f.node_of(p)), f.port_num_of(p));
}

}  // namespace

void World::violate(const std::string& invariant, const std::string& detail) {
  Violation v;
  v.invariant = invariant;
  v.at_ns = now();
  v.detail = detail;
  v.after_event = r_.trace.format(r_.trace.last_fault_before(now()));
  r_.trace.add(now(), fmt::format("VIOLATION {}: {}", invariant, detail));
  r_.violations.push_back(std::move(v));
}

void World::take_baseline(Slot& master) {
  // Only ports the master's publication covers: a port it has not reached
  // yet (a mute switch, the other subnet's part) may still carry a LID
  // another master gave it. And only ports that carry the LID published: a
  // port whose Set was lost (a link down while the master programmed) has
  // no settled LID yet: it carries one the master did not mean it to keep,
  // maybe another port's, and the next sweep (or the next master, who
  // cannot know what this one published) settles it.
  const node::FabricView epoch = master.n->control().fabric_view();
  if (epoch.empty()) return;
  baseline_.clear();
  for (sim::PortIdx p = 0; p < fabric_.port_count(); ++p) {
    const std::uint32_t n = fabric_.node_of(p);
    if (fabric_.is_switch(n) && fabric_.port_num_of(p) != 0) continue;
    const std::optional<node::EndPort> e = epoch.end_port_by_guid(fabric_.port_guid(p));
    if (!e) continue;
    const std::uint16_t lid = epoch.lid_of(*e);
    if (lid != 0 && lid == fabric_.lid(p)) baseline_[fabric_.port_guid(p)] = lid;
  }
  baseline_taken_ = true;
  r_.trace.add(now(), fmt::format("LIDs recorded: {} ports", baseline_.size()));
}

void World::check_all() {
  const auto comp = components();
  std::map<std::uint32_t, std::vector<Slot*>> by_comp;
  for (Slot& slot : sms_)
    if (alive(slot)) by_comp[comp[slot.node]].push_back(&slot);
  for (auto& [c, slots] : by_comp) {
    std::vector<Slot*> masters;
    for (Slot* slot : slots)
      if (slot->state == wire::SmState::kMaster) masters.push_back(slot);
    if (masters.size() != 1) {
      std::string states;
      for (Slot* slot : slots) states += fmt::format(" sm{} {}", slot->index, wire::to_string(slot->state));
      violate("one-master", fmt::format("{} masters in the subnet of sm{}:{}", masters.size(), slots[0]->index, states));
      continue;
    }
    check_component(comp, c, *masters[0]);
  }
  check_queries();
}

void World::check_component(const std::vector<std::uint32_t>& comp_of, std::uint32_t comp, Slot& master) {
  std::vector<std::uint32_t> nodes;
  for (std::uint32_t n = 0; n < comp_of.size(); ++n)
    if (comp_of[n] == comp && !fabric_.node_dead(n)) nodes.push_back(n);
  const std::size_t before = r_.violations.size();
  check_ports(nodes);
  check_lids_kept(nodes);
  check_lft_walk(nodes);
  check_partitions(nodes);
  check_m_keys(nodes, master);
  // Paths are only worth asking for over a fabric whose LFTs walk.
  if (r_.violations.size() == before) {
    check_channel_dependencies(nodes, master);
    check_paths(nodes, comp_of, comp, master);
  }
  check_sa_state(master, comp_of, comp);
}

void World::check_ports(const std::vector<std::uint32_t>& nodes) {
  std::map<std::uint16_t, sim::PortIdx> owner;
  unsigned reported = 0;
  auto bad = [&](const std::string& what) {
    if (++reported <= 3) violate("ports-active", what);
  };
  for (const std::uint32_t n : nodes) {
    const bool sw = fabric_.is_switch(n);
    for (std::uint8_t pn = sw ? 0 : 1; pn <= fabric_.num_ports(n); ++pn) {
      const sim::PortIdx p = fabric_.port(n, pn);
      if (p == sim::kNoPortIdx) continue;
      const bool has_lid = !sw || pn == 0;
      if (pn != 0) {
        if (!is_up(fabric_, p)) continue;
        if (fabric_.port_state(p) != wire::PortState::kActive)
          bad(fmt::format("{} is {} (not ACTIVE)", port_name(fabric_, p), static_cast<int>(fabric_.port_state(p))));
      }
      if (!has_lid) continue;
      const std::uint16_t lid = fabric_.lid(p);
      if (lid == 0) {
        bad(fmt::format("{} has no LID", port_name(fabric_, p)));
        continue;
      }
      const unsigned span = 1u << fabric_.link_state(p).lmc;
      for (unsigned l = lid; l < lid + span; ++l) {
        const auto [it, fresh] = owner.emplace(static_cast<std::uint16_t>(l), p);
        if (!fresh) {
          if (++reported <= 3)
            violate("unique-lids", fmt::format("LID {} on {} and {}", l, port_name(fabric_, it->second), port_name(fabric_, p)));
        }
      }
    }
  }
}

void World::check_lids_kept(const std::vector<std::uint32_t>& nodes) {
  if (!baseline_taken_) return;
  unsigned reported = 0;
  for (const std::uint32_t n : nodes) {
    if (touched_[n]) continue;
    const bool sw = fabric_.is_switch(n);
    for (std::uint8_t pn = sw ? 0 : 1; pn <= (sw ? 0 : fabric_.num_ports(n)); ++pn) {
      const sim::PortIdx p = fabric_.port(n, pn);
      if (p == sim::kNoPortIdx || fabric_.lid(p) == 0) continue;
      const auto it = baseline_.find(fabric_.port_guid(p));
      if (it == baseline_.end() || it->second == fabric_.lid(p)) continue;
      if (++reported <= 3)
        violate("lids-kept", fmt::format("{} had LID {} and now has {}, though it stayed", port_name(fabric_, p),
                                         it->second, fabric_.lid(p)));
    }
  }
}

void World::check_lft_walk(const std::vector<std::uint32_t>& nodes) {
  std::vector<std::uint32_t> switches;
  std::vector<std::pair<std::uint16_t, sim::PortIdx>> lids;  // every LID and its port
  for (const std::uint32_t n : nodes) {
    const bool sw = fabric_.is_switch(n);
    if (sw) switches.push_back(n);
    for (std::uint8_t pn = sw ? 0 : 1; pn <= (sw ? 0 : fabric_.num_ports(n)); ++pn) {
      const sim::PortIdx p = fabric_.port(n, pn);
      if (p == sim::kNoPortIdx || fabric_.lid(p) == 0 || (pn != 0 && !is_up(fabric_, p))) continue;
      const unsigned span = 1u << fabric_.link_state(p).lmc;
      for (unsigned l = fabric_.lid(p); l < fabric_.lid(p) + span; ++l) lids.emplace_back(static_cast<std::uint16_t>(l), p);
    }
  }
  const std::size_t pairs = switches.size() * lids.size();
  Rng pick(s_.seed ^ 0x1f7ull);
  const std::size_t n_walks = std::min(pairs, kLftPairsMax);
  unsigned reported = 0;
  for (std::size_t k = 0; k < n_walks; ++k) {
    const std::size_t idx = pairs <= kLftPairsMax ? k : static_cast<std::size_t>(pick.range(0, pairs - 1));
    const std::uint32_t start = switches[idx / lids.size()];
    const auto [lid, target] = lids[idx % lids.size()];
    ++r_.stats.lft_pairs;
    std::uint32_t cur = start;
    std::string failure;
    for (unsigned hops = 0;; ++hops) {
      if (fabric_.port(cur, 0) == target) break;  // the switch's own LID
      if (hops > kHopsMax) {
        failure = fmt::format("a loop (more than {} hops)", kHopsMax);
        break;
      }
      const std::uint8_t out = fabric_.lft_port(cur, lid);
      if (out == wire::kLftNoPort || out == 0 || out > fabric_.num_ports(cur) || lid > fabric_.linear_fdb_top(cur)) {
        failure = fmt::format("no route at {} (LFT entry {}, LinearFDBTop {})", fabric_.description(cur), out,
                              fabric_.linear_fdb_top(cur));
        break;
      }
      const sim::PortIdx p = fabric_.port(cur, out);
      if (!is_up(fabric_, p) || fabric_.port_state(p) != wire::PortState::kActive) {
        failure = fmt::format("{} routes it out of {}, which is not up and ACTIVE", fabric_.description(cur),
                              port_name(fabric_, p));
        break;
      }
      const sim::PortIdx q = fabric_.peer(p);
      const std::uint32_t next = fabric_.node_of(q);
      if (!fabric_.is_switch(next)) {
        if (q != target) failure = fmt::format("it ends at {}, not at {}", port_name(fabric_, q), port_name(fabric_, target));
        break;
      }
      cur = next;
    }
    if (!failure.empty() && ++reported <= 3)
      violate("lft-walk", fmt::format("from switch {} to LID {} ({}): {}", fabric_.description(start), lid,
                                      port_name(fabric_, target), failure));
  }
}

void World::check_paths(const std::vector<std::uint32_t>& nodes, const std::vector<std::uint32_t>& comp_of,
                        std::uint32_t comp, Slot& master) {
  std::vector<unsigned> clients;
  for (unsigned c = 0; c < s_.clients.size(); ++c)
    if (comp_of[s_.clients[c]] == comp) clients.push_back(c);
  std::vector<std::uint32_t> hosts;
  for (const std::uint32_t n : nodes)
    if (!fabric_.is_switch(n) && fabric_.lid(fabric_.port(n, 1)) != 0) hosts.push_back(n);
  if (clients.empty() || hosts.empty()) return;
  const Policy& policy = s_.policy;
  const bool layered = policy.layered;
  madstorm::FabricOracle oracle(fabric_, madstorm::FabricOracleConfig{.expect_sl0 = !policy.qos && !layered});
  std::set<std::uint16_t> lids_elsewhere;
  for (sim::PortIdx p = 0; p < fabric_.port_count(); ++p) {
    const std::uint32_t n = fabric_.node_of(p);
    if (fabric_.lid(p) != 0 && (comp_of[n] != comp || fabric_.node_dead(n))) lids_elsewhere.insert(fabric_.lid(p));
  }
  unsigned reported = 0;
  clients_->on_verify = [&](const Query& q, const madengine::MadBuf& answer) {
    ++r_.stats.paths_checked;
    const std::uint32_t from = s_.clients[q.action.client], to = q.action.peer;
    auto wrong = [&](const std::string& what) {
      if (++reported > 3) return;
      violate("path-record", fmt::format("client {} on {} asked for a path to {}{}: {}", q.action.client,
                                         fabric_.description(from), fabric_.description(to),
                                         q.action.gid_shaped ? fmt::format(" by GID, P_Key 0x{:04x}", q.pkey_sent) : std::string(),
                                         what));
    };
    if (q.outcome != Outcome::kOk) return wrong(fmt::format("status 0x{:04x}", q.status));
    wire::PathRecord rec{};
    std::memcpy(&rec, answer.as<wire::SaMad>().data.data(), sizeof(rec));
    // A dead node's ports keep their last LIDs in the model (a revived node
    // is reset), and the oracle maps LIDs over the whole fabric: a LID also
    // held outside this subnet cannot be judged by it.
    if (lids_elsewhere.contains(rec.slid.get()) || lids_elsewhere.contains(rec.dlid.get())) return;
    // The answer is to the question: the asking client's port to the peer's.
    const sim::PortIdx sp = fabric_.port(from, 1), dp = fabric_.port(to, 1);
    if (rec.slid.get() != fabric_.lid(sp) || rec.dlid.get() != fabric_.lid(dp))
      return wrong(fmt::format("LIDs {} -> {} answered {} -> {}", fabric_.lid(sp), fabric_.lid(dp), rec.slid.get(),
                               rec.dlid.get()));
    if (rec.sgid.guid.get() != fabric_.port_guid(sp) || rec.dgid.guid.get() != fabric_.port_guid(dp))
      return wrong(fmt::format("GIDs name ports 0x{:016x} -> 0x{:016x}", rec.sgid.guid.get(), rec.dgid.guid.get()));
    if (q.action.gid_shaped) {
      if ((rec.pkey.get() & 0x7fff) != (q.pkey_sent & 0x7fff)) return wrong(fmt::format("P_Key 0x{:04x}", rec.pkey.get()));
      if (!rec.reversible()) return wrong("not Reversible");
    }
    // The SL: the partition's with QoS on (partitions.conf sl=), the
    // route's layer with a layered routing (as the channel check took it).
    if (policy.qos && rec.sl() != sl_of_pkey(*partitions_, rec.pkey.get()))
      return wrong(fmt::format("SL {} in partition 0x{:04x}, whose SL is {}", rec.sl(), rec.pkey.get(),
                               sl_of_pkey(*partitions_, rec.pkey.get())));
    if (layered) {
      madengine::node::PathInfo pi;
      if (master.n->control().path(rec.slid.get(), rec.dlid.get(), pi) == madengine::node::PathResult::kOk && pi.sl != rec.sl())
        return wrong(fmt::format("SL {}, the route's layer is {}", rec.sl(), pi.sl));
    }
    const madstorm::PathCheck pc = oracle.check(rec);
    if (pc.verdict != madstorm::PathVerdict::kOk)
      wrong(fmt::format("PathRecord (LIDs {} -> {}, SL {}, P_Key 0x{:04x}) disagrees with the LFT walk: {}", rec.slid.get(),
                        rec.dlid.get(), rec.sl(), rec.pkey.get(), madstorm::to_string(pc.verdict)));
  };
  Rng pick(s_.seed ^ 0x9a7full);
  const std::size_t pairs = clients.size() * hosts.size();
  std::vector<unsigned> sent(s_.clients.size(), 0);
  for (std::size_t k = 0; k < kPathChecks; ++k) {
    ClientAction a;
    const std::size_t at = pairs >= kPathChecks ? pick.pick(static_cast<unsigned>(pairs)) : k % pairs;
    a.client = clients[at % clients.size()];
    // Each client asks one path per 200 us, as a client library paces them
    // (all at once would be answered BUSY by design).
    a.at_ns = now() + static_cast<Nanos>(sent[a.client]++) * 200'000;
    a.op = ClientOp::kPathRecord;
    a.peer = hosts[at / clients.size()];
    a.verify = true;
    // Both shapes for every pair (the second round the other one first).
    a.gid_shaped = ((k / pairs) + at) % 2 == 1;
    a.pkey_pick = static_cast<std::uint32_t>(pick.next());
    clients_->add(a);
  }
  const Nanos end = now() + 10 * kNanosPerSecond;
  while (now() < end && !clients_->idle()) step();
  clients_->on_verify = nullptr;
  for (const Query& q : clients_->queries())
    if (q.action.verify && (q.outcome == Outcome::kLost || q.outcome == Outcome::kNeverSent || q.outcome == Outcome::kPending) &&
        ++reported <= 3)
      violate("path-record", fmt::format("client {} asked for a path to {} on a quiet fabric: {}", q.action.client,
                                         fabric_.description(q.action.peer), to_string(q.outcome)));
}

void World::check_sa_state(Slot& master, const std::vector<std::uint32_t>& comp_of, std::uint32_t comp) {
  const madengine::node::SaRegistrations img = master.n->control().sa_registrations();
  const Nanos t = now();
  const bool rereg = clients_->reregistrations_pending != 0;
  auto in_subnet = [&](unsigned client) { return comp_of[s_.clients[client]] == comp; };
  unsigned reported = 0;
  auto bad = [&](const std::string& inv, const std::string& what) {
    if (++reported <= 4) violate(inv, what);
  };
  for (const auto& [key, held] : clients_->services) {
    if (!in_subnet(key.first) || held.unknown) continue;
    const std::uint64_t gid_guid = clients_->client_port_guid(key.first);
    const auto it = std::find_if(img.services.begin(), img.services.end(), [&](const madengine::node::ServiceHeld& e) {
      return e.service_id == service_id_of(clients_->instance(key.first), key.second) && e.service_gid.guid.get() == gid_guid;
    });
    const bool finite = held.lease_s != 0xffffffffu;
    const Nanos ends = held.acked_ns + Nanos{held.lease_s} * kNanosPerSecond;
    // A registration acknowledged this close to a master's death may be
    // missing from the next master's journal or replica, and so may a
    // renewal: the SA may hold the registration it replaced, or none.
    if (at_risk(held.acked_ns)) continue;
    if (finite && ends + 2 * kNanosPerSecond < t) {
      if (it != img.services.end())
        bad("leases-honoured", fmt::format("service {} of client {}: its {} s lease ended {:.1f} s ago, still registered",
                                           key.second, key.first, held.lease_s, static_cast<double>(t - ends) / 1e9));
      continue;
    }
    if (finite && ends - 2 * kNanosPerSecond < t) continue;  // about to end: either is right
    if (it == img.services.end()) {
      if (!rereg && !at_risk(held.acked_ns))
        bad("sa-state-kept", fmt::format("service {} of client {} (registered at {:.3f} s) is gone", key.second, key.first,
                                         static_cast<double>(held.acked_ns) / 1e9));
      continue;
    }
    if (finite && it->expires_ns >= 0 && (it->expires_ns > ends + 2 * kNanosPerSecond || it->expires_ns < ends - 2 * kNanosPerSecond))
      bad("leases-honoured", fmt::format("service {} of client {}: lease ends at {:.3f} s, should at {:.3f} s", key.second,
                                         key.first, static_cast<double>(it->expires_ns) / 1e9, static_cast<double>(ends) / 1e9));
  }
  for (const auto& [key, held] : clients_->members) {
    if (!in_subnet(key.second) || held.unknown) continue;
    const std::uint64_t guid = clients_->client_port_guid(key.second);
    const wire::Gid mgid = mgid_of(clients_->instance(key.second), key.first);
    bool found = false;
    for (const auto& g : img.groups)
      if (g.mgid == mgid)
        found = found || std::any_of(g.members.begin(), g.members.end(),
                                     [&](const wire::Gid& m) { return m.guid.get() == guid; });
    if (!found && !rereg && !at_risk(held.acked_ns))
      bad("sa-state-kept", fmt::format("client {} joined group {} at {:.3f} s and is no longer a member", key.second,
                                       key.first, static_cast<double>(held.acked_ns) / 1e9));
  }
  for (const auto& [client, held] : clients_->subscriptions) {
    if (!in_subnet(client) || held.unknown) continue;
    const Nanos acked = held.acked_ns;
    const std::uint64_t guid = clients_->client_port_guid(client);
    const bool found = std::any_of(img.subscribers.begin(), img.subscribers.end(),
                                   [&](const wire::Gid& sub) { return sub.guid.get() == guid; });
    if (!found && !rereg && !at_risk(acked))
      bad("sa-state-kept", fmt::format("client {} subscribed at {:.3f} s and its subscription is gone", client,
                                       static_cast<double>(acked) / 1e9));
  }
}

void World::check_queries() {
  unsigned reported = 0;
  for (const Query& q : clients_->queries()) {
    ++r_.stats.queries;
    switch (q.outcome) {
      case Outcome::kOk: ++r_.stats.answered; break;
      case Outcome::kSaError: {
        ++r_.stats.answered;
        // Refused by design: a Delete or leave of what the client may not
        // hold, a path to a host that is down or in another subnet. A query or a registration
        // refused on a quiet fabric is a wrong answer.
        const bool expected =
            q.action.op == ClientOp::kServiceDelete || q.action.op == ClientOp::kMcLeave || q.peer_gone;
        const Nanos from = q.first_sent_ns < 0 ? q.due_ns : q.first_sent_ns;
        if (expected || excused(from, q.done_ns)) break;
        ++r_.stats.refused_quiet;
        if (++reported <= 3)
          violate("queries-answered", fmt::format("client {} {} (key {}) sent at {:.3f} s on a quiet fabric: SA status 0x{:04x}",
                                                  q.action.client, to_string(q.action.op), q.action.key,
                                                  static_cast<double>(from) / 1e9, q.status));
        break;
      }
      case Outcome::kBusy: ++r_.stats.busy; break;
      case Outcome::kNeverSent: ++r_.stats.refused; break;
      case Outcome::kPending:
      case Outcome::kLost: {
        const Nanos from = q.first_sent_ns < 0 ? q.due_ns : q.first_sent_ns;
        if (excused(from, q.done_ns > 0 ? q.done_ns : now())) {
          ++r_.stats.excused;
          break;
        }
        ++r_.stats.lost;
        if (++reported <= 3)
          violate("queries-answered", fmt::format("client {} {} (key {}) sent at {:.3f} s on a quiet fabric: {} after {} attempts",
                                                  q.action.client, to_string(q.action.op), q.action.key,
                                                  static_cast<double>(from) / 1e9, to_string(q.outcome), q.attempts));
        break;
      }
    }
  }
}

}  // namespace madsim
