// Storm: its figures, the requests it builds, and its set-up; the loop,
// the in-flight table and the checks every answer goes through are
// storm_loop.cpp, storm_inflight.cpp and storm_answers.cpp.
#include "lib/storm.hpp"

#include <stdexcept>
#include <string>

#include "lib/storm_impl.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa/inform_info.hpp"
#include "madengine/wire/sa/get_table.hpp"

namespace madstorm {

const char* to_string(ErrorKind k) noexcept {
  switch (k) {
    case ErrorKind::kBadStatus: return "bad_status";
    case ErrorKind::kWrongMethod: return "wrong_method";
    case ErrorKind::kWrongAttr: return "wrong_attr";
    case ErrorKind::kWrongRecord: return "wrong_record";
    case ErrorKind::kMalformed: return "malformed";
    case ErrorKind::kRmppAborted: return "rmpp_aborted";
    case ErrorKind::kWrongPath: return "wrong_path";
    case ErrorKind::kMisdirected: return "misdirected";
  }
  return "unknown";
}

double StormResult::elapsed_s() const noexcept {
  if (counters.issued == 0) return 0.0;
  return end_ns > first_issue_ns ? static_cast<double>(end_ns - first_issue_ns) / 1e9 : 0.0;
}
double StormResult::throughput_qps() const noexcept {
  const double e = elapsed_s();
  return e > 0 ? static_cast<double>(counters.answered) / e : 0.0;
}
double StormResult::throughput_without_oracle_qps() const noexcept {
  const double e = elapsed_s() - static_cast<double>(counters.oracle_ns) / 1e9;
  return e > 0 ? static_cast<double>(counters.answered) / e : 0.0;
}
double StormResult::issue_rate_qps() const noexcept {
  if (counters.issued < 2 || last_issue_ns <= first_issue_ns) return 0.0;
  return static_cast<double>(counters.issued - 1) / (static_cast<double>(last_issue_ns - first_issue_ns) / 1e9);
}


void Storm::build_request(const StormConfig& cfg, std::span<const Host> hosts, const Query& q, MadBuf& out) noexcept {
  wire::SaMad sa{};
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = method_of(q.kind);
  sa.hdr.attr_id = wire::be16::from(attr_of(q.kind));
  const Host& src = hosts[q.src];
  const Host& dst = hosts[q.dst];
  const std::uint64_t prefix = cfg.sa.subnet_prefix;
  switch (q.kind) {
    case QueryKind::kPathRecord:
    case QueryKind::kPathTable: {
      wire::PathRecord pr{};
      std::uint64_t cm = 0;
      if (cfg.by_gid) {
        pr.sgid = gid_of(prefix, src.port_guid);
        cm |= wire::path_record_cm::kSGid;
      } else {
        pr.slid = wire::be16::from(src.lid);
        cm |= wire::path_record_cm::kSLid;
      }
      if (q.kind == QueryKind::kPathRecord) {
        if (cfg.by_gid) {
          pr.dgid = gid_of(prefix, dst.port_guid);
          cm |= wire::path_record_cm::kDGid;
        } else {
          pr.dlid = wire::be16::from(dst.lid);
          cm |= wire::path_record_cm::kDLid;
        }
      }
      sa.comp_mask = wire::be64::from(cm);
      wire::encode(pr, std::span<std::uint8_t>(sa.data));
      break;
    }
    case QueryKind::kNodeRecord: {
      wire::NodeRecord nr{};
      nr.lid = wire::be16::from(dst.lid);
      sa.comp_mask = wire::be64::from(wire::node_record_cm::kLid);
      wire::encode(nr, std::span<std::uint8_t>(sa.data));
      break;
    }
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: {
      wire::McMemberRecord mc{};
      const bool mgid_set = cfg.sa.mgid.prefix.get() != 0 || cfg.sa.mgid.guid.get() != 0;
      mc.mgid = q.group == 0 && mgid_set ? cfg.sa.mgid : ipoib_group_mgid(q.group, src.port_guid);
      mc.port_gid = gid_of(prefix, src.port_guid);
      mc.set_join_state(wire::join_state::kFullMember);
      // The requester stands in for the host whose PortGID it names (IBA 15.2.5.17: ProxyJoin).
      mc.set_proxy_join(true);
      std::uint64_t cm = wire::mc_member_record_cm::kMGid | wire::mc_member_record_cm::kPortGid |
                         wire::mc_member_record_cm::kJoinState;
      if (q.kind == QueryKind::kMcJoin && q.group != 0) {
        // A group its first joiner creates: the components a create needs
        // (IBA o15-0.2.x; OpenSM's REQUIRED_MC_CREATE_COMP_MASK), as IPoIB
        // sends them, with the default partition and IPoIB's Q_Key.
        mc.qkey = wire::be32::from(kIpoibQkey);
        mc.pkey = wire::be16::from(0xffff);
        cm |= wire::mc_member_record_cm::kQKey | wire::mc_member_record_cm::kTClass | wire::mc_member_record_cm::kPKey |
              wire::mc_member_record_cm::kFlowLabel | wire::mc_member_record_cm::kSl;
      }
      sa.comp_mask = wire::be64::from(cm);
      wire::encode(mc, std::span<std::uint8_t>(sa.data));
      break;
    }
    case QueryKind::kInformSub: {
      // The SA client's subscription, Set again on reregistration: traps 64
      // (GID in service) about the host's own port, reported to the requester.
      wire::InformInfo ii{};
      ii.gid = gid_of(prefix, src.port_guid);
      ii.lid_range_begin = wire::be16::from(wire::kInformAllLids);
      ii.is_generic = 1;
      ii.subscribe = 1;
      ii.type = wire::be16::from(wire::inform_type::kSubnetMgmt);
      ii.set_trap_number(64);
      ii.set_producer_type(wire::inform_type::kSubnetMgmt);
      wire::encode(ii, std::span<std::uint8_t>(sa.data));
      break;
    }
  }
  wire::encode(sa, std::span<std::uint8_t>(out.mad.bytes));
  out.len = wire::kMadSize;
  out.addr = madengine::MadAddr{};
  out.addr.lid = cfg.sa.lid;
  out.addr.remote_qpn = 1;
  out.addr.qkey = madengine::kGsiQkey;
  out.addr.sl = cfg.sa.sl;
  out.addr.pkey_index = cfg.sa.pkey_index;
  out.resp_timeout_ms = cfg.retry.timeout_ms;
}

Storm::Impl::Impl(const StormConfig& c, madengine::Transport& t, const madengine::Clock& clk, std::span<const Host> h,
     Workload& w)
    : cfg(c), transport(t), clock(clk), hosts(h), workload(w), slots(c.window_max),
      per_host(h.size(), 0), per_host_window(h.size(), static_cast<std::uint16_t>(c.window_per_host_max)),
      ports(dynamic_cast<madstorm::RequesterPorts*>(&t)), rmpp(clk, *this, &Impl::on_rmpp_done, this, rmpp_config(c)) {
  for (const auto& [host, window] : c.window_overrides) {
    if (host >= h.size() || window == 0 || window > 0xffff)
      throw std::invalid_argument("window override for host " + std::to_string(host) + ": host must be below " +
                                  std::to_string(h.size()) + " and window 1..65535");
    per_host_window[host] = static_cast<std::uint16_t>(window);
  }
  if (ports != nullptr) {
    const auto r = ports->requesters();
    bool same = r.size() == h.size();
    for (std::size_t i = 0; same && i < h.size(); ++i) same = r[i].lid == h[i].lid;
    if (!same) throw std::invalid_argument("the storm's hosts are not the transport's requesters");
  }
  result.per_host_ports = ports != nullptr;
  if (by_source) {
    const auto n = static_cast<std::uint32_t>(w.sources());
    ready.resize(n);
    in_ready.assign(n, 0);
    cursor.assign(n, 0);
    source_of_host.assign(h.size(), kNone);
    for (std::uint32_t k = 0; k < n; ++k) source_of_host[w.source_host(k)] = k;
    for (std::uint32_t i = 0; i < n; ++i) push_ready(w.turn(i));
    sources_left = w.per_source_total() != 0 ? n : 0;
  }
  result.busy_answers_by_host.assign(h.size(), 0);
  for (std::uint32_t i = 0; i < slots.size(); ++i) slots[i].next_free = i + 1 < slots.size() ? i + 1 : kNone;
  free_head = 0;
  tx_queue.resize(c.window_max + kCtlQueueMax);
  ctl_bufs.resize(kCtlQueueMax);
  rx_bufs.resize(kRxBurst);
  for (std::size_t i = 0; i < kRxBurst; ++i) rx_ptrs[i] = &rx_bufs[i];
  result.series.assign(c.buckets_max, SeriesBucket{});
  result.bucket_ns = c.bucket_ns;
  result.hosts = h.size();
}

madengine::RmppConfig Storm::Impl::rmpp_config(const StormConfig& c) {
  madengine::RmppConfig r;
  // Finished transfers linger (to re-ACK a lost final ACK) and hold their
  // slot meanwhile: room for a window of active ones plus the lingering.
  r.transfers_max = c.rmpp_transfers_max != 0 ? c.rmpp_transfers_max : std::clamp<std::uint32_t>(2 * c.window_max, 4, 512);
  r.segments_max = c.rmpp_segments_max;
  const Nanos timeout_ns = static_cast<Nanos>(c.retry.timeout_ms) * madengine::kNanosPerMilli;
  r.total_timeout_ns = timeout_ns * (c.retry.retries + 1);
  r.linger_ns = std::min<Nanos>(r.linger_ns, timeout_ns);
  return r;
}

bool Storm::Impl::send(const MadBuf& buf) noexcept {
  if (ctl_count == kCtlQueueMax || tx_len == tx_queue.size()) return false;
  MadBuf& b = ctl_bufs[ctl_next];
  ctl_next = (ctl_next + 1) % kCtlQueueMax;
  ++ctl_count;
  b = buf;
  // An ACK leaves from the host whose query the transfer answers.
  const std::uint32_t slot = static_cast<std::uint32_t>(buf.hdr().tid.get()) & ((1u << slot_bits) - 1);
  tx_queue[tx_len++] = {&b, kNone, slot < slots.size() ? slots[slot].q.src : 0};
  return true;
}

Storm::Storm(const StormConfig& cfg, madengine::Transport& transport, const madengine::Clock& clock,
             std::span<const Host> hosts, Workload& workload) {
  if (cfg.window_max == 0 || cfg.window_max > (1u << kSlotBitsMax))
    throw std::invalid_argument("window must be 1.." + std::to_string(1u << kSlotBitsMax));
  if (cfg.window_per_host_max == 0 || cfg.window_per_host_max > 0xffff)
    throw std::invalid_argument("per-host window must be 1..65535");
  if (cfg.retry.timeout_ms == 0) throw std::invalid_argument("timeout must be at least 1 ms");
  if (cfg.sa.lid == 0 || cfg.sa.lid >= 0xc000) throw std::invalid_argument("SA LID " + std::to_string(cfg.sa.lid) + " is not a unicast LID");
  if (!(cfg.rate_qps >= 0) || !std::isfinite(cfg.rate_qps)) throw std::invalid_argument("rate must be >= 0");
  if (cfg.bucket_ns <= 0 || cfg.buckets_max == 0) throw std::invalid_argument("bad time-series bounds");
  if (hosts.empty()) throw std::invalid_argument("no hosts");
  for (const Host& h : hosts)
    if (h.lid == 0 || h.lid >= 0xc000) throw std::invalid_argument("host with LID " + std::to_string(h.lid) + " is not addressable");
  impl_ = std::make_unique<Impl>(cfg, transport, clock, hosts, workload);
}

Storm::~Storm() = default;

void Storm::set_oracle(PathOracle* oracle) noexcept {
  if (impl_) {
    impl_->oracle = oracle;
    impl_->result.oracle = oracle != nullptr;
  }
}

StormResult Storm::run() {
  if (!impl_) throw std::logic_error("Storm::run called twice");
  StormResult r = impl_->run(idle_, progress_, progress_interval_ns_, stop_requested_);
  impl_.reset();
  return r;
}

}  // namespace madstorm
