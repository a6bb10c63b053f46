// SMInfo state machine (see sm_state_machine.hpp). The transitions follow
// IBA 14.4.1 and match OpenSM's where the spec leaves room, so the two
// interoperate: a master that hands over stands by at once, as OpenSM does,
// so the new master's forced sweep finds it STANDBY and takes every node.
#include "sm/ha/sm_state_machine.hpp"

#include <stdexcept>

namespace madengine::sm::ha {

namespace {

using wire::SmState;

// SMs that take part in the election: not ourselves, same SM_Key, active.
bool counts(const PeerSm& p, std::uint64_t self_guid) noexcept {
  return p.key_ok && p.guid != self_guid && p.guid != 0 && p.state != SmState::kNotActive;
}

bool higher(const PeerSm& a, const PeerSm& b) noexcept {
  return wire::sm_outranks(a.priority, a.guid, b.priority, b.guid);
}

}  // namespace

SmStateMachine::SmStateMachine(SmIdentity self, StateMachineConfig cfg) : self_(self), cfg_(cfg) {
  if (self_.priority > wire::kSmPriorityMax) throw std::invalid_argument("SM priority must be 0..15");
  if (self_.guid == 0) throw std::invalid_argument("SM port GUID must not be zero");
  if (cfg_.poll_failures_max == 0) throw std::invalid_argument("poll_failures_max must be >= 1");
}

void SmStateMachine::go(Actions& a, wire::SmState to, const char* reason) noexcept {
  a.changed = true;
  a.transition = Transition{.from = state_, .to = to, .reason = reason};
  state_ = to;
}

void SmStateMachine::follow(Actions& a, std::uint64_t guid, bool is_master) noexcept {
  polled_guid_ = guid;
  polled_master_ = is_master;
  poll_failures_ = 0;
  a.poll_guid = guid;
  a.stop_polling = false;
}

void SmStateMachine::clear_master_flags() noexcept { awaiting_from_ = 0; }

Actions SmStateMachine::start() noexcept {
  Actions a;
  if (state_ != SmState::kNotActive) return a;
  go(a, SmState::kDiscovering, "SM started");
  a.sweep = true;
  return a;
}

Actions SmStateMachine::sweep_done(std::span<const PeerSm> peers) noexcept {
  Actions a;
  const PeerSm* best_master = nullptr;  // highest-ranked master other than us
  const PeerSm* best = nullptr;         // highest-ranked active SM other than us
  for (const PeerSm& p : peers) {
    if (!counts(p, self_.guid)) continue;
    // An SM that was handed the subnet and never took it does not get it
    // again, unless it has become master since, or our sweeps found it
    // standing by for a polling budget: it may have restarted since (and
    // asks with trap 144, each making us sweep); left out for good, it
    // would ask for ever.
    if (p.guid == refused_by_) {
      if (p.state != SmState::kMaster && ++refused_seen_ < cfg_.poll_failures_max) continue;
      refused_by_ = 0;
      refused_seen_ = 0;
    }
    // The SM that just handed us the subnet may still show MASTER: it is
    // leaving, so it does not take part.
    if (p.guid == handed_by_) continue;
    if (best == nullptr || higher(p, *best)) best = &p;
    if (p.state == SmState::kMaster && (best_master == nullptr || higher(p, *best_master))) best_master = &p;
  }

  switch (state_) {
    case SmState::kDiscovering: {
      const bool handed = handed_by_ != 0;
      handed_by_ = 0;
      if (best_master != nullptr) {
        // A master exists: we stand by whatever its rank (IBA 14.4.1.2); a
        // lower master learns of us through trap 144 and hands over.
        go(a, SmState::kStandby, "discovery found a master");
        follow(a, best_master->guid, true);
        if (outranks(*best_master)) a.trap144_to = best_master->guid;
        return a;
      }
      if (best != nullptr && !outranks(*best)) {
        go(a, SmState::kStandby, "discovery found a higher SM");
        follow(a, best->guid, false);
        return a;
      }
      go(a, SmState::kMaster, handed ? "handed the subnet" : "discovery found no master and no higher SM");
      clear_master_flags();
      polled_guid_ = 0;
      a.stop_polling = true;
      a.program = true;
      a.assert_all = true;
      a.handed = handed;
      return a;
    }
    case SmState::kMaster: {
      if (best != nullptr && !outranks(*best)) {
        // Hand over and stand by at once (IBA 14.4.1.3, as OpenSM does): a
        // higher master that gets our HANDOVER sweeps at once and must find
        // us STANDBY to take our nodes; a master we kept would make it wait
        // out its polling budget (C14-60.2.1). Should it never show MASTER,
        // our polling budget brings the subnet back to us (poll_result).
        awaiting_from_ = 0;
        a.handover_to = best->guid;
        a.handed_part = best->state == SmState::kMaster;
        go(a, SmState::kStandby, "handed the subnet to a higher SM");
        follow(a, best->guid, best->state == SmState::kMaster);
        handed_to_ = best->guid;
        return a;
      }
      if (best_master != nullptr) {
        // We outrank another master (two subnets joined): it must hand its
        // part over before we configure it (IBA C14-60.2.1). Nudge it with
        // trap 144 and poll it; if it dies we take everything.
        if (awaiting_from_ != best_master->guid) {
          awaiting_from_ = best_master->guid;
          follow(a, best_master->guid, true);
        }
        a.trap144_to = best_master->guid;
        return a;
      }
      if (awaiting_from_ != 0) absorb_next_ = true;
      if (awaiting_from_ != 0 || polled_guid_ != 0) {
        awaiting_from_ = 0;
        polled_guid_ = 0;
        a.stop_polling = true;
        a.assert_all = true;  // the other master's nodes are ours now
      }
      a.assert_all = a.assert_all || assert_next_;
      assert_next_ = false;
      a.absorbed = absorb_next_;
      absorb_next_ = false;
      a.program = true;
      return a;
    }
    case SmState::kStandby:
    case SmState::kNotActive:
      return a;  // they do not sweep
  }
  return a;
}

Actions SmStateMachine::poll_result(const PeerSm* reply) noexcept {
  Actions a;
  if (polled_guid_ == 0) return a;
  const bool answered = reply != nullptr && reply->key_ok && reply->guid == polled_guid_;
  bool confirmed = false;
  switch (state_) {
    case SmState::kStandby:
      if (!answered) break;
      if (reply->state == SmState::kMaster) {
        confirmed = true;
        polled_master_ = true;
        handed_to_ = 0;  // the handover is done
        if (outranks(*reply)) a.trap144_to = reply->guid;  // it should hand over to us
      } else if (polled_master_) {
        // Our master stepped down (it handed the subnet to another SM, or
        // was disabled): find the new one now rather than after the budget.
        polled_guid_ = 0;
        poll_failures_ = 0;
        a.stop_polling = true;
        a.sweep = true;
        go(a, SmState::kDiscovering, "the master stepped down");
        return a;
      } else if (reply->guid == handed_to_) {
        // We handed it the subnet and it does not show MASTER yet: that counts
        // against the budget, so a subnet nobody takes comes back to us.
      } else if (reply->state != SmState::kNotActive && !outranks(*reply)) {
        confirmed = true;  // a higher SM still on its way to MASTER
      }
      break;
    case SmState::kMaster:
      if (awaiting_from_ != 0) {
        if (answered && reply->state == SmState::kMaster) {
          confirmed = true;
          a.trap144_to = reply->guid;  // the first one may have been lost
        } else if (answered) {
          // It stepped down without a HANDOVER reaching us: take its nodes
          // (and its clients, whose registrations are with its SA).
          awaiting_from_ = 0;
          polled_guid_ = 0;
          a.stop_polling = true;
          a.sweep = true;
          assert_next_ = true;
          absorb_next_ = true;
          return a;
        }
      }
      break;
    case SmState::kDiscovering:
    case SmState::kNotActive:
      return a;
  }
  if (confirmed) {
    poll_failures_ = 0;
    return a;
  }
  if (++poll_failures_ < cfg_.poll_failures_max) return a;
  polled_guid_ = 0;
  poll_failures_ = 0;
  a.stop_polling = true;
  a.sweep = true;
  if (state_ == SmState::kStandby) {
    const bool handed = handed_to_ != 0;
    if (handed) {
      refused_by_ = handed_to_;  // it never took the subnet
      refused_seen_ = 0;
    }
    handed_to_ = 0;
    go(a, SmState::kDiscovering, handed ? "the SM handed the subnet did not take it" : "master polling failed");
  } else {
    // MASTER: the SM we handed over to, or waited on, is gone: we keep the
    // subnet and look again (and configure the other master's nodes, and
    // ask its clients to reregister: their registrations died with its SA).
    if (awaiting_from_ != 0) {
      assert_next_ = true;
      absorb_next_ = true;
    }
    clear_master_flags();
  }
  return a;
}

SetReply SmStateMachine::on_set(std::uint32_t modifier, const wire::SmInfo& req) noexcept {
  SetReply r;
  r.status = kSmInfoSetRefused;
  const std::uint64_t sender = req.guid.get();
  const SmState sender_state = req.state();
  // A control packet without our SM_Key changes nothing (IBA 14.4.1: SMs
  // with different keys do not co-operate).
  if (req.sm_key.get() != self_.sm_key || sender == 0 || sender == self_.guid) return r;
  // Who may send what (IBA 14.4.1, Table 183): ACKNOWLEDGE comes from the SM
  // taking over, carrying the SMInfo it had when the HANDOVER arrived
  // (STANDBY; OpenSM insists on that); the others come from a master.
  switch (modifier) {
    case wire::sm_info_mod::kAcknowledge:
      if (sender_state != SmState::kStandby && sender_state != SmState::kMaster) return r;
      break;
    case wire::sm_info_mod::kHandover:
    case wire::sm_info_mod::kDisable:
    case wire::sm_info_mod::kStandby:
    case wire::sm_info_mod::kDiscover:
      if (sender_state != SmState::kMaster) return r;
      break;
    default:
      return r;
  }
  Actions& a = r.actions;
  switch (state_) {
    case SmState::kNotActive:
      if (modifier != wire::sm_info_mod::kStandby) return r;
      go(a, SmState::kStandby, "STANDBY from the master");
      follow(a, sender, true);
      break;
    case SmState::kDiscovering:
      if (modifier != wire::sm_info_mod::kHandover) return r;
      // Mid-discovery: finish the sweep, then take the subnet.
      handed_by_ = sender;
      a.acknowledge_to = sender;
      a.sweep = true;
      break;
    case SmState::kStandby:
      switch (modifier) {
        case wire::sm_info_mod::kHandover:
          go(a, SmState::kMaster, "HANDOVER from the master");
          a.transition.by_handover = true;
          a.acknowledge_to = sender;
          a.sweep = true;
          a.stop_polling = true;
          polled_guid_ = 0;
          clear_master_flags();
          assert_next_ = true;
          break;
        case wire::sm_info_mod::kDiscover:
          go(a, SmState::kDiscovering, "DISCOVER from the master");
          a.sweep = true;
          a.stop_polling = true;
          polled_guid_ = 0;
          break;
        case wire::sm_info_mod::kDisable:
          go(a, SmState::kNotActive, "DISABLE from the master");
          a.stop_polling = true;
          polled_guid_ = 0;
          break;
        case wire::sm_info_mod::kAcknowledge:
          break;  // a late ACKNOWLEDGE of a handover already done
        default:
          return r;
      }
      break;
    case SmState::kMaster:
      switch (modifier) {
        case wire::sm_info_mod::kHandover:
          // Another master gives us its part (subnets joined) or hands back:
          // sweep and configure every node, and ask its clients to
          // reregister (their SA state is with the other master).
          clear_master_flags();
          polled_guid_ = 0;
          a.stop_polling = true;
          a.sweep = true;
          assert_next_ = true;
          absorb_next_ = true;
          break;
        default:
          return r;  // a master acknowledges nothing: it stood by when it handed over
      }
      break;
  }
  r.status = 0;
  return r;
}

Actions SmStateMachine::on_trap144() noexcept {
  Actions a;
  if (state_ == SmState::kMaster) a.sweep = true;
  return a;
}

Actions SmStateMachine::set_priority(std::uint8_t priority) noexcept {
  Actions a;
  if (priority > wire::kSmPriorityMax || priority == self_.priority) return a;
  self_.priority = priority;
  if (state_ == SmState::kStandby && polled_guid_ != 0) a.trap144_to = polled_guid_;
  if (state_ == SmState::kMaster) a.sweep = true;
  return a;
}

wire::SmInfo SmStateMachine::sm_info(std::uint32_t act_count, bool requester_knows_key) const noexcept {
  wire::SmInfo si{};
  si.guid = wire::be64::from(self_.guid);
  si.sm_key = wire::be64::from(requester_knows_key ? self_.sm_key : 0);
  si.act_count = wire::be32::from(act_count);
  si.set_priority(self_.priority);
  si.set_state(state_);
  return si;
}

}  // namespace madengine::sm::ha
