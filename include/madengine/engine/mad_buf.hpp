// A MAD buffer: the 256-byte MAD plus the address it came from or goes to.
// Buffers come from a MadPool sized at start-up; nothing on the fast path
// allocates. A directed-route SMP carries its path inside the MAD itself.
#pragma once

#include <cstdint>

#include "madengine/wire/endian.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {

// Where a MAD came from (receive) or goes to (send), in the terms of the
// IBA's UD address vector plus the GSI/SMI fields.
struct MadAddr {
  std::uint8_t port_num = 1;      // local HCA port
  std::uint16_t lid = 0;          // remote LID: source on receive, destination on send
  std::uint32_t remote_qpn = 0;   // 0 for SMPs, 1 for GSI unless redirected
  std::uint32_t qkey = 0;         // 0x80010000 on QP1
  std::uint8_t sl = 0;
  std::uint8_t path_bits = 0;     // low bits of our own source LID (LMC)
  std::uint16_t pkey_index = 0;
  bool has_grh = false;
  wire::Gid gid{};                // remote GID when has_grh
  std::uint8_t gid_index = 0;
  std::uint8_t hop_limit = 0;
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;
};

inline constexpr std::uint32_t kGsiQkey = 0x80010000;

struct MadBuf {
  wire::Mad mad;
  MadAddr addr;
  std::uint16_t len = wire::kMadSize;  // bytes of `mad` that are valid
  // For a request: how long the transport may hold it to match the response
  // (ib_umad delivers a response only while its request is outstanding).
  std::uint32_t resp_timeout_ms = 0;

  template <typename T>
  T& as() noexcept { return *reinterpret_cast<T*>(mad.bytes.data()); }
  template <typename T>
  const T& as() const noexcept { return *reinterpret_cast<const T*>(mad.bytes.data()); }
  wire::MadHeader& hdr() noexcept { return as<wire::MadHeader>(); }
  const wire::MadHeader& hdr() const noexcept { return as<wire::MadHeader>(); }
};

}  // namespace madengine
