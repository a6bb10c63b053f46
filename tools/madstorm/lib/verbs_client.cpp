// verbs_client_config: queue depths for a storm, the GSI Q_Key.
#include "lib/verbs_client.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace madstorm {

namespace {
constexpr std::uint32_t kAckRoom = 256;       // RMPP ACKs queued beside the window (Storm's control ring)
constexpr std::uint32_t kSegmentRoom = 512;   // receive slots for RMPP segments in flight
}

madengine::VerbsConfig verbs_client_config(const std::string& device, int port, std::uint32_t window_max) {
  if (port < 0 || port > 254) throw std::invalid_argument("verbs: port " + std::to_string(port) + " is not 1..254");
  madengine::VerbsConfig c;
  c.device_name = device;
  c.port_num = static_cast<std::uint8_t>(port == 0 ? 1 : port);
  c.qkey = madengine::kGsiQkey;  // sends to QP1 must carry it, and only the QP's own controlled Q_Key goes out
  const std::uint64_t sq = std::bit_ceil(std::uint64_t{window_max} + kAckRoom);
  const std::uint64_t rq = std::bit_ceil(2 * std::uint64_t{window_max} + kSegmentRoom);
  c.sq_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(sq, madengine::kVerbsSqDepthMax));
  c.rq_depth = static_cast<std::uint32_t>(std::min<std::uint64_t>(rq, madengine::kVerbsRqDepthMax));
  c.ah_cache_max = std::max<std::uint32_t>(1024, 2 * c.sq_depth);  // must exceed sq_depth
  if (const char* why = madengine::validate_verbs_config(c))
    throw std::invalid_argument(std::string("verbs: ") + why);
  return c;
}

}  // namespace madstorm
