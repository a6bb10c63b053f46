// A transport that speaks for many end ports at once: each request leaves
// from the port of the host that asks (its own LID, as the SA sees it), and
// each answer says which host's port it reached. The Storm uses it when its
// transport offers it, so per-requester fairness and BUSY act per host as at
// a real job start; a plain Transport sends every query from one port.
#pragma once

#include <cstdint>
#include <span>

#include "lib/workload.hpp"
#include "madengine/engine/mad_buf.hpp"

namespace madstorm {

inline constexpr std::uint32_t kNoHost = 0xffffffffu;

class RequesterPorts {
 public:
  virtual ~RequesterPorts() = default;
  // The hosts, by index: the storm's host set must be this one.
  virtual std::span<const Host> requesters() const noexcept = 0;
  // As Transport::tx_burst; bufs[i] leaves from host from[i] (from.size() >= bufs.size()).
  virtual std::size_t tx_burst_from(std::span<madengine::MadBuf* const> bufs,
                                    std::span<const std::uint32_t> from) noexcept = 0;
  // As Transport::rx_burst; at[i] is the host bufs[i] arrived at (kNoHost:
  // a port of no host). at.size() >= bufs.size().
  virtual std::size_t rx_burst_at(std::span<madengine::MadBuf*> bufs, std::span<std::uint32_t> at) noexcept = 0;
};

}  // namespace madstorm
