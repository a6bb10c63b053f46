// A minimal SA client for ibsim tests: one request from a UmadTransport to
// the SM LID's QP1, re-sent up to 5 times (2 s each: the shim never reports
// a send timeout), waiting for the response with the request's TID.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>

#include "engine/umad/umad_transport.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine::ibsim {

// `sa` as a MAD from port `lp` to the SA: the SM LID's QP1.
inline MadBuf sa_request_to_sm(const wire::SaMad& sa, const LocalPort& lp) {
  MadBuf req{};
  wire::encode(sa, std::span<std::uint8_t>(req.mad.bytes));
  req.len = wire::kMadSize;
  req.addr.port_num = lp.port_num;
  req.addr.lid = lp.sm_lid;
  req.addr.remote_qpn = 1;
  req.addr.qkey = kGsiQkey;
  return req;
}

// The response's SA status, or -1 when none came. `answer` (optional) gets
// the response MAD.
inline int umad_sa_request(UmadTransport& t, const wire::SaMad& sa, wire::SaMad* answer = nullptr) {
  const auto tid = static_cast<std::uint32_t>(sa.hdr.tid.get());
  MadBuf req = sa_request_to_sm(sa, t.local_port());
  MadBuf rx[8];
  MadBuf* rxp[8];
  for (int i = 0; i < 8; ++i) rxp[i] = &rx[i];
  constexpr int kAttemptsMax = 5;
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    MadBuf* out[] = {&req};
    if (t.tx_burst(std::span<MadBuf* const>(out, 1)) != 1) return -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{t.fd(), POLLIN, 0};
      ::poll(&p, 1, 50);
      const std::size_t n = t.rx_burst(std::span<MadBuf*>(rxp, 8));
      for (std::size_t i = 0; i < n; ++i) {
        const auto& h = rx[i].hdr();
        if (!h.is_response() || static_cast<std::uint32_t>(h.tid.get()) != tid) continue;
        if (answer != nullptr) std::memcpy(answer, rx[i].mad.bytes.data(), sizeof *answer);
        return h.status.get();
      }
    }
  }
  return -1;
}

}  // namespace madengine::ibsim
