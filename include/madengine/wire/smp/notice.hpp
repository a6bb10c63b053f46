// Notice (IBA 13.4.8.2): the trap/report payload. Generic notices carry a
// producer type and trap number; the 54 bytes of DataDetails are typed per
// trap below. A Notice is 80 bytes; inside an SMP Trap only the first 64 fit
// (IssuerGID is dropped), so use decode_smp_notice/encode_smp_notice there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

#include "madengine/wire/bits.hpp"
#include "madengine/wire/endian.hpp"
#include "madengine/wire/smp/common.hpp"

namespace madengine::wire {

inline constexpr std::size_t kNoticeSize = 80;
inline constexpr std::size_t kNoticeDataDetailsSize = 54;

// Notice Type (IBA 13.4.8.2, Table 119).
namespace notice_type {
inline constexpr std::uint8_t kFatal = 0;
inline constexpr std::uint8_t kUrgent = 1;
inline constexpr std::uint8_t kSecurity = 2;
inline constexpr std::uint8_t kSubnetManagement = 3;
inline constexpr std::uint8_t kInfo = 4;
inline constexpr std::uint8_t kEmpty = 0x7f;
}  // namespace notice_type

// ProducerType of a generic notice.
namespace notice_producer {
inline constexpr std::uint32_t kCa = 1;
inline constexpr std::uint32_t kSwitch = 2;
inline constexpr std::uint32_t kRouter = 3;
inline constexpr std::uint32_t kClassManager = 4;  // the SM/SA
}  // namespace notice_producer

// Generic trap numbers (IBA 14.2.5.1, Table 145 and 13.4.8.2).
namespace trap {
inline constexpr std::uint16_t kGidInService = 64;
inline constexpr std::uint16_t kGidOutOfService = 65;
inline constexpr std::uint16_t kMcGroupCreated = 66;
inline constexpr std::uint16_t kMcGroupDeleted = 67;
inline constexpr std::uint16_t kUnPath = 68;
inline constexpr std::uint16_t kRePath = 69;
inline constexpr std::uint16_t kLinkStateChange = 128;
inline constexpr std::uint16_t kLocalLinkIntegrity = 129;
inline constexpr std::uint16_t kExcessiveBufferOverrun = 130;
inline constexpr std::uint16_t kFlowControlWatchdog = 131;
inline constexpr std::uint16_t kLocalChanges = 144;  // capability mask, SM priority, NodeDescription...
inline constexpr std::uint16_t kSystemImageGuidChange = 145;
inline constexpr std::uint16_t kBadMKey = 256;
inline constexpr std::uint16_t kBadPKey = 257;
inline constexpr std::uint16_t kBadQKey = 258;
inline constexpr std::uint16_t kBadPKeySwitchPort = 259;
}  // namespace trap

// Traps 64..67: the GID that came into/went out of service (or the MGID).
struct NoticeDetailsGid {
  std::array<std::uint8_t, 6> reserved0;
  Gid gid;
  std::array<std::uint8_t, 32> reserved1;
};
static_assert(sizeof(NoticeDetailsGid) == kNoticeDataDetailsSize);
static_assert(offsetof(NoticeDetailsGid, gid) == 6);

// Trap 128: link state change at the switch with this LID.
struct NoticeDetails128 {
  be16 lid;
  std::array<std::uint8_t, 52> reserved0;
};
static_assert(sizeof(NoticeDetails128) == kNoticeDataDetailsSize);

// Traps 129..131: an error threshold crossed at LID/port.
struct NoticeDetails129 {
  be16 reserved0;
  be16 lid;
  std::uint8_t port_num;
  std::array<std::uint8_t, 49> reserved1;
};
static_assert(sizeof(NoticeDetails129) == kNoticeDataDetailsSize);

// Trap 144 ChangeFlags (host order).
namespace trap144_change {
inline constexpr std::uint16_t kNodeDescription = 1u << 0;
inline constexpr std::uint16_t kLinkWidthEnabled = 1u << 1;
inline constexpr std::uint16_t kLinkSpeedEnabled = 1u << 2;
inline constexpr std::uint16_t kSmPriority = 1u << 3;
inline constexpr std::uint16_t kHierarchyInfo = 1u << 4;
inline constexpr std::uint16_t kCapabilityMask2 = 1u << 5;
}  // namespace trap144_change

// Trap 144: a port's CapabilityMask or other local attributes changed
// (an SM's IsSM bit or priority, used in SM discovery).
struct NoticeDetails144 {
  be16 reserved0;
  be16 lid;
  std::uint8_t reserved1;
  std::uint8_t bits5_;        // bit 7: OtherLocalChanges
  be32 capability_mask;       // the new PortInfo:CapabilityMask
  be16 change_flags;          // trap144_change bits
  be16 capability_mask2;
  std::array<std::uint8_t, 40> reserved2;

  MADENGINE_WIRE_BITS(other_local_changes, 5, 7, 1);
};
static_assert(sizeof(NoticeDetails144) == kNoticeDataDetailsSize);
static_assert(offsetof(NoticeDetails144, capability_mask) == 6);

// Trap 145: system image GUID changed.
struct NoticeDetails145 {
  be16 reserved0;
  be16 lid;
  be16 reserved1;
  be64 system_image_guid;
  std::array<std::uint8_t, 40> reserved2;
};
static_assert(sizeof(NoticeDetails145) == kNoticeDataDetailsSize);

// Trap 256: an SMP arrived with a bad M_Key. For a directed-route SMP the
// return path is included (truncated to 30 hops, with DRPathTruncated set).
struct NoticeDetails256 {
  be16 reserved0;
  be16 lid;
  be16 dr_slid;
  std::uint8_t method;
  std::uint8_t reserved1;
  be16 attr_id;
  be32 attr_mod;
  be64 m_key;
  std::uint8_t reserved2;
  std::uint8_t bits23_;  // DRNotice, DRPathTruncated, DRHopCount
  std::array<std::uint8_t, 30> dr_return_path;

  MADENGINE_WIRE_BITS(dr_notice, 23, 0, 1);
  MADENGINE_WIRE_BITS(dr_path_truncated, 23, 1, 1);
  MADENGINE_WIRE_BITS(dr_hop_count, 23, 2, 6);
};
static_assert(sizeof(NoticeDetails256) == kNoticeDataDetailsSize);
static_assert(offsetof(NoticeDetails256, m_key) == 14);
static_assert(offsetof(NoticeDetails256, dr_return_path) == 24);

// Traps 257 (bad P_Key) and 258 (bad Q_Key) at a CA/router port.
struct NoticeDetails257 {
  be16 reserved0;
  be16 lid1;
  be16 lid2;
  be32 key;
  std::array<std::uint8_t, 4> sl_qp1_;  // SL (4 bits), reserved (4), QP1 (24)
  std::array<std::uint8_t, 4> qp2_;     // reserved (8), QP2 (24)
  Gid gid1;
  Gid gid2;
  std::array<std::uint8_t, 4> reserved1;

  MADENGINE_WIRE_BITS(sl, 10, 0, 4);
  MADENGINE_WIRE_BITS(qp1, 11, 0, 24);
  MADENGINE_WIRE_BITS(qp2, 15, 0, 24);
};
static_assert(sizeof(NoticeDetails257) == kNoticeDataDetailsSize);
static_assert(offsetof(NoticeDetails257, gid1) == 18);
using NoticeDetails258 = NoticeDetails257;

// Trap 259: bad P_Key at a switch external port.
struct NoticeDetails259 {
  be16 data_valid;  // which of the fields below the switch filled in
  be16 lid1;
  be16 lid2;
  be16 pkey;
  std::array<std::uint8_t, 4> sl_qp1_;  // SL (4 bits), reserved (4), QP1 (24)
  std::array<std::uint8_t, 4> qp2_;     // reserved (8), QP2 (24)
  Gid gid1;
  Gid gid2;
  be16 sw_lid;
  std::uint8_t port_num;
  std::array<std::uint8_t, 3> reserved0;

  MADENGINE_WIRE_BITS(sl, 8, 0, 4);
  MADENGINE_WIRE_BITS(qp1, 9, 0, 24);
  MADENGINE_WIRE_BITS(qp2, 13, 0, 24);
};
static_assert(sizeof(NoticeDetails259) == kNoticeDataDetailsSize);
static_assert(offsetof(NoticeDetails259, gid1) == 16);
static_assert(offsetof(NoticeDetails259, sw_lid) == 48);

template <typename T>
concept NoticeDetails = std::is_trivially_copyable_v<T> && alignof(T) == 1 &&
                        sizeof(T) == kNoticeDataDetailsSize;

struct Notice {
  std::uint8_t bits0_;                      // 0: IsGeneric, Type
  std::array<std::uint8_t, 3> producer_;    // 1: ProducerType (generic) or VendorID
  be16 trap_number;                         // 4: TrapNumber (generic) or DeviceID
  be16 issuer_lid;                          // 6
  std::array<std::uint8_t, 2> toggle_count_;  // 8: NoticeToggle, NoticeCount
  std::array<std::uint8_t, kNoticeDataDetailsSize> data_details;  // 10
  Gid issuer_gid;                           // 64: absent in an SMP Trap

  MADENGINE_WIRE_BITS(is_generic, 0, 0, 1);
  MADENGINE_WIRE_BITS(type, 0, 1, 7);
  MADENGINE_WIRE_BITS(producer_type, 1, 0, 24);  // generic notices
  MADENGINE_WIRE_BITS(vendor_id, 1, 0, 24);      // vendor notices: the same bits
  MADENGINE_WIRE_BITS(notice_toggle, 8, 0, 1);
  MADENGINE_WIRE_BITS(notice_count, 8, 1, 15);

  std::uint16_t device_id() const noexcept { return trap_number.get(); }  // vendor notices

  // Typed views of DataDetails; which one applies depends on trap_number.
  template <NoticeDetails D>
  D details() const noexcept {
    D d;
    std::memcpy(smp_detail::raw(&d), data_details.data(), sizeof(D));
    return d;
  }
  template <NoticeDetails D>
  void set_details(const D& d) noexcept {
    std::memcpy(data_details.data(), smp_detail::raw(&d), sizeof(D));
  }
};
static_assert(sizeof(Notice) == kNoticeSize && alignof(Notice) == 1);
static_assert(offsetof(Notice, trap_number) == 4);
static_assert(offsetof(Notice, issuer_lid) == 6);
static_assert(offsetof(Notice, data_details) == 10);
static_assert(offsetof(Notice, issuer_gid) == kSmpDataSize);

// A generic notice with the header fields an SMA or SM fills in.
inline Notice make_generic_notice(std::uint8_t type, std::uint32_t producer, std::uint16_t trap_num,
                                  std::uint16_t issuer_lid) noexcept {
  Notice n{};
  n.set_is_generic(1);
  n.set_type(type);
  n.set_producer_type(producer);
  n.trap_number = be16::from(trap_num);
  n.issuer_lid = be16::from(issuer_lid);
  return n;
}

// The Notice carried as SMP data (a Trap or TrapRepress): 64 bytes, so
// IssuerGID is zero after decoding and is not written when encoding.
inline std::optional<Notice> decode_smp_notice(std::span<const std::uint8_t> bytes) noexcept {
  if (bytes.size() < kSmpDataSize) return std::nullopt;
  Notice n{};
  std::memcpy(smp_detail::raw(&n), bytes.data(), kSmpDataSize);
  return n;
}
inline bool encode_smp_notice(const Notice& n, std::span<std::uint8_t> out) noexcept {
  if (out.size() < kSmpDataSize) return false;
  std::memcpy(out.data(), smp_detail::raw(&n), kSmpDataSize);
  return true;
}

}  // namespace madengine::wire
