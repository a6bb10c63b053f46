// The site policy a scenario's SMs share (routing, partitions and their
// reload, QoS, M_Key) and the shape of its client population (several
// clients per host, PathRecords asked by GID with a P_Key), drawn from a
// stream of their own: a seed's fabric, faults and first clients stay as
// the main draw made them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/scenario.hpp"

namespace madsim {

void draw_policy(std::uint64_t seed, Scenario& s);

// The P_Keys (full bit as `a` holds it) hosts `a` and `b` share under
// `parts`, the default partition's 0xffff first: a partition counts when
// both are members and one of them is full.
std::vector<std::uint16_t> shared_pkeys(const std::vector<PartitionDraw>& parts, std::uint32_t a, std::uint32_t b);
// What a CA's P_Key table must hold under `parts` (0xffff, then each
// partition it is a member of, with the full bit as a full member).
std::vector<std::uint16_t> pkeys_of(const std::vector<PartitionDraw>& parts, std::uint32_t node);
// The partition's SL if `pkey` is one of `parts` (QoS on), else 0.
std::uint8_t sl_of_pkey(const std::vector<PartitionDraw>& parts, std::uint16_t pkey);

// The partitions.conf text of a draw (OpenSM's format): the default
// partition, every port full, then each partition's members by port GUID
// (with its SL when QoS is on).
std::string partitions_conf(const Scenario& s, const std::vector<PartitionDraw>& parts);

std::string describe_policy(const Scenario& s);

}  // namespace madsim
