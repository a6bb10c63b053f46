// RMPP (IBA 13.6): our own sender and receiver state machines, independent
// of the transport (the sim and verbs-ud transports have no kernel to do
// it). Each keeps a bounded table of transfers keyed by TID and peer, sends
// through a TxSink, times out on a Clock and is a Poller on its core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <memory>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/poller.hpp"
#include "engine/scheduler.hpp"
#include "engine/tx_sink.hpp"
#include "madengine/wire/rmpp.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine {

// Bytes after the RMPP header in every segment (IBA 13.6.2.3): what
// PayloadLength counts. For the SA these are the 20 bytes of SA header
// fields plus 200 bytes of record data.
inline constexpr std::size_t kRmppSegmentPayload = wire::kMadSize - wire::kMadHeaderSize - wire::kRmppHeaderSize;
static_assert(kRmppSegmentPayload == 220);
// RRespTime value meaning "no time given" (IBA 13.6.2.1).
inline constexpr std::uint8_t kRmppNoRespTime = 0x1f;

struct RmppConfig {
  std::uint32_t transfers_max = 16;   // transfers active at once on this side
  std::uint32_t segments_max = 512;   // per transfer; buffers are sized for it at start-up
  std::uint16_t data_offset = wire::kSaHeaderSize;  // where a segment's data begins (56 for the SA)
  // Sender.
  Nanos resp_timeout_ns = 200 * kNanosPerMilli;  // wait for an ACK before re-sending the window
  std::uint8_t retries_max = 5;                  // window re-sends without progress, then ABORT
  Nanos stop_timeout_ns = 5 * kNanosPerSecond;   // how long a STOP may pause us, then ABORT
  std::uint32_t burst_segs_max = 64;             // segments one poll may send for one transfer
  // Receiver.
  std::uint32_t window_segs = 32;                  // segments granted per ACK
  Nanos total_timeout_ns = 40 * kNanosPerSecond;   // whole-transfer limit, then ABORT (status 118)
  Nanos linger_ns = 2 * kNanosPerSecond;           // keep a finished transfer to re-ACK a lost final ACK
  Nanos reack_gap_ns = kNanosPerMilli;             // at most one re-ACK per gap for duplicates/out-of-order
};

// A transfer is named by its TID and the peer's LID, QPN and class.
struct RmppKey {
  std::uint64_t tid = 0;
  std::uint16_t lid = 0;
  std::uint32_t qpn = 0;
  std::uint8_t mgmt_class = 0;
  bool operator==(const RmppKey&) const noexcept = default;
  static RmppKey of(const MadBuf& m) noexcept {
    return RmppKey{m.hdr().tid.get(), m.addr.lid, m.addr.remote_qpn, m.hdr().mgmt_class};
  }
};

enum class RmppOutcome : std::uint8_t {
  kDone,            // every segment delivered and acknowledged
  kAbortedByPeer,   // the peer sent ABORT (status says why)
  kAborted,         // we sent ABORT (status says why)
  kCancelled,       // cancelled locally (an ABORT was sent)
};
const char* to_string(RmppOutcome o) noexcept;

enum class RmppStart : std::uint8_t { kOk, kTableFull, kTooLarge, kDuplicateKey };

struct RmppSendDone {
  RmppKey key;
  RmppOutcome outcome = RmppOutcome::kDone;
  std::uint8_t rmpp_status = wire::rmpp_status::kNormal;
  std::uint32_t segments = 0;
};
using RmppSendCallback = void (*)(void* user, const RmppSendDone& done) noexcept;

struct RmppRecvDone {
  RmppKey key;
  RmppOutcome outcome = RmppOutcome::kDone;
  std::uint8_t rmpp_status = wire::rmpp_status::kNormal;
  const MadBuf* first = nullptr;           // segment 1 as received (headers, address); kDone only
  std::span<const std::uint8_t> payload;   // the reassembled data; valid during the callback only
};
using RmppRecvCallback = void (*)(void* user, const RmppRecvDone& done) noexcept;

struct RmppSenderCounters {
  std::uint64_t segments_sent = 0;
  std::uint64_t segments_resent = 0;  // part of segments_sent
  std::uint64_t window_timeouts = 0;
  std::uint64_t acks = 0;
  std::uint64_t old_acks = 0;         // duplicate or stale ACKs, ignored
  std::uint64_t stops = 0;
  std::uint64_t aborts_sent = 0;
  std::uint64_t aborts_received = 0;
  std::uint64_t done = 0;
  std::uint64_t sink_full = 0;        // TxSink refusals (retried on the next poll)
};

struct RmppReceiverCounters {
  std::uint64_t segments = 0;        // accepted in order
  std::uint64_t duplicates = 0;
  std::uint64_t out_of_order = 0;    // dropped, the last in-order one re-ACKed
  std::uint64_t unknown = 0;         // DATA for no transfer (e.g. after linger), dropped
  std::uint64_t acks_sent = 0;
  std::uint64_t stops_sent = 0;
  std::uint64_t aborts_sent = 0;
  std::uint64_t aborts_received = 0;
  std::uint64_t done = 0;
  std::uint64_t sink_full = 0;
  std::uint64_t lingers_reclaimed = 0;  // finished transfers forgotten early to make room for a new one
};

namespace detail {
// Open-addressing index from a transfer key's hash to a slot; the owner
// compares full keys. Sized at start-up to twice the slot count.
class RmppKeyIndex {
 public:
  explicit RmppKeyIndex(std::uint32_t slots_max);
  template <typename Eq>
  std::uint32_t find(std::uint64_t hash, Eq&& eq) const noexcept {
    for (std::uint32_t i = static_cast<std::uint32_t>(hash) & mask_;; i = (i + 1) & mask_) {
      if (slot_plus1_[i] == 0) return kNone;
      if (hash_[i] == hash && eq(slot_plus1_[i] - 1)) return slot_plus1_[i] - 1;
    }
  }
  void insert(std::uint64_t hash, std::uint32_t slot) noexcept;
  void erase(std::uint64_t hash, std::uint32_t slot) noexcept;
  static std::uint64_t hash_of(const RmppKey& k) noexcept;
  static constexpr std::uint32_t kNone = 0xffffffffu;

 private:
  std::vector<std::uint32_t> slot_plus1_;  // 0 = empty bucket
  std::vector<std::uint64_t> hash_;
  std::uint32_t mask_;
};
}  // namespace detail

// Builds in `out` an RMPP control MAD (ACK, STOP, ABORT) answering the
// DATA in `like`: same headers and class fields, response bit flipped (an
// ACK of a GetTableResp travels as a GetTable), the data from `data_offset`
// zeroed, addressed back to where the DATA came from.
void make_rmpp_reply(const MadBuf& like, MadBuf& out, wire::RmppType type, std::uint8_t status, std::uint32_t d1,
                     std::uint32_t d2, std::size_t data_offset) noexcept;

class RmppSender final : public Poller {
 public:
  // Throws std::invalid_argument on a bad configuration (start-up only).
  RmppSender(const Clock& clock, TxSink& tx, RmppConfig cfg = {});
  RmppSender(const RmppSender&) = delete;
  RmppSender& operator=(const RmppSender&) = delete;

  // Starts sending `payload` as DATA segments: each is `tmpl` (MAD header
  // with TID and method, class header fields up to data_offset, address)
  // plus the RMPP header and the next chunk of payload. The payload is copied.
  // `cb` runs exactly once when the transfer ends, unless this returns non-kOk.
  RmppStart send(const MadBuf& tmpl, std::span<const std::uint8_t> payload, RmppSendCallback cb,
                 void* user) noexcept;
  // Offers a received MAD; true if it was an ACK, STOP or ABORT for one of
  // our transfers (or an RMPP protocol error on one, which aborts it).
  bool on_mad(const MadBuf& m) noexcept;
  // Sends segments the window allows; re-sends or aborts on timeouts.
  std::size_t poll(Nanos now_ns) noexcept override;
  // Aborts a transfer locally (ABORT sent, outcome kCancelled).
  bool cancel(const RmppKey& key) noexcept;

  std::uint32_t active() const noexcept { return active_; }
  const RmppSenderCounters& counters() const noexcept { return counters_; }
  // Segments a payload of `bytes` needs with this configuration.
  std::uint32_t segments_for(std::size_t bytes) const noexcept;

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  enum class State : std::uint8_t { kFree, kSending, kStopped };
  struct Transfer {
    MadBuf tmpl;
    RmppKey key;
    std::uint64_t hash = 0;
    std::uint32_t payload_len = 0;
    std::uint32_t seg_count = 0;
    std::uint32_t next_seg = 1;     // next segment to (re)send
    std::uint32_t last_ack = 0;     // highest segment the receiver acknowledged
    std::uint32_t window_last = 1;  // WL: the sender's window is 1 until the first ACK
    std::uint32_t highest_sent = 0;
    std::uint8_t retries = 0;
    State state = State::kFree;
    RmppSendCallback cb = nullptr;
    void* user = nullptr;
    std::uint32_t next_free = kNone;
  };

  std::uint32_t find(const RmppKey& k, std::uint64_t hash) const noexcept;
  void build_segment(const Transfer& t, std::uint32_t seg, MadBuf& out) const noexcept;
  std::size_t pump(std::uint32_t slot, Nanos now_ns) noexcept;
  void send_abort(const Transfer& t, std::uint8_t status) noexcept;
  void finish(std::uint32_t slot, RmppOutcome outcome, std::uint8_t status) noexcept;
  std::uint8_t* payload_of(std::uint32_t slot) noexcept {
    return buffers_.get() + std::size_t{slot} * payload_max_;
  }
  const std::uint8_t* payload_of(std::uint32_t slot) const noexcept {
    return buffers_.get() + std::size_t{slot} * payload_max_;
  }

  const Clock& clock_;
  TxSink& tx_;
  RmppConfig cfg_;
  std::size_t seg_data_;     // data bytes per segment
  std::size_t payload_max_;  // segments_max x seg_data_
  std::vector<Transfer> transfers_;
  // Allocated at start-up but not written: the pages of a transfer slot are
  // touched when it is first used (13 MB a core for the SA's 16 x 4096
  // segments: zeroing them cost 100 ms of a restart before the SA answered).
  std::unique_ptr<std::uint8_t[]> buffers_;
  detail::RmppKeyIndex index_;
  DeadlineHeap timers_;
  std::uint32_t free_head_ = 0;
  std::uint32_t active_ = 0;
  RmppSenderCounters counters_;
  MadBuf scratch_;
};

class RmppReceiver final : public Poller {
 public:
  // `cb` runs once per transfer that ends: kDone with the payload, or an abort.
  RmppReceiver(const Clock& clock, TxSink& tx, RmppRecvCallback cb, void* user, RmppConfig cfg = {});
  RmppReceiver(const RmppReceiver&) = delete;
  RmppReceiver& operator=(const RmppReceiver&) = delete;

  // Offers a received MAD; true if it was RMPP DATA or an ABORT this
  // receiver handled (including DATA it dropped or aborted).
  bool on_mad(const MadBuf& m) noexcept;
  // Enforces the whole-transfer time limit and expires finished transfers.
  std::size_t poll(Nanos now_ns) noexcept override;
  // Flow control (IBA 13.6.3.3): stop() sends STOP (ResourcesExhausted) and
  // drops DATA until resume() re-ACKs the last in-order segment.
  bool stop(const RmppKey& key) noexcept;
  bool resume(const RmppKey& key) noexcept;
  // Aborts a transfer locally (ABORT sent, outcome kCancelled).
  bool cancel(const RmppKey& key) noexcept;

  std::uint32_t active() const noexcept { return active_; }
  const RmppReceiverCounters& counters() const noexcept { return counters_; }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  enum class State : std::uint8_t { kFree, kReceiving, kStopped, kLinger };
  struct Transfer {
    MadBuf first;            // segment 1: headers and address for ACKs and delivery
    RmppKey key;
    std::uint64_t hash = 0;
    std::uint32_t total_paylen = 0;  // from segment 1's PayloadLength
    std::uint32_t seg_count = 0;
    std::uint32_t expected = 1;      // next in-order segment
    std::uint32_t window_last = 1;   // NWL granted so far
    std::uint32_t data_len = 0;      // bytes reassembled
    Nanos last_ack_ns = -1;
    Nanos linger_until_ns = 0;  // kLinger: when it is forgotten
    State state = State::kFree;
    std::uint32_t next_free = kNone;
  };

  std::uint32_t find(const RmppKey& k, std::uint64_t hash) const noexcept;
  void send_ctl(const MadBuf& like, wire::RmppType type, std::uint8_t status, std::uint32_t d1,
                std::uint32_t d2) noexcept;
  void ack(Transfer& t, Nanos now_ns) noexcept;
  void abort_transfer(std::uint32_t slot, std::uint8_t status, RmppOutcome outcome) noexcept;
  void deliver(std::uint32_t slot, RmppOutcome outcome, std::uint8_t status) noexcept;
  void release(std::uint32_t slot) noexcept;
  bool reclaim_linger() noexcept;
  void on_data(const MadBuf& m, Nanos now_ns) noexcept;
  std::uint8_t* data_of(std::uint32_t slot) noexcept { return buffers_.get() + std::size_t{slot} * payload_max_; }

  const Clock& clock_;
  TxSink& tx_;
  RmppRecvCallback cb_;
  void* user_;
  RmppConfig cfg_;
  std::size_t seg_data_;
  std::size_t class_hdr_;  // class header bytes inside each segment's payload (20 for the SA)
  std::size_t payload_max_;
  std::vector<Transfer> transfers_;
  // Allocated at start-up but not written: the pages of a transfer slot are
  // touched when it is first used (13 MB a core for the SA's 16 x 4096
  // segments: zeroing them cost 100 ms of a restart before the SA answered).
  std::unique_ptr<std::uint8_t[]> buffers_;
  detail::RmppKeyIndex index_;
  DeadlineHeap timers_;
  std::uint32_t free_head_ = 0;
  std::uint32_t active_ = 0;
  RmppReceiverCounters counters_;
  MadBuf scratch_;
};

}  // namespace madengine
