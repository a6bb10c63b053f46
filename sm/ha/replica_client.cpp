// The standby's replication client (see replica_client.hpp): TIDs of the SM's
// core in a sequence range of their own, RMPP answers reassembled (and each
// segment ACKed) by our RmppReceiver, single-MAD answers taken as they come.
#include "sm/ha/replica_client.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/dispatch.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine::sm::ha {

namespace {

RmppConfig receiver_config() noexcept {
  RmppConfig c;
  c.transfers_max = kReplicaTransfersMax;
  c.segments_max = kReplicaSegmentsMax;
  return c;
}

}  // namespace

ReplicaClient::ReplicaClient(const Clock& clock, TxSink& tx, std::uint16_t core_id)
    : clock_(clock), tx_(tx), core_id_(core_id), receiver_(clock, tx, &ReplicaClient::on_rmpp_done, this, receiver_config()) {}

bool ReplicaClient::start(const SaTarget& sa, std::uint64_t sm_key, Nanos timeout_ns, LidOfGid lid_of) noexcept {
  if (round_) {
    ++counters_.timed_out;
    drop_round();
  }
  // Three consecutive sequence numbers; the class and method (SubnAdm
  // GetTableResp) keep them apart from the SM's own SMP transactions.
  seq_ = (seq_ + 3) & kTidSeqMask;
  if (seq_ + 2 > kTidSeqMask) seq_ = 0;
  round_tid_low_ = make_tid_low(core_id_, seq_);
  try {
    lid_of_ = std::move(lid_of);
    round_.emplace(round_tid_low_, sm_key, sa);
  } catch (...) {
    return false;
  }
  ++counters_.rounds;
  started_ns_ = clock_.now_ns();
  deadline_ns_ = started_ns_ + timeout_ns;
  for (const MadBuf& q : round_->queries()) {
    if (!tx_.send(q)) {
      round_.reset();
      ++counters_.failed;
      error_ = "transmit queue full";
      return false;
    }
  }
  return true;
}

bool ReplicaClient::ours(const MadBuf& buf) const noexcept {
  if (!round_ || buf.len < wire::kMadHeaderSize) return false;
  const auto& h = buf.hdr();
  if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || h.method != wire::method::kGetTableResp)
    return false;
  const auto low = static_cast<std::uint32_t>(h.tid.get());
  return low - round_tid_low_ < 3;
}

bool ReplicaClient::on_response(const MadBuf& buf) noexcept {
  if (!ours(buf)) return false;
  const auto& sa = buf.as<wire::SaMad>();
  if (sa.rmpp.active()) {
    const std::uint32_t i = static_cast<std::uint32_t>(sa.hdr.tid.get()) - round_tid_low_;
    if (!transfers_[i]) transfers_[i] = RmppKey::of(buf);
    receiver_.on_mad(buf);  // ACKs each segment; on_rmpp_done gets the table
    return true;
  }
  // One MAD, no RMPP: its data area is the whole table (small tables, and
  // SAs whose multi-MAD answers a shim cut to the first MAD).
  answer(buf, std::span<const std::uint8_t>(sa.data.data(), sa.data.size()));
  return true;
}

void ReplicaClient::on_rmpp_done(void* user, const RmppRecvDone& done) noexcept {
  auto* self = static_cast<ReplicaClient*>(user);
  if (!self->round_) return;
  if (done.outcome != RmppOutcome::kDone || done.first == nullptr) {
    self->drop_round();
    ++self->counters_.failed;
    self->error_ = std::string("RMPP transfer ended: ") + to_string(done.outcome);
    return;
  }
  self->answer(*done.first, done.payload);
}

void ReplicaClient::answer(const MadBuf& first, std::span<const std::uint8_t> payload) noexcept {
  try {
    round_->on_answer(first, payload);
  } catch (...) {
    drop_round();
    ++counters_.failed;
    error_ = "out of memory";
    return;
  }
  finish_if_done();
}

void ReplicaClient::finish_if_done() noexcept {
  if (round_->failed()) {
    error_ = round_->error();
    drop_round();
    ++counters_.failed;
    return;
  }
  if (!round_->complete()) return;
  try {
    const Nanos now = clock_.now_ns();
    image_ = round_->image(lid_of_, now);
    image_at_ns_ = now;
    ++counters_.complete;
    counters_.last_round_us = (now - started_ns_) / 1000;
    counters_.max_round_us = std::max(counters_.max_round_us, counters_.last_round_us);
  } catch (...) {
    ++counters_.failed;
    error_ = "out of memory";
  }
  drop_round();
}

void ReplicaClient::drop_round() noexcept {
  round_.reset();
  for (auto& k : transfers_) {
    if (k) receiver_.cancel(*k);  // false for one already delivered (it lingers to re-ACK)
    k.reset();
  }
}

std::size_t ReplicaClient::poll(Nanos now_ns) noexcept {
  std::size_t work = receiver_.poll(now_ns);
  if (round_ && now_ns >= deadline_ns_) {
    drop_round();
    ++counters_.timed_out;
    error_ = "round timed out";
    ++work;
  }
  return work;
}

std::optional<sa::SaStateImage> ReplicaClient::take_image() noexcept {
  std::optional<sa::SaStateImage> out;
  out.swap(image_);
  image_at_ns_ = -1;
  return out;
}

}  // namespace madengine::sm::ha
