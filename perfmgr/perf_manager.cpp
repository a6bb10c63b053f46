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

// Adds the time of a scope on the core to a counter.
class CpuScope {
 public:
  explicit CpuScope(std::uint64_t& sink) noexcept : sink_(sink), start_(steady_ns()) {}
  ~CpuScope() { sink_ += steady_ns() - start_; }
  CpuScope(const CpuScope&) = delete;
  CpuScope& operator=(const CpuScope&) = delete;

 private:
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
  CpuScope cpu(counters_.cpu_ns);
  return txn_->on_response(buf);
}

Nanos PerfManager::next_deadline_ns() const noexcept {
  if (paused_) return -1;
  if (!in_round_) return next_round_ns_;
  if (next_target_ < targets_.size()) return next_issue_ns_;
  return -1;  // waiting for answers: the transaction manager's timers wake the core
}

std::size_t PerfManager::poll(Nanos now_ns) noexcept {
  if (paused_) return 0;
  if (!in_round_) {
    if (now_ns < next_round_ns_) return 0;
    CpuScope cpu(counters_.cpu_ns);
    if (!start_round(now_ns)) {
      next_round_ns_ = now_ns + kNoSubnetRetryNs;
      return 0;
    }
  }
  const bool due = (next_target_ < targets_.size() && now_ns >= next_issue_ns_ && open_ < cfg_.outstanding_max) ||
                   (next_target_ >= targets_.size() && open_ == 0);
  if (!due) return 0;  // most polls: nothing to issue (and no clock read to count it)
  std::size_t work = 0;
  {
    CpuScope cpu(counters_.cpu_ns);
    while (next_target_ < targets_.size() && now_ns >= next_issue_ns_ && open_ < cfg_.outstanding_max) {
      issue(next_target_++);
      next_issue_ns_ += spacing_ns_;
      ++work;
    }
    if (next_target_ >= targets_.size() && open_ == 0) finish_round(now_ns);
  }
  // Readers see the counters move within a round too (a round may be minutes).
  if (now_ns - last_copy_ns_ >= kNanosPerSecond) {
    last_copy_ns_ = now_ns;
    copy_counters();
  }
  return work;
}

void PerfManager::retune(std::uint32_t interval_ms, std::uint32_t timeout_ms, std::uint32_t retries,
                         const ErrorThresholds& thresholds) noexcept {
  if (interval_ms == 0 || timeout_ms == 0) return;  // the config's checks refuse them first
  // Before the first round the next one is due as soon as the subnet is up.
  if (in_round_ || counters_.rounds > 0) next_round_ns_ = round_start_ns_ + Nanos{interval_ms} * kNanosPerMilli;
  cfg_.interval_ms = interval_ms;
  cfg_.timeout_ms = timeout_ms;
  cfg_.retries = retries;
  cfg_.thresholds = thresholds;
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
  const Nanos shift = now_ns - paused_at_ns_;
  round_start_ns_ += shift;
  next_issue_ns_ += shift;
  next_round_ns_ += shift;
}

bool PerfManager::start_round(Nanos now_ns) {
  const std::shared_ptr<const sa::Snapshot> snap = store_.current();
  if (!snap) return false;
  targets_.clear();
  const fabric::Fabric& f = snap->fabric;
  for (const fabric::Node& n : f.nodes) {
    for (std::uint8_t p = 1; p <= n.num_ports(); ++p) {
      const fabric::Port& port = n.ports[p];
      if (!port.linked() || port.state < static_cast<std::uint8_t>(wire::PortState::kInit)) continue;
      Target t;
      t.node_guid = n.node_guid;
      t.port_guid = n.is_switch() ? n.ports[0].guid : port.guid;
      t.lid = n.is_switch() ? n.base_lid : (p < n.port_lids.size() ? n.port_lids[p] : 0);
      if (t.lid == 0) continue;  // not reachable by LID yet
      t.port_num = p;
      t.is_switch = n.is_switch();
      t.description = n.description;
      t.peer_guid = f.nodes[port.peer].node_guid;
      t.peer_port = port.peer_port;
      targets_.push_back(std::move(t));
    }
  }
  in_round_ = true;
  round_epoch_ = snap->epoch;
  round_start_ns_ = now_ns;
  next_target_ = 0;
  const Nanos interval_ns = Nanos{cfg_.interval_ms} * kNanosPerMilli;
  spacing_ns_ = targets_.empty() ? interval_ns : std::max<Nanos>(1, interval_ns / static_cast<Nanos>(targets_.size()));
  next_issue_ns_ = now_ns;
  next_round_ns_ = now_ns + interval_ns;
  return true;
}

void PerfManager::finish_round(Nanos now_ns) {
  in_round_ = false;
  ++counters_.rounds;
  counters_.last_round_ports = targets_.size();
  counters_.last_round_s = static_cast<double>(now_ns - round_start_ns_) / 1e9;
  auto table = std::make_shared<PerfTable>();
  table->round = counters_.rounds;
  table->epoch = round_epoch_;
  table->round_end_ns = now_ns;
  table->ports.reserve(targets_.size());
  std::unordered_map<std::uint64_t, Kept> kept;
  kept.reserve(targets_.size());
  for (const Target& t : targets_) {
    const std::uint64_t key = port_key(t.node_guid, t.port_num);
    auto it = ports_.find(key);
    if (it == ports_.end()) continue;
    table->ports.push_back(it->second.perf);
    kept.emplace(key, std::move(it->second));
  }
  ports_ = std::move(kept);  // ports gone from the fabric are forgotten
  std::sort(table->ports.begin(), table->ports.end(), [](const PortPerf& a, const PortPerf& b) {
    return a.node_guid != b.node_guid ? a.node_guid < b.node_guid : a.port_num < b.port_num;
  });
  targets_.clear();
  if (next_round_ns_ < now_ns) next_round_ns_ = now_ns;
  {
    std::lock_guard lock(mu_);
    table_ = std::move(table);
  }
  copy_counters();
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
  Kept& k = ports_[port_key(tg.node_guid, tg.port_num)];
  PortPerf& p = k.perf;
  p.node_guid = tg.node_guid;
  p.port_guid = tg.port_guid;
  p.port_num = tg.port_num;
  p.lid = tg.lid;
  p.is_switch = tg.is_switch;
  p.description = tg.description;
  p.peer_guid = tg.peer_guid;
  p.peer_port = tg.peer_port;
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
