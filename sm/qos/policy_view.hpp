// A qos-policy resolved against one fabric for the SA (sa/qos_policy_view):
// each port group becomes the port GUIDs it names now (by GUID, partition
// membership from the partition plan, node type, the SM's own port).
#pragma once

#include <cstdint>
#include <memory>

#include "fabric/fabric.hpp"
#include "sa/qos_policy_view.hpp"
#include "sm/partitions/partition_plan.hpp"
#include "sm/qos/qos_policy.hpp"

namespace madengine::sm {

std::shared_ptr<const sa::QosPolicyView> resolve_qos_policy(const QosPolicy& policy, const fabric::Fabric& f,
                                                            const PartitionPlan& partitions, std::uint64_t sm_port_guid);

}  // namespace madengine::sm
