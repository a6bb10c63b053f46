// State handed on to a standby: the master's SA answers three standard
// GetTables (ServiceRecord, MCMemberRecord, InformInfoRecord), asked with the
// SM_Key so a trusting SA shows every member; the records become an SA state
// image the standby applies when it takes over (and journals for restarts).
#pragma once

#include <cstdint>
#include <array>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sa/state/journal.hpp"

namespace madengine::sm::ha {

// Where the master's SA is.
struct SaTarget {
  std::uint16_t lid = 0;
  std::uint8_t sl = 0;
  std::uint16_t pkey_index = 0;
  std::uint8_t port_num = 1;  // our local port
};

// SubnAdmGetTable of `attr` with an empty component mask (every record).
MadBuf make_replica_query(std::uint16_t attr, std::uint64_t tid, std::uint64_t sm_key, const SaTarget& sa) noexcept;

// Resolves a subscriber's GID to its LID (from the standby's own snapshot).
using LidOfGid = std::function<std::uint16_t(const wire::Gid&)>;

// The records as the master's SA gave them, turned into store contents:
// members grouped by MGID (group parameters from their records), a service's
// owner taken to be its ServiceGID (ServiceRecords do not carry the
// registrant; clients register their own port GID), subscriptions addressed
// to the subscriber's LID and the QPN in its InformInfo. `now_ns` starts
// leases, which the master shows in seconds.
sa::SaStateImage image_from_records(std::span<const wire::ServiceRecord> services,
                                    std::span<const wire::McMemberRecord> members,
                                    std::span<const wire::InformInfoRecord> informs, const LidOfGid& lid_of,
                                    Nanos now_ns);

// Collects the three answers of one replication round, by TID.
class ReplicaRound {
 public:
  // `tid_base`: TIDs tid_base, +1, +2 are used for the three queries.
  ReplicaRound(std::uint64_t tid_base, std::uint64_t sm_key, const SaTarget& sa) noexcept;
  // The three queries to send.
  std::array<MadBuf, 3> queries() const noexcept;
  // An answer: the first MAD (header, status, AttributeOffset) and the
  // records (the RMPP payload, or the data of a single MAD). False if the
  // TID is not ours; a bad status or malformed table fails the round.
  bool on_answer(const MadBuf& first, std::span<const std::uint8_t> payload);
  bool complete() const noexcept { return done_ == 3 && error_.empty(); }
  bool failed() const noexcept { return !error_.empty(); }
  const std::string& error() const noexcept { return error_; }
  sa::SaStateImage image(const LidOfGid& lid_of, Nanos now_ns) const;

 private:
  std::uint64_t tid_base_;
  std::uint64_t sm_key_;
  SaTarget sa_;
  std::uint8_t done_ = 0;
  std::array<bool, 3> got_{};
  std::vector<wire::ServiceRecord> services_;
  std::vector<wire::McMemberRecord> members_;
  std::vector<wire::InformInfoRecord> informs_;
  std::string error_;
};

// Whether the new master must set PortInfo.ClientReregister on its first
// sweep: only when it cannot vouch for the clients' SA state, i.e. it has no
// replica (or journal) of it, or the last one is older than `max_age_ns`
// (registrations made since then would be lost silently).
constexpr bool must_ask_clients_to_reregister(bool have_state, Nanos state_age_ns, Nanos max_age_ns) noexcept {
  return !have_state || state_age_ns < 0 || state_age_ns > max_age_ns;
}

}  // namespace madengine::sm::ha
