// verbs-ud transport, fast path: rx_burst polls the receive CQ and re-posts the
// consumed receive buffers as one chain; tx_burst copies a burst into the
// registered send slots and posts it as one chain (one doorbell). No allocation.
#include <algorithm>
#include <cstring>

#include "engine/verbs/verbs_transport.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {
namespace verbs {

SendReject check_send(const MadBuf& b, std::uint32_t qp_qkey) noexcept {
  if (b.len < wire::kMadHeaderSize || b.len > wire::kMadSize) return SendReject::kBadLength;
  if (b.addr.remote_qpn == 0) return SendReject::kQp0;
  const std::uint32_t q = wr_qkey(b.addr, qp_qkey);
  if ((q & 0x80000000u) != 0 && q != qp_qkey) return SendReject::kControlledQkey;
  return SendReject::kNone;
}

bool fill_from_recv(const ibv_wc& wc, const std::uint8_t* slot, std::uint8_t port_num,
                    std::uint32_t qp_qkey, MadBuf& out) noexcept {
  // byte_len counts the 40 GRH bytes whether or not a GRH came.
  if (wc.byte_len < kGrhBytes + wire::kMadHeaderSize || wc.byte_len > kRecvSlotBytes) return false;
  const std::size_t len = wc.byte_len - kGrhBytes;
  std::memcpy(out.mad.bytes.data(), slot + kGrhBytes, len);
  std::memset(out.mad.bytes.data() + len, 0, wire::kMadSize - len);
  out.len = static_cast<std::uint16_t>(len);

  MadAddr& a = out.addr;
  a.port_num = port_num;
  a.lid = wc.slid;
  a.remote_qpn = wc.src_qp & 0xffffffu;
  // The completion does not carry the sender's Q_Key (the packet's matched
  // ours). A reply to QP1 needs the GSI Q_Key; other peers are assumed to use
  // the same Q_Key we do (redirect targets and their clients agree on it).
  a.qkey = a.remote_qpn == 1 ? kGsiQkey : qp_qkey;
  a.sl = wc.sl;
  a.path_bits = wc.dlid_path_bits;
  a.pkey_index = wc.pkey_index;
  a.has_grh = (wc.wc_flags & IBV_WC_GRH) != 0;
  if (a.has_grh) {
    const auto& g = *reinterpret_cast<const Grh*>(slot);
    a.gid = g.sgid;
    a.gid_index = 0;  // our source GID index for the reply: not in the packet
    a.hop_limit = g.hop_limit;
    a.traffic_class = static_cast<std::uint8_t>(GrhTClass::get(g.ver_tclass_flow.data()));
    a.flow_label = GrhFlowLabel::get(g.ver_tclass_flow.data());
  } else {
    a.gid = {};
    a.gid_index = a.hop_limit = a.traffic_class = 0;
    a.flow_label = 0;
  }
  return true;
}

RecvBatch take_recv_completions(std::span<const ibv_wc> wcs, const std::uint8_t* recv_base,
                                std::span<ibv_recv_wr> recv_wrs, std::uint8_t port_num,
                                std::uint32_t qp_qkey, std::span<MadBuf*> out,
                                RepostChain& chain) noexcept {
  RecvBatch r;
  for (const ibv_wc& wc : wcs) {
    if (wc.wr_id >= recv_wrs.size()) {
      // Not one of our receive WRs: never index memory with it.
      ++r.errors;
      r.qp_failed = true;
      continue;
    }
    const std::size_t slot = wc.wr_id;
    if (wc.status == IBV_WC_WR_FLUSH_ERR) {
      ++r.errors;
      r.qp_failed = true;
      continue;
    }
    if (wc.status != IBV_WC_SUCCESS) {
      ++r.errors;
    } else if (r.delivered < out.size() &&
               fill_from_recv(wc, recv_base + slot * kRecvSlotStride, port_num, qp_qkey,
                              *out[r.delivered])) {
      ++r.delivered;
    } else {
      ++r.dropped;
    }
    ibv_recv_wr& wr = recv_wrs[slot];
    wr.next = nullptr;
    if (chain.tail != nullptr) chain.tail->next = &wr; else chain.head = &wr;
    chain.tail = &wr;
    ++chain.count;
  }
  return r;
}

}  // namespace verbs

std::size_t VerbsUdTransport::rx_burst(std::span<MadBuf*> bufs) noexcept {
  if (qp_ == nullptr || lost_) return 0;
  std::size_t n = 0;
  std::size_t discards = 0;
  verbs::RepostChain chain;
  while (n < bufs.size() && discards < kRxDiscardsPerBurstMax) {
    const std::size_t want = std::min(bufs.size() - n, kPollBatch);
    const int got = ibv_poll_cq(recv_cq_, static_cast<int>(want), wcs_.data());
    if (got < 0) {
      note_fatal();
      break;
    }
    const verbs::RecvBatch r = verbs::take_recv_completions(
        std::span<const ibv_wc>(wcs_.data(), static_cast<std::size_t>(got)), area_.get(),
        recv_wrs_, port_.port_num, config_.qkey, bufs.subspan(n), chain);
    n += r.delivered;
    discards += r.dropped + r.errors;
    counters_.dropped += r.dropped;
    counters_.rx_errors += r.errors;
    if (r.qp_failed) note_fatal();
    if (static_cast<std::size_t>(got) < want) break;  // CQ drained
  }
  counters_.rx += n;
  // One post (one doorbell) returns every consumed buffer to the receive queue.
  if (chain.head != nullptr && !fatal_pending_) {
    ibv_recv_wr* bad = nullptr;
    if (ibv_post_recv(qp_, chain.head, &bad) != 0) note_fatal();
  }
  return n;
}

void VerbsUdTransport::reap_sends() noexcept {
  // Bounded: at most sq_depth completions can be outstanding.
  for (std::size_t round = 0; round * kPollBatch <= config_.sq_depth; ++round) {
    const int got = ibv_poll_cq(send_cq_, static_cast<int>(kPollBatch), wcs_.data());
    if (got < 0) {
      note_fatal();
      return;
    }
    for (int i = 0; i < got; ++i) {
      const ibv_wc& wc = wcs_[static_cast<std::size_t>(i)];
      if (wc.status != IBV_WC_SUCCESS) {
        ++counters_.send_errors;
        note_fatal();  // a UD send error leaves the QP in the error state
      }
      // In order: this WR and every unsignalled one before it are done.
      if (wc.wr_id + 1 > seq_completed_) seq_completed_ = wc.wr_id + 1;
    }
    if (static_cast<std::size_t>(got) < kPollBatch) return;
  }
}

ibv_ah* VerbsUdTransport::ah_for(const verbs::AhKey& k) noexcept {
  if (ibv_ah* ah = ah_cache_->find(k)) return ah;
  // First use of this address: create the AH (rare after warm-up).
  ibv_ah_attr attr{};
  attr.dlid = k.dlid;
  attr.sl = k.sl;
  attr.src_path_bits = k.path_bits;
  attr.port_num = config_.port_num;
  if (k.has_grh) {
    attr.is_global = 1;
    std::memcpy(attr.grh.dgid.raw, &k.dgid, sizeof attr.grh.dgid.raw);
    attr.grh.flow_label = k.flow_label;
    attr.grh.sgid_index = k.gid_index;
    attr.grh.hop_limit = k.hop_limit;
    attr.grh.traffic_class = k.traffic_class;
  } else if (is_roce_) {
    ++counters_.ah_failures;  // RoCE addresses by GID only
    return nullptr;
  }
  ibv_ah* ah = ibv_create_ah(pd_, &attr);
  if (ah == nullptr) {
    ++counters_.ah_failures;
    return nullptr;
  }
  ++counters_.ah_created;
  // ah_cache_max > sq_depth (validated), so the evicted AH is not referenced by
  // any WR on the send queue or in the chain being built.
  if (ibv_ah* old = ah_cache_->insert(k, ah)) ibv_destroy_ah(old);
  return ah;
}

std::size_t VerbsUdTransport::tx_burst(std::span<MadBuf* const> bufs) noexcept {
  if (qp_ == nullptr || lost_ || bufs.empty()) return 0;
  reap_sends();
  const std::uint64_t in_flight = seq_posted_ - seq_completed_;
  const std::size_t free_wrs = config_.sq_depth - static_cast<std::size_t>(in_flight);
  const verbs::SendArea area{area_.get() + config_.rq_depth * verbs::kRecvSlotStride, mr_->lkey,
                             config_.sq_depth};
  const verbs::ChainResult r = verbs::build_send_chain(
      bufs, free_wrs, area, seq_posted_, config_.qkey,
      [this](const verbs::AhKey& k) noexcept { return ah_for(k); }, send_wrs_, send_sges_,
      send_wr_buf_);
  counters_.dropped += r.dropped;
  if (r.wrs == 0) return r.consumed;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp_, send_wrs_.data(), &bad) != 0) {
    // WRs before `bad` were posted; `bad` and later ones were not. The caller
    // keeps the buffer of `bad` and everything after it.
    std::size_t posted = 0;
    if (bad >= send_wrs_.data() && bad < send_wrs_.data() + r.wrs)
      posted = static_cast<std::size_t>(bad - send_wrs_.data());
    seq_posted_ += posted;
    counters_.tx += posted;
    ++counters_.send_errors;
    note_fatal();  // the send queue was accounted for, so this is not back-pressure
    return send_wr_buf_[posted];
  }
  seq_posted_ += r.wrs;
  counters_.tx += r.wrs;
  return r.consumed;
}

}  // namespace madengine
