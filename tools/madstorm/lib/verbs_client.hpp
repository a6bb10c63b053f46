// madstorm over the verbs-ud transport (engine/verbs, untested on
// hardware): a UD QP of our own instead of QP1, so a load generator needs no
// umad agent. Requests go to the SA's LID, QPN 1, Q_Key 0x80010000 (a
// controlled Q_Key: the QP must own it, which the kernel grants with
// CAP_NET_RAW); the SA answers the QPN the request came from, ours.
#pragma once

#include <cstdint>
#include <string>

#include "engine/verbs/verbs_transport.hpp"

namespace madstorm {

// The VerbsConfig of a madstorm client on `device` (empty: the first) port
// `port` (0: port 1) for a storm of `window_max` queries in flight: the
// send queue holds the window and the RMPP ACKs, the receive queue twice the
// window plus room for multi-MAD answers. Throws std::invalid_argument with
// validate_verbs_config's reason when the result is not usable.
madengine::VerbsConfig verbs_client_config(const std::string& device, int port, std::uint32_t window_max);

}  // namespace madstorm
