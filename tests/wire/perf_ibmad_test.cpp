// PerfMgt codecs (PortCounters, PortCountersExtended, the PMA's
// ClassPortInfo CapabilityMask) against libibmad's field tables, the
// independent decoder perfquery uses: seeded random values go both ways and
// any mismatch names the field. libibmad's IB_PC_* offsets are relative to
// the PerfMgt data (IB_PC_DATA_OFFS), so the attribute is placed there.
#include <gtest/gtest.h>
#include <infiniband/mad.h>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "madengine/wire/class_port_info.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/perf.hpp"

namespace madengine::wire {
namespace {

static_assert(IB_PC_DATA_OFFS == kPerfDataOffset);
static_assert(IB_PC_DATA_SZ == kPerfDataSize);
static_assert(IB_PERFORMANCE_CLASS == static_cast<int>(MgmtClass::kPerf));
static_assert(IB_GSI_PORT_COUNTERS == perf_attr::kPortCounters);
static_assert(IB_GSI_PORT_COUNTERS_EXT == perf_attr::kPortCountersExtended);
// The CapabilityMask bits (perf_cap) are not in libibmad; OpenSM's ib_types.h
// (IB_PM_*) and ibsim's PMA use the same bit numbers.

template <typename R>
struct Field {
  const char* name;
  MAD_FIELDS f;
  unsigned bits;
  std::uint64_t (*get)(const R&);
  void (*set)(R&, std::uint64_t);
};

#define BE(R, m, bits, F) \
  Field<R> { #m, F, bits, [](const R& r) -> std::uint64_t { return r.m.get(); }, [](R& r, std::uint64_t v) { r.m.set(static_cast<decltype(r.m.get())>(v)); } }
#define U8(R, m, F) \
  Field<R> { #m, F, 8, [](const R& r) -> std::uint64_t { return r.m; }, [](R& r, std::uint64_t v) { r.m = static_cast<std::uint8_t>(v); } }
#define ACC(R, m, bits, F) \
  Field<R> { #m, F, bits, [](const R& r) -> std::uint64_t { return r.m(); }, [](R& r, std::uint64_t v) { r.set_##m(static_cast<decltype(r.m())>(v)); } }

using MadBytes = std::array<std::uint8_t, kMadSize>;
constexpr std::uint64_t kSeed = 0x9e7f'2026ull;

std::uint64_t mask_of(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

template <typename R>
void cross_check(const char* attr, const std::vector<Field<R>>& fields) {
  std::mt19937_64 rng(kSeed);
  constexpr int base = IB_PC_DATA_OFFS;
  for (int it = 0; it < 200; ++it) {
    // Ours -> libibmad.
    MadBytes mad;
    for (auto& b : mad) b = static_cast<std::uint8_t>(rng());
    R rec;
    for (auto& b : as_writable_bytes(rec)) b = static_cast<std::uint8_t>(rng());
    std::vector<std::uint64_t> want;
    for (const auto& f : fields) {
      want.push_back(rng() & mask_of(f.bits));
      f.set(rec, want.back());
    }
    ASSERT_TRUE(encode(rec, std::span<std::uint8_t>(mad).subspan(base)));
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::uint64_t got = fields[i].bits > 32 ? mad_get_field64(mad.data(), base, fields[i].f)
                                                    : mad_get_field(mad.data(), base, fields[i].f);
      ASSERT_EQ(got, want[i]) << attr << "." << fields[i].name << " (ours -> libibmad, seed " << kSeed << ")";
    }
    // libibmad -> ours.
    for (auto& b : mad) b = static_cast<std::uint8_t>(rng());
    want.clear();
    for (const auto& f : fields) {
      want.push_back(rng() & mask_of(f.bits));
      if (f.bits > 32) mad_set_field64(mad.data(), base, f.f, want.back());
      else mad_set_field(mad.data(), base, f.f, static_cast<std::uint32_t>(want.back()));
    }
    const auto back = decode<R>(std::span<const std::uint8_t>(mad).subspan(base));
    ASSERT_TRUE(back);
    for (std::size_t i = 0; i < fields.size(); ++i)
      ASSERT_EQ(fields[i].get(*back), want[i]) << attr << "." << fields[i].name << " (libibmad -> ours, seed " << kSeed << ")";
  }
}

TEST(PerfIbmadCrossCheck, PortCounters) {
  using R = PortCounters;
  cross_check<R>("PortCounters", {
                                     U8(R, port_select, IB_PC_PORT_SELECT_F),
                                     BE(R, counter_select, 16, IB_PC_COUNTER_SELECT_F),
                                     BE(R, symbol_errors, 16, IB_PC_ERR_SYM_F),
                                     U8(R, link_error_recovery, IB_PC_LINK_RECOVERS_F),
                                     U8(R, link_downed, IB_PC_LINK_DOWNED_F),
                                     BE(R, rcv_errors, 16, IB_PC_ERR_RCV_F),
                                     BE(R, rcv_remote_phys_errors, 16, IB_PC_ERR_PHYSRCV_F),
                                     BE(R, rcv_switch_relay_errors, 16, IB_PC_ERR_SWITCH_REL_F),
                                     BE(R, xmit_discards, 16, IB_PC_XMT_DISCARDS_F),
                                     U8(R, xmit_constraint_errors, IB_PC_ERR_XMTCONSTR_F),
                                     U8(R, rcv_constraint_errors, IB_PC_ERR_RCVCONSTR_F),
                                     U8(R, counter_select2, IB_PC_COUNTER_SELECT2_F),
                                     ACC(R, local_link_integrity_errors, 4, IB_PC_ERR_LOCALINTEG_F),
                                     ACC(R, excessive_buffer_overrun_errors, 4, IB_PC_ERR_EXCESS_OVR_F),
                                     BE(R, vl15_dropped, 16, IB_PC_VL15_DROPPED_F),
                                     BE(R, xmit_data, 32, IB_PC_XMT_BYTES_F),
                                     BE(R, rcv_data, 32, IB_PC_RCV_BYTES_F),
                                     BE(R, xmit_pkts, 32, IB_PC_XMT_PKTS_F),
                                     BE(R, rcv_pkts, 32, IB_PC_RCV_PKTS_F),
                                     BE(R, xmit_wait, 32, IB_PC_XMT_WAIT_F),
                                 });
}

TEST(PerfIbmadCrossCheck, PortCountersExtended) {
  using R = PortCountersExtended;
  cross_check<R>("PortCountersExtended", {
                                             U8(R, port_select, IB_PC_EXT_PORT_SELECT_F),
                                             BE(R, counter_select, 16, IB_PC_EXT_COUNTER_SELECT_F),
                                             BE(R, xmit_data, 64, IB_PC_EXT_XMT_BYTES_F),
                                             BE(R, rcv_data, 64, IB_PC_EXT_RCV_BYTES_F),
                                             BE(R, xmit_pkts, 64, IB_PC_EXT_XMT_PKTS_F),
                                             BE(R, rcv_pkts, 64, IB_PC_EXT_RCV_PKTS_F),
                                             BE(R, unicast_xmit_pkts, 64, IB_PC_EXT_XMT_UPKTS_F),
                                             BE(R, unicast_rcv_pkts, 64, IB_PC_EXT_RCV_UPKTS_F),
                                             BE(R, multicast_xmit_pkts, 64, IB_PC_EXT_XMT_MPKTS_F),
                                             BE(R, multicast_rcv_pkts, 64, IB_PC_EXT_RCV_MPKTS_F),
                                         });
}

// The PMA's ClassPortInfo is the class-independent one at the PerfMgt data offset.
TEST(PerfIbmadCrossCheck, ClassPortInfoCapabilityMask) {
  using R = ClassPortInfo;
  cross_check<R>("ClassPortInfo", {
                                      U8(R, base_version, IB_CPI_BASEVER_F),
                                      U8(R, class_version, IB_CPI_CLASSVER_F),
                                      BE(R, capability_mask, 16, IB_CPI_CAPMASK_F),
                                      ACC(R, resp_time_value, 5, IB_CPI_RESP_TIME_VALUE_F),
                                  });
}

}  // namespace
}  // namespace madengine::wire
