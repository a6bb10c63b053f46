// The SA worker's answers (see core_worker.hpp): one-MAD answers and error
// statuses, remembered for retries and counted; multi-record answers as one
// RMPP transfer (IBA 15.4), one segment sent as OpenSM sends it.
#include <algorithm>
#include <cstring>

#include "sa/server/core_worker.hpp"

namespace madengine::sa {

namespace {

std::size_t error_slot(std::uint16_t status) noexcept {
  if ((status & 0xff00) != 0) return std::min<std::size_t>(status >> 8, 7);
  if ((status & wire::status::kCodeMask) == wire::status::kMethodUnsupported ||
      (status & wire::status::kCodeMask) == wire::status::kMethodAttrUnsupported)
    return kErrUnsupported;
  return kErrInvalidField;
}

}  // namespace

void SaServer::CoreWorker::finish(MadBuf& resp, std::uint16_t status, AtomicCounters::Kind& k, bool cache,
                                  std::size_t data_len) noexcept {
  const bool busy = status == wire::status::kBusy;
  if (status != 0 && !busy) bump(k.errors[error_slot(status)]);
  if (busy) cache = false;  // a retry after BUSY is a new attempt
  const std::size_t slot = dedup_index(resp);
  Dedup& d = dedup_[slot];
  const bool ours = owns_slot(d, resp);
  // Written before the send; it is read only once has_answer says so.
  if (ours && cache) remember_answer(slot, resp, data_len);
  bool sent = false;
  if (&resp == kept_req_) {
    sent = core_.send_kept(resp);
    if (sent) kept_req_ = nullptr;  // the core's now
  } else {
    sent = core_.send(resp);
  }
  if (!sent) {
    bump(k.dropped);
    return;
  }
  bump(busy ? k.busy : k.answered);
  if (ours) {
    record_latency(d);
    d.state = busy ? Dedup::kEmpty : Dedup::kAnswered;
    d.has_answer = cache;
  }
}

void SaServer::CoreWorker::reply_status(MadBuf& buf, std::uint16_t status, AtomicCounters::Kind& k,
                                        TxSink& tx) noexcept {
  if (!make_error_response(buf, status)) {
    bump(k.ignored);
    return;
  }
  buf.as<wire::SaMad>().rmpp = {};
  bump(k.errors[error_slot(status)]);
  if (tx.send(buf)) bump(k.answered);
  else bump(k.dropped);
}

void SaServer::CoreWorker::error(MadBuf& req, std::uint16_t status, AtomicCounters::Kind& k) noexcept {
  if (!make_error_response(req, status)) {
    bump(k.ignored);  // no response exists for this method (IBA 13.4.5)
    return;
  }
  req.as<wire::SaMad>().rmpp = {};
  finish(req, status, k, true);
}

void SaServer::CoreWorker::answer_changed(MadBuf& req, const void* rec, std::size_t len,
                                          AtomicCounters::Kind& k) noexcept {
  server_.bump_state_generation();
  answer_one(req, rec, len, k);
}

void SaServer::CoreWorker::answer_one(MadBuf& req, const void* rec, std::size_t len, AtomicCounters::Kind& k) noexcept {
  wire::SaMad& sa = begin_answer(req);
  const std::size_t n = rec != nullptr ? std::min(len, sa.data.size()) : 0;
  if (n != 0) std::memcpy(sa.data.data(), rec, n);
  std::memset(sa.data.data() + n, 0, sa.data.size() - n);
  finish(req, 0, k, true, n);
}

void SaServer::CoreWorker::answer_one_scratch(MadBuf& req, std::size_t len, AtomicCounters::Kind& k) noexcept {
  wire::SaMad& sa = begin_answer(req);
  const std::size_t n = std::min(len, sa.data.size());
  if (n == sizeof(wire::PathRecord)) {
    std::memcpy(sa.data.data(), scratch_.data(), sizeof(wire::PathRecord));
    std::memset(sa.data.data() + sizeof(wire::PathRecord), 0, sa.data.size() - sizeof(wire::PathRecord));
  } else {
    std::memcpy(sa.data.data(), scratch_.data(), n);
    std::memset(sa.data.data() + n, 0, sa.data.size() - n);
  }
  finish(req, 0, k, true, n);
}

void SaServer::CoreWorker::answer_table(MadBuf& req, std::uint16_t stride, AtomicCounters::Kind& k) noexcept {
  MadBuf tmpl = req;
  auto& sa = tmpl.as<wire::SaMad>();
  sa.hdr.method = response_method(sa.hdr.method);
  sa.hdr.status = wire::be16::from(0);
  sa.rmpp = {};
  sa.sm_key = wire::be64::from(0);
  sa.attr_offset = wire::be16::from(static_cast<std::uint16_t>(stride / 8));
  if (scratch_.size() <= wire::kSaDataSize) {
    // One segment: sent here, sized to its records like OpenSM's, so a
    // client without RMPP reassembly (saquery on ibsim) counts them from
    // the MAD's length. A lost segment is recovered by the client's retry,
    // which the retry cache answers.
    if (cfg_.rmpp_one_segment) {
      sa.rmpp.version = 1;
      sa.rmpp.type = static_cast<std::uint8_t>(wire::RmppType::kData);
      sa.rmpp.set_flags(kRmppNoRespTime, wire::rmpp_flag::kActive | wire::rmpp_flag::kFirst | wire::rmpp_flag::kLast);
      sa.rmpp.data1 = wire::be32::from(1);
      sa.rmpp.data2 = wire::be32::from(static_cast<std::uint32_t>(kRmppSegmentPayload - wire::kSaDataSize + scratch_.size()));
    }
    sa.data.fill(0);
    if (!scratch_.empty()) std::memcpy(sa.data.data(), scratch_.data(), scratch_.size());
    tmpl.len = static_cast<std::uint16_t>(wire::kSaHeaderSize + scratch_.size());
    bump(counters_.rmpp_transfers);
    finish(tmpl, 0, k, true, scratch_.size());
    return;
  }
  const RmppStart r = sender_.send(tmpl, scratch_, &CoreWorker::on_sent, this);
  switch (r) {
    case RmppStart::kOk: {
      bump(k.answered);
      Dedup& d = dedup_slot(req);
      if (owns_slot(d, req)) {
        record_latency(d);
        d.state = Dedup::kAnswered;
        d.has_answer = false;  // a retry after the transfer re-runs the query
      }
      return;
    }
    case RmppStart::kDuplicateKey: bump(k.duplicates); return;  // that transfer is still running
    case RmppStart::kTableFull:  // every transfer slot busy: the requester retries
      error(req, wire::status::kBusy, k);
      return;
    case RmppStart::kTooLarge: error(req, st::kNoResources, k); return;
  }
}

}  // namespace madengine::sa
