// Subnet Management Packets (IBA 14.2.1): the LID-routed layout (class 0x01)
// and the directed-route layout (class 0x81) with its hop pointer, hop count,
// direction bit and initial/return paths. SMP attribute payloads (64 bytes)
// are in smp_attrs.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "madengine/wire/mad.hpp"

namespace madengine::wire {

inline constexpr std::size_t kSmpDataSize = 64;
inline constexpr std::uint8_t kDrHopsMax = 63;  // paths are 64 bytes, entry 0 unused
inline constexpr std::uint16_t kPermissiveLid = 0xffff;

// SMP attribute IDs (IBA 14.2.5, Table 145).
namespace smp_attr {
inline constexpr std::uint16_t kNotice = 0x0002;
inline constexpr std::uint16_t kNodeDescription = 0x0010;
inline constexpr std::uint16_t kNodeInfo = 0x0011;
inline constexpr std::uint16_t kSwitchInfo = 0x0012;
inline constexpr std::uint16_t kGuidInfo = 0x0014;
inline constexpr std::uint16_t kPortInfo = 0x0015;
inline constexpr std::uint16_t kPKeyTable = 0x0016;
inline constexpr std::uint16_t kSl2VlTable = 0x0017;
inline constexpr std::uint16_t kVlArbTable = 0x0018;
inline constexpr std::uint16_t kLinearFwdTable = 0x0019;
inline constexpr std::uint16_t kRandomFwdTable = 0x001a;
inline constexpr std::uint16_t kMulticastFwdTable = 0x001b;
inline constexpr std::uint16_t kSmInfo = 0x0020;
inline constexpr std::uint16_t kVendorDiag = 0x0030;
inline constexpr std::uint16_t kLedInfo = 0x0031;
}  // namespace smp_attr

// SMP-specific status (IBA 14.2.1.1): an M_Key violation is answered with no
// response at all; everything else uses the common codes of mad.hpp.

// LID-routed SMP.
struct Smp {
  MadHeader hdr;
  be64 m_key;
  std::array<std::uint8_t, 32> reserved1;
  std::array<std::uint8_t, kSmpDataSize> data;
  std::array<std::uint8_t, 128> reserved2;
};
static_assert(sizeof(Smp) == kMadSize);
static_assert(offsetof(Smp, m_key) == 24);
static_assert(offsetof(Smp, data) == 64);

// Directed-route SMP.
struct DrSmp {
  MadHeader hdr;  // status bit 15 = D (direction), class_specific = hop pointer << 8 | hop count
  be64 m_key;
  be16 dr_slid;
  be16 dr_dlid;
  std::array<std::uint8_t, 28> reserved1;
  std::array<std::uint8_t, kSmpDataSize> data;
  std::array<std::uint8_t, 64> initial_path;
  std::array<std::uint8_t, 64> return_path;

  std::uint8_t hop_pointer() const noexcept { return hdr.class_specific.bytes()[0]; }
  std::uint8_t hop_count() const noexcept { return hdr.class_specific.bytes()[1]; }
  void set_hops(std::uint8_t pointer, std::uint8_t count) noexcept {
    hdr.class_specific.set(static_cast<std::uint16_t>(pointer << 8 | count));
  }
  // D bit: 0 on the way out (request), 1 on the way back (response).
  bool direction_in() const noexcept { return (hdr.status.get() & 0x8000) != 0; }
  void set_direction_in(bool in) noexcept {
    hdr.status.set(static_cast<std::uint16_t>((hdr.status.get() & 0x7fff) | (in ? 0x8000 : 0)));
  }
  std::uint16_t smp_status() const noexcept { return hdr.status.get() & 0x7fff; }
};
static_assert(sizeof(DrSmp) == kMadSize);
static_assert(offsetof(DrSmp, m_key) == 24);
static_assert(offsetof(DrSmp, dr_slid) == 32);
static_assert(offsetof(DrSmp, dr_dlid) == 34);
static_assert(offsetof(DrSmp, data) == 64);
static_assert(offsetof(DrSmp, initial_path) == 128);
static_assert(offsetof(DrSmp, return_path) == 192);

// A directed-route path: the output port at each hop, hops 1..count.
struct DrPath {
  std::array<std::uint8_t, kDrHopsMax + 1> ports{};  // ports[0] unused, as on the wire
  std::uint8_t hops = 0;

  bool push(std::uint8_t port) noexcept {
    if (hops >= kDrHopsMax) return false;
    ports[++hops] = port;
    return true;
  }
  DrPath extended(std::uint8_t port) const noexcept {
    DrPath p = *this;
    p.push(port);
    return p;
  }
  bool operator==(const DrPath& o) const noexcept {
    for (std::uint8_t i = 1; i <= hops; ++i)
      if (ports[i] != o.ports[i]) return false;
    return hops == o.hops;
  }
};

// Checks the parts of a DR SMP that a forwarder trusts: hop count within the
// path array and a hop pointer no further than one past the end (IBA 14.2.2).
// A hop pointer of hop_count + 1 (up to 64) marks a finished outbound walk:
// index the 64-entry paths only with a pointer <= hop_count.
constexpr MadError validate(const DrSmp& smp) noexcept {
  if (smp.hdr.base_version != 1) return MadError::kBadBaseVersion;
  if (smp.hdr.class_version != 1) return MadError::kBadClassVersion;
  if (smp.hop_count() > kDrHopsMax) return MadError::kBadHopPointer;
  if (smp.hop_pointer() > smp.hop_count() + 1) return MadError::kBadHopPointer;
  return MadError::kOk;
}

// A LID-routed SMP: base and class version 1.
constexpr MadError validate(const Smp& smp) noexcept {
  if (smp.hdr.base_version != 1) return MadError::kBadBaseVersion;
  if (smp.hdr.class_version != 1) return MadError::kBadClassVersion;
  return MadError::kOk;
}

// Builds a request header with the constant fields filled in.
constexpr MadHeader make_smp_header(MgmtClass klass, std::uint8_t meth, std::uint16_t attr_id,
                                    std::uint32_t attr_mod, std::uint64_t tid) noexcept {
  MadHeader h{};
  h.base_version = 1;
  h.mgmt_class = static_cast<std::uint8_t>(klass);
  h.class_version = 1;
  h.method = meth;
  h.tid = be64::from(tid);
  h.attr_id = be16::from(attr_id);
  h.attr_mod = be32::from(attr_mod);
  return h;
}

// A directed-route request along `path` (IBA 14.2.2.1: hop pointer 0, D=0,
// DrSLID/DrDLID permissive when the whole route is directed).
inline DrSmp make_dr_smp(std::uint8_t meth, std::uint16_t attr_id, std::uint32_t attr_mod,
                         std::uint64_t tid, const DrPath& path, std::uint64_t m_key = 0) noexcept {
  DrSmp smp{};
  smp.hdr = make_smp_header(MgmtClass::kSubnDirected, meth, attr_id, attr_mod, tid);
  smp.m_key = be64::from(m_key);
  smp.dr_slid = be16::from(kPermissiveLid);
  smp.dr_dlid = be16::from(kPermissiveLid);
  smp.set_hops(0, path.hops);
  for (std::uint8_t i = 1; i <= path.hops; ++i) smp.initial_path[i] = path.ports[i];
  return smp;
}

}  // namespace madengine::wire
