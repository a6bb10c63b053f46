// Wiring of transport, engine, SA and SM (see madengine/node/node.hpp).
#include "madengine/node/node.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "engine/compute_pool.hpp"
#include "engine/engine.hpp"
#include "engine/umad/umad_transport.hpp"
#include "node/config_diff.hpp"
#include "node/event_hub.hpp"
#include "node/fabric_model.hpp"
#include "node/fabric_spec.hpp"
#include "node/internal_node.hpp"
#include "node/parts.hpp"
#include "node/sim_driver.hpp"
#include "node/state_files.hpp"
#include "node/vendor_mads.hpp"
#include "sa/server/response_chain.hpp"
#include "sa/server/sa_server.hpp"
#include "sim/fabric.hpp"
#include "sim/sim_transport.hpp"
#include "node/qos_keys.hpp"
#include "node/routing_keys.hpp"
#include "sm/qos/qos_options.hpp"
#include "sm/sm.hpp"

namespace madengine::node {

namespace {

sm::SmConfig sm_config(const NodeConfig& c) {
  sm::SmConfig s;
  s.core = 0;
  s.window_smps_max = c.sm.smps_in_flight_max;
  s.window_per_dest_max = c.sm.smps_per_node_max;
  s.timeout_ms = c.sm.transaction_timeout_ms;
  s.retries = static_cast<std::uint8_t>(c.sm.transaction_retries);
  s.guid2lid_path = c.sm.guid2lid;
  s.lmc = static_cast<std::uint8_t>(c.sm.lmc);
  s.routing_chain = routing_chain(c.sm);
  s.root_guids = c.sm.roots;
  // Routing uses every CPU (on the compute pool, beside the cores).
  const unsigned threads = c.sm.routing_threads ? c.sm.routing_threads : std::max(1u, std::thread::hardware_concurrency());
  s.routing_threads = threads;
  s.path_db_threads = threads;
  s.light_sweep_interval_ms = c.sm.sweep_interval_ms;
  s.local_port_check_ms = c.sm.local_port_check_ms;
  s.standby_refresh_ms = c.sm.standby_refresh_ms;
  s.priority = static_cast<std::uint8_t>(c.sm.priority);
  s.sm_key = c.sm.sm_key;
  s.ha_poll_interval_ms = c.sm.ha_poll_interval_ms;
  s.ha_poll_retries = static_cast<std::uint8_t>(c.sm.ha_poll_retries);
  s.ha_replica_interval_ms = c.sm.ha_replica_interval_ms;
  s.ha_replica_max_age_ms = c.sm.ha_replica_max_age_ms;
  if (!sm::parse_part_enforce(c.sm.part_enforce, s.part_enforce)) throw ConfigError("sm.part_enforce: " + c.sm.part_enforce);
  s.allow_both_pkeys = c.sm.allow_both_pkeys;
  s.m_key = c.sm.m_key;
  s.m_key_lease_period = static_cast<std::uint16_t>(c.sm.m_key_lease_period);
  s.m_key_protect_bits = static_cast<std::uint8_t>(c.sm.m_key_protection_level);
  s.guid2mkey_path = c.sm.guid2mkey;
  s.ports = c.sm.ports;
  if (c.sm.qos) {
    std::string err;
    auto q = sm::build_qos_config(qos_options(c.sm), err);
    if (!q) throw ConfigError("sm." + err);
    s.qos = std::make_shared<const sm::QosConfig>(*q);
  }
  return s;
}

// The qos-policy file parsed (QoS on and a file named), else null. Throws
// ConfigError with file:line on a bad file.
std::shared_ptr<const sm::QosPolicy> load_policy(const SmSection& c) {
  if (!c.qos || c.qos_policy_file.empty()) return nullptr;
  sm::FileIssue err;
  auto p = sm::load_qos_policy(c.qos_policy_file, err);
  if (!p) throw ConfigError(err.text());
  return std::make_shared<const sm::QosPolicy>(std::move(*p));
}

// What the partitions and qos-policy files say now: their paths and bytes
// (a file that cannot be read counts as its path alone; loading it says why).
std::string policy_files_text(const SmSection& c) {
  std::string out;
  for (const std::string& path : {c.partition_config, c.qos ? c.qos_policy_file : std::string()}) {
    out += path;
    out += '\0';
    if (path.empty()) continue;
    std::ifstream f(path, std::ios::binary);
    out.append(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    out += '\0';
  }
  return out;
}

// The partitions file parsed, its warnings logged with file:line; null when
// none is configured. Throws ConfigError with file:line on a bad file.
std::shared_ptr<const sm::PartitionConfig> load_partitions(const std::string& path) {
  if (path.empty()) return nullptr;
  sm::FileIssue err;
  auto cfg = sm::load_partition_config(path, err);
  if (!cfg) throw ConfigError(err.text());
  for (const sm::FileIssue& w : cfg->warnings) spdlog::warn("partitions: {}", w.text());
  spdlog::info("partitions: {}: {} definitions", path, cfg->defs.size());
  return std::make_shared<const sm::PartitionConfig>(std::move(*cfg));
}

// The folder of a state file (guid2lid, SA journal); a failure shows later
// as the file's own write error, with its path.
void make_parent_dir(const std::string& file) {
  if (file.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
}

std::uint32_t first_ca(const sim::Fabric& f) {
  for (std::uint32_t n = 0; n < f.node_count(); ++n)
    if (!f.is_switch(n)) return n;
  throw ConfigError("the simulated fabric has no CA to host the SM");
}

}  // namespace

Node::Parts::Parts() = default;
Node::Parts::~Parts() = default;

namespace {

std::unique_ptr<Node::Parts> assemble(const NodeConfig& cfg, NodeHooks hooks, const InternalOptions& in) {
  auto p_ = std::make_unique<Node::Parts>();  // named as the member it becomes
  validate(cfg);
  p_->cfg = cfg;
  // The last run's epoch (tens of MB at 11,664 hosts) is read while the transport opens.
  std::future<EpochLoad> epoch_load;
  if (cfg.transport.kind != TransportKind::kSim && in.sim_fabric == nullptr)
    epoch_load = std::async(std::launch::async, [&cfg] { return load_epoch(cfg); });
  for (const VendorClassHandler& v : hooks.vendor_classes)
    if (!is_vendor_class(v.mgmt_class) || !v.handler)
      throw ConfigError(fmt::format("vendor class 0x{:02x}: not a vendor-specific class (0x09, 0x30-0x4f) or no handler",
                                    v.mgmt_class));
  const Clock* clock = nullptr;
  static const SteadyClock steady;
  if (hooks.transport != nullptr) {
    p_->transport = hooks.transport;
    clock = &steady;
  } else if (cfg.transport.kind == TransportKind::kSim) {
    std::uint32_t node = 0;
    if (in.sim_fabric != nullptr) {
      p_->fabric = in.sim_fabric;
      node = in.sim_node;
    } else {
      const sim::Topology topo = make_topology(cfg.transport.generate, cfg.transport.topology);
      p_->own_fabric = std::make_unique<sim::Fabric>(topo, sim::FabricConfig{.seed = cfg.transport.seed});
      p_->fabric = p_->own_fabric.get();
      node = first_ca(*p_->fabric);
      if (!cfg.transport.sim_node.empty()) {
        node = p_->fabric->find_node(cfg.transport.sim_node);
        if (node >= p_->fabric->node_count()) throw ConfigError("transport.sim_node: no node named " + cfg.transport.sim_node);
      }
      spdlog::info("sim fabric: {} nodes, SM on node {} ({})", p_->fabric->node_count(), node,
                   cfg.transport.topology.empty() ? cfg.transport.generate : cfg.transport.topology);
    }
    p_->own_transport = std::make_unique<sim::SimTransport>(*p_->fabric, node, p_->fabric->is_switch(node) ? 0 : 1, "sim");
    clock = &p_->fabric->clock();
  } else {
    UmadConfig u;
    u.ca_name = cfg.transport.ca;
    u.port_num = static_cast<int>(cfg.transport.port);
    p_->own_transport = std::make_unique<UmadTransport>(u, steady);
    clock = &steady;
  }
  if (p_->transport == nullptr) p_->transport = p_->own_transport.get();
  AgentSpec agents{.smi = true, .is_sm = true, .sa_server = true, .gsi_client = true};
  for (const VendorClassHandler& v : hooks.vendor_classes) agents.vendor_classes.push_back(v.mgmt_class);
  if (!p_->transport->open(agents)) {
    if (p_->own_transport && cfg.transport.kind == TransportKind::kUmad)
      throw std::runtime_error(fmt::format(
          "umad: {} (an SM needs an InfiniBand port; the in-process simulator is --transport sim)",
          static_cast<UmadTransport&>(*p_->transport).last_error()));
    throw std::runtime_error(fmt::format("transport {} did not open", p_->transport->name()));
  }

  if (cfg.engine.idle == "block" && std::uint64_t{cfg.sm.ha_poll_interval_ms} * cfg.sm.ha_poll_retries < 1000)
    spdlog::warn("sm.ha_poll_interval_ms x ha_poll_retries is under 1 s with engine.idle = \"block\": on a loaded "
                 "machine a sleeping core may answer SMInfo polls too late; consider engine.idle = \"spin\"");
  make_parent_dir(cfg.sm.guid2lid);
  make_parent_dir(cfg.sm.guid2mkey);
  EngineConfig engine_cfg{
      .cores = static_cast<std::uint16_t>(cfg.engine.cores), .pin = cfg.engine.pin && !p_->fabric, .clock = clock};
  engine_cfg.backoff.mode = cfg.engine.idle == "spin" ? IdleMode::kSpin : IdleMode::kBlock;
  engine_cfg.backoff.spin_loops_max = cfg.engine.idle_spin_loops;
  engine_cfg.backoff.spin_loops_min = cfg.engine.idle_spin_loops_min;
  p_->engine = std::make_unique<Engine>(engine_cfg);
  // The port is read on the last core (the SA's), away from the SM's core:
  // a heavy sweep's CPU phases hold its core for milliseconds at a time, and
  // every MAD received would wait behind them. The SM's SMPs are handed
  // over to this core to send, and their answers handed back.
  p_->engine->add_transport(*p_->transport, static_cast<std::uint16_t>(p_->engine->cores() - 1));
  if (!hooks.vendor_classes.empty())
    p_->vendor = std::make_unique<VendorMads>(*p_->engine, std::move(hooks.vendor_classes));

  const bool threaded = !p_->fabric;
  sm::SmConfig smc = sm_config(cfg);
  p_->compute = std::make_unique<ComputePool>(
      ComputePoolConfig{.threads = threaded ? smc.routing_threads : 0, .name = "mad-compute", .shutdown_wait_ms = 100});
  p_->io = std::make_unique<ComputePool>(
      ComputePoolConfig{.threads = threaded ? 1u : 0u, .nice = 0, .name = "mad-io", .shutdown_wait_ms = 250, .finish_queued = true});

  sa::SaServerConfig sac;
  sac.release_pool = p_->compute.get();
  sac.queue_max = cfg.sa.queue_depth;
  sac.requester_queued_max = cfg.sa.requester_share_max;
  sac.consolidate_ipv6_snm_req = cfg.sm.consolidate_ipv6_snm_req;
  sac.install_response_hooks = false;
  if (in.sa) in.sa(sac);
  p_->sa = std::make_unique<sa::SaServer>(*p_->engine, p_->store, sac);

  make_parent_dir(cfg.sa.journal);
  const sa::FabricIdentity fabric{.sm_port_guid = p_->transport->local_port().port_guid,
                                  .subnet_prefix = cfg.sm.ports.subnet_prefix};
  const bool journal_fresh = restore_journal(cfg.sa, *p_->sa, clock->now_ns(), fabric);
  // The last run's epoch: the SA answers from it as soon as the engine runs.
  const std::shared_ptr<sa::Snapshot> restored = epoch_load.valid() ? vouch_epoch(cfg, epoch_load.get(), fabric) : nullptr;
  if (restored) p_->store.publish(restored);

  smc.compute = p_->compute.get();
  smc.io = p_->io.get();
  smc.mcast = &p_->sa->mcast_provider();
  p_->events = std::make_unique<EventHub>(std::move(hooks.events), p_->store);
  sa::SaServer* sa = p_->sa.get();
  EventHub* events = p_->events.get();
  // Traps the SM receives reach InformInfo subscribers as Reports, and the
  // embedder's notice callback. Traps 64/65 reach both from the store's
  // epoch changes (sa/epoch_change.hpp), not from the SM.
  smc.on_notice = [sa, events](const wire::Notice& n) {
    sa->forward_notice(n);
    events->push_notice(n);
  };
  smc.on_transition = [events](wire::SmState from, wire::SmState to) { events->push_transition(from, to); };
  smc.restore_sa_state = [sa](sa::SaStateImage img) { sa->restore_state(std::move(img)); };
  smc.on_partition_groups = [sa](std::vector<wire::McMemberRecord> g) { sa->set_partition_groups(std::move(g)); };
  p_->policy_files_applied = policy_files_text(cfg.sm);
  smc.partitions = load_partitions(cfg.sm.partition_config);
  smc.qos_policy = load_policy(cfg.sm);
  smc.sa_state_restored = journal_fresh;
  smc.first_epoch = restored ? restored->epoch : 0;
  smc.routing_hook = sm_routing_hook(std::move(hooks.routing));
  if (in.sm) in.sm(smc);
  p_->sm = std::make_unique<sm::SubnetManager>(*p_->engine, *p_->transport, smc, p_->store);
  p_->events->attach(*p_->sm);
  MadHandler* sm_hook = p_->engine->dispatcher().response_hook(smc.core);
  // The performance manager on the last core (beside the SA's queries, away
  // from the SM's sweeps where there are two or more), its responses before the SM's.
  const auto perf_core = static_cast<std::uint16_t>(p_->engine->cores() - 1);
  // The node name map names nodes in every output, with or without the manager.
  if (!in.perfmgr.node_name_map.empty()) {
    std::string err;
    if (!perfmgr::load_node_name_map(in.perfmgr.node_name_map, p_->names, err)) throw ConfigError("perfmgr.node_name_map: " + err);
    spdlog::info("node name map {}: {} names", in.perfmgr.node_name_map, p_->names.size());
  }
  p_->perf_cfg = in.perfmgr;
  if (in.perfmgr.enabled) {
    if (in.on_port_alarm) p_->events->set_port_alarm(in.on_port_alarm);
    p_->perf = std::make_unique<perfmgr::PerfManager>(
        *p_->engine, perf_core, p_->transport->local_port().port_num, p_->store, in.perfmgr, p_->names,
        [events](const perfmgr::PortAlarm& a) { events->push_port_alarm(a); });
    p_->perf_hook = p_->perf->response_hook(perf_core == smc.core ? sm_hook : nullptr);
    p_->perf->set_sa_load([sa] { return sa->counters().total().received; });  // collection yields to query storms
  }
  for (std::uint16_t c = 0; c < p_->engine->cores(); ++c) {
    MadHandler* next = c == smc.core ? sm_hook : nullptr;
    if (p_->perf_hook && c == perf_core) next = p_->perf_hook.get();
    p_->chains.push_back(std::make_unique<sa::ResponseChain>(*p_->sa, next));
    p_->engine->set_response_hook(c, *p_->chains.back());
  }
  for (std::uint16_t c = 0; c < p_->engine->cores(); ++c) {
    p_->mailboxes.push_back(std::make_unique<CommandMailbox>(&p_->engine->core(c)));
    p_->engine->add_poller(c, *p_->mailboxes.back());
  }
  if (!cfg.sa.journal.empty()) {
    p_->journal =
        std::make_unique<JournalWriter>(cfg.sa.journal, fabric, cfg.sa.journal_interval_ms, *p_->sa, *p_->sm, *clock, *p_->io);
    p_->engine->add_poller(smc.core, *p_->journal);
  }
  if (const std::string path = epoch_file_path(cfg); !path.empty() && !p_->fabric) {
    p_->epoch_writer = std::make_unique<EpochWriter>(path, fabric, cfg.sa.journal_interval_ms, p_->store, *p_->sm, *p_->io,
                                                     restored ? restored->epoch : 0);
    p_->engine->add_poller(smc.core, *p_->epoch_writer);
  }
  return p_;
}

}  // namespace

Node::Node(const NodeConfig& cfg, NodeHooks hooks) : Node(assemble(cfg, std::move(hooks), InternalOptions{})) {}

Node::Node(std::unique_ptr<Parts> parts) noexcept : p_(std::move(parts)) {}

InternalNode::InternalNode(const NodeConfig& cfg, NodeHooks hooks, const InternalOptions& options)
    : Node(assemble(cfg, std::move(hooks), options)) {}

Node::~Node() {
  stop();
  for (auto& m : p_->mailboxes) m->close();
  if (p_->journal && !p_->crashed) p_->journal->write_final();
  // The SM and SA go before the engine they registered with; sim parts last.
  p_->perf.reset();
  p_->sm.reset();
  p_->sa.reset();
  p_->io.reset();  // queued writes finish (a bounded wait), then the threads go
  p_->compute.reset();
  if (p_->engine && !p_->engine_running) p_->engine->quiesce();
  p_->engine.reset();
  if (p_->transport) p_->transport->close();
}

void Node::start() {
  if (p_->started) throw std::logic_error("madengine node: already started");
  if (p_->fabric) {
    Parts* p = p_.get();
    p_->driver = std::make_unique<SimDriver>(*p_->fabric, p_->cfg.transport.sim_speed,
                                             [p] { return p->pump(10 * kNanosPerMicro); });
  } else {
    p_->engine->start();
    p_->engine_running = true;
  }
  p_->events->start();
  p_->started = true;
}

void Node::stop() noexcept { p_->stop_until(StopDeadline::max()); }

bool Node::Parts::stop_until(StopDeadline deadline) noexcept {
  if (!started) return true;
  // Told first, all of them, so they wind down side by side.
  if (engine_running) engine->request_stop();
  bool done = true;
  if (driver) {
    if (driver->stop_until(deadline)) driver.reset();  // the thread that pumped the fabric
    else done = false;
  }
  if (engine_running) {
    if (engine->stop_until(deadline)) engine_running = false;
    else done = false;
  }
  // Callbacks last: what happened before the stop is still delivered.
  done = events->stop_until(deadline) && done;
  if (done) started = false;
  return done;
}

bool InternalNode::stop_within(std::chrono::milliseconds bound) noexcept {
  return parts().stop_until(std::chrono::steady_clock::now() + bound);
}

bool Node::started() const noexcept { return p_->started; }

std::size_t Node::pump(Nanos step_ns) {
  if (!p_->fabric || p_->started) return 0;
  return p_->pump(step_ns);
}

bool Node::wait_subnet_up(std::chrono::milliseconds limit) {
  if (!p_->fabric || p_->started) return p_->sm->wait_subnet_up(limit);
  const Nanos end = p_->fabric->now_ns() + limit.count() * kNanosPerMilli;
  while (p_->fabric->now_ns() < end) {
    if (p_->sm->status().subnet_up) return true;
    pump();
  }
  return p_->sm->status().subnet_up;
}

std::size_t Node::dispatch_events() { return p_->started ? 0 : p_->events->dispatch(); }

NodeStatus Node::status() const {
  const sm::SmStatus s = p_->sm->status();
  return NodeStatus{.subnet_up = s.subnet_up,
                    .state = s.state,
                    .sm_lid = s.sm_lid,
                    .epoch = s.epoch,
                    .heavy_sweeps = s.heavy_sweeps,
                    .light_sweeps = s.light_sweeps,
                    .traps = s.traps,
                    .events_dropped = p_->events->dropped()};
}

bool Node::is_sim() const noexcept { return p_->fabric != nullptr; }
const NodeConfig& Node::config() const noexcept { return p_->cfg; }
sim::Fabric* InternalNode::fabric() noexcept { return parts().fabric; }
Engine& InternalNode::engine() noexcept { return *parts().engine; }
bool InternalNode::reload_config_files() {
  const NodeConfig& cfg = parts().cfg;
  const std::string now = policy_files_text(cfg.sm);
  if (now == parts().policy_files_applied) {
    spdlog::info("reload: partitions{} unchanged: the fabric is left alone", cfg.sm.qos ? " and qos-policy" : "");
    return true;
  }
  try {
    // Both files are read before either is applied: a bad one changes nothing.
    auto partitions = load_partitions(cfg.sm.partition_config);
    auto policy = load_policy(cfg.sm);
    sm().set_partitions(std::move(partitions));
    if (cfg.sm.qos) sm().set_qos_policy(std::move(policy));
    parts().policy_files_applied = now;
    spdlog::info("reload: partitions{} applied at the next heavy sweep (requested)", cfg.sm.qos ? " and qos-policy" : "");
    return true;
  } catch (const std::exception& e) {
    spdlog::error("reload: {}; the configuration in use is kept", e.what());
    return false;
  }
}
void InternalNode::write_journal_now() noexcept {
  if (parts().journal) parts().journal->write_final();
  else spdlog::info("sa journal: none configured: nothing written at shutdown");
}
sm::SubnetManager& InternalNode::sm() noexcept { return *parts().sm; }
perfmgr::PerfManager* InternalNode::perfmgr() noexcept { return parts().perf.get(); }
const perfmgr::NodeNameMap& InternalNode::node_names() const noexcept { return parts().names; }
sa::SaServer& InternalNode::sa() noexcept { return *parts().sa; }
const sa::SnapshotStore& InternalNode::store() const noexcept { return parts().store; }
void InternalNode::crash() noexcept { parts().crashed = true; }

bool InternalNode::post(std::uint16_t core, std::function<void()> fn) {
  if (core >= parts().mailboxes.size()) return false;
  return parts().mailboxes[core]->post(std::move(fn));
}

JournalCounters InternalNode::journal_counters() const noexcept {
  return parts().journal ? parts().journal->counters() : JournalCounters{};
}

std::uint64_t InternalNode::commands_ran(std::uint16_t core) const noexcept {
  return core < parts().mailboxes.size() ? parts().mailboxes[core]->ran() : 0;
}

void InternalNode::add_reload_hook(ReloadHook hook) { parts().reload_hooks.push_back(std::move(hook)); }

InternalNode::ReloadResult InternalNode::reload_perfmgr(const perfmgr::PerfMgrConfig& fresh) {
  ReloadResult r;
  perfmgr::PerfMgrConfig& now = parts().perf_cfg;
  // Fixed while the manager runs: its window of
  // requests (its transaction manager's size), and what other threads read
  // without a lock (the name map, the metrics' series bound).
  // A manager started with the node pauses and resumes; one never started needs a restart.
  perfmgr::PerfManager* pm = perfmgr();
  if (fresh.enabled != now.enabled) {
    if (pm == nullptr) {
      r.restart_needed.push_back("perfmgr.enabled");
    } else if (post(pm->core(), [pm, on = fresh.enabled] { pm->set_enabled(on); })) {
      r.applied.push_back(fmt::format("perfmgr: {}", fresh.enabled ? "resumed" : "paused"));
      now.enabled = fresh.enabled;
    } else {
      spdlog::warn("reload: perfmgr.enabled not applied: the manager's command queue is full (reload again)");
    }
  }
  if (fresh.outstanding_max != now.outstanding_max) r.restart_needed.push_back("perfmgr.outstanding_max");
  if (fresh.node_name_map != now.node_name_map) r.restart_needed.push_back("perfmgr.node_name_map");
  if (fresh.metrics_ports_max != now.metrics_ports_max) r.restart_needed.push_back("perfmgr.metrics_ports_max");
  const perfmgr::ErrorThresholds& a = now.thresholds;
  const perfmgr::ErrorThresholds& b = fresh.thresholds;
  const bool thresholds = a.symbol_errors != b.symbol_errors || a.link_error_recovery != b.link_error_recovery ||
                          a.link_downed != b.link_downed || a.rcv_errors != b.rcv_errors ||
                          a.xmit_discards != b.xmit_discards || a.xmit_wait != b.xmit_wait;
  const bool tunables = thresholds || fresh.interval_ms != now.interval_ms || fresh.timeout_ms != now.timeout_ms ||
                        fresh.retries != now.retries || fresh.sa_busy_qps != now.sa_busy_qps;
  if (!tunables) return r;
  if (pm != nullptr) {
    const perfmgr::PerfMgrConfig c = fresh;
    if (!post(pm->core(), [pm, c] { pm->retune(c); })) {
      spdlog::warn("reload: [perfmgr] not applied: the manager's command queue is full (reload again)");
      return r;
    }
    std::string what = "perfmgr:";
    if (fresh.interval_ms != now.interval_ms) what += fmt::format(" interval_ms {} -> {},", now.interval_ms, fresh.interval_ms);
    if (fresh.timeout_ms != now.timeout_ms) what += fmt::format(" timeout_ms {} -> {},", now.timeout_ms, fresh.timeout_ms);
    if (fresh.retries != now.retries) what += fmt::format(" retries {} -> {},", now.retries, fresh.retries);
    if (fresh.sa_busy_qps != now.sa_busy_qps) what += fmt::format(" sa_busy_qps {} -> {},", now.sa_busy_qps, fresh.sa_busy_qps);
    if (thresholds) what += " thresholds,";
    what.pop_back();
    r.applied.push_back(std::move(what));
  }
  // With the manager off these wait for it (perfmgr.enabled, a restart) and are read then.
  now.interval_ms = fresh.interval_ms;
  now.timeout_ms = fresh.timeout_ms;
  now.retries = fresh.retries;
  now.thresholds = fresh.thresholds;
  now.sa_busy_qps = fresh.sa_busy_qps;
  return r;
}

InternalNode::ReloadResult InternalNode::reload(const NodeConfig& fresh) {
  ReloadResult r;
  NodeConfig& now = parts().cfg;
  if (fresh.log.level != now.log.level) {
    spdlog::set_level(spdlog::level::from_str(fresh.log.level));
    r.applied.push_back(fmt::format("log.level {} -> {}", now.log.level, fresh.log.level));
    now.log.level = fresh.log.level;
  }
  now.log.file = fresh.log.file;  // the log's sink is the caller's to reopen (the daemon does)
  if (fresh.sm.priority != now.sm.priority) {
    // As the admin command does it: on the SM's core; HA acts on it at once.
    sm::SubnetManager& s = sm();
    const auto priority = static_cast<std::uint8_t>(fresh.sm.priority);
    if (post(sm_core(), [&s, priority] { s.set_priority(priority); })) {
      r.applied.push_back(fmt::format("sm.priority {} -> {}", now.sm.priority, fresh.sm.priority));
      now.sm.priority = fresh.sm.priority;
    } else {
      spdlog::warn("reload: sm.priority {} not applied: the SM's command queue is full (reload again)", fresh.sm.priority);
    }
  }
  // The partitions and qos-policy files: re-read while in use, and from
  // their new paths when those changed; a refused file keeps the old paths.
  const bool files_in_use = !now.sm.partition_config.empty() || now.sm.qos;
  if (files_in_use || fresh.sm.partition_config != now.sm.partition_config ||
      fresh.sm.qos_policy_file != now.sm.qos_policy_file) {
    const std::string partitions = now.sm.partition_config, policy = now.sm.qos_policy_file;
    now.sm.partition_config = fresh.sm.partition_config;
    now.sm.qos_policy_file = fresh.sm.qos_policy_file;
    if (reload_config_files()) {
      r.applied.push_back("partitions and qos-policy files re-read");
    } else {
      r.applied.push_back("partitions or qos-policy file refused: the ones in use kept");
      now.sm.partition_config = partitions;
      now.sm.qos_policy_file = policy;
    }
  }
  for (const ReloadHook& h : parts().reload_hooks) {
    std::string what = h(fresh);
    if (!what.empty()) r.applied.push_back(std::move(what));
  }
  // Every other key is read once, at start: named, and kept as it is. The
  // keys handled above are not (applied, refused or retried at the next reload).
  NodeConfig handled = now;
  handled.sm.priority = fresh.sm.priority;
  handled.sm.partition_config = fresh.sm.partition_config;
  handled.sm.qos_policy_file = fresh.sm.qos_policy_file;
  r.restart_needed = changed_keys(handled, fresh);
  return r;
}

}  // namespace madengine::node
