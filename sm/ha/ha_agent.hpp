// HaAgent: the SMInfo state machine put on the wire, for one SM on one engine
// core. It answers SubnGet/SubnSet(SMInfo) as our port's SMA, queries the SMs
// a heavy sweep found, polls the master (or the SM it hands over to) at the
// configured interval, and carries out the machine's actions: HANDOVER,
// ACKNOWLEDGE, trap 144, sweep requests. Its host (the SubnetManager) sweeps,
// programs only when told, and spawns poll_loop() on its scheduler.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "engine/core.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/scheduler.hpp"
#include "engine/task.hpp"
#include "engine/transaction.hpp"
#include "engine/tx_sink.hpp"
#include "fabric/fabric.hpp"
#include "sm/ha/sm_peers.hpp"
#include "sm/ha/sm_state_machine.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm::ha {

struct HaConfig {
  std::uint32_t poll_interval_ms = 10'000;  // OpenSM's sminfo_polling_timeout
  std::uint8_t poll_retries = 4;            // OpenSM's polling_retry_number: failed polls before acting
  std::uint32_t poll_timeout_ms = 0;        // one poll's wait; 0: the interval, at most 1000
  std::uint32_t set_timeout_ms = 200;       // SubnSet(SMInfo) HANDOVER/ACKNOWLEDGE
  std::uint8_t set_retries = 3;
  std::uint64_t m_key = 0;
  // A master's heavy sweep holds SubnGet(SMInfo) answers until its election
  // is done, this long at most: an SM joining from another subnet then reads
  // the state we decided (STANDBY after a HANDOVER), never a MASTER about to
  // step down (OpenSM answers such a MASTER with trap 144 and waits on it).
  // Below OpenSM's 200 ms transaction timeout; 0 answers at once.
  std::uint32_t election_hold_ms = 50;
};

struct SweepDecision {
  bool program = false;     // configure the fabric (we are master and not handing over or waiting)
  bool assert_all = false;  // rewrite every port (new mastership, handed or joined subnet)
  bool absorbed = false;    // another master's part joined ours: ask clients to reregister
  bool handed = false;      // handed the subnet while we discovered it: what we read may predate the handing master's writes
  bool handed_part = false; // we handed our part to another master (subnets joined); its SA lacks our clients
  std::size_t peers = 0;    // other SMs that answered
};

struct HaCounters {
  std::uint64_t polls = 0, polls_failed = 0;
  std::uint64_t handovers_sent = 0, acks_sent = 0, traps144_sent = 0;
  std::uint64_t sets_received = 0, sets_refused = 0;
  std::uint64_t gets_held = 0;  // SMInfo Gets answered after an election
  std::uint64_t transitions = 0;
};

class HaAgent {
 public:
  // `tx` sends traps (no answer expected); `self.guid` is our port GUID.
  // Throws std::invalid_argument on a bad identity or a zero interval/retry.
  HaAgent(Scheduler& sched, TransactionManager& txn, TxSink& tx, SmIdentity self, std::uint8_t port_num,
          HaConfig cfg);

  wire::SmState state() const noexcept { return sm_.state(); }
  const SmStateMachine& machine() const noexcept { return sm_; }
  const HaCounters& counters() const noexcept { return counters_; }
  std::uint32_t act_count() const noexcept { return act_count_; }
  void note_activity() noexcept { ++act_count_; }  // a master counts its sweeps (IBA 14.2.5.13 ActCount)
  // Called on every state change (owner core), after it is logged.
  void set_on_transition(std::function<void(const Transition&)> fn) { on_transition_ = std::move(fn); }

  // NOTACTIVE -> DISCOVERING.
  void start() noexcept { apply(sm_.start()); }
  // A sweep was asked for by an event (poll failure, HANDOVER, trap 144).
  bool take_sweep_request() noexcept {
    const bool r = sweep_requested_;
    sweep_requested_ = false;
    return r;
  }
  // A heavy sweep starts: as master, SMInfo Gets wait for its election
  // (after_discovery) or election_hold_ms.
  void sweep_started() noexcept;
  // After discovery (our state DISCOVERING or MASTER): SubnGet(SMInfo) to
  // every IsSM port, the election, and the actions it asks for.
  Task<SweepDecision> after_discovery(SmpQueue& q, const fabric::Fabric& f, std::uint64_t own_port_guid,
                                      std::uint16_t own_lid);
  // A master's light sweep (IBA 14.4.1; OpenSM's light sweep does the
  // same): SubnGet(SMInfo) on `q` to every SM the last election saw, and
  // `on_new_master` (on the core) for each that now answers MASTER but was
  // not then: a second master, which only a heavy sweep's election ends.
  void check_peers(SmpQueue& q, std::function<void(std::uint64_t guid)> on_new_master) const;
  // Polls polled_guid() every poll_interval_ms; returns when cancelled.
  Task<void> poll_loop();
  // SMA: a SubnGet or SubnSet(SMInfo) request, answered in place and sent.
  void on_sminfo(MadBuf& buf, CoreContext& ctx) noexcept;
  // Trap 144 from another SM (its priority or IsSM changed).
  void on_trap144() noexcept { apply(sm_.on_trap144()); }
  void set_priority(std::uint8_t priority) noexcept { apply(sm_.set_priority(priority)); }
  // Peers as the last sweep found them.
  const std::vector<FoundSm>& peers() const noexcept { return peers_; }
  // When the SM we poll last answered (engine clock; -1: never): a standby's
  // copy of the master's SA state is judged against this moment.
  Nanos last_poll_answer_ns() const noexcept { return last_poll_answer_ns_; }

 private:
  void apply(const Actions& a) noexcept;
  // Answers a SubnGet/SubnSet(SMInfo) in place and sends it; a Set's actions are applied.
  void answer(MadBuf& buf, TxSink& tx) noexcept;
  void release_held() noexcept;
  Task<void> release_after(std::uint64_t election, Nanos hold);
  void send_set(std::uint64_t guid, std::uint32_t modifier, wire::SmState shown) noexcept;
  void send_trap144(std::uint64_t guid) noexcept;
  const FoundSm* peer(std::uint64_t guid) const noexcept;
  static void on_set_done(void* user, const TxnResult& r) noexcept;

  Scheduler& sched_;
  TransactionManager& txn_;
  TxSink& tx_;
  SmStateMachine sm_;
  std::uint8_t port_num_;
  HaConfig cfg_;
  std::uint32_t act_count_ = 0;
  std::uint16_t own_lid_ = 0;
  bool sweep_requested_ = false;
  std::uint64_t pending_ack_ = 0;  // HANDOVER came before we knew the sender's route: ACKNOWLEDGE after the sweep
  std::vector<FoundSm> peers_;
  Nanos last_poll_answer_ns_ = -1;
  bool electing_ = false;       // a master's heavy sweep has not elected yet
  std::uint64_t election_ = 0;  // which sweep electing_ belongs to
  std::vector<MadBuf> held_;    // SMInfo Gets waiting for it (bounded)
  HaCounters counters_;
  std::function<void(const Transition&)> on_transition_;
};

}  // namespace madengine::sm::ha
