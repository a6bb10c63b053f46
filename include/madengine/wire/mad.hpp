// The MAD common header (IBA 13.4.2) and the constants every class shares:
// management classes, methods and status codes. A MAD is always 256 bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"

namespace madengine::wire {

inline constexpr std::size_t kMadSize = 256;
inline constexpr std::size_t kMadHeaderSize = 24;

enum class MgmtClass : std::uint8_t {
  kSubnLid = 0x01,       // LID-routed SMP (QP0)
  kSubnAdm = 0x03,       // SA (QP1)
  kPerf = 0x04,
  kBoardMgmt = 0x05,
  kDevMgmt = 0x06,
  kComMgmt = 0x07,
  kSubnDirected = 0x81,  // directed-route SMP (QP0)
};

// Methods (IBA 13.4.5). The response bit is 0x80.
namespace method {
inline constexpr std::uint8_t kGet = 0x01;
inline constexpr std::uint8_t kSet = 0x02;
inline constexpr std::uint8_t kSend = 0x03;
inline constexpr std::uint8_t kTrap = 0x05;
inline constexpr std::uint8_t kReport = 0x06;
inline constexpr std::uint8_t kTrapRepress = 0x07;
inline constexpr std::uint8_t kGetTable = 0x12;
inline constexpr std::uint8_t kGetTraceTable = 0x13;
inline constexpr std::uint8_t kGetMulti = 0x14;
inline constexpr std::uint8_t kDelete = 0x15;
inline constexpr std::uint8_t kResponse = 0x80;
inline constexpr std::uint8_t kGetResp = kGet | kResponse;
inline constexpr std::uint8_t kReportResp = kReport | kResponse;
inline constexpr std::uint8_t kGetTableResp = kGetTable | kResponse;
inline constexpr std::uint8_t kGetTraceTableResp = kGetTraceTable | kResponse;
inline constexpr std::uint8_t kGetMultiResp = kGetMulti | kResponse;
inline constexpr std::uint8_t kDeleteResp = kDelete | kResponse;
}  // namespace method

// MAD status (IBA 13.4.7, Table 111): bit 0 busy, bit 1 redirect, bits 2-4
// the common code, bits 8-15 class specific (SA codes in sa.hpp).
namespace status {
inline constexpr std::uint16_t kOk = 0x0000;
inline constexpr std::uint16_t kBusy = 0x0001;
inline constexpr std::uint16_t kRedirect = 0x0002;
inline constexpr std::uint16_t kBadVersion = 0x0004;
inline constexpr std::uint16_t kMethodUnsupported = 0x0008;
inline constexpr std::uint16_t kMethodAttrUnsupported = 0x000c;
inline constexpr std::uint16_t kInvalidField = 0x001c;  // bad attribute or modifier value
inline constexpr std::uint16_t kCodeMask = 0x001c;
}  // namespace status

// Class-independent attributes (IBA 13.4.8).
namespace attr {
inline constexpr std::uint16_t kClassPortInfo = 0x0001;
inline constexpr std::uint16_t kNotice = 0x0002;
inline constexpr std::uint16_t kInformInfo = 0x0003;
}  // namespace attr

struct MadHeader {
  std::uint8_t base_version;   // always 1
  std::uint8_t mgmt_class;
  std::uint8_t class_version;
  std::uint8_t method;         // response bit 0x80
  be16 status;                 // DR SMP: bit 15 is the direction bit D
  be16 class_specific;         // DR SMP: hop pointer, hop count
  be64 tid;
  be16 attr_id;
  be16 reserved;
  be32 attr_mod;

  constexpr bool is_response() const noexcept { return (method & method::kResponse) != 0; }
  constexpr MgmtClass klass() const noexcept { return static_cast<MgmtClass>(mgmt_class); }
};
static_assert(sizeof(MadHeader) == kMadHeaderSize);
static_assert(offsetof(MadHeader, tid) == 8);
static_assert(offsetof(MadHeader, attr_id) == 16);
static_assert(offsetof(MadHeader, attr_mod) == 20);

// A whole MAD as bytes; class-specific layouts (Smp, DrSmp, SaMad) overlay it.
struct Mad {
  std::array<std::uint8_t, kMadSize> bytes{};
};
static_assert(sizeof(Mad) == kMadSize && alignof(Mad) == 1);

// Why a received MAD was rejected before any class handler saw it.
enum class MadError : std::uint8_t {
  kOk,
  kTooShort,        // fewer than the bytes its class needs
  kBadBaseVersion,  // base version is not 1
  kBadClassVersion,
  kBadHopPointer,   // DR SMP: hop pointer/count out of range
  kBadRmpp,         // RMPP header inconsistent
  kBadAttrOffset,   // SA: attribute offset out of range
};
constexpr const char* to_string(MadError e) noexcept {
  switch (e) {
    case MadError::kOk: return "ok";
    case MadError::kTooShort: return "too short";
    case MadError::kBadBaseVersion: return "bad base version";
    case MadError::kBadClassVersion: return "bad class version";
    case MadError::kBadHopPointer: return "bad hop pointer or hop count";
    case MadError::kBadRmpp: return "bad RMPP header";
    case MadError::kBadAttrOffset: return "bad attribute offset";
  }
  return "unknown";
}

}  // namespace madengine::wire
