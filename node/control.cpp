// NodeControl: counters copied from the parts, sweeps requested of the SM,
// and the SM's own commands run on its core behind a bounded wait.
#include "node/control.hpp"

#include <fmt/format.h>

#include <exception>
#include <future>

#include "node/internal_node.hpp"
#include "node/view_fill.hpp"

namespace madengine::node {

CountersSnapshot NodeControl::counters() const {
  CountersSnapshot c;
  c.node = node_.status();
  c.sm = sm_status();
  c.sa = sa_counters();
  c.engine = engine_view(node_.engine().stats());
  c.journal = node_.journal_counters();
  return c;
}

SmStatus NodeControl::sm_status() const { return sm_status_view(node_.sm().status()); }

SaCounters NodeControl::sa_counters() const { return sa_counters_view(node_.sa().counters()); }

bool NodeControl::refresh_sm_status(std::chrono::milliseconds wait) {
  auto copied = std::make_shared<std::promise<void>>();
  std::future<void> done = copied->get_future();
  sm::SubnetManager& sm = node_.sm();
  if (!node_.post(node_.sm_core(), [&sm, copied] {
        sm.refresh_status();
        copied->set_value();
      }))
    return false;
  return done.wait_for(wait) == std::future_status::ready;
}

std::uint64_t NodeControl::sm_guid() const noexcept { return node_.sm().identity().guid; }


SaRegistrations NodeControl::sa_registrations() const { return registrations_view(node_.sa().capture_state()); }

sim::Fabric* NodeControl::sim_fabric() const noexcept { return node_.fabric(); }

void NodeControl::request_heavy_sweep() noexcept { node_.sm().request_heavy_sweep(); }

bool NodeControl::request_light_sweep() noexcept {
  sm::SubnetManager& sm = node_.sm();
  if (sm.status().state != wire::SmState::kMaster) return false;
  sm.request_light_sweep();
  return true;
}

bool NodeControl::periodic_sweeps() const noexcept { return node_.sm().periodic_sweeps(); }

bool NodeControl::set_periodic_sweeps(bool on) noexcept {
  sm::SubnetManager& sm = node_.sm();
  const bool was = sm.periodic_sweeps();
  sm.set_periodic_sweeps(on);
  return was;
}

template <typename T>
SmCommand<T> NodeControl::on_sm_core(std::function<SmCommand<T>()> fn, std::chrono::milliseconds wait) {
  auto done = std::make_shared<std::promise<SmCommand<T>>>();
  std::future<SmCommand<T>> answer = done->get_future();
  const bool posted = node_.post(node_.sm_core(), [done, fn = std::move(fn)] {
    try {
      done->set_value(fn());
    } catch (const std::exception& e) {
      done->set_value(SmCommand<T>{.error = e.what()});
    }
  });
  if (!posted) return SmCommand<T>{.error = "the SM's core has too many commands waiting: try again"};
  if (answer.wait_for(wait) != std::future_status::ready)
    return SmCommand<T>{.error = fmt::format("the SM's core did not run the command within {} ms", wait.count())};
  return answer.get();
}

SmCommand<std::vector<SmSeen>> NodeControl::sms(std::chrono::milliseconds wait) {
  sm::SubnetManager& sm = node_.sm();
  return on_sm_core<std::vector<SmSeen>>(
      [&sm] {
        SmCommand<std::vector<SmSeen>> r;
        const sm::SmStatus s = sm.status();
        const sm::ha::SmIdentity& self = sm.identity();
        r.value.push_back(SmSeen{.guid = self.guid, .lid = s.port_lid, .priority = self.priority, .state = s.state,
                                 .self = true});
        for (const sm::ha::FoundSm& p : sm.peers())
          r.value.push_back(SmSeen{.guid = p.sm.guid, .lid = p.at.lid, .priority = p.sm.priority, .state = p.sm.state,
                                   .self = false, .key_ok = p.sm.key_ok});
        return r;
      },
      wait);
}

SmCommand<PriorityChange> NodeControl::set_priority(std::uint8_t priority, std::chrono::milliseconds wait) {
  sm::SubnetManager& sm = node_.sm();
  return on_sm_core<PriorityChange>(
      [&sm, priority] {
        const unsigned before = sm.priority();
        sm.set_priority(priority);
        return SmCommand<PriorityChange>{.value = {.priority = priority, .was = before}};
      },
      wait);
}

SmCommand<HandoverStarted> NodeControl::handover(std::chrono::milliseconds wait) {
  sm::SubnetManager& sm = node_.sm();
  return on_sm_core<HandoverStarted>(
      [&sm] {
        using R = SmCommand<HandoverStarted>;
        if (sm.status().state != wire::SmState::kMaster) return R{.error = "this SM is not master: nothing to hand over"};
        // The best standby by rank (priority, then the lower GUID: IBA 14.4.1.1).
        // The states are as our last heavy sweep read them: an SM it found
        // DISCOVERING has usually stood by since; one that shows STANDBY wins.
        const sm::ha::FoundSm* best = nullptr;
        const auto better = [](const sm::ha::FoundSm& p, const sm::ha::FoundSm& q) {
          const bool ps = p.sm.state == wire::SmState::kStandby, qs = q.sm.state == wire::SmState::kStandby;
          if (ps != qs) return ps;
          return wire::sm_outranks(p.sm.priority, p.sm.guid, q.sm.priority, q.sm.guid);
        };
        for (const sm::ha::FoundSm& p : sm.peers()) {
          const bool waiting = p.sm.state == wire::SmState::kStandby || p.sm.state == wire::SmState::kDiscovering;
          if (!waiting || !p.sm.key_ok) continue;
          if (best == nullptr || better(p, *best)) best = &p;
        }
        if (best == nullptr) return R{.error = "no standby SM with our SM_Key was found by the last sweep"};
        // Mastership follows rank, so it is handed on by taking a priority the
        // standby outranks: then our next sweep sends it HANDOVER and it stays
        // master (a rank we kept would take the subnet back).
        const sm::ha::SmIdentity& self = sm.identity();
        unsigned to = best->sm.priority;
        if (!wire::sm_outranks(best->sm.priority, best->sm.guid, static_cast<std::uint8_t>(to), self.guid)) {
          if (to == 0)
            return R{.error = fmt::format("standby 0x{:016x} has priority 0 and a higher GUID than ours: it can outrank "
                                          "no priority of ours; raise its priority instead",
                                          best->sm.guid)};
          --to;
        }
        const unsigned before = self.priority;
        sm.set_priority(static_cast<std::uint8_t>(to));
        sm.request_heavy_sweep();
        return R{.value = {.to_guid = best->sm.guid, .priority = to, .was = before}};
      },
      wait);
}

std::uint16_t NodeControl::cores() const noexcept { return node_.engine().cores(); }

std::size_t NodeControl::poll_cores_once() noexcept { return node_.engine().poll_all_once(); }

std::uint64_t NodeControl::sm_loop_turns() const noexcept { return node_.sm().loop_turns(); }

Nanos NodeControl::sweep_started_ns() const noexcept { return node_.sm().sweep_started_ns(); }

std::uint16_t NodeControl::sm_core() const noexcept { return node_.sm_core(); }

bool NodeControl::post(std::uint16_t core, std::function<void()> fn) { return node_.post(core, std::move(fn)); }

ReloadResult NodeControl::reload(const NodeConfig& fresh) { return node_.reload(fresh); }

ReloadResult NodeControl::reload_perfmgr(const perfmgr::PerfMgrConfig& fresh) { return node_.reload_perfmgr(fresh); }

bool NodeControl::reload_config_files() { return node_.reload_config_files(); }

void NodeControl::write_journal_now() noexcept { node_.write_journal_now(); }

bool NodeControl::stop_within(std::chrono::milliseconds bound) noexcept { return node_.stop_within(bound); }

void NodeControl::crash() noexcept { node_.crash(); }

NodeStatus NodeControl::status() const { return node_.status(); }

FabricView NodeControl::fabric_view() const { return node_.fabric_view(); }

PathResult NodeControl::path(std::uint16_t slid, std::uint16_t dlid, PathInfo& out) const {
  return node_.path(slid, dlid, out);
}

const perfmgr::NodeNameMap& NodeControl::node_names() const noexcept { return node_.node_names(); }

perfmgr::PerfManager* NodeControl::perfmgr() noexcept { return node_.perfmgr(); }

namespace {

InternalOptions internal_options(const ControlOptions& o) {
  InternalOptions in{.sim_fabric = o.sim_fabric, .sim_node = o.sim_node};
  in.perfmgr = o.perfmgr;
  if (o.on_sm_transition || o.on_sm_phase) {
    in.sm = [on_transition = o.on_sm_transition, on_phase = o.on_sm_phase](sm::SmConfig& smc) {
      if (on_transition) {
        // After the node's own event for the change.
        auto node_event = std::move(smc.on_transition);
        smc.on_transition = [node_event, on_transition](wire::SmState from, wire::SmState to) {
          if (node_event) node_event(from, to);
          on_transition(from, to);
        };
      }
      if (on_phase) smc.on_phase = [on_phase](sm::SmPhase p) { on_phase(phase_view(p)); };
    };
  }
  return in;
}

}  // namespace

ControlledNode::ControlledNode(const NodeConfig& cfg, NodeHooks hooks, const ControlOptions& options)
    : node_(std::make_unique<InternalNode>(cfg, std::move(hooks), internal_options(options))) {}

ControlledNode::~ControlledNode() = default;

Node& ControlledNode::node() noexcept { return *node_; }

const Node& ControlledNode::node() const noexcept { return *node_; }

NodeControl ControlledNode::control() const noexcept { return NodeControl(*node_); }

}  // namespace madengine::node
