// The SA's mutable state: registered services, multicast groups with their
// MLIDs and members, and InformInfo subscriptions. Each store is written only
// by its owner core (the SA's state core) and publishes an immutable copy
// after every change, which any core's Get/GetTable reads without locks.
// Everything a store holds is plain data, so it can be serialised (journal,
// standby hand-over) by walking view().
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/sa_records.hpp"
#include "madengine/wire/smp/pkey_table.hpp"

namespace madengine::sa {

// Who sent a request: its port GID (from the GRH, else from the snapshot by LID).
struct Requester {
  wire::Gid gid{};
  std::uint16_t lid = 0;
};

// A published immutable vector; readers keep the shared_ptr for the query.
template <typename T>
class Published {
 public:
  Published() : v_(std::make_shared<const std::vector<T>>()) {}
  std::shared_ptr<const std::vector<T>> load() const noexcept { return v_.load(std::memory_order_acquire); }
  void store(std::vector<T> v) { v_.store(std::make_shared<const std::vector<T>>(std::move(v)), std::memory_order_release); }

 private:
  std::atomic<std::shared_ptr<const std::vector<T>>> v_;
};

// ---- ServiceRecord (IBA 15.2.5.14) ----
struct ServiceEntry {
  wire::ServiceRecord rec{};
  wire::Gid owner{};         // the requester that registered it
  Nanos expires_ns = -1;     // -1: infinite lease
};

class ServiceStore {
 public:
  // Set: registers or replaces (key: ServiceID, ServiceGID, ServiceP_Key).
  // Returns an SA status; `out` is the stored record on success.
  std::uint16_t set(const wire::ServiceRecord& r, std::uint64_t mask, const Requester& who, Nanos now_ns,
                    wire::ServiceRecord& out);
  // Delete: removes the records the mask selects that the requester may remove.
  std::uint16_t erase(const wire::ServiceRecord& r, std::uint64_t mask, const Requester& who,
                      wire::ServiceRecord& out);
  // Drops expired leases; returns how many.
  std::size_t expire(Nanos now_ns);
  Nanos next_expiry_ns() const noexcept { return next_expiry_ns_; }
  std::shared_ptr<const std::vector<ServiceEntry>> view() const noexcept { return pub_.load(); }
  std::size_t size() const noexcept { return entries_.size(); }
  // HA (warm restart, standby takeover): replaces everything with `entries`
  // as a journal or the master's SA gave them, and publishes.
  void restore(std::vector<ServiceEntry> entries);

 private:
  void publish();
  std::vector<ServiceEntry> entries_;
  Published<ServiceEntry> pub_;
  Nanos next_expiry_ns_ = -1;
};

// ---- Multicast groups (IBA 15.2.5.17) ----
struct McMember {
  wire::Gid port_gid{};
  std::uint8_t join_state = 0;
  bool proxy = false;
};

struct McGroupEntry {
  wire::McMemberRecord params{};  // MGID, Q_Key, MLID, MTU, TClass, P_Key, rate, lifetime, SL, flow, hop, scope
  std::vector<McMember> members;
};

// What a join must match or may create with: the port the requester joins
// (its link MTU and rate bound the group's) and the subnet's defaults.
struct McJoinContext {
  Requester who;
  std::uint64_t port_guid = 0;        // the PortGID's port, validated against the snapshot
  std::uint8_t port_mtu = 5;          // MTU code of that port's link
  std::uint8_t port_rate = 7;         // rate code of that port's link
  std::uint8_t default_mtu = 4;       // group MTU when a creator names none (OpenSM: the subnet's CA minimum)
  std::uint8_t default_rate = 3;
  std::uint8_t packet_life = 0x12;
  // P_Key tables (IBA 10.9, OpenSM's checks): the joining port must hold the
  // group's partition, and a proxy requester too.
  std::vector<std::uint16_t> port_pkeys{wire::kDefaultPKey};
  std::vector<std::uint16_t> requester_pkeys{wire::kDefaultPKey};
};

// Whether a P_Key table holds `pkey`'s partition (either membership).
bool holds_partition(const std::vector<std::uint16_t>& table, std::uint16_t pkey) noexcept;

inline constexpr std::uint16_t kMlidFirst = 0xc000;
inline constexpr std::uint16_t kMlidLast = 0xfffe;  // 0xffff is the permissive LID

// IPv6 solicited-node groups (MGID ff1S:601b:PKEY::1:ffXX:XXXX, one per
// address): with consolidation they share one MLID per scope and P_Key
// (OpenSM's consolidate_ipv6_snm_req), so thousands of hosts use one MFT
// entry instead of one each.
bool ipv6_solicited_node(const wire::Gid& mgid) noexcept;
bool same_solicited_node_set(const wire::Gid& a, const wire::Gid& b) noexcept;

class McastStore {
 public:
  explicit McastStore(std::uint32_t groups_max = 16384, bool consolidate_ipv6_snm = false)
      : groups_max_(groups_max), consolidate_ipv6_snm_(consolidate_ipv6_snm) {}
  // The last MLID a new group may take: 0xc000 + the least MulticastFDBCap
  // of the subnet's switches - 1 (OpenSM's bound): an MLID past a switch's
  // MFT cannot be forwarded there. Beyond it a create is ERR_NO_RESOURCES.
  void set_mlid_last(std::uint16_t last) noexcept { mlid_last_ = std::clamp<std::uint16_t>(last, kMlidFirst, kMlidLast); }
  // Join (Set): creates the group when the MGID is zero or unknown and the
  // creation components are present. Returns an SA status; `out` is the
  // member's record as the SA answers it.
  std::uint16_t join(const wire::McMemberRecord& r, std::uint64_t mask, const McJoinContext& ctx,
                     wire::McMemberRecord& out);
  // Leave (Delete): clears the JoinState bits named; removes the member when
  // none is left and the group when it has no member.
  std::uint16_t leave(const wire::McMemberRecord& r, std::uint64_t mask, const Requester& who,
                      wire::McMemberRecord& out);
  std::shared_ptr<const std::vector<McGroupEntry>> view() const noexcept { return pub_.load(); }
  std::size_t groups() const noexcept { return groups_.size(); }
  // HA: replaces every group, keeping their MGIDs and MLIDs; groups beyond
  // groups_max, without members, or with an MLID outside 0xc000..0xfffe or
  // used twice are dropped. Returns how many were dropped.
  std::size_t restore(std::vector<McGroupEntry> groups);
  // Bumped on every change (the SM's multicast provider watches it).
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  // The groups partitions create (IPoIB broadcast groups, mgid lines): each
  // exists whether or not it has members, with these parameters when it is
  // created (an existing group keeps its own, and its MLID). A group no
  // longer listed goes once its last member leaves (at once if it has none).
  // Returns how many groups were created.
  std::size_t set_well_known(const std::vector<wire::McMemberRecord>& groups);
  bool well_known(const wire::Gid& mgid) const noexcept;
  // Changes between hold() and release() are published once, at release():
  // the SA's state core holds the view over one burst of requests and
  // releases it before the burst's answers are sent, so a requester that has
  // its answer reads its change. Published per change, every join copied
  // every group and member (a reregistration storm: O(members) a join).
  void hold() noexcept { held_ = true; }
  void release();

 private:
  void publish();
  std::uint16_t allocate_mlid() const noexcept;
  std::uint16_t mlid_for(const wire::Gid& mgid) const noexcept;  // consolidation's shared MLID, else a free one
  wire::Gid allocate_mgid(std::uint8_t scope, std::uint16_t pkey) noexcept;
  std::vector<McGroupEntry> groups_;
  Published<McGroupEntry> pub_;
  std::uint32_t groups_max_;
  bool consolidate_ipv6_snm_ = false;
  std::uint16_t mlid_last_ = kMlidLast;
  std::uint64_t mgid_counter_ = 0;
  std::vector<wire::McMemberRecord> well_known_;
  std::atomic<std::uint64_t> generation_{0};
  bool held_ = false;
  bool due_ = false;  // a change made while held, not published yet
};

// The record the SA answers for one member of a group.
wire::McMemberRecord member_record(const McGroupEntry& g, const McMember& m) noexcept;

// ---- InformInfo subscriptions (IBA 13.4.8.3, 15.2.5.12) ----
struct Subscription {
  wire::InformInfo info{};
  wire::Gid subscriber{};
  MadAddr addr{};  // where Reports go: the subscriber's LID and QP (IBA 13.4.8.3)
  std::uint16_t enumeration = 0;
};

class InformStore {
 public:
  // Subscribe or unsubscribe. Returns an SA status.
  std::uint16_t set(const wire::InformInfo& info, const Requester& who, const MadAddr& from);
  std::shared_ptr<const std::vector<Subscription>> view() const noexcept { return pub_.load(); }
  std::size_t size() const noexcept { return subs_.size(); }
  // HA: replaces every subscription (their enumerations are kept).
  void restore(std::vector<Subscription> subs);
  // Whether a subscription covers a generic notice.
  static bool covers(const wire::InformInfo& info, std::uint16_t trap, std::uint8_t type, std::uint32_t producer,
                     std::uint16_t issuer_lid) noexcept;
  // As McastStore's: one publication for the changes of a burst.
  void hold() noexcept { held_ = true; }
  void release();

 private:
  void publish();
  std::vector<Subscription> subs_;
  Published<Subscription> pub_;
  std::uint16_t next_enum_ = 0;
  bool held_ = false;
  bool due_ = false;
};

wire::InformInfoRecord inform_record(const Subscription& s) noexcept;

}  // namespace madengine::sa
