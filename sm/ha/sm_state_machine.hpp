// The SMInfo state machine (IBA 14.4) as pure logic: NOTACTIVE, DISCOVERING,
// STANDBY, MASTER; election by priority then GUID; SubnSet(SMInfo) control
// packets; polling outcomes. It sends nothing itself: every event returns the
// Actions the SubnetManager must carry out (sweep, poll, HANDOVER, trap 144).
#pragma once

#include <cstdint>
#include <span>

#include "madengine/wire/smp/sm_info.hpp"

namespace madengine::sm::ha {

// Another SM as its SMInfo showed it (SubnGet during a sweep or a poll).
struct PeerSm {
  std::uint64_t guid = 0;
  std::uint8_t priority = 0;
  wire::SmState state = wire::SmState::kNotActive;
  std::uint32_t act_count = 0;
  // The response carried our SM_Key. Peers with another key are not part of
  // our election (OpenSM ignores them the same way).
  bool key_ok = true;
};

// MAD status for a refused SubnSet(SMInfo): "invalid value in an attribute
// field or modifier" (IBA 13.4.7, Table 112, code 7 in bits 2-4).
inline constexpr std::uint16_t kSmInfoSetRefused = 7u << 2;

struct Transition {
  wire::SmState from = wire::SmState::kNotActive;
  wire::SmState to = wire::SmState::kNotActive;
  const char* reason = "";
  bool by_handover = false;  // to MASTER by the master's HANDOVER: that master lives on
};

// What the caller must do after an event. Zero GUIDs mean "nothing".
struct Actions {
  bool sweep = false;            // run a heavy sweep now
  bool program = false;          // (after sweep_done) configure the fabric as master
  bool assert_all = false;       // (with program) rewrite every port: a subnet was handed to us or joined
  bool absorbed = false;         // (with program) another master's part is ours now: its clients' SA state is not
  bool handed = false;           // (with program) a HANDOVER made us master during this sweep's discovery
  bool handed_part = false;      // (with handover_to) to a master with an SA of its own (subnets joined): ours keeps our clients' state
  bool stop_polling = false;     // forget the SM being polled
  std::uint64_t poll_guid = 0;   // (re)start polling this SM; failures reset
  std::uint64_t handover_to = 0;     // SubnSet(SMInfo, HANDOVER) to this SM
  std::uint64_t acknowledge_to = 0;  // SubnSet(SMInfo, ACKNOWLEDGE) to this SM
  std::uint64_t trap144_to = 0;      // trap 144 (SM priority change) to this master
  bool changed = false;          // `transition` holds a state change
  Transition transition;
};

struct SetReply {
  std::uint16_t status = 0;  // 0 or kSmInfoSetRefused
  Actions actions;
};

struct SmIdentity {
  std::uint64_t guid = 0;
  std::uint8_t priority = 0;  // 0..15
  std::uint64_t sm_key = 0;
};

struct StateMachineConfig {
  // Failed polls (no answer, or an answer that no longer shows the SM we
  // follow as master or higher) before we act; OpenSM's
  // polling_retry_number is 4.
  std::uint8_t poll_failures_max = 4;
};

class SmStateMachine {
 public:
  // Throws std::invalid_argument for a priority above 15 or a zero GUID or
  // a zero failure budget.
  SmStateMachine(SmIdentity self, StateMachineConfig cfg = {});

  wire::SmState state() const noexcept { return state_; }
  const SmIdentity& self() const noexcept { return self_; }
  // The SM we poll (STANDBY: the master, the higher SM we wait on or the
  // one we handed the subnet to; MASTER: the lower master we wait on). 0: none.
  std::uint64_t polled_guid() const noexcept { return polled_guid_; }
  std::uint8_t poll_failures() const noexcept { return poll_failures_; }
  // STANDBY after handing the subnet over, until the new master shows MASTER.
  bool handover_pending() const noexcept { return handed_to_ != 0; }
  // MASTER that outranks another master it found: waiting for that master's
  // HANDOVER (IBA C14-60.2.1) before configuring.
  bool awaiting_handover() const noexcept { return awaiting_from_ != 0; }

  // NOTACTIVE -> DISCOVERING at SM start; asks for the first sweep.
  Actions start() noexcept;

  // A heavy sweep finished; `peers` are the other SMs found through
  // PortInfo.CapabilityMask.IsSM and queried with SubnGet(SMInfo).
  Actions sweep_done(std::span<const PeerSm> peers) noexcept;

  // A poll of polled_guid() ended: `reply` is null when it was not answered.
  Actions poll_result(const PeerSm* reply) noexcept;

  // SubnSet(SMInfo) received as our port's SMA; `req` is the request's
  // SMInfo (the sender's GUID, key and state), `modifier` the control packet.
  SetReply on_set(std::uint32_t modifier, const wire::SmInfo& req) noexcept;

  // Trap 144 with the SM priority flag from another SM: a master looks again
  // (a higher SM may want the subnet).
  Actions on_trap144() noexcept;

  // Our priority changed at run time (IBA 14.4.1.1): a standby that now
  // outranks its master tells it with trap 144; a master sweeps again.
  // A priority above 15 is refused (no change, no actions).
  Actions set_priority(std::uint8_t priority) noexcept;

  // Our SMInfo for a SubnGet/SubnSet response: the SM_Key only to a
  // requester that showed it (IBA 14.2.5.13).
  wire::SmInfo sm_info(std::uint32_t act_count, bool requester_knows_key) const noexcept;

  bool outranks(const PeerSm& p) const noexcept {
    return wire::sm_outranks(self_.priority, self_.guid, p.priority, p.guid);
  }

 private:
  void go(Actions& a, wire::SmState to, const char* reason) noexcept;
  void follow(Actions& a, std::uint64_t guid, bool is_master) noexcept;
  void clear_master_flags() noexcept;

  SmIdentity self_;
  StateMachineConfig cfg_;
  wire::SmState state_ = wire::SmState::kNotActive;
  std::uint64_t polled_guid_ = 0;
  std::uint8_t poll_failures_ = 0;
  std::uint64_t handed_to_ = 0;   // STANDBY: the SM we sent HANDOVER to, until it shows MASTER
  std::uint64_t refused_by_ = 0;  // it never took the subnet: left out of elections until it shows MASTER
  std::uint8_t refused_seen_ = 0; // our sweeps that found it since (a polling budget of them forgives it)
  std::uint64_t awaiting_from_ = 0;     // lower master we wait on
  std::uint64_t handed_by_ = 0;         // HANDOVER received while DISCOVERING: ignore it in the election
  bool polled_master_ = false;          // the polled SM has shown MASTER
  bool assert_next_ = false;            // the next sweep as master rewrites every port
  bool absorb_next_ = false;            // the next sweep as master asks clients to reregister (another master's part joined)
};

}  // namespace madengine::sm::ha
