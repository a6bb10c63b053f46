// The RMPP header (IBA 13.6.2) that follows the MAD header in classes that
// carry multi-MAD transfers (the SA among them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "madengine/wire/mad.hpp"

namespace madengine::wire {

inline constexpr std::size_t kRmppHeaderSize = 12;

enum class RmppType : std::uint8_t { kNone = 0, kData = 1, kAck = 2, kStop = 3, kAbort = 4 };

namespace rmpp_flag {
inline constexpr std::uint8_t kActive = 0x01;
inline constexpr std::uint8_t kFirst = 0x02;
inline constexpr std::uint8_t kLast = 0x04;
}  // namespace rmpp_flag

// RMPP status codes (IBA 13.6.2.2, Table 174).
namespace rmpp_status {
inline constexpr std::uint8_t kNormal = 0;
inline constexpr std::uint8_t kResourcesExhausted = 1;  // STOP
inline constexpr std::uint8_t kTotalTimeTooLong = 118;  // ABORT from here on
inline constexpr std::uint8_t kInconsistentLastAndLength = 119;
inline constexpr std::uint8_t kInconsistentFirstAndSegment = 120;
inline constexpr std::uint8_t kBadRmppType = 121;
inline constexpr std::uint8_t kNewWindowLastTooSmall = 122;
inline constexpr std::uint8_t kSegmentNumberTooBig = 123;
inline constexpr std::uint8_t kIllegalStatus = 124;
inline constexpr std::uint8_t kUnsupportedVersion = 125;
inline constexpr std::uint8_t kTooManyRetries = 126;
inline constexpr std::uint8_t kUnspecified = 127;
}  // namespace rmpp_status

struct RmppHeader {
  std::uint8_t version;      // 1 when RMPP is in use, 0 otherwise
  std::uint8_t type;         // RmppType
  std::uint8_t rtime_flags;  // RRespTime (5 bits) << 3 | flags (3 bits)
  std::uint8_t status;
  be32 data1;                // DATA/ACK: segment number
  be32 data2;                // DATA: payload length (first and last); ACK: new window last

  constexpr RmppType rmpp_type() const noexcept { return static_cast<RmppType>(type); }
  constexpr std::uint8_t flags() const noexcept { return rtime_flags & 0x07; }
  constexpr std::uint8_t resp_time() const noexcept { return rtime_flags >> 3; }
  constexpr bool active() const noexcept { return (rtime_flags & rmpp_flag::kActive) != 0; }
  constexpr void set_flags(std::uint8_t resp_time_value, std::uint8_t f) noexcept {
    rtime_flags = static_cast<std::uint8_t>((resp_time_value << 3) | (f & 0x07));
  }
};
static_assert(sizeof(RmppHeader) == kRmppHeaderSize);

// Checks the RMPP header of an active transfer for what a receiver relies on.
constexpr MadError validate(const RmppHeader& r) noexcept {
  if (!r.active()) return MadError::kOk;
  if (r.version != 1) return MadError::kBadRmpp;
  const auto t = r.rmpp_type();
  if (t != RmppType::kData && t != RmppType::kAck && t != RmppType::kStop && t != RmppType::kAbort)
    return MadError::kBadRmpp;
  if (t == RmppType::kData && r.data1.get() == 0) return MadError::kBadRmpp;  // segments count from 1
  return MadError::kOk;
}

}  // namespace madengine::wire
