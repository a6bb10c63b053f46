// Synchronous SMP client over a fabric endpoint (tests and benchmarks only).
#include "sim/smp_client.hpp"

#include <algorithm>
#include <cstring>

namespace madengine::sim {

std::optional<MadBuf> SmpClient::transact(const MadBuf& request) {
  const std::uint64_t tid = request.hdr().tid.get();
  if (!fabric_.send(ep_, request)) return std::nullopt;
  MadBuf in;
  MadBuf* one[1] = {&in};
  // Bounded: every event either delivers, drops or schedules a later event,
  // and the fabric never creates traffic by itself.
  for (;;) {
    while (fabric_.receive(ep_, one) == 1)
      if (in.hdr().tid.get() == tid && in.hdr().is_response()) return in;
    if (fabric_.idle()) return std::nullopt;
    fabric_.run_until(fabric_.next_event_ns());
  }
}

std::optional<wire::DrSmp> SmpClient::dr(std::uint8_t method, std::uint16_t attr, std::uint32_t mod,
                                         const wire::DrPath& path, std::span<const std::uint8_t> data,
                                         std::uint64_t m_key, std::uint16_t dr_slid, std::uint16_t dr_dlid,
                                         std::uint16_t lrh_dlid) {
  MadBuf b;
  auto& smp = b.as<wire::DrSmp>();
  smp = wire::make_dr_smp(method, attr, mod, next_tid(), path, m_key);
  smp.dr_slid = wire::be16::from(dr_slid);
  smp.dr_dlid = wire::be16::from(dr_dlid);
  if (!data.empty()) std::memcpy(smp.data.data(), data.data(), std::min(data.size(), smp.data.size()));
  b.addr.lid = lrh_dlid;
  auto r = transact(b);
  if (!r) return std::nullopt;
  return r->as<wire::DrSmp>();
}

std::optional<wire::Smp> SmpClient::lid(std::uint8_t method, std::uint16_t attr, std::uint32_t mod, std::uint16_t dlid,
                                        std::span<const std::uint8_t> data, std::uint64_t m_key) {
  MadBuf b;
  auto& smp = b.as<wire::Smp>();
  smp = wire::Smp{};
  smp.hdr = wire::make_smp_header(wire::MgmtClass::kSubnLid, method, attr, mod, next_tid());
  smp.m_key = wire::be64::from(m_key);
  if (!data.empty()) std::memcpy(smp.data.data(), data.data(), std::min(data.size(), smp.data.size()));
  b.addr.lid = dlid;
  auto r = transact(b);
  if (!r) return std::nullopt;
  return r->as<wire::Smp>();
}

}  // namespace madengine::sim
