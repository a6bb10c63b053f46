// PathVerdict names, as reports and JSON results spell them.
#include "lib/path_oracle.hpp"

namespace madstorm {

const char* to_string(PathVerdict v) noexcept {
  switch (v) {
    case PathVerdict::kOk: return "ok";
    case PathVerdict::kUnknownEnd: return "unknown_end";
    case PathVerdict::kUnreached: return "dlid_not_reached";
    case PathVerdict::kMtu: return "mtu";
    case PathVerdict::kRate: return "rate";
    case PathVerdict::kPKey: return "pkey";
    case PathVerdict::kSl: return "sl";
    case PathVerdict::kHopLimit: return "hop_limit";
    case PathVerdict::kNotReversible: return "not_reversible";
  }
  return "unknown";
}

}  // namespace madstorm
