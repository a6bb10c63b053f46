// Prometheus text rendering of the node's counters and the HTTP endpoint
// (see metrics.hpp). Metric names and labels: docs/operations.md.
#include "service/metrics.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string_view>
#include <vector>
#include <stdexcept>

#include "madengine_version.h"
#include "service/port_states.hpp"
#include "service/service_config.hpp"
#include "perfmgr/perf_manager.hpp"

namespace madengine::service {

namespace {

// One metric family: HELP and TYPE once, then its samples.
class Out {
 public:
  void family(const char* name, const char* type, const char* help) {
    fmt::format_to(std::back_inserter(s_), "# HELP madengine_{} {}\n# TYPE madengine_{} {}\n", name, help, name, type);
  }
  template <typename V>
  void sample(const char* name, V value, const std::string& labels = {}) {
    if (labels.empty()) fmt::format_to(std::back_inserter(s_), "madengine_{} {}\n", name, value);
    else fmt::format_to(std::back_inserter(s_), "madengine_{}{{{}}} {}\n", name, labels, value);
  }
  template <typename V>
  void one(const char* name, const char* type, const char* help, V value) {
    family(name, type, help);
    sample(name, value);
  }
  std::string take() { return std::move(s_); }

 private:
  std::string s_;
};

const char* state_name(wire::SmState s) noexcept {
  switch (s) {
    case wire::SmState::kNotActive: return "notactive";
    case wire::SmState::kDiscovering: return "discovering";
    case wire::SmState::kStandby: return "standby";
    case wire::SmState::kMaster: return "master";
  }
  return "unknown";
}

// The record and method pairs clients ask for, exported from the start
// (at 0) so that rate() and alerts work before the first request; others
// appear at their first request.
bool always_exported(std::string_view record, std::string_view method) noexcept {
  if (record == "other") return false;
  if (record == "ClassPortInfo") return method == "Get";
  if (record == "InformInfo") return method == "Set";
  if (record == "ServiceRecord" || record == "MCMemberRecord")
    return method == "Get" || method == "GetTable" || method == "Set" || method == "Delete";
  if (record == "MultiPathRecord") return method == "GetMulti";
  return method == "Get" || method == "GetTable";
}

void sa_metrics(Out& o, const node::SaCounters& c) {
  struct Field {
    const char* name;
    const char* help;
    std::uint64_t node::SaRecordCounters::*member;
  };
  static constexpr Field kFields[] = {
      {"sa_requests_received_total", "SA requests received, by record type and method", &node::SaRecordCounters::received},
      {"sa_requests_answered_total", "SA requests answered (records or an error status)", &node::SaRecordCounters::answered},
      {"sa_requests_busy_total", "SA requests answered BUSY without being admitted", &node::SaRecordCounters::busy},
      {"sa_requests_dropped_total", "SA requests admitted but never answered (should stay 0)", &node::SaRecordCounters::dropped},
      {"sa_requests_duplicates_total", "retried TIDs answered from the cache or absorbed while in work",
       &node::SaRecordCounters::duplicates},
  };
  for (const Field& f : kFields) {
    o.family(f.name, "counter", f.help);
    for (const node::SaRequestCounters& r : c.by_request) {
      if (r.counters.received == 0 && !always_exported(r.record, r.method)) continue;
      o.sample(f.name, r.counters.*f.member, fmt::format("record=\"{}\",method=\"{}\"", r.record, r.method));
    }
  }
  o.family("sa_errors_total", "counter", "SA answers with an error status, by status");
  static constexpr const char* kStatus[node::kSaErrorSlots] = {"none",         "no_resources", "req_invalid",  "no_records",
                                                               "too_many",     "invalid_gid",  "insufficient", "denied",
                                                               "unsupported",  "invalid_field"};
  for (std::size_t e = 1; e < node::kSaErrorSlots; ++e)
    o.sample("sa_errors_total", c.total.errors[e], fmt::format("status=\"{}\"", kStatus[e]));

  o.family("sa_answer_latency_seconds", "histogram", "admission to answer of admitted SA queries (engine clock)");
  std::uint64_t cumulative = 0;
  for (std::size_t b = 0; b + 1 < c.latency.buckets.size(); ++b) {
    cumulative += c.latency.buckets[b];
    const double le = static_cast<double>(c.latency.bucket0_ns << b) * 1e-9;
    o.sample("sa_answer_latency_seconds_bucket", cumulative, fmt::format("le=\"{:g}\"", le));
  }
  o.sample("sa_answer_latency_seconds_bucket", c.latency.count, "le=\"+Inf\"");
  o.sample("sa_answer_latency_seconds_sum", static_cast<double>(c.latency.sum_ns) * 1e-9);
  o.sample("sa_answer_latency_seconds_count", c.latency.count);

  o.one("sa_rmpp_transfers_total", "counter", "multi-MAD (RMPP) answers sent", c.rmpp_transfers);
  o.one("sa_reports_sent_total", "counter", "Reports sent to InformInfo subscribers", c.reports_sent);
  o.one("sa_reports_failed_total", "counter", "Reports never acknowledged", c.reports_failed);
  o.one("sa_leases_expired_total", "counter", "ServiceRecords whose lease ran out", c.lease_expired);
}

void sm_metrics(Out& o, const node::SmStatus& s) {
  o.family("sm_sweeps_total", "counter", "SM sweeps, by kind");
  o.sample("sm_sweeps_total", s.heavy_sweeps, "kind=\"heavy\"");
  o.sample("sm_sweeps_total", s.light_sweeps, "kind=\"light\"");
  o.one("sm_smps_sent_total", "counter", "SMPs the SM transmitted, retries included", s.smps.sent);
  o.one("sm_smps_retried_total", "counter", "SMP re-transmissions after a timeout", s.smps.retried);
  o.one("sm_smps_timed_out_total", "counter", "SMP requests that got no answer after every retry", s.smps.timed_out);
  o.one("sm_smps_failed_total", "counter", "SMP requests that failed (timed out, refused by the transport, device lost)",
        s.smps.failed);
  o.one("sm_traps_total", "counter", "traps received by the SM", s.traps);
  o.one("subnet_up", "gauge", "1 once the first sweep as master brought the subnet up", s.subnet_up ? 1 : 0);
  o.one("epoch", "gauge", "the SA's current epoch (one per routing publication)", s.epoch);
  const node::SweepStats& h = s.last_heavy;
  o.one("sm_last_heavy_sweep_seconds", "gauge", "wall time of the last heavy sweep", h.total_s);
  o.one("sm_discovery_seconds", "gauge", "discovery time of the last heavy sweep", h.discovery_s);
  o.one("sm_routing_seconds", "gauge", "routing time of the last heavy sweep", h.routing_s);
  o.one("sm_path_db_seconds", "gauge", "path-database build time of the last heavy sweep", h.path_db_s);
  o.one("sm_programming_seconds", "gauge", "fabric programming time of the last heavy sweep", h.programming_s);
  o.one("sm_last_heavy_sweep_smps", "gauge", "SMPs of the last heavy sweep", h.smps);
  o.family("sm_fabric_nodes", "gauge", "nodes the last heavy sweep found, by type");
  o.sample("sm_fabric_nodes", h.switches, "type=\"switch\"");
  o.sample("sm_fabric_nodes", h.cas, "type=\"ca\"");

  o.family("ha_state", "gauge", "this SM's SMInfo state (1 for the current one)");
  for (const auto st : {wire::SmState::kNotActive, wire::SmState::kDiscovering, wire::SmState::kStandby,
                        wire::SmState::kMaster})
    o.sample("ha_state", st == s.state ? 1 : 0, fmt::format("state=\"{}\"", state_name(st)));
  o.one("ha_priority", "gauge", "this SM's SMInfo priority", static_cast<unsigned>(s.priority));
  o.one("ha_transitions_total", "counter", "SMInfo state changes", s.ha_transitions);
  o.one("ha_polls_total", "counter", "SMInfo polls of the master (standby)", s.ha.polls);
  o.one("ha_polls_failed_total", "counter", "SMInfo polls unanswered", s.ha.polls_failed);
  o.one("ha_handovers_sent_total", "counter", "HANDOVERs sent", s.ha.handovers_sent);
  o.one("ha_replica_rounds_total", "counter", "standby copies of the master's SA state started", s.replica.rounds);
  o.one("ha_replica_failed_total", "counter", "standby copies that failed or timed out", s.replica.failed + s.replica.timed_out);
  o.one("ha_replica_timed_out_total", "counter",
        "standby copies not complete within ha_replica_interval_ms (an interval the standby cannot keep)",
        s.replica.timed_out);
  if (s.replica.last_round_us >= 0)
    o.one("ha_replica_round_seconds", "gauge", "how long the standby's last complete copy took",
          static_cast<double>(s.replica.last_round_us) / 1e6);
  if (s.replica_age_ms >= 0)
    o.one("ha_replica_age_seconds", "gauge", "age of the standby's last complete copy of the master's SA state",
          static_cast<double>(s.replica_age_ms) / 1000.0);
}

void engine_metrics(Out& o, const node::EngineCounters& e) {
  struct Field {
    const char* name;
    const char* help;
    std::uint64_t node::EngineCoreCounters::*member;
  };
  static constexpr Field kFields[] = {
      {"engine_mads_received_total", "MADs received, by engine core", &node::EngineCoreCounters::rx},
      {"engine_mads_sent_total", "MADs the transports accepted, by engine core", &node::EngineCoreCounters::tx},
      {"engine_ring_full_total", "hand-offs that found a ring full (back-pressure)", &node::EngineCoreCounters::ring_full},
      {"engine_tx_full_total", "sends refused: transmit queue full or pool empty", &node::EngineCoreCounters::tx_full},
      {"engine_malformed_total", "MADs too short or of a bad base version", &node::EngineCoreCounters::malformed},
      {"engine_no_handler_total", "MADs nobody handles", &node::EngineCoreCounters::no_handler},
  };
  for (const Field& f : kFields) {
    o.family(f.name, "counter", f.help);
    for (const node::EngineCoreCounters& c : e.cores) o.sample(f.name, c.*f.member, fmt::format("core=\"{}\"", c.core));
  }
  // A core held up by its own work: the SA's answers on it waited that long.
  o.family("engine_long_iterations_total", "counter", "core iterations that took over 1 ms of work, by engine core");
  for (const node::EngineCoreCounters& c : e.cores)
    o.sample("engine_long_iterations_total", c.busy_loops_over_1ms, fmt::format("core=\"{}\"", c.core));
  o.family("engine_iteration_max_seconds", "gauge", "the longest core iteration that did work, by engine core");
  for (const node::EngineCoreCounters& c : e.cores)
    o.sample("engine_iteration_max_seconds", static_cast<double>(c.busy_loop_max_ns) / 1e9,
             fmt::format("core=\"{}\"", c.core));
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// The performance manager's last round: its own counters, then per port
// (labelled by the node's name, its GUID and the port) data, packets and
// the error counters, for at most metrics_ports_max ports (those with
// errors first); the ports left out are counted.
void perf_metrics(Out& o, const perfmgr::PerfManager& pm, const perfmgr::NodeNameMap& names) {
  const perfmgr::PerfMgrCounters c = pm.counters();
  o.one("perfmgr_rounds_total", "counter", "performance manager rounds completed (every port read once)", c.rounds);
  o.one("perfmgr_mads_total", "counter", "PerfMgt requests sent (ClassPortInfo, PortCounters, PortCountersExtended, clears)", c.mads);
  o.one("perfmgr_failed_total", "counter", "PerfMgt requests that timed out or were answered with an error", c.failed);
  o.one("perfmgr_clears_total", "counter", "PortCounters cleared near saturation (OpenSM's rule)", c.clears);
  o.one("perfmgr_alarms_total", "counter", "ports reported for errors past the thresholds", c.alarms);
  o.one("perfmgr_cpu_seconds_total", "counter", "time the performance manager spent on its core (issuing and handling)",
        static_cast<double>(c.cpu_ns) / 1e9);
  o.one("perfmgr_round_seconds", "gauge", "length of the last round", c.last_round_s);
  o.one("perfmgr_yield_seconds_total", "counter", "time the manager read at a quarter pace while the SA was busy (perfmgr.sa_busy_qps)",
        static_cast<double>(c.yield_ns) / 1e9);
  o.one("perfmgr_slice_max_seconds", "gauge", "the longest the manager held its core at once",
        static_cast<double>(c.slice_max_ns) / 1e9);
  const auto table = pm.table();
  const std::size_t n = table ? table->ports.size() : 0;
  o.one("perfmgr_ports", "gauge", "ports read by the last round", n);
  std::vector<const perfmgr::PortPerf*> ports;
  ports.reserve(n);
  if (table)
    for (const perfmgr::PortPerf& p : table->ports) ports.push_back(&p);
  std::stable_partition(ports.begin(), ports.end(), [](const perfmgr::PortPerf* p) { return p->has_errors(); });
  const std::size_t shown = std::min<std::size_t>(ports.size(), pm.config().metrics_ports_max);
  o.one("perfmgr_ports_dropped", "gauge", "ports whose series were left out (perfmgr.metrics_ports_max)", ports.size() - shown);
  std::vector<std::string> labels(shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const perfmgr::PortPerf& p = *ports[i];
    labels[i] = fmt::format("node=\"{}\",guid=\"0x{:016x}\",port=\"{}\"",
                            label_value(names.name(p.node_guid, p.description)), p.node_guid, p.port_num);
  }
  struct Data {
    const char* name;
    const char* help;
    perfmgr::Counter counter;
    std::uint64_t scale;
  };
  static constexpr Data kData[] = {
      {"port_xmit_bytes_total", "bytes sent by the port since the manager first read it", perfmgr::Counter::kXmitData, 4},
      {"port_rcv_bytes_total", "bytes received by the port since the manager first read it", perfmgr::Counter::kRcvData, 4},
      {"port_xmit_packets_total", "packets sent by the port since the manager first read it", perfmgr::Counter::kXmitPkts, 1},
      {"port_rcv_packets_total", "packets received by the port since the manager first read it", perfmgr::Counter::kRcvPkts, 1},
  };
  for (const Data& d : kData) {
    o.family(d.name, "counter", d.help);
    for (std::size_t i = 0; i < shown; ++i) o.sample(d.name, at(ports[i]->total, d.counter) * d.scale, labels[i]);
  }
  static constexpr perfmgr::Counter kErrors[] = {
      perfmgr::Counter::kSymbolErrors, perfmgr::Counter::kLinkErrorRecovery, perfmgr::Counter::kLinkDowned,
      perfmgr::Counter::kRcvErrors,    perfmgr::Counter::kXmitDiscards,      perfmgr::Counter::kXmitWait};
  o.family("port_errors_total", "counter",
           "a port's error counters since the manager first read it, by counter (xmit_wait: ticks a packet waited)");
  for (std::size_t i = 0; i < shown; ++i)
    for (const perfmgr::Counter e : kErrors)
      o.sample("port_errors_total", at(ports[i]->total, e),
               fmt::format("{},counter=\"{}\"", labels[i], perfmgr::metric_name(e)));
}

}  // namespace

std::string MetricsRenderer::render() {
  std::lock_guard lock(mu_);
  // The SM's SMP and replica counters are the SM core's to read: it copies
  // them into its status; a scrape waits a moment for that, then reports
  // what the status holds.
  node_.refresh_sm_status(std::chrono::milliseconds(kRefreshWaitMs));
  Out o;
  o.family("build_info", "gauge", "the running madengine's version (always 1)");
  o.sample("build_info", 1, fmt::format("version=\"{}\"", MADENGINE_VERSION_STRING));
  const node::CountersSnapshot c = node_.counters();
  sa_metrics(o, c.sa);
  sm_metrics(o, c.sm);
  // Ports by state, from the current epoch (counted again only when it changes).
  const node::FabricView view = node_.fabric_view();
  const std::uint64_t epoch = view.epoch();
  if (epoch != ports_epoch_) {
    ports_by_state_ = !view.empty() ? count_ports(view).by_state : decltype(ports_by_state_){};
    ports_epoch_ = epoch;
  }
  o.family("ports", "gauge", "physical ports of the current epoch, by PortState");
  for (std::size_t i = 1; i < ports_by_state_.size(); ++i)
    o.sample("ports", ports_by_state_[i], fmt::format("state=\"{}\"", kPortStateNames[i]));
  o.one("journal_writes_total", "counter", "SA state journal writes", c.journal.written);
  o.one("journal_write_failures_total", "counter", "SA state journal writes that failed", c.journal.failed);
  o.one("events_dropped_total", "counter", "node events the event queue had no room for", c.node.events_dropped);
  engine_metrics(o, c.engine);
  if (const perfmgr::PerfManager* pm = node_.perfmgr(); pm != nullptr) perf_metrics(o, *pm, node_.node_names());
  return o.take();
}

// ---- the HTTP endpoint ----

namespace {

MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method, const char*,
                      const char*, std::size_t*, void** state) {
  // The first call for a request carries only its headers: answer on the second.
  static int first_call_marker;
  if (*state == nullptr) {
    *state = &first_call_marker;
    return MHD_YES;
  }
  const bool get = std::strcmp(method, "GET") == 0 || std::strcmp(method, "HEAD") == 0;
  unsigned code = MHD_HTTP_OK;
  std::string body;
  const char* type = "text/plain; version=0.0.4; charset=utf-8";
  if (!get) {
    code = MHD_HTTP_METHOD_NOT_ALLOWED;
    body = "only GET\n";
  } else if (std::strcmp(url, "/metrics") != 0 && std::strcmp(url, "/") != 0) {
    code = MHD_HTTP_NOT_FOUND;
    body = "metrics are at /metrics\n";
  } else {
    try {
      body = static_cast<MetricsServer*>(cls)->scrape();
    } catch (const std::exception& e) {
      code = MHD_HTTP_INTERNAL_SERVER_ERROR;
      body = fmt::format("error: {}\n", e.what());
    }
  }
  MHD_Response* r = MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
  if (r == nullptr) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  const MHD_Result ok = MHD_queue_response(connection, code, r);
  MHD_destroy_response(r);
  return ok;
}

}  // namespace

std::string MetricsServer::scrape() {
  scrapes_.fetch_add(1, std::memory_order_relaxed);
  return render_();
}

MetricsServer::MetricsServer(const std::string& listen, std::function<std::string()> render)
    : render_(std::move(render)) {
  std::string host, error;
  unsigned port = 0;
  if (!parse_listen(listen, host, port, error)) throw std::runtime_error(fmt::format("metrics.listen \"{}\": {}", listen, error));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* ai = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &ai);
  if (rc != 0 || ai == nullptr)
    throw std::runtime_error(fmt::format("metrics.listen \"{}\": {} (give a numeric address)", listen, ::gai_strerror(rc)));
  const bool v6 = ai->ai_family == AF_INET6;
  sockaddr_storage addr{};
  std::memcpy(&addr, ai->ai_addr, ai->ai_addrlen);
  ::freeaddrinfo(ai);
  // One thread of its own polls every connection; scrapes are small and rare.
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  if (v6) flags |= MHD_USE_IPv6;
  daemon_ = MHD_start_daemon(flags, static_cast<std::uint16_t>(port), nullptr, nullptr,
                             &on_request, this,
                             MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&addr),
                             MHD_OPTION_CONNECTION_LIMIT, 16u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  if (daemon_ == nullptr)
    throw std::runtime_error(fmt::format("metrics.listen \"{}\": cannot listen ({})", listen, std::strerror(errno)));
  const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info != nullptr ? info->port : port;
  spdlog::info("metrics: serving http://{}{}{}:{}/metrics", v6 ? "[" : "", host.empty() ? "*" : host, v6 ? "]" : "", port_);
}

MetricsServer::~MetricsServer() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

}  // namespace madengine::service
