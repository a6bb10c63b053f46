// A standby's replication client: runs ReplicaRounds against the
// master's SA from the SM's core and keeps the last complete SA state image
// with the time it was taken. Answers reach it before the SM's transaction
// manager (the SM's response hook offers them here first).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/poller.hpp"
#include "engine/rmpp.hpp"
#include "engine/tx_sink.hpp"
#include "sa/state/journal.hpp"
#include "sm/ha/sa_replica.hpp"

namespace madengine::sm::ha {

struct ReplicaCounters {
  std::uint64_t rounds = 0;     // started
  std::uint64_t complete = 0;   // gave an image
  std::uint64_t failed = 0;     // an error status, a malformed table or an RMPP abort
  std::uint64_t timed_out = 0;  // not complete within the round's time (or replaced by the next round)
  std::int64_t last_round_us = -1;  // how long the last complete round took, from its queries to its image
  std::int64_t max_round_us = -1;   // the longest complete round
  bool operator==(const ReplicaCounters&) const = default;
};

// Bounds of the receiving side: a table of 8,192 segments holds 9,300
// ServiceRecords or 29,000 MCMemberRecords (every host of a large fabric in
// the IPoIB broadcast group); the three tables may arrive at once.
inline constexpr std::uint32_t kReplicaSegmentsMax = 8192;
inline constexpr std::uint32_t kReplicaTransfersMax = 3;

class ReplicaClient final : public Poller {
 public:
  // `core_id` is the core whose TIDs the queries carry (the SM's core: the
  // dispatcher steers the answers there). Allocates its RMPP buffers here.
  ReplicaClient(const Clock& clock, TxSink& tx, std::uint16_t core_id);

  // Sends a round's three GetTables to `sa`; a round still in flight is
  // abandoned (counted as timed out). The round fails if it is not complete
  // after `timeout_ns`. False if the transmit queue refused a query.
  bool start(const SaTarget& sa, std::uint64_t sm_key, Nanos timeout_ns, LidOfGid lid_of) noexcept;
  // A response MAD on our core: true if it belongs to the round (consumed).
  bool on_response(const MadBuf& buf) noexcept;
  // RMPP timers and the round's deadline.
  std::size_t poll(Nanos now_ns) noexcept override;

  bool in_flight() const noexcept { return round_.has_value(); }
  // The last complete image and when it was taken (engine clock).
  const std::optional<sa::SaStateImage>& image() const noexcept { return image_; }
  Nanos image_at_ns() const noexcept { return image_at_ns_; }
  // Hands the image over (takeover) and forgets it.
  std::optional<sa::SaStateImage> take_image() noexcept;
  const ReplicaCounters& counters() const noexcept { return counters_; }
  const std::string& last_error() const noexcept { return error_; }

 private:
  static void on_rmpp_done(void* user, const RmppRecvDone& done) noexcept;
  void answer(const MadBuf& first, std::span<const std::uint8_t> payload) noexcept;
  void finish_if_done() noexcept;
  bool ours(const MadBuf& buf) const noexcept;
  // Ends the round in flight; its RMPP transfers are aborted so their slots are free.
  void drop_round() noexcept;

  const Clock& clock_;
  TxSink& tx_;
  std::uint16_t core_id_;
  RmppReceiver receiver_;
  std::uint32_t seq_ = 0;
  std::optional<ReplicaRound> round_;
  std::uint32_t round_tid_low_ = 0;  // of the first query; +1, +2 the others
  std::array<std::optional<RmppKey>, 3> transfers_{};  // the round's RMPP transfers, as first seen
  Nanos started_ns_ = 0;
  Nanos deadline_ns_ = 0;
  LidOfGid lid_of_;
  std::optional<sa::SaStateImage> image_;
  Nanos image_at_ns_ = -1;
  ReplicaCounters counters_;
  std::string error_;
};

}  // namespace madengine::sm::ha
