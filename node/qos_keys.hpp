// The [sm] qos_* keys of a NodeConfig (OpenSM's QoS option names) as the SM's
// QoS module takes them; private to the node (the SM's types stay out of the
// public config header).
#pragma once

#include "madengine/node/config.hpp"
#include "sm/qos/qos_options.hpp"

namespace madengine::node {

sm::QosOptions qos_options(const SmSection& sm);

}  // namespace madengine::node
