// The SA worker's queries (see core_worker.hpp): Get and GetTable of every
// record from the published snapshot or the SA's own state, GetMulti of
// MultiPathRecords, ClassPortInfo; PathRecord bursts prefetched.
#include <algorithm>
#include <cstring>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "sa/server/components.hpp"
#include "sa/server/core_worker.hpp"
#include "sa/server/path_query.hpp"

namespace madengine::sa {

namespace {

// PathRecord components compared byte for byte with each record; the rest
// are constraints that path_query applies itself (GIDs, which it resolves to
// ports in either accepted prefix; selectors, NumbPath, Reversible).
constexpr std::uint64_t kPathFilterMask = wire::path_record_cm::kServiceId | wire::path_record_cm::kDLid |
                                          wire::path_record_cm::kSLid | wire::path_record_cm::kSl |
                                          wire::path_record_cm::kTClass | wire::path_record_cm::kFlowLabel;

}  // namespace

void SaServer::CoreWorker::process(MadBuf& req, Nanos now_ns) noexcept {
  auto& sa = req.as<wire::SaMad>();
  const std::uint16_t attr = sa.hdr.attr_id.get();
  const std::uint8_t meth = sa.hdr.method;
  auto& k = counters_.at(record_kind(attr), meth);
  if (snap_ == nullptr) {  // nothing published yet: the SA is not ready
    error(req, wire::status::kBusy, k);
    return;
  }
  // An SM_Key neither zero nor ours: the MAD is discarded unanswered
  // (C15-0.1.5, as OpenSM); a retry is judged afresh.
  if (const std::uint64_t key = sa.sm_key.get(); key != 0 && key != snap_->sm.sm_key) {
    bump(k.ignored);
    Dedup& d = dedup_slot(req);
    if (owns_slot(d, req)) d.state = Dedup::kEmpty;
    return;
  }
  switch (meth) {
    case m::kGet:
    case m::kGetTable: return query(req, k, meth == m::kGet);
    case m::kGetMulti:
      if (attr != a::kMultiPathRecord) return error(req, wire::status::kMethodAttrUnsupported, k);
      return multi_path(req, k);
    case m::kSet:
    case m::kDelete: return modify(req, k, meth == m::kSet, now_ns);
    default: return error(req, wire::status::kMethodUnsupported, k);
  }
}

void SaServer::CoreWorker::prefetch_paths() const noexcept {
  if (snap_ == nullptr) return;  // nothing published yet: every query is answered BUSY
  namespace cm = wire::path_record_cm;
  const std::uint32_t n = std::min(cfg_.burst_max, queue_len_);
  const auto record = [&](std::uint32_t i) -> const wire::PathRecord* {
    const auto& sa = queue_[(queue_head_ + i) % queue_.size()]->as<wire::SaMad>();
    if (sa.hdr.attr_id.get() != a::kPathRecord) return nullptr;
    return reinterpret_cast<const wire::PathRecord*>(sa.data.data());
  };
  const auto mask_of = [&](std::uint32_t i) {
    return queue_[(queue_head_ + i) % queue_.size()]->as<wire::SaMad>().comp_mask.get();
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    const wire::PathRecord* pr = record(i);
    if (pr == nullptr) continue;
    const std::uint64_t mask = mask_of(i);
    if ((mask & cm::kSLid) == 0 && (mask & cm::kSGid) != 0) snap_->prefetch_guid(pr->sgid.guid.get());
    if ((mask & cm::kDLid) == 0 && (mask & cm::kDGid) != 0) snap_->prefetch_guid(pr->dgid.guid.get());
  }
  // Each query's LIDs, once: a GID's from its slot (in cache by now),
  // unchecked (the answer checks it against the LID entry prefetched here);
  // two GIDs' slots also name their switches, whose path entry is fetched now.
  std::array<std::uint16_t, 2 * kPrefetchBurstMax> lids{};
  const std::uint32_t m = std::min<std::uint32_t>(n, kPrefetchBurstMax);
  for (std::uint32_t i = 0; i < m; ++i) {
    const wire::PathRecord* pr = record(i);
    if (pr == nullptr) continue;
    const std::uint64_t mask = mask_of(i);
    GuidIndex::Guess sg, dg;
    if ((mask & cm::kSLid) != 0) sg.lid = pr->slid.get();
    else if ((mask & cm::kSGid) != 0) sg = snap_->guess_of_guid(pr->sgid.guid.get());
    if ((mask & cm::kDLid) != 0) dg.lid = pr->dlid.get();
    else if ((mask & cm::kDGid) != 0) dg = snap_->guess_of_guid(pr->dgid.guid.get());
    snap_->paths.prefetch_switches(sg.hint, dg.hint);
    lids[2 * i] = sg.lid;
    lids[2 * i + 1] = dg.lid;
  }
  // Each end's LID entry (GUID, partition set, path-database entry: one
  // line), then, once those have arrived, the (source switch, destination
  // switch) byte they name.
  const std::size_t lid_entries = snap_->lid_info.size();
  for (std::uint32_t i = 0; i < m; ++i) {
    const std::uint16_t slid = lids[2 * i], dlid = lids[2 * i + 1];
    if (slid == 0 || dlid == 0 || slid >= lid_entries || dlid >= lid_entries) {
      lids[2 * i] = 0;
      continue;
    }
    __builtin_prefetch(&snap_->lid_info[slid]);
    __builtin_prefetch(&snap_->lid_info[dlid]);
    __builtin_prefetch(&dedup_[dedup_index(*queue_[(queue_head_ + i) % queue_.size()])], 1);  // rewritten on answering
  }
  for (std::uint32_t i = 0; i < m; ++i)
    if (lids[2 * i] != 0)
      snap_->paths.prefetch(snap_->lid_info[lids[2 * i]].path, snap_->lid_info[lids[2 * i + 1]].path);
}

void SaServer::CoreWorker::query(MadBuf& req, AtomicCounters::Kind& k, bool get) noexcept {
  auto& sa = req.as<wire::SaMad>();
  const std::uint16_t attr = sa.hdr.attr_id.get();
  const std::uint64_t mask = sa.comp_mask.get();
  if (attr == a::kClassPortInfo) {
    if (!get) return error(req, wire::status::kMethodAttrUnsupported, k);
    const wire::ClassPortInfo cpi = class_port_info();
    return answer_one(req, &cpi, sizeof(cpi), k);
  }
  const RecordLayout* layout = record_layout(attr);
  if (layout == nullptr) return error(req, wire::status::kMethodAttrUnsupported, k);
  if ((mask & ~layout->valid_mask()) != 0) return error(req, st::kReqInvalid, k);  // invalid component mask
  const std::uint8_t* q = sa.data.data();
  // P_KeyTableRecords only answer trusted requests (IBA 15.2.5.11, C15-0.2.2):
  // the SM_Key must be the SM's (a zero key is never trusted).
  if (attr == a::kPKeyTableRecord && (sa.sm_key.get() == 0 || sa.sm_key.get() != snap_->sm.sm_key))
    return error(req, st::kReqInvalid, k);
  const bool path = attr == a::kPathRecord;
  RecordSink sink(scratch_, *layout, path ? mask & kPathFilterMask : mask, q, get ? (path ? 1 : 2) : SIZE_MAX,
                  bit_mask_components(attr, sa.hdr.attr_mod.get()));
  std::uint16_t status = 0;
  try {
    if (path) {
      wire::PathRecord pr;
      std::memcpy(&pr, q, sizeof(pr));
      // A Get's ends were prefetched with its burst (prefetch_paths).
      PathQuery pq{&pr, mask, req.addr.lid, snap_->sm.subnet_timeout, get, get};
      status = collect_path_records(*snap_, pq, sink);
    } else if (!collect_snapshot_records(*snap_, attr, sink)) {
      status = collect_state_records(attr, trusted(sa), req.addr.lid, sink);
    }
  } catch (...) {  // out of memory building a huge table
    status = st::kNoResources;
  }
  if (status != 0) return error(req, status, k);
  if (get) {
    if (sink.count() == 0) return error(req, st::kNoRecords, k);
    if (sink.count() > 1) return error(req, st::kTooManyRecords, k);
    return answer_one_scratch(req, layout->size, k);
  }
  answer_table(req, sink.stride(), k);
}

std::uint16_t SaServer::CoreWorker::collect_state_records(std::uint16_t attr, bool trusted, std::uint16_t requester_lid,
                                                         RecordSink& sink) {
  switch (attr) {
    case a::kServiceRecord: {
      // A ServiceKey goes only to trusted requesters (IBA 15.2.5.14, as OpenSM).
      // ServiceLease is the time left, in whole seconds rounded up (as
      // OpenSM's lease timer keeps it): a standby copying the table, or a
      // client, reads when the lease ends, not how long it once was.
      const auto v = server_.services_.view();
      for (const auto& e : *v) {
        wire::ServiceRecord rec = e.rec;
        if (e.expires_ns >= 0) {
          const Nanos left_ns = std::max<Nanos>(0, e.expires_ns - answer_now_ns_);
          rec.service_lease = wire::be32::from(static_cast<std::uint32_t>((left_ns + kNanosPerSecond - 1) / kNanosPerSecond));
        }
        const std::size_t before = sink.count();
        const bool more = sink.offer(&rec);
        if (!trusted && sink.count() != before) {
          wire::ServiceRecord r;
          std::memcpy(&r, sink.last(), sizeof r);
          r.service_key.fill(0);
          std::memcpy(sink.last(), &r, sizeof r);
        }
        if (!more) break;
      }
      return 0;
    }
    case a::kMcMemberRecord: {
      // Untrusted requesters (no SM_Key, or not ours) learn which groups
      // exist, not who is in them: one record per group, its PortGID,
      // JoinState and ProxyJoin zero (IBA 15.2.5.17, as OpenSM does).
      // Members are still matched, so a PortGID or JoinState component
      // selects the groups that have such a member.
      // Untrusted requesters see the groups of partitions their port
      // holds (OpenSM's rule; trusted ones, a standby replicating among
      // them, see every group); a group without members shows once to them.
      const auto v = server_.groups_.view();
      const std::vector<std::uint16_t> req_keys = trusted ? std::vector<std::uint16_t>{} : requester_pkeys(requester_lid);
      for (const auto& g : *v) {
        if (!trusted && !holds_partition(req_keys, g.params.pkey.get())) continue;
        if (g.members.empty()) {
          if (trusted) continue;
          const wire::McMemberRecord r = member_record(g, McMember{});
          if (!sink.offer(&r)) return 0;
          continue;
        }
        for (const auto& mem : g.members) {
          const wire::McMemberRecord r = member_record(g, mem);
          const std::size_t before = sink.count();
          const bool more = sink.offer(&r);
          const bool hidden = !trusted && sink.count() != before;
          if (hidden) hide_member(sink.last());
          if (!more) return 0;
          if (hidden) break;  // the group is listed once: next group
        }
      }
      return 0;
    }
    case a::kInformInfoRecord: {
      const auto v = server_.subs_.view();
      for (const auto& s : *v) {
        const wire::InformInfoRecord r = inform_record(s);
        if (!sink.offer(&r)) break;
      }
      return 0;
    }
    default: return wire::status::kMethodAttrUnsupported;
  }
}

void SaServer::CoreWorker::hide_member(std::uint8_t* rec) noexcept {
  wire::McMemberRecord r;
  std::memcpy(&r, rec, sizeof r);
  r.port_gid = {};
  r.set_join_state(0);
  r.set_proxy_join(false);
  std::memcpy(rec, &r, sizeof r);
}

void SaServer::CoreWorker::multi_path(MadBuf& req, AtomicCounters::Kind& k) noexcept {
  auto& sa = req.as<wire::SaMad>();
  const std::span<const std::uint8_t> rec(sa.data.data(), sa.data.size());
  const auto fixed = wire::decode<wire::MultiPathRecord>(rec);
  if (!fixed || std::size_t{fixed->sgid_count} + fixed->dgid_count > wire::kMultiPathGidsMax)
    return error(req, st::kReqInvalid, k);
  std::array<wire::Gid, wire::kMultiPathGidsMax> s{}, d{};
  for (std::size_t i = 0; i < fixed->sgid_count; ++i) s[i] = *wire::multipath_sgid(rec, i);
  for (std::size_t i = 0; i < fixed->dgid_count; ++i) d[i] = *wire::multipath_dgid(rec, i);
  const RecordLayout& pl = *record_layout(a::kPathRecord);
  RecordSink sink(scratch_, pl, 0, nullptr, SIZE_MAX);
  std::uint16_t status = 0;
  try {
    status = collect_multi_path_records(*snap_, *fixed, std::span(s.data(), fixed->sgid_count),
                                        std::span(d.data(), fixed->dgid_count), sa.comp_mask.get(),
                                        snap_->sm.subnet_timeout, sink);
  } catch (...) {
    status = st::kNoResources;
  }
  if (status != 0) return error(req, status, k);
  answer_table(req, sink.stride(), k);
}

std::vector<std::uint16_t> SaServer::CoreWorker::requester_pkeys(std::uint16_t lid) const {
  const fabric::EndPort* e = snap_ != nullptr ? snap_->end_port_by_lid(lid) : nullptr;
  if (e == nullptr) return {wire::kDefaultPKey};
  const auto keys = port_pkeys(*snap_, *e);
  return {keys.begin(), keys.end()};
}

wire::ClassPortInfo SaServer::CoreWorker::class_port_info() const noexcept {
  wire::ClassPortInfo c{};
  c.base_version = 1;
  c.class_version = wire::kSaClassVersion;
  c.capability_mask = wire::be16::from(wire::cpi_cap::kTrap | wire::cpi_cap::kCapMask2 |
                                       wire::cpi_cap::kSaOptionalRecords | wire::cpi_cap::kSaMultiPath |
                                       wire::cpi_cap::kSaPortInfoCapMaskMatch);
  c.set_cap_mask2(wire::cpi_cap2::kSaFullPortInfoRecord | wire::cpi_cap2::kSaExtendedSpeeds |
                  wire::cpi_cap2::kSaMulticastFdbTop | wire::cpi_cap2::kSaPortInfoCapMask2Match |
                  wire::cpi_cap2::kSaSendOnlyFullMember | wire::cpi_cap2::kSaLinkWidth2x |
                  wire::cpi_cap2::kSaLinkSpeedHdr | wire::cpi_cap2::kSaLinkSpeedNdr);
  c.set_resp_time_value(cfg_.resp_time_value);
  // No redirection: the redirect and trap targets are QP1 with the GSI Q_Key (as OpenSM fills them).
  c.redirect_qp = wire::be32::from(1);
  c.redirect_qkey = wire::be32::from(kGsiQkey);
  c.trap_qkey = wire::be32::from(kGsiQkey);
  return c;
}

}  // namespace madengine::sa
