// The verbs-ud transport: one libibverbs UD QP on one HCA port for GSI traffic
// that does not need QP1 (SA redirect targets, madstorm clients). Setup and the
// device life cycle are in verbs_setup.cpp, the burst calls in verbs_datapath.cpp.
// Untested on hardware (there is none where it was written): see README.md.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/transport.hpp"
#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {

struct VerbsConfig {
  std::string device_name;   // empty: the first device ibv_get_device_list returns
  std::uint8_t port_num = 1;
  // The QP's own Q_Key. A send WR whose Q_Key has the high bit set (a
  // controlled Q_Key, IBA 10.2.4) is sent with the QP's Q_Key instead, so a
  // client that talks to QP1 must own 0x80010000 here (and the kernel then
  // wants CAP_NET_RAW); a redirect target uses the Q_Key it advertises.
  std::uint32_t qkey = kGsiQkey;
  std::uint16_t pkey_index = 0;  // UD sends carry the QP's P_Key, set at INIT
  std::uint32_t sq_depth = 256;  // send WRs (and registered send slots)
  std::uint32_t rq_depth = 512;  // receive WRs (and registered receive slots)
  // Address handles kept; must exceed sq_depth so the least recently used one
  // is never referenced by a WR still on the send queue when it is destroyed.
  std::uint32_t ah_cache_max = 1024;
  std::uint32_t reopen_interval_ms = 1000;  // after kDeviceLost, at most one open() per interval
};

inline constexpr std::uint32_t kVerbsSqDepthMax = 16384;
inline constexpr std::uint32_t kVerbsRqDepthMax = 16384;
inline constexpr std::uint32_t kVerbsAhCacheMax = 65536;
inline constexpr std::uint32_t kVerbsReopenIntervalMsMax = 3'600'000;

// nullptr when the config is usable, else why not (a static string).
const char* validate_verbs_config(const VerbsConfig& c) noexcept;

struct VerbsCounters {
  std::uint64_t rx = 0;            // MADs handed to the caller
  std::uint64_t tx = 0;            // MADs on the send queue
  std::uint64_t rx_errors = 0;     // receive completions with an error status
  std::uint64_t send_errors = 0;   // send completions with an error status, failed posts
  std::uint64_t dropped = 0;       // received too short/long, or unsendable on a UD QP
  std::uint64_t ah_created = 0;
  std::uint64_t ah_failures = 0;   // ibv_create_ah failed: the MAD was dropped
  std::uint64_t reopens = 0;       // successful open after kDeviceLost
};

namespace verbs {

// UD receive buffers start with 40 bytes for the GRH whether or not one came
// (IBA 11.4.1.2, ibv_post_recv(3)); the MAD follows.
inline constexpr std::size_t kGrhBytes = 40;
inline constexpr std::size_t kRecvSlotBytes = kGrhBytes + wire::kMadSize;
inline constexpr std::size_t kRecvSlotStride = 320;  // 296 rounded up to a cache-line multiple
inline constexpr std::size_t kSendSlotStride = wire::kMadSize;
static_assert(kRecvSlotStride >= kRecvSlotBytes && kRecvSlotStride % 64 == 0);

// The Global Route Header as the HCA writes it into the receive buffer (IBA 8.3.1).
struct Grh {
  std::array<std::uint8_t, 4> ver_tclass_flow;  // IPVer:4 TClass:8 FlowLabel:20
  wire::be16 pay_len;
  std::uint8_t next_hdr;
  std::uint8_t hop_limit;
  wire::Gid sgid;
  wire::Gid dgid;
};
static_assert(sizeof(Grh) == kGrhBytes && alignof(Grh) == 1);
static_assert(offsetof(Grh, pay_len) == 4 && offsetof(Grh, hop_limit) == 7);
static_assert(offsetof(Grh, sgid) == 8 && offsetof(Grh, dgid) == 24);
using GrhIpVer = wire::BitField<0, 0, 4>;
using GrhTClass = wire::BitField<0, 4, 8>;
using GrhFlowLabel = wire::BitField<1, 4, 20>;

// What makes two address handles interchangeable: the UD address vector.
struct AhKey {
  std::uint16_t dlid = 0;
  std::uint8_t sl = 0;
  std::uint8_t path_bits = 0;
  bool has_grh = false;
  std::uint8_t gid_index = 0;  // our source GID index
  std::uint8_t hop_limit = 0;
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;
  wire::Gid dgid{};
  bool operator==(const AhKey&) const noexcept = default;
};
// The key of a send address; GRH fields are ignored (zeroed) without has_grh.
AhKey ah_key_of(const MadAddr& a) noexcept;
std::uint64_t hash_ah_key(const AhKey& k) noexcept;

// A bounded map AhKey -> ibv_ah*, least recently used evicted first. All its
// memory is allocated by the constructor; find and insert do not allocate.
// It never calls verbs itself (the caller creates and destroys the handles),
// so it is tested without a device.
class AhCache {
 public:
  explicit AhCache(std::size_t capacity);
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return entries_.size(); }

  // The handle for `k` (and it becomes the most recently used), or nullptr.
  ibv_ah* find(const AhKey& k) noexcept;
  // Adds `k` (which must be absent) as the most recently used. When full, the
  // least recently used entry is removed first and its handle returned for the
  // caller to destroy; otherwise nullptr.
  ibv_ah* insert(const AhKey& k, ibv_ah* ah) noexcept;
  // Hands every handle to `destroy` and empties the cache.
  template <typename Destroy>
  void drain(Destroy&& destroy) noexcept {
    while (lru_tail_ != kNil) destroy(remove(lru_tail_));
  }

 private:
  static constexpr std::uint32_t kNil = 0xffffffffu;
  struct Entry {
    AhKey key;
    ibv_ah* ah = nullptr;
    std::uint64_t hash = 0;
    std::uint32_t prev = kNil;  // towards the most recently used
    std::uint32_t next = kNil;  // towards the least recently used
  };
  std::uint32_t probe(const AhKey& k, std::uint64_t h) const noexcept;  // slot in index_, or kNil
  ibv_ah* remove(std::uint32_t e) noexcept;
  void unlink(std::uint32_t e) noexcept;
  void push_front(std::uint32_t e) noexcept;

  std::vector<Entry> entries_;
  std::vector<std::uint32_t> index_;  // open addressing, linear probing, entry index or kNil
  std::vector<std::uint32_t> free_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
  std::uint32_t lru_head_ = kNil;
  std::uint32_t lru_tail_ = kNil;
};

// Registered memory the send WRs point into: slot i at base + i * kSendSlotStride.
struct SendArea {
  std::uint8_t* base = nullptr;
  std::uint32_t lkey = 0;
  std::uint32_t slots = 0;
};

enum class SendReject : std::uint8_t {
  kNone,
  kBadLength,       // shorter than a MAD header or longer than a MAD
  kQp0,             // SMPs go to QP0, which only the SMI (umad transport) reaches
  kControlledQkey,  // a controlled Q_Key other than ours: the HCA would send ours instead
};
SendReject check_send(const MadBuf& b, std::uint32_t qp_qkey) noexcept;
// The Q_Key a WR carries: the address's, or the QP's own when the address has none.
inline std::uint32_t wr_qkey(const MadAddr& a, std::uint32_t qp_qkey) noexcept {
  return a.qkey != 0 ? a.qkey : qp_qkey;
}

struct ChainResult {
  std::size_t consumed = 0;  // leading buffers the transport is done with (sent or dropped)
  std::size_t wrs = 0;       // WRs built, chained from wrs[0]
  std::size_t dropped = 0;   // consumed but rejected (check_send) or without an AH
};

// Builds the send chain of one burst: for each buffer, in order, copies the MAD
// into send slot (seq % slots) (zero-padded to 256 bytes: GMPs are always a full
// MAD on the wire, IBA 13.4.1), and fills one SGE and one UD SEND WR (wr_id =
// seq, AH from `resolve`, remote QPN and Q_Key from the address). Only the last
// WR is signalled: UD send completions are in order, so its completion frees
// every slot before it. Stops after wrs_max WRs. wr_buf[i] = index in `bufs` of
// WR i. `resolve(const AhKey&)` returns the AH or nullptr (the MAD is dropped).
template <typename Resolve>
ChainResult build_send_chain(std::span<MadBuf* const> bufs, std::size_t wrs_max,
                             const SendArea& area, std::uint64_t first_seq,
                             std::uint32_t qp_qkey, Resolve&& resolve,
                             std::span<ibv_send_wr> wrs, std::span<ibv_sge> sges,
                             std::span<std::uint32_t> wr_buf) noexcept;

// Fills `out` from a successful receive completion and its slot (GRH space then
// MAD). False if the length is not that of a MAD (24..256 bytes after the GRH).
bool fill_from_recv(const ibv_wc& wc, const std::uint8_t* slot, std::uint8_t port_num,
                    std::uint32_t qp_qkey, MadBuf& out) noexcept;

// Receive WRs to re-post, linked in completion order; posted once per burst.
struct RepostChain {
  ibv_recv_wr* head = nullptr;
  ibv_recv_wr* tail = nullptr;
  std::size_t count = 0;
};

struct RecvBatch {
  std::size_t delivered = 0;  // MADs written to out[0..delivered)
  std::size_t dropped = 0;    // successful completions whose length is not a MAD's
  std::size_t errors = 0;     // error completions (flushes included)
  bool qp_failed = false;     // a flush or a wr_id that is not ours: rebuild the device
};

// Handles one ibv_poll_cq batch of receive completions: fills out[] from the
// successful ones (in order; out must have room for wcs.size()), and links the
// WR of every consumed slot onto `chain`. Flushed buffers are not re-posted
// (the QP is in the error state).
RecvBatch take_recv_completions(std::span<const ibv_wc> wcs, const std::uint8_t* recv_base,
                                std::span<ibv_recv_wr> recv_wrs, std::uint8_t port_num,
                                std::uint32_t qp_qkey, std::span<MadBuf*> out,
                                RepostChain& chain) noexcept;

}  // namespace verbs

class VerbsUdTransport final : public Transport {
 public:
  // `clock` paces reopen attempts; it must outlive the transport.
  VerbsUdTransport(VerbsConfig config, const Clock& clock);
  ~VerbsUdTransport() override;
  VerbsUdTransport(const VerbsUdTransport&) = delete;
  VerbsUdTransport& operator=(const VerbsUdTransport&) = delete;

  std::string_view name() const noexcept override { return "verbs-ud"; }
  // Only gsi_client / sa_server: a UD QP cannot be QP0 or declare IsSM.
  bool open(const AgentSpec& agents) override;
  void close() noexcept override;
  const LocalPort& local_port() const noexcept override { return port_; }

  std::size_t rx_burst(std::span<MadBuf*> bufs) noexcept override;
  std::size_t tx_burst(std::span<MadBuf* const> bufs) noexcept override;

  DeviceEvent poll_events() noexcept override;

  const VerbsCounters& counters() const noexcept { return counters_; }
  bool is_open() const noexcept { return qp_ != nullptr; }
  std::uint32_t qp_num() const noexcept { return qp_ ? qp_->qp_num : 0; }
  std::uint32_t qkey() const noexcept { return config_.qkey; }
  bool is_roce() const noexcept { return is_roce_; }
  std::string_view device_name() const noexcept { return device_resolved_.data(); }
  // Why the last open() or reopen failed, or why the device was lost ("" if neither).
  std::string_view last_error() const noexcept { return last_error_.data(); }
  // MADs on the send queue whose completion has not been reaped.
  std::uint64_t sends_in_flight() const noexcept { return seq_posted_ - seq_completed_; }

  static constexpr std::size_t kPollBatch = 32;              // completions per ibv_poll_cq
  static constexpr std::size_t kRxDiscardsPerBurstMax = 64;  // bad completions one rx_burst skips
  static constexpr int kAsyncEventsPerPollMax = 16;

 private:
  bool open_device() noexcept;
  void close_device() noexcept;
  bool read_port(LocalPort& out) noexcept;
  bool to_rts() noexcept;
  bool post_all_receives() noexcept;
  void reap_sends() noexcept;
  ibv_ah* ah_for(const verbs::AhKey& k) noexcept;
  void lose(const char* why) noexcept;
  void set_error(const char* what, int err) noexcept;
  void note_fatal() noexcept { fatal_pending_ = true; }

  VerbsConfig config_;
  const Clock& clock_;
  LocalPort port_{};
  VerbsCounters counters_{};
  std::array<char, 64> device_resolved_{};
  std::array<char, 192> last_error_{};
  bool want_open_ = false;
  bool lost_ = false;
  bool fatal_pending_ = false;
  bool is_roce_ = false;
  Nanos next_reopen_ns_ = 0;

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  ibv_qp* qp_ = nullptr;

  // Allocated at the first open and kept across reopens: receive slots, then send slots.
  struct FreeDeleter {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::uint8_t, FreeDeleter> area_;
  std::size_t area_bytes_ = 0;
  std::unique_ptr<verbs::AhCache> ah_cache_;
  std::vector<ibv_recv_wr> recv_wrs_;  // one per receive slot, SGE fixed at open
  std::vector<ibv_sge> recv_sges_;
  std::vector<ibv_send_wr> send_wrs_;  // sq_depth, filled per burst
  std::vector<ibv_sge> send_sges_;
  std::vector<std::uint32_t> send_wr_buf_;
  std::array<ibv_wc, kPollBatch> wcs_{};
  std::uint64_t seq_posted_ = 0;     // send WRs posted since open
  std::uint64_t seq_completed_ = 0;  // send WRs known complete (in order)
};

// ---- template definition ----

namespace verbs {

template <typename Resolve>
ChainResult build_send_chain(std::span<MadBuf* const> bufs, std::size_t wrs_max,
                             const SendArea& area, std::uint64_t first_seq,
                             std::uint32_t qp_qkey, Resolve&& resolve,
                             std::span<ibv_send_wr> wrs, std::span<ibv_sge> sges,
                             std::span<std::uint32_t> wr_buf) noexcept {
  ChainResult r;
  if (wrs_max > wrs.size()) wrs_max = wrs.size();
  if (wrs_max > sges.size()) wrs_max = sges.size();
  if (wrs_max > wr_buf.size()) wrs_max = wr_buf.size();
  if (area.slots == 0) return r;
  for (; r.consumed < bufs.size(); ++r.consumed) {
    const MadBuf& b = *bufs[r.consumed];
    if (check_send(b, qp_qkey) != SendReject::kNone) {
      ++r.dropped;
      continue;
    }
    if (r.wrs == wrs_max) break;  // back-pressure: this buffer and the rest stay with the caller
    ibv_ah* ah = resolve(ah_key_of(b.addr));
    if (ah == nullptr) {
      ++r.dropped;
      continue;
    }
    const std::uint64_t seq = first_seq + r.wrs;
    std::uint8_t* slot = area.base + (seq % area.slots) * kSendSlotStride;
    std::memcpy(slot, b.mad.bytes.data(), b.len);
    std::memset(slot + b.len, 0, wire::kMadSize - b.len);

    ibv_sge& sge = sges[r.wrs];
    sge.addr = reinterpret_cast<std::uintptr_t>(slot);
    sge.length = static_cast<std::uint32_t>(wire::kMadSize);
    sge.lkey = area.lkey;
    ibv_send_wr& wr = wrs[r.wrs];
    wr = ibv_send_wr{};
    wr.wr_id = seq;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b.addr.remote_qpn;
    wr.wr.ud.remote_qkey = wr_qkey(b.addr, qp_qkey);
    if (r.wrs > 0) wrs[r.wrs - 1].next = &wr;
    wr_buf[r.wrs] = static_cast<std::uint32_t>(r.consumed);
    ++r.wrs;
  }
  if (r.wrs > 0) wrs[r.wrs - 1].send_flags = IBV_SEND_SIGNALED;
  return r;
}

}  // namespace verbs

}  // namespace madengine
