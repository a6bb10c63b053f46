// Finding and talking to the other SMs of a subnet: the ports whose PortInfo
// shows IsSM after a heavy sweep, the SMP requests HA sends (SubnGet and
// SubnSet of SMInfo by directed route, trap 144 by LID) and their decoding
// into the state machine's PeerSm.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "madengine/engine/mad_buf.hpp"
#include "engine/transaction.hpp"
#include "fabric/fabric.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "sm/ha/sm_state_machine.hpp"

namespace madengine::sm::ha {

// An end port that advertises an SM, and how to reach it.
struct SmPort {
  std::uint64_t port_guid = 0;
  std::uint16_t lid = 0;
  fabric::NodeId node = fabric::kNoNode;
  std::uint8_t port = 0;
  wire::DrPath path{};  // directed route to its node from our port
};

// A peer as found: where it is and what its SMInfo said.
struct FoundSm {
  SmPort at;
  PeerSm sm;
};

// Ports other than `own_port_guid` whose PortInfo.CapabilityMask has IsSM
// set and IsSMDisabled clear (IBA 14.2.5.6, 14.4.1: how SMs find each other).
std::vector<SmPort> find_sm_ports(const fabric::Fabric& f, std::uint64_t own_port_guid);

// SubnGet(SMInfo) to the SM at `path`. We show our SM_Key in the request; an
// SMA that hides keys from strangers (ours does) then returns its own.
MadBuf make_sminfo_get(const wire::DrPath& path, std::uint8_t port_num, std::uint64_t sm_key,
                       std::uint64_t m_key) noexcept;

// SubnSet(SMInfo) with a control packet type (sm_info_mod::k*); `ours` is the
// SMInfo we send (GUID, key, priority, state).
MadBuf make_sminfo_set(std::uint32_t modifier, const wire::DrPath& path, std::uint8_t port_num,
                       const wire::SmInfo& ours, std::uint64_t m_key) noexcept;

// Trap 144 (SM priority changed) LID-routed from us to the master at
// `master_lid`: the master then sweeps and hands over if we outrank it.
MadBuf make_trap144(std::uint16_t our_lid, std::uint16_t master_lid, std::uint8_t port_num,
                    std::uint32_t capability_mask) noexcept;

// The SMInfo in a good response, as a PeerSm; key_ok follows OpenSM: with a
// zero SM_Key of our own every key matches. nullopt: no usable response.
std::optional<PeerSm> decode_sminfo_reply(const TxnResult& r, std::uint64_t our_sm_key) noexcept;

// Whether the SMA may show its SM_Key in a SubnGet(SMInfo) response: to a
// requester that showed the key, or whose M_Key check passed (OpenSM returns
// it to every requester when no M_Key protects the port).
constexpr bool sminfo_shows_key(std::uint64_t req_sm_key, std::uint64_t our_sm_key, std::uint64_t req_m_key,
                                std::uint64_t our_m_key) noexcept {
  return req_sm_key == our_sm_key || our_m_key == 0 || req_m_key == our_m_key;
}

}  // namespace madengine::sm::ha
