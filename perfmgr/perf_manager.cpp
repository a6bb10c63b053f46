// The performance manager's rounds, requests and readings (see perf_manager.hpp).
#include "perfmgr/perf_manager.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "madengine/wire/class_port_info.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/perf.hpp"

namespace madengine::perfmgr {

namespace {

constexpr std::uint32_t kNoRequest = 0xffffffffu;
constexpr Nanos kNoSubnetRetryNs = kNanosPerMilli * 10;  // no epoch yet: look again soon (an atomic load)

std::uint64_t port_key(std::uint64_t node_guid, std::uint8_t port) noexcept { return node_guid << 8 | port; }

// The time the core spends in the manager's code, by the steady clock: the
// thread's CPU clock is a system call (microseconds in a VM), which made the
// measurement most of what it measured.
std::uint64_t steady_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Adds the time of a scope on the core to a counter, and keeps the longest.
class CpuScope {
 public:
  CpuScope(PerfMgrCounters& c, std::uint64_t& sink) noexcept : c_(c), sink_(sink), start_(steady_ns()) {}
  ~CpuScope() {
    const std::uint64_t took = steady_ns() - start_;
    sink_ += took;
    c_.slice_max_ns = std::max(c_.slice_max_ns, took);
  }
  CpuScope(const CpuScope&) = delete;
  CpuScope& operator=(const CpuScope&) = delete;

 private:
  PerfMgrCounters& c_;
  std::uint64_t& sink_;
  std::uint64_t start_;
};

class PerfResponseHook final : public MadHandler {
 public:
  PerfResponseHook(PerfManager& pm, MadHandler* next) noexcept : pm_(pm), next_(next) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    if (buf.hdr().klass() == wire::MgmtClass::kPerf && pm_.on_response(buf)) return;
    if (next_ != nullptr) next_->on_mad(buf, ctx);
  }

 private:
  PerfManager& pm_;
  MadHandler* next_;
};

std::string counter_list(std::uint32_t bits, const CounterSet& change) {
  std::string out;
  for (std::size_t i = kFirstError; i < kCounters; ++i)
    if (bits & (1u << (i - kFirstError)))
      out += fmt::format("{}{} +{}", out.empty() ? "" : ", ", iba_name(static_cast<Counter>(i)), change[i]);
  return out;
}

}  // namespace

PerfManager::PerfManager(Engine& engine, std::uint16_t core, std::uint8_t port_num, const sa::SnapshotStore& store,
                         PerfMgrConfig cfg, NodeNameMap names, AlarmFn on_alarm)
    : engine_(engine),
      core_(core),
      port_num_(port_num),
      store_(store),
      cfg_(std::move(cfg)),
      names_(std::move(names)),
      on_alarm_(std::move(on_alarm)),
      clock_(engine.core(core).clock()) {
  if (cfg_.interval_ms == 0 || cfg_.outstanding_max == 0 || cfg_.timeout_ms == 0)
    throw std::invalid_argument("perfmgr: interval_ms, outstanding_max and timeout_ms must be >= 1");
  // A target holds at most two requests (PortCounters and the extended
  // ones, or a ClassPortInfo then those) and a clear: twice the bound plus
  // slack covers every target the gate lets in.
  const std::uint32_t requests = 2 * cfg_.outstanding_max + 8;
  txn_ = std::make_unique<TransactionManager>(
      clock_, engine.core(core),
      TransactionConfig{.core_id = static_cast<std::uint8_t>(core),
                        .window_max = cfg_.outstanding_max,
                        .window_per_dest_max = std::min<std::uint32_t>(4, cfg_.outstanding_max),
                        .queue_max = requests});
  opts_ = RequestOptions{.timeout_ms = cfg_.timeout_ms, .retries = static_cast<std::uint8_t>(std::min(cfg_.retries, 255u))};
  requests_.resize(requests);
  for (std::uint32_t i = 0; i < requests; ++i) requests_[i].next_free = i + 1 < requests ? i + 1 : kNoRequest;
  free_request_ = 0;
  engine.add_transaction_manager(core, *txn_, port_num);
  engine.add_poller(core, *this);
}

PerfManager::~PerfManager() {
  // Outstanding requests complete (cancelled) into done() while the targets
  // still exist; send() sees no manager then and asks nothing more.
  const std::unique_ptr<TransactionManager> txn = std::move(txn_);
}

std::unique_ptr<MadHandler> PerfManager::response_hook(MadHandler* next) {
  return std::make_unique<PerfResponseHook>(*this, next);
}

std::shared_ptr<const PerfTable> PerfManager::table() const {
  std::lock_guard lock(mu_);
  return table_;
}

PerfMgrCounters PerfManager::counters() const {
  std::lock_guard lock(mu_);
  return shared_counters_;
}

void PerfManager::copy_counters() noexcept {
  std::lock_guard lock(mu_);
  shared_counters_ = counters_;
}

bool PerfManager::on_response(const MadBuf& buf) noexcept {
  CpuScope cpu(counters_, counters_.cpu_ns);
  return txn_->on_response(buf);
}

Nanos PerfManager::next_deadline_ns() const noexcept {
  if (paused_) return -1;
  switch (phase_) {
    case Phase::kIdle: return retired_ ? 0 : next_round_ns_;
    case Phase::kReading: return next_target_ < targets_.size() ? next_issue_ns_ : -1;  // else the answers' timers
    default: return 0;  // a slice of listing or publishing is due
  }
}

std::size_t PerfManager::poll(Nanos now_ns) noexcept {
  if (paused_) return 0;
  std::size_t work = 0;
  switch (phase_) {
    case Phase::kIdle:
      if (retired_) work += shed_retired();
      if (now_ns < next_round_ns_) break;
      {
        CpuScope cpu(counters_, counters_.cpu_ns);
        if (!start_round(now_ns)) {
          next_round_ns_ = now_ns + kNoSubnetRetryNs;
          break;
        }
        work += list_slice(now_ns);
      }
      break;
    case Phase::kListing: {
      CpuScope cpu(counters_, counters_.cpu_ns);
      work += list_slice(now_ns);
      break;
    }
    case Phase::kReading: {
      probe_sa(now_ns);
      const bool due = (next_target_ < targets_.size() && now_ns >= next_issue_ns_ && open_ < cfg_.outstanding_max) ||
                       (next_target_ >= targets_.size() && open_ == 0);
      if (!due) break;  // most polls: nothing to issue (and no clock read to count it)
      CpuScope cpu(counters_, counters_.cpu_ns);
      while (next_target_ < targets_.size() && now_ns >= next_issue_ns_ && open_ < cfg_.outstanding_max) {
        issue(next_target_++);
        next_issue_ns_ += sa_busy_ ? spacing_ns_ * kBusyStretch : spacing_ns_;
        ++work;
      }
      if (next_target_ >= targets_.size() && open_ == 0) {
        phase_ = Phase::kPublishing;
        building_ = std::make_shared<PerfTable>();
        building_->ports.reserve(targets_.size());
        cursor_ = 0;
        forget_ = ports_.begin();  // stays valid: nothing joins ports_ while publishing
      }
      break;
    }
    case Phase::kPublishing: {
      CpuScope cpu(counters_, counters_.cpu_ns);
      work += publish_slice(now_ns);
      break;
    }
  }
  // Readers see the counters move within a round too (a round may be minutes).
  if (now_ns - last_copy_ns_ >= kNanosPerSecond) {
    last_copy_ns_ = now_ns;
    copy_counters();
  }
  return work;
}

void PerfManager::retune(const PerfMgrConfig& fresh) noexcept {
  if (fresh.interval_ms == 0 || fresh.timeout_ms == 0) return;  // the config's checks refuse them first
  // Before the first round the next one is due as soon as the subnet is up.
  if (phase_ != Phase::kIdle || counters_.rounds > 0)
    next_round_ns_ = round_start_ns_ + Nanos{fresh.interval_ms} * kNanosPerMilli;
  cfg_.interval_ms = fresh.interval_ms;
  cfg_.timeout_ms = fresh.timeout_ms;
  cfg_.retries = fresh.retries;
  cfg_.thresholds = fresh.thresholds;
  cfg_.sa_busy_qps = fresh.sa_busy_qps;
  opts_ = RequestOptions{.timeout_ms = cfg_.timeout_ms, .retries = static_cast<std::uint8_t>(std::min(cfg_.retries, 255u))};
}

void PerfManager::set_enabled(bool on) noexcept {
  if (on == !paused_) return;
  const Nanos now_ns = clock_.now_ns();
  if (!on) {
    paused_ = true;
    paused_at_ns_ = now_ns;
    copy_counters();
    return;
  }
  paused_ = false;
  probe_ns_ = -1;  // the SA's rate is measured afresh
  const Nanos shift = now_ns - paused_at_ns_;
  round_start_ns_ += shift;
  next_issue_ns_ += shift;
  next_round_ns_ += shift;
}

void PerfManager::set_sa_load(std::function<std::uint64_t()> requests_received) {
  sa_load_ = std::move(requests_received);
}

// The SA's request rate over the last probe interval: busy above sa_busy_qps.
void PerfManager::probe_sa(Nanos now_ns) noexcept {
  if (!sa_load_ || cfg_.sa_busy_qps == 0) {
    sa_busy_ = false;
    return;
  }
  if (probe_ns_ >= 0 && now_ns - probe_ns_ < kLoadProbeNs) return;
  const std::uint64_t n = sa_load_();
  if (probe_ns_ >= 0) {
    if (sa_busy_) counters_.yield_ns += static_cast<std::uint64_t>(now_ns - probe_ns_);
    const double qps = static_cast<double>(n - probe_count_) * 1e9 / static_cast<double>(now_ns - probe_ns_);
    sa_busy_ = qps > cfg_.sa_busy_qps;
  }
  probe_ns_ = now_ns;
  probe_count_ = n;
}

bool PerfManager::start_round(Nanos now_ns) {
  listing_ = store_.current();
  if (!listing_) return false;
  targets_.clear();
  cursor_ = 0;
  phase_ = Phase::kListing;
  round_epoch_ = listing_->epoch;
  round_start_ns_ = now_ns;
  next_round_ns_ = now_ns + Nanos{cfg_.interval_ms} * kNanosPerMilli;
  return true;
}

// The round's ports, kSliceNodes nodes of the epoch at a time: a port new
// to the manager, or whose node or peer changed, gets its names here.
std::size_t PerfManager::list_slice(Nanos now_ns) {
  const fabric::Fabric& f = listing_->fabric;
  const std::uint64_t round = counters_.rounds + 1;
  const std::size_t end = std::min<std::size_t>(f.nodes.size(), cursor_ + kSliceNodes);
  for (; cursor_ < end; ++cursor_) {
    const fabric::Node& n = f.nodes[cursor_];
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || port.state < static_cast<std::uint8_t>(wire::PortState::kInit)) continue;
      Target t;
      t.node_guid = n.node_guid;
      t.lid = n.is_switch() ? n.base_lid : (p < n.port_lids.size() ? n.port_lids[p] : 0);
      if (t.lid == 0) continue;  // not reachable by LID yet
      t.port_num = p;
      targets_.push_back(t);
      Kept& k = ports_[port_key(n.node_guid, p)];
      k.round = round;
      PortPerf& pp = k.perf;
      pp.node_guid = n.node_guid;
      pp.port_guid = n.is_switch() ? n.ports[0].guid : port.guid;
      pp.port_num = p;
      pp.lid = t.lid;
      pp.is_switch = n.is_switch();
      if (pp.description != n.description) pp.description = n.description;
      pp.peer_guid = f.nodes[port.peer].node_guid;
      pp.peer_port = port.peer_port;
    }
  }
  if (cursor_ < f.nodes.size()) return 1;
  listing_.reset();
  phase_ = Phase::kReading;
  next_target_ = 0;
  const Nanos interval_ns = Nanos{cfg_.interval_ms} * kNanosPerMilli;
  spacing_ns_ = targets_.empty() ? interval_ns : std::max<Nanos>(1, interval_ns / static_cast<Nanos>(targets_.size()));
  next_issue_ns_ = now_ns;
  return 1;
}

// The table every reader sees, kSlicePorts ports at a time (in the epoch's
// node order), then the ports no longer in the fabric forgotten, then the
// table swapped in. Each slice is short: the core answers queries between.
std::size_t PerfManager::publish_slice(Nanos now_ns) {
  if (cursor_ < targets_.size()) {
    const std::size_t end = std::min<std::size_t>(targets_.size(), cursor_ + kSlicePorts);
    for (; cursor_ < end; ++cursor_) {
      const auto it = ports_.find(port_key(targets_[cursor_].node_guid, targets_[cursor_].port_num));
      if (it != ports_.end()) building_->ports.push_back(it->second.perf);
    }
    return 1;
  }
  const std::uint64_t round = counters_.rounds + 1;
  for (std::size_t n = 0; n < kSlicePorts && forget_ != ports_.end(); ++n)
    forget_ = forget_->second.round == round ? std::next(forget_) : ports_.erase(forget_);
  if (forget_ != ports_.end()) return 1;

  phase_ = Phase::kIdle;
  ++counters_.rounds;
  counters_.last_round_ports = targets_.size();
  counters_.last_round_s = static_cast<double>(now_ns - round_start_ns_) / 1e9;
  building_->round = counters_.rounds;
  building_->epoch = round_epoch_;
  building_->round_end_ns = now_ns;
  targets_.clear();
  if (next_round_ns_ < now_ns) next_round_ns_ = now_ns;
  std::shared_ptr<PerfTable> old = std::move(published_);
  published_ = std::move(building_);
  {
    std::lock_guard lock(mu_);
    table_ = published_;
  }
  // The last round's table goes in slices too, unless a reader still holds it (it frees it then).
  if (old.use_count() == 1) retired_ = std::move(old);
  copy_counters();
  return 1;
}

std::size_t PerfManager::shed_retired() noexcept {
  std::vector<PortPerf>& v = retired_->ports;
  for (std::size_t n = 0; n < kSlicePorts && !v.empty(); ++n) v.pop_back();
  if (v.empty()) retired_.reset();
  return 1;
}

void PerfManager::issue(std::uint32_t t) noexcept {
  Target& tg = targets_[t];
  tg.failed = false;
  NodeCpi& cpi = cpi_[tg.node_guid];
  if (cpi.state == CpiState::kKnown) {
    send_counters(t);
    return;
  }
  ++open_;  // a placeholder until the ClassPortInfo answer lets it send
  cpi.waiting.push_back(t);
  if (cpi.state == CpiState::kPending) return;
  cpi.state = CpiState::kPending;
  ++counters_.cpi_reads;
  if (!send(t, wire::perf_attr::kClassPortInfo, wire::method::kGet, 0, 0)) {
    // Nothing went out: take the 32-bit counters this round, ask again next round.
    cpi.state = CpiState::kUnknown;
    std::vector<std::uint32_t> waiting;
    waiting.swap(cpi.waiting);
    for (const std::uint32_t w : waiting) {
      --open_;
      send_counters(w);
    }
  }
}

void PerfManager::send_counters(std::uint32_t t) noexcept {
  Target& tg = targets_[t];
  const NodeCpi& cpi = cpi_[tg.node_guid];
  tg.ext = (cpi.cap & (wire::perf_cap::kExtendedWidth | wire::perf_cap::kExtendedWidthNoIetf)) != 0;
  tg.xmit_wait = (cpi.cap & wire::perf_cap::kXmitWait) != 0;
  tg.waiting = tg.ext ? 2 : 1;
  // As OpenSM's perfmgr asks: every counter selected, PortXmitWait too.
  const bool pc = send(t, wire::perf_attr::kPortCounters, wire::method::kGet, wire::pc_select::kAll, wire::pc_select::kXmitWait2);
  if (!pc) {
    tg.failed = true;
    --tg.waiting;
  }
  if (tg.ext && !send(t, wire::perf_attr::kPortCountersExtended, wire::method::kGet, 0, 0)) {
    tg.failed = true;
    --tg.waiting;
  }
  if (tg.waiting == 0) finalize(t, clock_.now_ns());
}

bool PerfManager::send(std::uint32_t t, std::uint16_t attr, std::uint8_t method, std::uint16_t select,
                       std::uint8_t select2) noexcept {
  if (!txn_ || free_request_ == kNoRequest) return false;
  const Target& tg = targets_[t];
  MadBuf req{};
  wire::MadHeader& h = req.hdr();
  h.base_version = 1;
  h.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kPerf);
  h.class_version = wire::kPerfClassVersion;
  h.method = method;
  h.attr_id.set(attr);
  std::uint8_t* data = req.mad.bytes.data() + wire::kPerfDataOffset;
  if (attr == wire::perf_attr::kPortCounters) {
    wire::PortCounters pc{};
    pc.port_select = tg.port_num;
    pc.counter_select.set(select);
    pc.counter_select2 = select2;
    wire::encode(pc, std::span<std::uint8_t>(data, wire::kPerfDataSize));
  } else if (attr == wire::perf_attr::kPortCountersExtended) {
    wire::PortCountersExtended e{};
    e.port_select = tg.port_num;
    wire::encode(e, std::span<std::uint8_t>(data, wire::kPerfDataSize));
  }
  req.len = static_cast<std::uint16_t>(wire::kMadSize);
  req.addr.port_num = port_num_;
  req.addr.lid = tg.lid;
  req.addr.remote_qpn = 1;
  req.addr.qkey = kGsiQkey;
  const std::uint32_t slot = free_request_;
  Request& rq = requests_[slot];
  rq.self = this;
  rq.target = t;
  rq.attr = attr;
  rq.clear = method == wire::method::kSet;
  if (txn_->request(req, opts_, &PerfManager::on_done, &rq) != TxnStatus::kOk) return false;
  free_request_ = rq.next_free;
  ++open_;
  ++counters_.mads;
  return true;
}

void PerfManager::on_done(void* user, const TxnResult& r) noexcept {
  Request& rq = *static_cast<Request*>(user);
  rq.self->done(rq, r);
}

void PerfManager::done(Request& rq, const TxnResult& r) noexcept {
  const std::uint32_t t = rq.target;
  const std::uint16_t attr = rq.attr;
  const bool clear = rq.clear;
  rq.next_free = free_request_;
  free_request_ = static_cast<std::uint32_t>(&rq - requests_.data());
  --open_;
  if (t >= targets_.size()) return;  // the manager shut down mid-round
  Target& tg = targets_[t];
  const bool ok = r.status == TxnStatus::kOk && (r.response.hdr().status.get() & wire::status::kCodeMask) == 0;
  if (!ok) ++counters_.failed;
  const std::span<const std::uint8_t> data =
      ok ? std::span<const std::uint8_t>(r.response.mad.bytes.data() + wire::kPerfDataOffset, wire::kPerfDataSize)
         : std::span<const std::uint8_t>();
  const Nanos now_ns = clock_.now_ns();
  if (attr == wire::perf_attr::kClassPortInfo) {
    NodeCpi& cpi = cpi_[tg.node_guid];
    cpi.state = CpiState::kKnown;
    // A PMA that does not answer ClassPortInfo is read through PortCounters alone.
    cpi.cap = ok ? wire::decode<wire::ClassPortInfo>(data)->capability_mask.get() : 0;
    if (!ok) cpi.state = CpiState::kUnknown;  // asked again next round
    std::vector<std::uint32_t> waiting;
    waiting.swap(cpi.waiting);
    for (const std::uint32_t w : waiting) {
      --open_;
      send_counters(w);
    }
    return;
  }
  if (clear) {
    // The Set's answer holds the counters after the clear: the next change counts from them.
    auto it = ports_.find(port_key(tg.node_guid, tg.port_num));
    if (ok && it != ports_.end()) {
      CounterSet after = from_port_counters(*wire::decode<wire::PortCounters>(data));
      PortPerf& p = it->second.perf;
      if (p.extended)
        for (Counter c : {Counter::kXmitData, Counter::kRcvData, Counter::kXmitPkts, Counter::kRcvPkts})
          at(after, c) = at(p.raw, c);
      p.raw = after;
      ++p.clears;
      ++counters_.clears;
    }
    return;
  }
  if (!ok) tg.failed = true;
  else if (attr == wire::perf_attr::kPortCounters) tg.pc = *wire::decode<wire::PortCounters>(data);
  else tg.pce = *wire::decode<wire::PortCountersExtended>(data);
  if (--tg.waiting == 0) finalize(t, now_ns);
}

void PerfManager::finalize(std::uint32_t t, Nanos now_ns) noexcept {
  Target& tg = targets_[t];
  // Listed this round (list_slice): the port's names are there already.
  PortPerf& p = ports_[port_key(tg.node_guid, tg.port_num)].perf;
  if (tg.failed) {
    ++p.failures;
    return;
  }
  CounterSet now = from_port_counters(tg.pc);
  if (tg.ext) take_extended(now, tg.pce);
  const bool first = p.reads == 0 || p.extended != tg.ext;
  p.change = first ? CounterSet{} : delta(p.raw, now);
  for (std::size_t i = 0; i < kCounters; ++i) p.total[i] += p.change[i];
  p.interval_s = first ? 0 : static_cast<double>(now_ns - p.read_ns) / 1e9;
  p.raw = now;
  p.extended = tg.ext;
  p.read_ns = now_ns;
  ++p.reads;
  ++counters_.port_reads;

  const std::uint32_t over = first ? 0 : over_thresholds(p.change, cfg_.thresholds);
  if (over != 0 && !p.over_threshold) {
    PortAlarm a;
    a.node_guid = p.node_guid;
    a.port_guid = p.port_guid;
    a.port_num = p.port_num;
    a.lid = p.lid;
    a.is_switch = p.is_switch;
    a.name = std::string(names_.name(p.node_guid, p.description));
    a.counters = over;
    a.change = p.change;
    a.raw = p.raw;
    a.interval_s = p.interval_s;
    spdlog::warn("perfmgr: \"{}\" (0x{:016x}) port {} lid {}: errors past the thresholds in {:.1f} s: {}", a.name,
                 a.node_guid, a.port_num, a.lid, a.interval_s, counter_list(over, p.change));
    ++counters_.alarms;
    if (on_alarm_) on_alarm_(a);
  }
  p.over_threshold = over != 0;

  // OpenSM's clear rule: counters near saturation are cleared before they stick.
  const std::uint16_t select = clear_select(tg.pc, tg.ext, tg.xmit_wait);
  if (select != 0) {
    spdlog::info("perfmgr: \"{}\" port {}: counters near saturation: cleared (CounterSelect 0x{:04x})",
                 names_.name(p.node_guid, p.description), p.port_num, select);
    send(t, wire::perf_attr::kPortCounters, wire::method::kSet, select,
         tg.xmit_wait ? wire::pc_select::kXmitWait2 : std::uint8_t{0});
  }
}

}  // namespace madengine::perfmgr
