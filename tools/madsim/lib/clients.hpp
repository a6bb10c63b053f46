// madsim's client population: an SA client (sim::Host) on each client host,
// playing the scenario's actions (PathRecord and GetTable queries,
// ServiceRecord registrations with leases, multicast joins and leaves,
// InformInfo subscriptions) with a client's timeouts and retries, and
// remembering what the SA acknowledged, so the checks can say what its
// state must hold. A master that asks clients to reregister gets it all again.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "lib/scenario.hpp"
#include "lib/trace.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/sa.hpp"
#include "sim/fabric.hpp"
#include "sim/host.hpp"

namespace madsim {

inline constexpr Nanos kQueryTimeoutNs = 400 * madengine::kNanosPerMilli;  // per attempt
inline constexpr unsigned kQueryAttemptsMax = 4;
inline constexpr Nanos kSendRetryNs = 100 * madengine::kNanosPerMilli;  // no SM LID yet: try again
inline constexpr Nanos kSendGiveUpNs = 10 * madengine::kNanosPerSecond;

enum class Outcome : std::uint8_t { kPending, kOk, kSaError, kBusy, kLost, kNeverSent };
const char* to_string(Outcome o) noexcept;

struct Query {
  ClientAction action;
  Nanos due_ns = 0;
  Nanos first_sent_ns = -1;
  Nanos deadline_ns = 0;  // of the attempt in flight
  unsigned attempts = 0;
  std::vector<std::uint64_t> tids;
  Outcome outcome = Outcome::kPending;
  std::uint16_t status = 0;
  Nanos done_ns = 0;
  bool reregistration = false;
  std::uint16_t pkey_sent = 0;  // kPathRecord by GID: the P_Key asked for
  // At a send or at the answer the peer's node was down, in another subnet
  // than the client's (not joined yet, cut off), or not yet published by
  // the client's master: an SA error is right.
  bool peer_gone = false;
};

// What the SA acknowledged and must keep (until a lease ends or a client
// removes it). `unknown`: the client's last request on it went unanswered
// (every retry timed out), so the SA may or may not have carried it out; the
// next answered request on it settles it again.
struct ServiceHeld {
  Nanos acked_ns = 0;
  std::uint32_t lease_s = 0;  // 0xffffffff: infinite
  bool unknown = false;
};
struct MemberHeld {
  Nanos acked_ns = 0;
  bool unknown = false;
};

class Clients {
 public:
  Clients(madengine::sim::Fabric& fabric, const Scenario& s, Trace& trace);

  // Sends what is due, takes answers, retries; returns the work done.
  std::size_t poll(Nanos now_ns);
  // The SM asked `client` to reregister (PortInfo.ClientReregister): it
  // registers everything it holds again, as a client's SA library does.
  void reregister(unsigned client, Nanos now_ns);
  void add(const ClientAction& a);
  bool idle() const noexcept;
  // Called with every answer (status 0 or not) of a `verify` PathRecord.
  std::function<void(const Query&, const madengine::MadBuf&)> on_verify;
  // Whether a client's master has published the peer (both in one subnet,
  // the peer's port ACTIVE and in the master's current epoch).
  std::function<bool(std::uint32_t client_node, std::uint32_t peer)> published;

  const std::vector<Query>& queries() const noexcept { return queries_; }
  std::uint64_t client_port_guid(unsigned client) const noexcept;
  // Which of its host's clients `client` is (0 for the first): its
  // services and groups are its own.
  unsigned instance(unsigned client) const noexcept { return instance_[client]; }
  // The partitions in force (what the SMs were last configured with).
  void set_partitions(const std::vector<PartitionDraw>* parts) noexcept { partitions_ = parts; }
  const Scenario& scenario() const noexcept { return s_; }

  // Keys: (client, service key) and (group key, client).
  std::map<std::pair<unsigned, std::uint32_t>, ServiceHeld> services;
  std::map<std::pair<std::uint32_t, unsigned>, MemberHeld> members;
  std::map<unsigned, MemberHeld> subscriptions;
  // Registrations being made again after a reregistration request, not yet acknowledged.
  std::uint64_t reregistrations_pending = 0;

 private:
  bool send(Query& q, Nanos now_ns);
  bool peer_gone(const ClientAction& a) const;
  void finish(Query& q, Nanos now_ns, const madengine::MadBuf* answer);

  madengine::sim::Fabric& fabric_;
  const Scenario& s_;
  Trace& trace_;
  std::vector<std::unique_ptr<madengine::sim::Host>> hosts_;
  std::vector<unsigned> instance_;
  const std::vector<PartitionDraw>* partitions_ = nullptr;
  std::vector<std::uint32_t> rereg_seen_;  // by client: the port's ClientReregister count handled
  std::vector<Query> queries_;
  // One request at a time per registration (a client's service, group or
  // subscription), as a client library keeps them: two Sets of one service
  // in flight may be carried out in either order, and neither answer tells
  // which stands. Slot -> index of the query in flight.
  std::map<std::tuple<ClientOp, unsigned, std::uint32_t>, std::size_t> in_flight_;
  std::size_t next_due_ = 0;  // queries_[next_due_..] not sent yet (by due time for the scenario's)
};

// Service ID and multicast GID of a client instance's scenario key.
std::uint64_t service_id_of(unsigned instance, std::uint32_t key) noexcept;
madengine::wire::Gid mgid_of(unsigned instance, std::uint32_t key) noexcept;

}  // namespace madsim
