// The SA server (see sa_server.hpp): record and method kinds, counters,
// the handlers registered on the engine and the owner of each request; the
// per-core work is SaServer::CoreWorker (core_worker.hpp and its files).
#include "sa/server/sa_server.hpp"

#include <algorithm>
#include <stdexcept>

#include "engine/dispatch.hpp"
#include "sa/server/core_worker.hpp"

namespace madengine::sa {

SaRecordKind record_kind(std::uint16_t attr_id) noexcept {
  switch (attr_id) {
    case a::kClassPortInfo: return SaRecordKind::kClassPortInfo;
    case a::kInformInfo: return SaRecordKind::kInformInfo;
    case a::kNodeRecord: return SaRecordKind::kNode;
    case a::kPortInfoRecord: return SaRecordKind::kPortInfo;
    case a::kSl2VlTableRecord: return SaRecordKind::kSl2Vl;
    case a::kSwitchInfoRecord: return SaRecordKind::kSwitchInfo;
    case a::kLinearFwdTableRecord: return SaRecordKind::kLft;
    case a::kMulticastFwdTableRecord: return SaRecordKind::kMft;
    case a::kSmInfoRecord: return SaRecordKind::kSmInfo;
    case a::kLinkRecord: return SaRecordKind::kLink;
    case a::kGuidInfoRecord: return SaRecordKind::kGuidInfo;
    case a::kServiceRecord: return SaRecordKind::kService;
    case a::kPKeyTableRecord: return SaRecordKind::kPKeyTable;
    case a::kPathRecord: return SaRecordKind::kPath;
    case a::kVlArbTableRecord: return SaRecordKind::kVlArb;
    case a::kMcMemberRecord: return SaRecordKind::kMcMember;
    case a::kMultiPathRecord: return SaRecordKind::kMultiPath;
    case a::kInformInfoRecord: return SaRecordKind::kInformInfoRecord;
    default: return SaRecordKind::kOther;
  }
}

const char* to_string(SaRecordKind k) noexcept {
  static constexpr const char* kNames[] = {"ClassPortInfo", "InformInfo", "NodeRecord", "PortInfoRecord",
                                           "SL2VLRecord", "SwitchInfoRecord", "LFTRecord", "MFTRecord",
                                           "SMInfoRecord", "LinkRecord", "GUIDInfoRecord", "ServiceRecord",
                                           "PKeyTableRecord", "PathRecord", "VLArbRecord", "MCMemberRecord",
                                           "MultiPathRecord", "InformInfoRecord", "other"};
  const auto i = static_cast<std::size_t>(k);
  return i < kSaRecordKinds ? kNames[i] : "?";
}

SaRecordCounters& SaRecordCounters::operator+=(const SaRecordCounters& o) noexcept {
  received += o.received;
  answered += o.answered;
  busy += o.busy;
  dropped += o.dropped;
  duplicates += o.duplicates;
  ignored += o.ignored;
  for (std::size_t i = 0; i < errors.size(); ++i) errors[i] += o.errors[i];
  return *this;
}

SaMethodKind method_kind(std::uint8_t method) noexcept {
  switch (method) {
    case wire::method::kGet: return SaMethodKind::kGet;
    case wire::method::kGetTable: return SaMethodKind::kGetTable;
    case wire::method::kGetMulti: return SaMethodKind::kGetMulti;
    case wire::method::kSet: return SaMethodKind::kSet;
    case wire::method::kDelete: return SaMethodKind::kDelete;
    default: return SaMethodKind::kOther;
  }
}

const char* to_string(SaMethodKind k) noexcept {
  static constexpr const char* kNames[] = {"Get", "GetTable", "GetMulti", "Set", "Delete", "other"};
  const auto i = static_cast<std::size_t>(k);
  return i < kSaMethodKinds ? kNames[i] : "?";
}

std::size_t latency_bucket(std::uint64_t ns) noexcept {
  if (ns <= kSaLatencyBucket0Ns) return 0;
  const auto b = static_cast<std::size_t>(std::bit_width((ns - 1) / kSaLatencyBucket0Ns));
  return std::min(b, kSaLatencyBuckets - 1);
}

SaRecordCounters SaCounters::total() const noexcept {
  SaRecordCounters t;
  for (const auto& k : by_kind) t += k;
  return t;
}

namespace {

// Owner selectors. Answers of several MADs (GetTable, GetMulti) run on the
// core the requester's RMPP ACKs reach: the dispatcher steers responses by
// the TID's core field, so the query is steered the same way.
std::uint32_t select_by_tid(const MadBuf& b, const void*) noexcept { return tid_core(b.hdr().tid.get()); }

std::uint32_t select_get(const MadBuf& b, const void*) noexcept {
  const auto& sa = b.as<wire::SaMad>();
  if (sa.hdr.attr_id.get() == a::kPathRecord) {
    const std::uint64_t mask = sa.comp_mask.get();
    if ((mask & wire::path_record_cm::kDLid) != 0)
      return static_cast<std::uint32_t>(b.mad.bytes[kPathRecordDlidOffset] << 8 | b.mad.bytes[kPathRecordDlidOffset + 1]);
    if ((mask & wire::path_record_cm::kDGid) != 0) {
      // GID-addressed (rdma_cm, IPoIB): spread by the DGID's GUID, with no
      // lookup. The cores share the path database, so any core answers any
      // path; the GUID is stable across epochs, so a retry is steered as
      // its first copy was.
      std::uint64_t guid = 0;
      for (std::size_t i = 0; i < 8; ++i) guid = guid << 8 | b.mad.bytes[kPathRecordDgidGuidOffset + i];
      return static_cast<std::uint32_t>(mix(guid));
    }
  }
  return b.addr.lid;
}

}  // namespace

class SaServer::Handler final : public MadHandler {
 public:
  explicit Handler(SaServer& s) : s_(s) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { s_.workers_[ctx.core_id()]->admit(buf, ctx); }

 private:
  SaServer& s_;
};

class SaServer::Hook final : public MadHandler {
 public:
  explicit Hook(SaServer& s) : s_(s) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override { s_.on_response(buf, ctx); }

 private:
  SaServer& s_;
};

class SaServer::Provider final : public McGroupProvider {
 public:
  explicit Provider(const McastStore& g) : g_(g) {}
  std::vector<McGroup> groups() override {
    std::vector<McGroup> out;
    const auto v = g_.view();
    for (const auto& grp : *v) {
      McGroup x;
      x.mlid = grp.params.mlid.get();
      for (const auto& mem : grp.members) x.member_port_guids.push_back(mem.port_gid.guid.get());
      out.push_back(std::move(x));
    }
    return out;
  }

 private:
  const McastStore& g_;
};

void SaServer::notify_mcast_change() noexcept { provider_->notify(); }

SaServer::SaServer(Engine& engine, const SnapshotStore& store, SaServerConfig cfg)
    : store_(store), epoch_feed_(store.subscribe()), cfg_(cfg), groups_(cfg.mc_groups_max, cfg.consolidate_ipv6_snm_req) {
  if (engine.running()) throw std::invalid_argument("SaServer: the engine is already running");
  if (cfg_.state_core >= engine.cores()) throw std::invalid_argument("SaServer: state_core out of range");
  if (cfg_.queue_max == 0 || cfg_.burst_max == 0 || cfg_.requester_queued_max == 0)
    throw std::invalid_argument("SaServer: queue_max, burst_max and requester_queued_max must be positive");
  if (cfg_.dedup_slots == 0 || (cfg_.dedup_slots & (cfg_.dedup_slots - 1)) != 0)
    throw std::invalid_argument("SaServer: dedup_slots must be a power of two");
  handler_ = std::make_unique<Handler>(*this);
  provider_ = std::make_unique<Provider>(groups_);
  for (std::uint16_t c = 0; c < engine.cores(); ++c)
    workers_.push_back(std::make_unique<CoreWorker>(*this, c, engine.core(c)));
  constexpr std::uint8_t kSa = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  engine.add_handler({kSa, m::kGet, std::nullopt}, *handler_, OwnerSelector::spread_by(&select_get, nullptr));
  engine.add_handler({kSa, m::kGetTable, std::nullopt}, *handler_, OwnerSelector::by(&select_by_tid));
  engine.add_handler({kSa, m::kGetMulti, std::nullopt}, *handler_, OwnerSelector::by(&select_by_tid));
  engine.add_handler({kSa, m::kSet, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  engine.add_handler({kSa, m::kDelete, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  // Everything else of the class (GetTraceTable, a stray Report...) is answered "method unsupported".
  engine.add_handler({kSa, std::nullopt, std::nullopt}, *handler_, OwnerSelector::fixed(cfg_.state_core));
  for (std::uint16_t c = 0; c < engine.cores(); ++c) {
    engine.add_poller(c, *workers_[c]);
    if (cfg_.install_response_hooks) {
      hooks_.push_back(std::make_unique<Hook>(*this));
      engine.set_response_hook(c, *hooks_.back());
    }
  }
}

SaServer::~SaServer() = default;

bool SaServer::on_response(const MadBuf& buf, CoreContext& ctx) noexcept {
  const std::uint16_t c = ctx.core_id();
  return c < workers_.size() && workers_[c]->on_response(buf);
}

void SaServer::forward_notice(const wire::Notice& notice) {
  std::lock_guard lock(notices_mu_);
  notices_.push_back(notice);
  notices_pending_.store(true, std::memory_order_release);  // pairs with the acquire in state_poll
}

SaStateImage SaServer::capture_state() const { return capture(services_, groups_, subs_); }

void SaServer::set_partition_groups(std::vector<wire::McMemberRecord> groups) {
  std::lock_guard lock(partition_groups_mu_);
  partition_groups_ = std::move(groups);
  partition_groups_pending_.store(true, std::memory_order_release);  // pairs with the acquire in CoreWorker::poll
}

void SaServer::restore_state(SaStateImage image) {
  std::lock_guard lock(restore_mu_);
  restore_image_ = std::move(image);
  restore_pending_.store(true, std::memory_order_release);  // pairs with the acquire in CoreWorker::poll
}

SaCounters SaServer::counters() const {
  SaCounters c;
  for (const auto& w : workers_) w->snapshot_counters(c);
  return c;
}

McGroupProvider& SaServer::mcast_provider() noexcept { return *provider_; }
const ServiceStore& SaServer::services() const noexcept { return services_; }
const McastStore& SaServer::groups() const noexcept { return groups_; }
const InformStore& SaServer::subscriptions() const noexcept { return subs_; }

}  // namespace madengine::sa
