// madsim's SA clients (see clients.hpp).
#include "lib/clients.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "madengine/wire/sa/get_table.hpp"
#include "lib/policy.hpp"
#include "madengine/wire/sa_records.hpp"

namespace madsim {

namespace wire = madengine::wire;
namespace sim = madengine::sim;
using madengine::MadBuf;

const char* to_string(Outcome o) noexcept {
  switch (o) {
    case Outcome::kPending: return "pending";
    case Outcome::kOk: return "ok";
    case Outcome::kSaError: return "sa-error";
    case Outcome::kBusy: return "busy";
    case Outcome::kLost: return "lost";
    case Outcome::kNeverSent: return "never-sent";
  }
  return "?";
}

std::uint64_t service_id_of(unsigned instance, std::uint32_t key) noexcept {
  return 0x5ad5000000000000ull | std::uint64_t{instance} << 16 | key;
}

wire::Gid mgid_of(unsigned instance, std::uint32_t key) noexcept {
  return {wire::be64::from(0xff12401bffff0000ull), wire::be64::from(0x00000000000ad500ull | std::uint64_t{instance} << 24 | key)};
}

namespace {

template <typename T>
std::span<const std::uint8_t> bytes(const T& v) {
  return {reinterpret_cast<const std::uint8_t*>(&v), sizeof(T)};
}

wire::Gid gid_of(std::uint64_t port_guid) {
  return {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(port_guid)};
}

// The registration an action changes (its kind, client and key), if any:
// queries (PathRecord, GetTable) change none.
std::optional<std::tuple<ClientOp, unsigned, std::uint32_t>> slot_of(const ClientAction& a) {
  switch (a.op) {
    case ClientOp::kServiceSet:
    case ClientOp::kServiceDelete: return std::tuple{ClientOp::kServiceSet, a.client, a.key};
    case ClientOp::kMcJoin:
    case ClientOp::kMcLeave: return std::tuple{ClientOp::kMcJoin, a.client, a.key};
    case ClientOp::kInformSubscribe: return std::tuple{ClientOp::kInformSubscribe, a.client, 0u};
    case ClientOp::kPathRecord:
    case ClientOp::kGetTable: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

Clients::Clients(sim::Fabric& fabric, const Scenario& s, Trace& trace) : fabric_(fabric), s_(s), trace_(trace) {
  std::map<std::uint32_t, unsigned> on_host;
  for (const std::uint32_t n : s.clients) {
    const unsigned i = on_host[n]++;
    instance_.push_back(i);
    hosts_.push_back(std::make_unique<sim::Host>(fabric, n, 1, 1024, static_cast<std::uint8_t>(i)));
  }
  rereg_seen_.assign(s.clients.size(), 0);
  for (const ClientAction& a : s.actions) {
    Query q;
    q.action = a;
    q.due_ns = a.at_ns;
    queries_.push_back(q);
  }
}

std::uint64_t Clients::client_port_guid(unsigned client) const noexcept {
  return fabric_.port_guid(fabric_.port(s_.clients[client], 1));
}

void Clients::add(const ClientAction& a) {
  Query q;
  q.action = a;
  q.due_ns = a.at_ns;
  queries_.push_back(q);
}

void Clients::reregister(unsigned client, Nanos now_ns) {
  auto again = [&](ClientAction a) {
    a.at_ns = now_ns;
    Query q;
    q.action = a;
    q.due_ns = now_ns;
    q.reregistration = true;
    queries_.push_back(q);
    ++reregistrations_pending;
  };
  unsigned n = 0;
  // What it knows it holds: not what it asked for without an answer.
  for (const auto& [k, held] : services) {
    if (k.first != client || held.unknown) continue;
    if (held.lease_s != 0xffffffffu && held.acked_ns + Nanos{held.lease_s} * madengine::kNanosPerSecond <= now_ns) continue;
    again(ClientAction{.client = k.first, .op = ClientOp::kServiceSet, .key = k.second, .lease_s = held.lease_s});
    ++n;
  }
  for (const auto& [k, held] : members) {
    if (k.second != client || held.unknown) continue;
    again(ClientAction{.client = k.second, .op = ClientOp::kMcJoin, .key = k.first});
    ++n;
  }
  for (const auto& [c, held] : subscriptions) {
    if (c != client || held.unknown) continue;
    again(ClientAction{.client = c, .op = ClientOp::kInformSubscribe});
    ++n;
  }
  trace_.add(now_ns, fmt::format("c{} asked to reregister: {} registrations again", client, n));
}

bool Clients::idle() const noexcept {
  return std::all_of(queries_.begin(), queries_.end(), [](const Query& q) { return q.outcome != Outcome::kPending; });
}

bool Clients::peer_gone(const ClientAction& a) const {
  if (fabric_.node_dead(a.peer)) return true;
  return a.op == ClientOp::kPathRecord && published && !published(s_.clients[a.client], a.peer);
}

bool Clients::send(Query& q, Nanos now_ns) {
  const ClientAction& a = q.action;
  sim::Host& h = *hosts_[a.client];
  const std::uint64_t own_guid = client_port_guid(a.client);
  const sim::PortIdx peer_port = fabric_.port(a.peer, 1);
  std::optional<std::uint64_t> tid;
  // Retries keep the first attempt's TID, as SA clients do: a Set or Delete
  // the SA carried out but whose answer was lost is answered again, not redone.
  const std::uint64_t again = q.tids.empty() ? 0 : q.tids.front();
  switch (a.op) {
    case ClientOp::kPathRecord: {
      wire::PathRecord pr{};
      const std::uint16_t slid = fabric_.lid(fabric_.port(s_.clients[a.client], 1)), dlid = fabric_.lid(peer_port);
      if (slid == 0 || dlid == 0) return false;
      if (a.gid_shaped) {
        // As a client's library asks (librdmacm, ibacm): by GIDs, in one of
        // the partitions both ends share, one path usable both ways.
        namespace pcm = wire::path_record_cm;
        static const std::vector<PartitionDraw> kNone;
        const auto pkeys = shared_pkeys(partitions_ != nullptr ? *partitions_ : kNone, s_.clients[a.client], a.peer);
        if (q.pkey_sent == 0) q.pkey_sent = pkeys[a.pkey_pick % pkeys.size()];
        pr.sgid = gid_of(own_guid);
        pr.dgid = gid_of(fabric_.port_guid(peer_port));
        pr.pkey = wire::be16::from(q.pkey_sent);
        pr.set_reversible(true);
        pr.set_numb_path(1);
        tid = h.query(wire::method::kGet, wire::sa_attr::kPathRecord,
                      pcm::kSGid | pcm::kDGid | pcm::kPKey | pcm::kReversible | pcm::kNumbPath, bytes(pr), 0, 0, again);
        break;
      }
      pr.slid = wire::be16::from(slid);
      pr.dlid = wire::be16::from(dlid);
      tid = h.query(wire::method::kGet, wire::sa_attr::kPathRecord,
                    wire::path_record_cm::kSLid | wire::path_record_cm::kDLid, bytes(pr), 0, 0, again);
      break;
    }
    case ClientOp::kGetTable: {
      const std::uint16_t lid = fabric_.lid(peer_port);
      if (lid == 0) return false;
      if (a.table == wire::sa_attr::kNodeRecord) {
        wire::NodeRecord nr{};
        nr.lid = wire::be16::from(lid);
        tid = h.query(wire::method::kGetTable, a.table, wire::node_record_cm::kLid, bytes(nr), 0, 0, again);
      } else {
        wire::PortInfoRecord pir{};
        pir.endport_lid = wire::be16::from(lid);
        tid = h.query(wire::method::kGetTable, a.table, wire::port_info_record_cm::kEndportLid, bytes(pir), 0, 0, again);
      }
      break;
    }
    case ClientOp::kServiceSet:
    case ClientOp::kServiceDelete: {
      namespace scm = wire::service_record_cm;
      wire::ServiceRecord sr{};
      sr.service_id = wire::be64::from(service_id_of(instance_[a.client], a.key));
      sr.service_gid = gid_of(own_guid);
      sr.service_pkey = wire::be16::from(0xffff);
      sr.service_lease = wire::be32::from(a.lease_s);
      sr.set_name(fmt::format("madsim-{}", a.key));
      const bool set = a.op == ClientOp::kServiceSet;
      tid = h.query(set ? wire::method::kSet : wire::method::kDelete, wire::sa_attr::kServiceRecord,
                    scm::kServiceId | scm::kServiceGid | scm::kServicePKey |
                        (set ? scm::kServiceLease | scm::kServiceName : 0),
                    bytes(sr), 0, 0, again);
      break;
    }
    case ClientOp::kMcJoin:
    case ClientOp::kMcLeave: {
      namespace mcm = wire::mc_member_record_cm;
      wire::McMemberRecord j{};
      j.mgid = mgid_of(instance_[a.client], a.key);
      j.port_gid = gid_of(own_guid);
      j.qkey = wire::be32::from(0x0b1b);
      j.pkey = wire::be16::from(0xffff);
      j.set_join_state(1);
      if (a.op == ClientOp::kMcJoin)
        tid = h.query(wire::method::kSet, wire::sa_attr::kMcMemberRecord,
                      mcm::kMGid | mcm::kPortGid | mcm::kJoinState | mcm::kQKey | mcm::kPKey | mcm::kSl | mcm::kFlowLabel |
                          mcm::kTClass,
                      bytes(j), 0, 0, again);
      else
        tid = h.query(wire::method::kDelete, wire::sa_attr::kMcMemberRecord, mcm::kMGid | mcm::kPortGid | mcm::kJoinState,
                      bytes(j), 0, 0, again);
      break;
    }
    case ClientOp::kInformSubscribe: {
      wire::InformInfo i{};
      i.gid = gid_of(own_guid);
      i.lid_range_begin = wire::be16::from(wire::kInformAllLids);
      i.is_generic = 1;
      i.subscribe = 1;
      i.type = wire::be16::from(wire::inform_type::kAll);
      i.set_trap_number(wire::kInformAllTraps);
      i.set_producer_type(wire::kInformAllProducers);
      tid = h.query(wire::method::kSet, wire::sa_attr::kInformInfo, 0, bytes(i), 0, 0, again);
      break;
    }
  }
  if (!tid) return false;
  if (q.tids.empty()) q.tids.push_back(*tid);
  q.peer_gone = q.peer_gone || peer_gone(a);
  ++q.attempts;
  if (q.first_sent_ns < 0) q.first_sent_ns = now_ns;
  q.deadline_ns = now_ns + kQueryTimeoutNs;
  return true;
}

void Clients::finish(Query& q, Nanos now_ns, const MadBuf* answer) {
  const ClientAction& a = q.action;
  q.done_ns = now_ns;
  q.peer_gone = q.peer_gone || peer_gone(a);
  for (const std::uint64_t t : q.tids) hosts_[a.client]->forget(t);  // a late answer is now a stray
  if (answer != nullptr) {
    q.status = answer->hdr().status.get();
    q.outcome = q.status == 0 ? Outcome::kOk : (q.status & wire::status::kBusy) != 0 ? Outcome::kBusy : Outcome::kSaError;
  }
  if (q.reregistration && reregistrations_pending > 0) --reregistrations_pending;
  if (const auto slot = slot_of(a)) {
    const auto it = in_flight_.find(*slot);
    if (it != in_flight_.end() && it->second == static_cast<std::size_t>(&q - queries_.data())) in_flight_.erase(it);
  }
  if (q.outcome == Outcome::kOk) {
    switch (a.op) {
      case ClientOp::kServiceSet: services[{a.client, a.key}] = ServiceHeld{now_ns, a.lease_s}; break;
      case ClientOp::kServiceDelete: services.erase({a.client, a.key}); break;
      case ClientOp::kMcJoin: members[{a.key, a.client}] = MemberHeld{now_ns}; break;
      case ClientOp::kMcLeave: members.erase({a.key, a.client}); break;
      case ClientOp::kInformSubscribe: subscriptions[a.client] = MemberHeld{now_ns}; break;
      default: break;
    }
  } else if (q.outcome == Outcome::kLost) {
    // Sent, never answered: carried out or not, the client cannot tell.
    switch (a.op) {
      case ClientOp::kServiceSet: services[{a.client, a.key}] = ServiceHeld{now_ns, a.lease_s, true}; break;
      case ClientOp::kServiceDelete:
        if (const auto it = services.find({a.client, a.key}); it != services.end()) it->second.unknown = true;
        break;
      case ClientOp::kMcJoin: members[{a.key, a.client}] = MemberHeld{now_ns, true}; break;
      case ClientOp::kMcLeave:
        if (const auto it = members.find({a.key, a.client}); it != members.end()) it->second.unknown = true;
        break;
      case ClientOp::kInformSubscribe: subscriptions[a.client] = MemberHeld{now_ns, true}; break;
      default: break;
    }
  }
  const std::string lease = a.op != ClientOp::kServiceSet ? std::string()
                            : a.lease_s == 0xffffffffu  ? std::string(" lease infinite")
                                                        : fmt::format(" lease {} s", a.lease_s);
  trace_.add(now_ns, fmt::format("c{} {} key {}{} peer {}{}: {} status 0x{:04x} after {} attempts", a.client, to_string(a.op),
                                 a.key, lease, a.peer, q.reregistration ? " (again)" : "", to_string(q.outcome), q.status,
                                 q.attempts));
  if (a.verify && answer != nullptr && on_verify) on_verify(q, *answer);
}

std::size_t Clients::poll(Nanos now_ns) {
  std::size_t work = 0;
  for (auto& h : hosts_) work += h->poll();
  for (unsigned c = 0; c < hosts_.size(); ++c) {
    const std::uint32_t n = fabric_.client_reregisters(fabric_.port(s_.clients[c], 1));
    if (n == rereg_seen_[c]) continue;
    rereg_seen_[c] = n;
    reregister(c, now_ns);
  }
  for (std::size_t i = 0; i < queries_.size(); ++i) {
    Query& q = queries_[i];
    if (q.outcome != Outcome::kPending || q.due_ns > now_ns) continue;
    const auto slot = slot_of(q.action);
    if (q.tids.empty() && slot) {
      const auto it = in_flight_.find(*slot);
      if (it != in_flight_.end() && it->second != i) {
        q.due_ns = now_ns + kSendRetryNs;  // after the one in flight is answered
        continue;
      }
    }
    if (!q.tids.empty()) {
      sim::Host& h = *hosts_[q.action.client];
      std::optional<MadBuf> got;
      for (const std::uint64_t t : q.tids)
        if ((got = h.take_response(t))) break;
      if (got) {
        finish(q, now_ns, &*got);
        ++work;
        continue;
      }
      if (now_ns < q.deadline_ns) continue;
      if (q.attempts >= kQueryAttemptsMax) {
        q.outcome = Outcome::kLost;
        finish(q, now_ns, nullptr);
        continue;
      }
    }
    if (send(q, now_ns)) {
      if (slot) in_flight_[*slot] = i;
      ++work;
      continue;
    }
    // Not sendable (no SM LID yet, our device gone, an end without a LID).
    if (q.tids.empty() && now_ns - q.action.at_ns >= kSendGiveUpNs) {
      q.outcome = Outcome::kNeverSent;
      finish(q, now_ns, nullptr);
      continue;
    }
    q.due_ns = now_ns + kSendRetryNs;
    if (!q.tids.empty()) {
      // A retry that cannot be formed (the peer's host died and its LID is
      // gone) still spends the attempt, as a client's retry timer would:
      // the query ends lost, not pending forever.
      ++q.attempts;
      q.deadline_ns = now_ns + kQueryTimeoutNs;
    }
  }
  return work;
}

}  // namespace madsim
