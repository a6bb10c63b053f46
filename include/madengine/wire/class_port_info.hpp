// ClassPortInfo (IBA 13.4.8.1, 72 bytes): the class-independent attribute a
// GSI class (the SA among them) answers with its capabilities, response time,
// redirect target and trap destination.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/sa/common.hpp"

namespace madengine::wire {

// CapabilityMask bits common to all classes (IBA 13.4.8.1) and the SA's own
// (IBA 15.2.5.1 and the 1.2 errata), bit numbers as OpenSM advertises them.
namespace cpi_cap {
inline constexpr std::uint16_t kTrap = 0x0001;
inline constexpr std::uint16_t kGetSet = 0x0002;  // Get/Set(Notice)
inline constexpr std::uint16_t kCapMask2 = 0x0004;
inline constexpr std::uint16_t kSaOptionalRecords = 1u << 8;
inline constexpr std::uint16_t kSaUdMulticast = 1u << 9;
inline constexpr std::uint16_t kSaMultiPath = 1u << 10;  // MultiPathRecord and TraceRecord
inline constexpr std::uint16_t kSaReinit = 1u << 11;
inline constexpr std::uint16_t kSaPortInfoCapMaskMatch = 1u << 13;
}  // namespace cpi_cap

// The SA's CapabilityMask2 bits (27-bit field).
namespace cpi_cap2 {
inline constexpr std::uint32_t kSaQos = 1u << 1;
inline constexpr std::uint32_t kSaReversePathPKey = 1u << 2;
inline constexpr std::uint32_t kSaMulticastFdbTop = 1u << 3;
inline constexpr std::uint32_t kSaHierarchyInfo = 1u << 4;
inline constexpr std::uint32_t kSaAliasGuids = 1u << 5;
inline constexpr std::uint32_t kSaFullPortInfoRecord = 1u << 6;
inline constexpr std::uint32_t kSaExtendedSpeeds = 1u << 7;
inline constexpr std::uint32_t kSaMulticastServiceRecords = 1u << 8;
inline constexpr std::uint32_t kSaPortInfoCapMask2Match = 1u << 10;
inline constexpr std::uint32_t kSaSendOnlyFullMember = 1u << 12;
inline constexpr std::uint32_t kSaLinkWidth2x = 1u << 13;
inline constexpr std::uint32_t kSaLinkSpeedHdr = 1u << 15;
inline constexpr std::uint32_t kSaLinkSpeedNdr = 1u << 17;
}  // namespace cpi_cap2

struct ClassPortInfo {
  std::uint8_t base_version;
  std::uint8_t class_version;
  be16 capability_mask;
  be32 cap_mask2_resp_time;               // CapabilityMask2 (27 bits), RespTimeValue (5 bits)
  Gid redirect_gid;
  std::array<std::uint8_t, 4> redirect_tc_sl_fl;  // TC 8, SL 4, FlowLabel 20
  be16 redirect_lid;
  be16 redirect_pkey;
  be32 redirect_qp;                        // reserved 8, QP 24
  be32 redirect_qkey;
  Gid trap_gid;
  std::array<std::uint8_t, 4> trap_tc_sl_fl;  // TC 8, SL 4, FlowLabel 20
  be16 trap_lid;
  be16 trap_pkey;
  be32 trap_hl_qp;                         // HopLimit 8, QP 24
  be32 trap_qkey;

  MADENGINE_WIRE_NAMED_BITS(CapMask2, cap_mask2, 4, 0, 27);
  // Response time is 4.096 us * 2^RespTimeValue (IBA 13.4.6.2).
  MADENGINE_WIRE_NAMED_BITS(RespTimeValue, resp_time_value, 7, 3, 5);
  MADENGINE_WIRE_NAMED_BITS(RedirectTc, redirect_tc, 24, 0, 8);
  MADENGINE_WIRE_NAMED_BITS(RedirectSl, redirect_sl, 25, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(RedirectFlowLabel, redirect_flow_label, 25, 4, 20);
  MADENGINE_WIRE_NAMED_BITS(RedirectQp, redirect_qpn, 33, 0, 24);
  MADENGINE_WIRE_NAMED_BITS(TrapTc, trap_tc, 56, 0, 8);
  MADENGINE_WIRE_NAMED_BITS(TrapSl, trap_sl, 57, 0, 4);
  MADENGINE_WIRE_NAMED_BITS(TrapFlowLabel, trap_flow_label, 57, 4, 20);
  MADENGINE_WIRE_NAMED_BITS(TrapHopLimit, trap_hop_limit, 64, 0, 8);
  MADENGINE_WIRE_NAMED_BITS(TrapQp, trap_qpn, 65, 0, 24);
};
static_assert(sizeof(ClassPortInfo) == 72 && alignof(ClassPortInfo) == 1);
static_assert(offsetof(ClassPortInfo, cap_mask2_resp_time) == 4);
static_assert(offsetof(ClassPortInfo, redirect_gid) == 8);
static_assert(offsetof(ClassPortInfo, redirect_lid) == 28);
static_assert(offsetof(ClassPortInfo, redirect_qp) == 32);
static_assert(offsetof(ClassPortInfo, redirect_qkey) == 36);
static_assert(offsetof(ClassPortInfo, trap_gid) == 40);
static_assert(offsetof(ClassPortInfo, trap_lid) == 60);
static_assert(offsetof(ClassPortInfo, trap_hl_qp) == 64);
static_assert(offsetof(ClassPortInfo, trap_qkey) == 68);
static_assert(detail::field_within<ClassPortInfo::CapMask2>(4, 4));
static_assert(detail::field_within<ClassPortInfo::RespTimeValue>(4, 4));
static_assert(detail::field_within<ClassPortInfo::RedirectFlowLabel>(24, 4));
static_assert(detail::field_within<ClassPortInfo::RedirectQp>(32, 4));
static_assert(detail::field_within<ClassPortInfo::TrapFlowLabel>(56, 4));
static_assert(detail::field_within<ClassPortInfo::TrapQp>(64, 4));

}  // namespace madengine::wire
