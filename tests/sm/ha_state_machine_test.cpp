// SMInfo state machine (sm/ha): every state x event, election order, the
// SubnSet(SMInfo) legality table, SM_Key checks, polling budgets, handover in
// both directions and two masters meeting; last, several machines wired to
// each other converge on one master.
#include "sm/ha/sm_state_machine.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

namespace madengine::sm::ha {
namespace {

using wire::SmState;
namespace mod = wire::sm_info_mod;

constexpr std::uint64_t kKey = 1;
constexpr std::uint64_t kSelf = 0x200;

SmStateMachine make(std::uint8_t prio = 5, std::uint8_t failures = 3, std::uint64_t guid = kSelf) {
  return SmStateMachine(SmIdentity{.guid = guid, .priority = prio, .sm_key = kKey},
                        StateMachineConfig{.poll_failures_max = failures});
}

PeerSm peer(std::uint64_t guid, std::uint8_t prio, SmState st, bool key_ok = true) {
  return PeerSm{.guid = guid, .priority = prio, .state = st, .act_count = 0, .key_ok = key_ok};
}

wire::SmInfo req(std::uint64_t guid, SmState st, std::uint64_t key = kKey, std::uint8_t prio = 0) {
  wire::SmInfo si{};
  si.guid = wire::be64::from(guid);
  si.sm_key = wire::be64::from(key);
  si.set_priority(prio);
  si.set_state(st);
  return si;
}

// Machines in each state, reached through the public events only.
SmStateMachine in_discovering() {
  auto m = make();
  m.start();
  return m;
}
SmStateMachine in_master() {
  auto m = in_discovering();
  m.sweep_done({});
  return m;
}
constexpr std::uint64_t kMasterGuid = 0x100;
SmStateMachine in_standby() {
  auto m = in_discovering();
  const PeerSm p[] = {peer(kMasterGuid, 9, SmState::kMaster)};
  m.sweep_done(p);
  return m;
}
SmStateMachine in_notactive_from_standby() {
  auto m = in_standby();
  m.on_set(mod::kDisable, req(kMasterGuid, SmState::kMaster));
  return m;
}

TEST(HaStateMachine, RejectsBadIdentity) {
  EXPECT_THROW(make(16), std::invalid_argument);
  EXPECT_THROW(make(5, 0), std::invalid_argument);
  EXPECT_THROW(make(5, 3, 0), std::invalid_argument);
}

TEST(HaStateMachine, StartGoesDiscoveringOnce) {
  auto m = make();
  EXPECT_EQ(m.state(), SmState::kNotActive);
  const Actions a = m.start();
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  ASSERT_TRUE(a.changed);
  EXPECT_EQ(a.transition.from, SmState::kNotActive);
  EXPECT_EQ(a.transition.to, SmState::kDiscovering);
  const Actions b = m.start();
  EXPECT_FALSE(b.changed);
  EXPECT_FALSE(b.sweep);
}

TEST(HaStateMachine, AloneBecomesMasterAndProgramsEverything) {
  auto m = in_discovering();
  const Actions a = m.sweep_done({});
  EXPECT_EQ(m.state(), SmState::kMaster);
  EXPECT_TRUE(a.program);
  EXPECT_TRUE(a.assert_all);
  EXPECT_TRUE(a.changed);
  EXPECT_EQ(a.handover_to, 0u);
  // The next sweep as master programs only what changed.
  const Actions b = m.sweep_done({});
  EXPECT_TRUE(b.program);
  EXPECT_FALSE(b.assert_all);
  EXPECT_FALSE(b.changed);
}

TEST(HaStateMachine, DiscoveringFindsHigherMasterStandsBy) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x300, 9, SmState::kMaster)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(a.poll_guid, 0x300u);
  EXPECT_EQ(m.polled_guid(), 0x300u);
  EXPECT_EQ(a.trap144_to, 0u);
  EXPECT_FALSE(a.program);
}

TEST(HaStateMachine, DiscoveringFindsLowerMasterStandsByAndSendsTrap144) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x100, 1, SmState::kMaster)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(a.poll_guid, 0x100u);
  EXPECT_EQ(a.trap144_to, 0x100u);
}

TEST(HaStateMachine, DiscoveringFollowsHighestOfSeveralMasters) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x100, 1, SmState::kMaster), peer(0x400, 7, SmState::kMaster),
                      peer(0x050, 7, SmState::kMaster)};
  m.sweep_done(p);
  EXPECT_EQ(m.polled_guid(), 0x050u);  // priority 7 and the lower GUID
}

TEST(HaStateMachine, DiscoveringFindsHigherNonMasterStandsBy) {
  for (const SmState st : {SmState::kDiscovering, SmState::kStandby}) {
    auto m = in_discovering();
    const PeerSm p[] = {peer(0x300, 6, st)};
    const Actions a = m.sweep_done(p);
    EXPECT_EQ(m.state(), SmState::kStandby);
    EXPECT_EQ(a.poll_guid, 0x300u);
  }
}

TEST(HaStateMachine, DiscoveringOutranksNonMastersBecomesMaster) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x300, 4, SmState::kStandby), peer(0x100, 5, SmState::kDiscovering)};
  // 0x100 has our priority but a lower GUID than kSelf (0x200): it wins.
  m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(m.polled_guid(), 0x100u);

  auto n = in_discovering();
  const PeerSm q[] = {peer(0x300, 5, SmState::kStandby), peer(0x100, 4, SmState::kDiscovering)};
  n.sweep_done(q);
  EXPECT_EQ(n.state(), SmState::kMaster);
}

TEST(HaStateMachine, ElectionIgnoresForeignKeysNotActiveAndSelf) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x300, 15, SmState::kMaster, /*key_ok=*/false), peer(0x301, 15, SmState::kNotActive),
                      peer(kSelf, 15, SmState::kMaster), peer(0, 15, SmState::kMaster)};
  m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kMaster);
}

TEST(HaStateMachine, ElectionOrderPriorityThenLowerGuid) {
  const auto m = make(5);
  EXPECT_TRUE(m.outranks(peer(0x100, 4, SmState::kStandby)));
  EXPECT_FALSE(m.outranks(peer(0x900, 6, SmState::kStandby)));
  EXPECT_TRUE(m.outranks(peer(0x300, 5, SmState::kStandby)));
  EXPECT_FALSE(m.outranks(peer(0x100, 5, SmState::kStandby)));
}

TEST(HaStateMachine, StandbyPollingBudget) {
  auto m = in_standby();  // polls kMasterGuid, 3 failures allowed
  const PeerSm alive = peer(kMasterGuid, 9, SmState::kMaster);
  EXPECT_FALSE(m.poll_result(nullptr).changed);
  EXPECT_FALSE(m.poll_result(nullptr).changed);
  EXPECT_EQ(m.poll_failures(), 2);
  const Actions ok = m.poll_result(&alive);  // an answer resets the count
  EXPECT_FALSE(ok.changed);
  EXPECT_EQ(ok.trap144_to, 0u);
  EXPECT_EQ(m.poll_failures(), 0);
  m.poll_result(nullptr);
  m.poll_result(nullptr);
  EXPECT_EQ(m.state(), SmState::kStandby);
  const Actions a = m.poll_result(nullptr);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(a.changed);
  EXPECT_TRUE(a.sweep);
  EXPECT_TRUE(a.stop_polling);
  EXPECT_EQ(m.polled_guid(), 0u);
  // Nothing to poll any more.
  EXPECT_FALSE(m.poll_result(nullptr).changed);
  // The takeover sweep makes it master; the master is gone, not handing over.
  const Actions t = m.sweep_done({});
  EXPECT_TRUE(t.program);
  EXPECT_FALSE(t.transition.by_handover);
  EXPECT_EQ(m.state(), SmState::kMaster);
}

TEST(HaStateMachine, StandbyCountsUnconfirmingAnswersAsFailures) {
  // Another GUID, a foreign key, NOTACTIVE, or a lower SM no longer master.
  const PeerSm bad[] = {peer(0x999, 9, SmState::kMaster), peer(kMasterGuid, 9, SmState::kMaster, false),
                        peer(kMasterGuid, 9, SmState::kNotActive), peer(kMasterGuid, 1, SmState::kStandby)};
  for (const PeerSm& b : bad) {
    auto m = make(5, 1);
    m.start();
    const PeerSm p[] = {peer(kMasterGuid, 9, SmState::kMaster)};
    m.sweep_done(p);
    m.poll_result(&b);
    EXPECT_EQ(m.state(), SmState::kDiscovering) << b.guid << " " << int(b.state);
  }
  // A higher SM still DISCOVERING/STANDBY is alive and on its way.
  auto m = make(5, 1);
  m.start();
  const PeerSm p[] = {peer(kMasterGuid, 9, SmState::kDiscovering)};
  m.sweep_done(p);
  const PeerSm d = peer(kMasterGuid, 9, SmState::kStandby);
  m.poll_result(&d);
  EXPECT_EQ(m.state(), SmState::kStandby);
}

TEST(HaStateMachine, StandbyRediscoversAtOnceWhenItsMasterStepsDown) {
  auto m = in_standby();  // budget 3, but a master showing STANDBY has handed over
  const PeerSm alive = peer(kMasterGuid, 9, SmState::kMaster);
  m.poll_result(&alive);
  const PeerSm down = peer(kMasterGuid, 9, SmState::kStandby);
  const Actions a = m.poll_result(&down);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  // It finds the new master and follows it.
  const PeerSm p[] = {down, peer(0x050, 10, SmState::kMaster)};
  EXPECT_EQ(m.sweep_done(p).poll_guid, 0x050u);
  EXPECT_EQ(m.state(), SmState::kStandby);
}

TEST(HaStateMachine, StandbySeeingLowerMasterSendsTrap144) {
  auto m = in_discovering();
  const PeerSm p[] = {peer(0x100, 1, SmState::kMaster)};
  m.sweep_done(p);
  const Actions a = m.poll_result(&p[0]);
  EXPECT_EQ(a.trap144_to, 0x100u);
  EXPECT_EQ(m.state(), SmState::kStandby);
}

// A master that finds a higher SM hands over and stands by at once (as
// OpenSM does): the higher SM's forced sweep then finds it STANDBY.
TEST(HaStateMachine, MasterHandsOverToHigherSmAndStandsByAtOnce) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kStandby)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(a.handover_to, 0x300u);
  EXPECT_FALSE(a.program);
  EXPECT_EQ(m.state(), SmState::kStandby);
  ASSERT_TRUE(a.changed);
  EXPECT_EQ(a.transition.from, SmState::kMaster);
  EXPECT_TRUE(m.handover_pending());
  EXPECT_EQ(a.poll_guid, 0x300u);
  // Alive but still STANDBY: one failure of the budget.
  m.poll_result(&p[0]);
  EXPECT_EQ(m.poll_failures(), 1);
  const PeerSm now = peer(0x300, 9, SmState::kMaster);
  m.poll_result(&now);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(m.poll_failures(), 0);
  EXPECT_FALSE(m.handover_pending());
  EXPECT_EQ(m.polled_guid(), 0x300u);
}

TEST(HaStateMachine, AcknowledgeOfAHandoverFindsUsStandingByAlready) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kStandby)};
  m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kStandby);
  const SetReply r = m.on_set(mod::kAcknowledge, req(0x300, SmState::kStandby));
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.actions.changed);
  EXPECT_EQ(m.state(), SmState::kStandby);
}

// The SM handed the subnet never takes it (the HANDOVER lost, or refused):
// the polling budget brings the subnet back, and that SM is not handed it
// again until it shows MASTER.
TEST(HaStateMachine, AHandoverNobodyTakesComesBack) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kStandby)};
  m.sweep_done(p);
  m.poll_result(&p[0]);
  m.poll_result(&p[0]);
  const Actions a = m.poll_result(&p[0]);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  EXPECT_FALSE(m.handover_pending());
  const Actions b = m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kMaster);
  EXPECT_TRUE(b.program);
  EXPECT_EQ(m.sweep_done(p).handover_to, 0u);  // not again
  // Once it shows MASTER it takes part again: we hand over.
  const PeerSm q[] = {peer(0x300, 9, SmState::kMaster)};
  EXPECT_EQ(m.sweep_done(q).handover_to, 0x300u);
}

// The SM that never took the subnet goes on standing by (it restarted, and
// asks with trap 144, each making us sweep): after a polling budget of our
// sweeps it is handed the subnet again, not left out for ever.
TEST(HaStateMachine, AnSmThatNeverTookTheSubnetGetsItAgainAfterABudget) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kStandby)};
  m.sweep_done(p);
  m.poll_result(&p[0]);
  m.poll_result(&p[0]);
  m.poll_result(&p[0]);
  ASSERT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(m.sweep_done(p).program);  // we take it back
  unsigned sweeps = 1;
  std::uint64_t to = 0;
  while (to == 0 && sweeps < 10) {
    to = m.sweep_done(p).handover_to;
    ++sweeps;
  }
  EXPECT_EQ(to, 0x300u);
  EXPECT_EQ(sweeps, 3u);  // the budget: 3 failed polls
  EXPECT_EQ(m.state(), SmState::kStandby);
}

TEST(HaStateMachine, AHandoverTargetThatDiesLeavesUsToTakeTheSubnetBack) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kStandby)};
  m.sweep_done(p);
  m.poll_result(nullptr);
  m.poll_result(nullptr);
  const Actions a = m.poll_result(nullptr);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  EXPECT_TRUE(a.sweep);
  EXPECT_TRUE(m.sweep_done({}).program);
  EXPECT_EQ(m.state(), SmState::kMaster);
}

// Two subnets joined: the master handing its part to another master says
// so (its clients' registrations stay in its own SA); a handover to a
// standby, which replicated us, does not.
TEST(HaStateMachine, HandingOurPartToAnotherMasterIsMarked) {
  auto m = in_master();
  const PeerSm master[] = {peer(0x300, 9, SmState::kMaster)};
  EXPECT_TRUE(m.sweep_done(master).handed_part);
  auto n = in_master();
  const PeerSm standby[] = {peer(0x300, 9, SmState::kStandby)};
  const Actions a = n.sweep_done(standby);
  EXPECT_EQ(a.handover_to, 0x300u);
  EXPECT_FALSE(a.handed_part);
}

// The lower master we waited on dies before its HANDOVER: we take its part
// and ask its clients to reregister, as after a HANDOVER.
TEST(HaStateMachine, ALowerMasterThatDiesBeforeHandingOverIsAbsorbed) {
  auto m = in_master();
  const PeerSm lower[] = {peer(0x100, 1, SmState::kMaster)};
  EXPECT_FALSE(m.sweep_done(lower).program);  // waits for its HANDOVER
  ASSERT_TRUE(m.awaiting_handover());
  m.poll_result(nullptr);
  m.poll_result(nullptr);
  EXPECT_TRUE(m.poll_result(nullptr).sweep);
  const Actions a = m.sweep_done({});
  EXPECT_TRUE(a.program);
  EXPECT_TRUE(a.assert_all);
  EXPECT_TRUE(a.absorbed);
}

TEST(HaStateMachine, MasterMeetingHigherMasterHandsOver) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 9, SmState::kMaster)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(a.handover_to, 0x300u);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_TRUE(a.changed);
  m.poll_result(&p[0]);
  EXPECT_EQ(m.poll_failures(), 0);
}

TEST(HaStateMachine, MasterMeetingLowerMasterWaitsForItsHandover) {
  auto m = in_master();
  const PeerSm p[] = {peer(0x300, 1, SmState::kMaster)};
  const Actions a = m.sweep_done(p);
  EXPECT_FALSE(a.program);  // C14-60.2.1: not its nodes yet
  EXPECT_EQ(a.trap144_to, 0x300u);
  EXPECT_EQ(a.poll_guid, 0x300u);
  EXPECT_TRUE(m.awaiting_handover());
  EXPECT_EQ(m.poll_result(&p[0]).trap144_to, 0x300u);  // still master: nudge again
  const SetReply r = m.on_set(mod::kHandover, req(0x300, SmState::kMaster));
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.actions.sweep);
  EXPECT_EQ(r.actions.acknowledge_to, 0u);
  EXPECT_FALSE(m.awaiting_handover());
  // The old master is standby now: configure all of it.
  const PeerSm q[] = {peer(0x300, 1, SmState::kStandby)};
  const Actions b = m.sweep_done(q);
  EXPECT_TRUE(b.program);
  EXPECT_TRUE(b.assert_all);
}

TEST(HaStateMachine, LowerMasterSteppingDownOrDyingIsTakenOver) {
  {
    auto m = in_master();
    const PeerSm p[] = {peer(0x300, 1, SmState::kMaster)};
    m.sweep_done(p);
    const PeerSm s = peer(0x300, 1, SmState::kStandby);
    const Actions a = m.poll_result(&s);
    EXPECT_TRUE(a.sweep);
    EXPECT_FALSE(m.awaiting_handover());
    EXPECT_TRUE(m.sweep_done({}).assert_all);
  }
  {
    auto m = in_master();
    const PeerSm p[] = {peer(0x300, 1, SmState::kMaster)};
    m.sweep_done(p);
    m.poll_result(nullptr);
    m.poll_result(nullptr);
    const Actions a = m.poll_result(nullptr);
    EXPECT_TRUE(a.sweep);
    EXPECT_EQ(m.state(), SmState::kMaster);
    const Actions b = m.sweep_done({});
    EXPECT_TRUE(b.program);
    EXPECT_TRUE(b.assert_all);
  }
}

// The SubnSet(SMInfo) table: state x modifier x sender state.
struct SetCase {
  SmState from;
  std::uint32_t modifier;
  SmState sender;
  bool accepted;
  SmState to;
};

SmStateMachine machine_in(SmState s) {
  switch (s) {
    case SmState::kNotActive: return in_notactive_from_standby();
    case SmState::kDiscovering: return in_discovering();
    case SmState::kStandby: return in_standby();
    case SmState::kMaster: return in_master();
  }
  return make();
}

TEST(HaStateMachine, SetLegalityTable) {
  const std::vector<SetCase> legal = {
      {SmState::kNotActive, mod::kStandby, SmState::kMaster, true, SmState::kStandby},
      {SmState::kDiscovering, mod::kHandover, SmState::kMaster, true, SmState::kDiscovering},
      {SmState::kStandby, mod::kHandover, SmState::kMaster, true, SmState::kMaster},
      {SmState::kStandby, mod::kDiscover, SmState::kMaster, true, SmState::kDiscovering},
      {SmState::kStandby, mod::kDisable, SmState::kMaster, true, SmState::kNotActive},
      {SmState::kStandby, mod::kAcknowledge, SmState::kStandby, true, SmState::kStandby},
      {SmState::kStandby, mod::kAcknowledge, SmState::kMaster, true, SmState::kStandby},
      {SmState::kMaster, mod::kHandover, SmState::kMaster, true, SmState::kMaster},
  };
  int checked = 0;
  for (const SmState from : {SmState::kNotActive, SmState::kDiscovering, SmState::kStandby, SmState::kMaster}) {
    for (std::uint32_t modifier = 0; modifier <= 7; ++modifier) {
      for (const SmState sender : {SmState::kNotActive, SmState::kDiscovering, SmState::kStandby, SmState::kMaster}) {
        auto m = machine_in(from);
        ASSERT_EQ(m.state(), from);
        const SetReply r = m.on_set(modifier, req(0x777, sender));
        bool accepted = false;
        SmState to = from;
        for (const SetCase& c : legal)
          if (c.from == from && c.modifier == modifier && c.sender == sender) {
            accepted = c.accepted;
            to = c.to;
          }
        EXPECT_EQ(r.status, accepted ? 0 : kSmInfoSetRefused)
            << wire::to_string(from) << " mod " << modifier << " sender " << wire::to_string(sender);
        EXPECT_EQ(m.state(), to) << wire::to_string(from) << " mod " << modifier << " sender "
                                 << wire::to_string(sender);
        if (!accepted) {
          EXPECT_FALSE(r.actions.changed || r.actions.sweep || r.actions.poll_guid != 0);
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 8 * 4);
}

TEST(HaStateMachine, SetWithWrongKeyOrOwnGuidChangesNothing) {
  for (const SmState from : {SmState::kNotActive, SmState::kDiscovering, SmState::kStandby, SmState::kMaster}) {
    for (std::uint32_t modifier = 1; modifier <= 5; ++modifier) {
      auto m = machine_in(from);
      EXPECT_EQ(m.on_set(modifier, req(0x777, SmState::kMaster, kKey + 1)).status, kSmInfoSetRefused);
      EXPECT_EQ(m.on_set(modifier, req(kSelf, SmState::kMaster)).status, kSmInfoSetRefused);
      EXPECT_EQ(m.on_set(modifier, req(0, SmState::kMaster)).status, kSmInfoSetRefused);
      EXPECT_EQ(m.state(), from);
    }
  }
}

TEST(HaStateMachine, StandbyHandedOverAcknowledgesAndAssertsWithoutPolling) {
  auto m = in_standby();
  const SetReply r = m.on_set(mod::kHandover, req(kMasterGuid, SmState::kMaster));
  EXPECT_EQ(r.actions.acknowledge_to, kMasterGuid);
  EXPECT_TRUE(r.actions.sweep);
  EXPECT_TRUE(r.actions.stop_polling);
  EXPECT_EQ(m.polled_guid(), 0u);
  ASSERT_TRUE(r.actions.changed);
  EXPECT_EQ(r.actions.transition.to, SmState::kMaster);
  EXPECT_TRUE(r.actions.transition.by_handover);  // the old master lives on: its SA state is copied once more
  // The old master (priority 9, above our 5) handed over by operator choice;
  // once it is STANDBY the election still ranks it first, so the next sweep
  // offers it the subnet back, as OpenSM would.
  const PeerSm p[] = {peer(kMasterGuid, 9, SmState::kStandby)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(a.handover_to, kMasterGuid);  // it outranks us: the election says it should be master
}

TEST(HaStateMachine, DiscoveringHandedOverBecomesMasterAfterSweep) {
  auto m = in_discovering();
  const SetReply r = m.on_set(mod::kHandover, req(0x100, SmState::kMaster));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.actions.acknowledge_to, 0x100u);
  EXPECT_EQ(m.state(), SmState::kDiscovering);
  // The sender still shows MASTER in our sweep: it is leaving, not counted.
  const PeerSm p[] = {peer(0x100, 1, SmState::kMaster)};
  const Actions a = m.sweep_done(p);
  EXPECT_EQ(m.state(), SmState::kMaster);
  EXPECT_TRUE(a.program);
  EXPECT_TRUE(a.assert_all);
}

TEST(HaStateMachine, NotActiveOnlyWakesOnStandby) {
  auto m = in_notactive_from_standby();
  EXPECT_EQ(m.state(), SmState::kNotActive);
  EXPECT_FALSE(m.poll_result(nullptr).changed);  // no polling when disabled
  EXPECT_FALSE(m.sweep_done({}).program);
  const SetReply r = m.on_set(mod::kStandby, req(0x123, SmState::kMaster));
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(m.state(), SmState::kStandby);
  EXPECT_EQ(r.actions.poll_guid, 0x123u);
}

TEST(HaStateMachine, PriorityChangeAndTrap144) {
  auto s = in_standby();
  const Actions a = s.set_priority(12);
  EXPECT_EQ(a.trap144_to, kMasterGuid);
  EXPECT_EQ(s.self().priority, 12);
  EXPECT_FALSE(s.set_priority(12).trap144_to != 0);  // no change, nothing sent
  EXPECT_FALSE(s.set_priority(16).trap144_to != 0);  // refused
  EXPECT_EQ(s.self().priority, 12);
  EXPECT_FALSE(s.on_trap144().sweep);

  auto m = in_master();
  EXPECT_TRUE(m.set_priority(2).sweep);
  EXPECT_TRUE(m.on_trap144().sweep);
  auto d = in_discovering();
  EXPECT_FALSE(d.on_trap144().sweep);
}

TEST(HaStateMachine, SmInfoHidesKeyFromStrangers) {
  auto m = in_master();
  const wire::SmInfo a = m.sm_info(42, true);
  EXPECT_EQ(a.guid.get(), kSelf);
  EXPECT_EQ(a.sm_key.get(), kKey);
  EXPECT_EQ(a.act_count.get(), 42u);
  EXPECT_EQ(a.priority(), 5);
  EXPECT_EQ(a.state(), SmState::kMaster);
  EXPECT_EQ(m.sm_info(42, false).sm_key.get(), 0u);
}

// Several machines exchanging SMInfo synchronously: whatever the order of
// start-up, exactly one master (the highest) remains and the others follow it.
TEST(HaStateMachine, ManyMachinesConvergeOnTheHighest) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    const int n = 2 + static_cast<int>(rng() % 4);
    std::vector<SmStateMachine> sms;
    for (int i = 0; i < n; ++i)
      sms.push_back(make(static_cast<std::uint8_t>(rng() % 4), 3, 0x1000 + (rng() % 64) * 16 + static_cast<unsigned>(i)));
    std::map<std::uint64_t, std::size_t> by_guid;
    for (std::size_t i = 0; i < sms.size(); ++i) by_guid[sms[i].self().guid] = i;
    auto view = [&](std::size_t i) {
      const auto& s = sms[i];
      return peer(s.self().guid, s.self().priority, s.state());
    };
    // Carry out messaging actions at once (sweep requests are served by the loop).
    std::vector<bool> want_sweep(sms.size(), false);
    auto apply = [&](std::size_t i, const Actions& a, auto& self_ref) -> void {
      if (a.sweep) want_sweep[i] = true;
      const auto send = [&](std::uint64_t to, std::uint32_t modifier) {
        const auto it = by_guid.find(to);
        ASSERT_NE(it, by_guid.end());
        auto info = sms[i].sm_info(0, true);
        if (modifier == mod::kAcknowledge) info.set_state(SmState::kStandby);
        const SetReply r = sms[it->second].on_set(modifier, info);
        self_ref(it->second, r.actions, self_ref);
      };
      if (a.handover_to != 0) send(a.handover_to, mod::kHandover);
      if (a.acknowledge_to != 0) send(a.acknowledge_to, mod::kAcknowledge);
      if (a.trap144_to != 0) {
        const auto it = by_guid.find(a.trap144_to);
        ASSERT_NE(it, by_guid.end());
        self_ref(it->second, sms[it->second].on_trap144(), self_ref);
      }
    };
    for (std::size_t i = 0; i < sms.size(); ++i) apply(i, sms[i].start(), apply);
    for (int step = 0; step < 60; ++step) {
      const std::size_t i = rng() % sms.size();
      if (want_sweep[i]) {
        want_sweep[i] = false;
        std::vector<PeerSm> peers;
        for (std::size_t j = 0; j < sms.size(); ++j)
          if (j != i) peers.push_back(view(j));
        apply(i, sms[i].sweep_done(peers), apply);
      } else if (sms[i].polled_guid() != 0) {
        const PeerSm reply = view(by_guid.at(sms[i].polled_guid()));
        apply(i, sms[i].poll_result(&reply), apply);
      }
    }
    // Drain: sweep and poll everyone until quiet.
    for (int pass = 0; pass < 20; ++pass)
      for (std::size_t i = 0; i < sms.size(); ++i) {
        if (want_sweep[i]) {
          want_sweep[i] = false;
          std::vector<PeerSm> peers;
          for (std::size_t j = 0; j < sms.size(); ++j)
            if (j != i) peers.push_back(view(j));
          apply(i, sms[i].sweep_done(peers), apply);
        } else if (sms[i].polled_guid() != 0) {
          const PeerSm reply = view(by_guid.at(sms[i].polled_guid()));
          apply(i, sms[i].poll_result(&reply), apply);
        }
      }
    std::size_t best = 0;
    for (std::size_t i = 1; i < sms.size(); ++i)
      if (sms[i].outranks(view(best))) best = i;
    int masters = 0;
    for (std::size_t i = 0; i < sms.size(); ++i) {
      if (sms[i].state() == SmState::kMaster) ++masters;
      if (i != best) {
        EXPECT_EQ(sms[i].state(), SmState::kStandby) << "round " << round << " sm " << i;
        EXPECT_EQ(sms[i].polled_guid(), sms[best].self().guid) << "round " << round;
      }
    }
    EXPECT_EQ(masters, 1) << "round " << round;
    EXPECT_EQ(sms[best].state(), SmState::kMaster) << "round " << round;
  }
}

// A HANDOVER that reaches us while we discover makes us master at the end of
// that discovery, and says so: what the discovery read may predate the
// handing master's last writes (the sweep reads the subnet again).
TEST(HaStateMachine, HandoverDuringDiscoveryIsMarkedHanded) {
  auto m = in_discovering();
  const SetReply r = m.on_set(mod::kHandover, req(0x300, SmState::kMaster));
  EXPECT_EQ(r.status, 0);
  const PeerSm leaving[] = {peer(0x300, 1, SmState::kMaster)};
  const Actions a = m.sweep_done(leaving);
  EXPECT_EQ(m.state(), SmState::kMaster);
  EXPECT_TRUE(a.program);
  EXPECT_TRUE(a.handed);
  // A discovery that finds no master makes us master unhanded.
  auto n = in_discovering();
  const Actions b = n.sweep_done({});
  EXPECT_TRUE(b.program);
  EXPECT_FALSE(b.handed);
}

}  // namespace
}  // namespace madengine::sm::ha
