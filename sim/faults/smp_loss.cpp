// SMP loss by attribute (see smp_loss.hpp).
#include "sim/faults/smp_loss.hpp"

#include <algorithm>

namespace madengine::sim {

bool SmpLoss::drop(const Packet& pkt, PortIdx) noexcept {
  const auto& h = *reinterpret_cast<const wire::MadHeader*>(pkt.mad.bytes.data());
  const auto klass = h.klass();
  if (klass != wire::MgmtClass::kSubnLid && klass != wire::MgmtClass::kSubnDirected) return false;
  const Nanos now = fabric_.now_ns();
  double rate = 0.0;
  for (const SmpLossRule& r : rules_)
    if (now >= r.from_ns && now < r.until_ns && (r.attr_id == 0 || r.attr_id == h.attr_id.get()))
      rate = std::max(rate, r.rate);
  if (rate <= 0.0) return false;
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng_) >= rate) return false;
  ++dropped_;
  return true;
}

}  // namespace madengine::sim
