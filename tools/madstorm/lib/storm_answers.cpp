// The checks every answer goes through: header, status and record (a
// PathRecord against the oracle), BUSY back-off, single-MAD answers and
// RMPP transfers reassembled.
#include <algorithm>
#include <cstring>

#include "lib/storm_impl.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/inform_info.hpp"

namespace madstorm {

bool Storm::Impl::path_ok(const wire::PathRecord& pr) noexcept {
  if (oracle == nullptr) return true;
  const auto t0 = std::chrono::steady_clock::now();
  const PathCheck c = oracle->check(pr);
  StormCounters& k = result.counters;
  k.oracle_ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  ++k.oracle_checked;
  if (c.verdict != PathVerdict::kUnreached && c.verdict != PathVerdict::kUnknownEnd)
    ++k.oracle_hops[std::min<std::size_t>(c.hops, kPathHopsMax)];
  if (c.verdict == PathVerdict::kOk) return true;
  ++k.oracle_wrong_by[static_cast<std::size_t>(c.verdict)];
  return false;
}

std::optional<ErrorKind> Storm::Impl::check_record(const Slot& s, std::span<const std::uint8_t> rec) noexcept {
  const Host& src = hosts[s.q.src];
  const Host& dst = hosts[s.q.dst];
  switch (s.q.kind) {
    case QueryKind::kPathRecord:
    case QueryKind::kPathTable: {
      const auto pr = wire::decode<wire::PathRecord>(rec);
      if (!pr) return ErrorKind::kWrongRecord;
      if (pr->slid.get() != src.lid || !gid_is(pr->sgid, src.port_guid)) return ErrorKind::kWrongRecord;
      if (s.q.kind == QueryKind::kPathTable ? pr->dlid.get() == 0
                                            : pr->dlid.get() != dst.lid || !gid_is(pr->dgid, dst.port_guid))
        return ErrorKind::kWrongRecord;
      if (!path_ok(*pr)) return ErrorKind::kWrongPath;
      return std::nullopt;
    }
    case QueryKind::kNodeRecord: {
      const auto nr = wire::decode<wire::NodeRecord>(rec);
      if (nr && nr->lid.get() == dst.lid && nr->node_info.port_guid.get() == dst.port_guid) return std::nullopt;
      return ErrorKind::kWrongRecord;
    }
    case QueryKind::kMcJoin:
    case QueryKind::kMcLeave: {
      const auto mc = wire::decode<wire::McMemberRecord>(rec);
      if (!mc) return ErrorKind::kWrongRecord;
      const auto want = wire::decode<wire::McMemberRecord>(
          std::span<const std::uint8_t>(s.req.mad.bytes).subspan(wire::kSaHeaderSize));
      if (!want || !(mc->mgid == want->mgid) || !gid_is(mc->port_gid, src.port_guid)) return ErrorKind::kWrongRecord;
      // A join answers with the group (MLID set) and our join state (IBA 15.2.5.17.1).
      if (s.q.kind == QueryKind::kMcJoin &&
          (mc->mlid.get() < 0xc000 || (mc->join_state() & wire::join_state::kFullMember) == 0))
        return ErrorKind::kWrongRecord;
      return std::nullopt;
    }
    case QueryKind::kInformSub: {
      // The SA answers a subscription with the InformInfo it took (IBA 13.4.8.3).
      const auto ii = wire::decode<wire::InformInfo>(rec);
      if (!ii || ii->subscribe != 1 || !gid_is(ii->gid, src.port_guid) || ii->trap_number() != 64)
        return ErrorKind::kWrongRecord;
      return std::nullopt;
    }
  }
  return ErrorKind::kWrongRecord;
}

Storm::Impl::Verdict Storm::Impl::check_header(const Slot& s, const wire::SaMad& m, ErrorKind& ek) const noexcept {
  if (wire::validate(m) != wire::MadError::kOk) {
    ek = ErrorKind::kMalformed;
    return Verdict::kError;
  }
  const std::uint16_t st = m.hdr.status.get();
  if ((st & wire::status::kBusy) != 0) return Verdict::kBusy;
  if (m.hdr.method != response_method_of(s.req.hdr().method)) {
    ek = ErrorKind::kWrongMethod;
    return Verdict::kError;
  }
  if (m.hdr.attr_id.get() != s.req.hdr().attr_id.get()) {
    ek = ErrorKind::kWrongAttr;
    return Verdict::kError;
  }
  if (st != wire::status::kOk) {
    ek = ErrorKind::kBadStatus;
    return Verdict::kError;
  }
  return Verdict::kOk;
}

void Storm::Impl::on_busy(std::uint32_t i, Nanos now) noexcept {
  Slot& s = slots[i];
  ++result.counters.busy_answers;
  ++result.busy_answers_by_host[s.q.src];
  if (s.busy_count >= cfg.retry.busy_retries) {
    finish(i, Outcome::kBusy, now);
    return;
  }
  ++s.busy_count;
  // The next attempt is a new transaction: a late answer to this one must not complete it.
  s.done_gen = s.gen;
  s.state = State::kBackoff;
  s.due_ns = now + busy_backoff_ns;
  append(i, ListId::kBackoff);
}

void Storm::Impl::on_single(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept {
  const std::uint32_t i = match(buf.hdr().tid.get());
  if (i == kNone) return;
  const auto m = wire::decode<wire::SaMad>(std::span<const std::uint8_t>(buf.mad.bytes));
  Slot& s = slots[i];
  if (ports != nullptr && at != s.q.src) {
    finish(i, Outcome::kError, now, ErrorKind::kMisdirected);
    return;
  }
  ErrorKind ek{};
  switch (check_header(s, *m, ek)) {
    case Verdict::kBusy: on_busy(i, now); return;
    case Verdict::kError: finish(i, Outcome::kError, now, ek); return;
    case Verdict::kOk: break;
  }
  if (s.q.kind == QueryKind::kPathTable) {
    // IBA 15.4: a GetTableResp always travels as RMPP, even in one MAD.
    finish(i, Outcome::kError, now, ErrorKind::kMalformed);
    return;
  }
  // Senders may trim a MAD to its used bytes (OpenSM under umad2sim sends
  // 120 for a PathRecord): the record itself must be there.
  if (buf.len < wire::kSaHeaderSize + record_size(s.q.kind)) {
    finish(i, Outcome::kError, now, ErrorKind::kMalformed);
    return;
  }
  if (const auto bad = check_record(s, std::span<const std::uint8_t>(m->data))) {
    finish(i, Outcome::kError, now, *bad);
    return;
  }
  finish(i, Outcome::kAnswered, now);
}

void Storm::Impl::rmpp_done(const madengine::RmppRecvDone& d) noexcept {
  const Nanos now = clock.now_ns();
  const std::uint32_t i = match(d.key.tid);
  if (i == kNone) return;
  if (d.outcome != madengine::RmppOutcome::kDone || d.first == nullptr) {
    finish(i, Outcome::kError, now, ErrorKind::kRmppAborted);
    return;
  }
  ++result.counters.rmpp_transfers;
  Slot& s = slots[i];
  const auto m = wire::decode<wire::SaMad>(std::span<const std::uint8_t>(d.first->mad.bytes));
  ErrorKind ek{};
  switch (check_header(s, *m, ek)) {
    case Verdict::kBusy: on_busy(i, now); return;
    case Verdict::kError: finish(i, Outcome::kError, now, ek); return;
    case Verdict::kOk: break;
  }
  const std::uint16_t aoff = m->attr_offset.get();
  const std::size_t rec_size = record_size(s.q.kind);
  const std::size_t n = wire::table_record_count(d.payload.size(), aoff);
  if (wire::table_stride(aoff) < rec_size || (n == 0 && !d.payload.empty() && aoff == 0)) {
    finish(i, Outcome::kError, now, ErrorKind::kMalformed);
    return;
  }
  if (s.q.kind != QueryKind::kPathTable && n != 1) {
    // A Get answered through RMPP must still carry exactly one record.
    finish(i, Outcome::kError, now, ErrorKind::kWrongRecord);
    return;
  }
  for (std::size_t r = 0; r < n; ++r) {
    if (const auto bad = check_record(s, *wire::table_record_bytes(d.payload, aoff, r))) {
      finish(i, Outcome::kError, now, *bad);
      return;
    }
  }
  if (n == 0) {  // every host has at least a path to itself and its peers
    finish(i, Outcome::kError, now, ErrorKind::kWrongRecord);
    return;
  }
  result.counters.records += n;
  finish(i, Outcome::kAnswered, now);
}

void Storm::Impl::on_rx(const MadBuf& buf, Nanos now, std::uint32_t at) noexcept {
  const auto& h = buf.hdr();
  if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || !h.is_response() ||
      buf.len < wire::kMadHeaderSize + wire::kRmppHeaderSize) {
    ++result.counters.not_sa;
    return;
  }
  const auto& rm = buf.as<wire::SaMad>().rmpp;
  if (rm.active() && rm.version != 1) {
    // Flagged RMPP but not a segment (umad2sim hands on the first 256
    // bytes of OpenSM's multi-MAD answers like this): a broken answer.
    const std::uint32_t i = match(h.tid.get());
    if (i != kNone) finish(i, Outcome::kError, now, ErrorKind::kMalformed);
    return;
  }
  if (rm.active()) {
    // A segment at another host's port fails its query at once.
    if (const std::uint32_t i = in_flight_slot(h.tid.get()); ports != nullptr && i != kNone && at != slots[i].q.src) {
      finish(i, Outcome::kError, now, ErrorKind::kMisdirected);
      return;
    }
    // Segments of one of our transfers (or of a stale one: the receiver
    // ACKs and delivers it, and the match then counts it as late).
    rmpp.on_mad(buf);
    return;
  }
  on_single(buf, now, at);
}

}  // namespace madstorm
