// The SA MAD layout (IBA 15.2.1): MAD header, RMPP header, SM_Key,
// AttributeOffset, ComponentMask and 200 bytes of record data; SA attribute
// IDs and SA status codes. Record layouts are in sa_records.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "madengine/wire/mad.hpp"
#include "madengine/wire/rmpp.hpp"

namespace madengine::wire {

inline constexpr std::size_t kSaHeaderSize = 56;
inline constexpr std::size_t kSaDataSize = kMadSize - kSaHeaderSize;  // 200
inline constexpr std::uint8_t kSaClassVersion = 2;

// SA attribute IDs (IBA 15.2.5, Table 185).
namespace sa_attr {
inline constexpr std::uint16_t kClassPortInfo = 0x0001;
inline constexpr std::uint16_t kNotice = 0x0002;
inline constexpr std::uint16_t kInformInfo = 0x0003;
inline constexpr std::uint16_t kNodeRecord = 0x0011;
inline constexpr std::uint16_t kPortInfoRecord = 0x0012;
inline constexpr std::uint16_t kSl2VlTableRecord = 0x0013;
inline constexpr std::uint16_t kSwitchInfoRecord = 0x0014;
inline constexpr std::uint16_t kLinearFwdTableRecord = 0x0015;
inline constexpr std::uint16_t kRandomFwdTableRecord = 0x0016;
inline constexpr std::uint16_t kMulticastFwdTableRecord = 0x0017;
inline constexpr std::uint16_t kSmInfoRecord = 0x0018;
inline constexpr std::uint16_t kLinkRecord = 0x0020;
inline constexpr std::uint16_t kGuidInfoRecord = 0x0030;
inline constexpr std::uint16_t kServiceRecord = 0x0031;
inline constexpr std::uint16_t kPKeyTableRecord = 0x0033;
inline constexpr std::uint16_t kPathRecord = 0x0035;
inline constexpr std::uint16_t kVlArbTableRecord = 0x0036;
inline constexpr std::uint16_t kMcMemberRecord = 0x0038;
inline constexpr std::uint16_t kTraceRecord = 0x0039;
inline constexpr std::uint16_t kMultiPathRecord = 0x003a;
inline constexpr std::uint16_t kServiceAssociationRecord = 0x003b;
inline constexpr std::uint16_t kInformInfoRecord = 0x00f3;
}  // namespace sa_attr

// SA-specific status codes, bits 8-15 of the MAD status (IBA 15.2.1.1).
namespace sa_status {
inline constexpr std::uint16_t kNoResources = 0x0100;
inline constexpr std::uint16_t kReqInvalid = 0x0200;
inline constexpr std::uint16_t kNoRecords = 0x0300;
inline constexpr std::uint16_t kTooManyRecords = 0x0400;
inline constexpr std::uint16_t kReqInvalidGid = 0x0500;
inline constexpr std::uint16_t kReqInsufficientComponents = 0x0600;
inline constexpr std::uint16_t kReqDenied = 0x0700;
}  // namespace sa_status

struct SaMad {
  MadHeader hdr;
  RmppHeader rmpp;
  be64 sm_key;
  be16 attr_offset;  // record size in 8-byte words, for GetTable responses
  be16 reserved;
  be64 comp_mask;
  std::array<std::uint8_t, kSaDataSize> data;
};
static_assert(sizeof(SaMad) == kMadSize);
static_assert(offsetof(SaMad, rmpp) == 24);
static_assert(offsetof(SaMad, sm_key) == 36);
static_assert(offsetof(SaMad, attr_offset) == 44);
static_assert(offsetof(SaMad, comp_mask) == 48);
static_assert(offsetof(SaMad, data) == kSaHeaderSize);

// Checks what an SA server or client relies on before parsing the data.
constexpr MadError validate(const SaMad& m) noexcept {
  if (m.hdr.base_version != 1) return MadError::kBadBaseVersion;
  if (m.hdr.class_version != kSaClassVersion) return MadError::kBadClassVersion;
  if (const auto e = validate(m.rmpp); e != MadError::kOk) return e;
  return MadError::kOk;
}

// An SA request (IBA 15.2.1): header, component mask and the query's record
// (any record struct; copied into the data field, truncated to it).
template <typename Record>
inline SaMad make_sa_request(std::uint8_t meth, std::uint16_t attr_id, std::uint64_t tid, std::uint64_t comp_mask,
                             const Record& rec, std::uint64_t sm_key = 0) noexcept {
  static_assert(std::is_trivially_copyable_v<Record>);
  SaMad m{};
  m.hdr.base_version = 1;
  m.hdr.mgmt_class = static_cast<std::uint8_t>(MgmtClass::kSubnAdm);
  m.hdr.class_version = kSaClassVersion;
  m.hdr.method = meth;
  m.hdr.tid = be64::from(tid);
  m.hdr.attr_id = be16::from(attr_id);
  m.sm_key = be64::from(sm_key);
  m.comp_mask = be64::from(comp_mask);
  std::memcpy(m.data.data(), &rec, std::min(sizeof(Record), m.data.size()));
  return m;
}

// The attribute offset (in 8-byte units) for a record of `bytes` bytes.
constexpr std::uint16_t attr_offset_for(std::size_t bytes) noexcept {
  return static_cast<std::uint16_t>((bytes + 7) / 8);
}

}  // namespace madengine::wire
