// A probe of an SA over umad (ibsim or a fabric): PathRecord and NodeRecord
// Gets whose answers are kept and compared byte for byte with later ones,
// and a loop that asks until an SA answers as it did before (a restart's
// first correct answer). Header-only; the user links madengine_engine.
#pragma once

#include <poll.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <optional>
#include <span>
#include <vector>

#include "engine/umad/umad_transport.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/node_record.hpp"
#include "madengine/wire/sa/path_record.hpp"

namespace madengine::testing {

// An SA answer as compared: status and the whole data field (a Get's record, zero-padded).
struct SaProbeAnswer {
  std::uint16_t status = 0;
  std::array<std::uint8_t, wire::kSaDataSize> data{};
  bool operator==(const SaProbeAnswer&) const noexcept = default;
};

// "status 0x0000 vs 0x0000; bytes 12 (0x01 vs 0x02), ..." (test messages).
inline std::string differences(const SaProbeAnswer& a, const SaProbeAnswer& b) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "status 0x%04x vs 0x%04x; bytes", a.status, b.status);
  std::string out = buf;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    if (a.data[i] != b.data[i]) {
      std::snprintf(buf, sizeof buf, " %zu (0x%02x vs 0x%02x)", i, a.data[i], b.data[i]);
      out += buf;
    }
  return out;
}

// The bytes a Get's answer of this attribute carries (the whole data field for others).
inline std::size_t record_bytes(std::uint16_t attr) noexcept {
  if (attr == wire::sa_attr::kPathRecord) return sizeof(wire::PathRecord);
  if (attr == wire::sa_attr::kNodeRecord) return sizeof(wire::NodeRecord);
  return wire::kSaDataSize;
}

inline wire::SaMad path_record_get(std::uint16_t slid, std::uint16_t dlid) {
  wire::PathRecord pr{};
  pr.slid = wire::be16::from(slid);
  pr.dlid = wire::be16::from(dlid);
  namespace cm = wire::path_record_cm;
  return wire::make_sa_request(wire::method::kGet, wire::sa_attr::kPathRecord, 0, cm::kSLid | cm::kDLid, pr);
}

inline wire::SaMad node_record_get(std::uint16_t lid) {
  wire::NodeRecord nr{};
  nr.lid = wire::be16::from(lid);
  return wire::make_sa_request(wire::method::kGet, wire::sa_attr::kNodeRecord, 0, wire::node_record_cm::kLid, nr);
}

class SaProbe {
 public:
  explicit SaProbe(UmadTransport& t, std::uint32_t tid_base = 0x5a000000u) : t_(t), tid_(tid_base) {}

  // Sends `q` under a new TID (the SM LID as the port last read it).
  std::uint32_t send(wire::SaMad q) {
    const std::uint32_t tid = ++tid_;
    q.hdr.tid = wire::be64::from(tid);
    MadBuf req{};
    wire::encode(q, std::span<std::uint8_t>(req.mad.bytes));
    req.len = wire::kMadSize;
    const LocalPort lp = t_.local_port();
    req.addr.port_num = lp.port_num;
    req.addr.lid = lp.sm_lid;
    req.addr.remote_qpn = 1;
    req.addr.qkey = kGsiQkey;
    MadBuf* out[] = {&req};
    return t_.tx_burst(std::span<MadBuf* const>(out, 1)) == 1 ? tid : 0;
  }
  // The answer to a TID from `first_tid` on, within `wait` (none: nullopt);
  // `tid` gets the TID it answers.
  std::optional<SaProbeAnswer> receive(std::uint32_t first_tid, std::chrono::microseconds wait, std::uint32_t* tid = nullptr) {
    const auto end = std::chrono::steady_clock::now() + wait;
    do {
      pollfd p{t_.fd(), POLLIN, 0};
      ::poll(&p, 1, 1);
      std::array<MadBuf, 8> rx{};
      std::array<MadBuf*, 8> rxp;
      for (std::size_t i = 0; i < rx.size(); ++i) rxp[i] = &rx[i];
      const std::size_t n = t_.rx_burst(std::span<MadBuf*>(rxp.data(), rxp.size()));
      for (std::size_t i = 0; i < n; ++i) {
        const auto& h = rx[i].hdr();
        const auto got = static_cast<std::uint32_t>(h.tid.get());
        if (!h.is_response() || got < first_tid || got > tid_) continue;
        wire::SaMad m;
        std::memcpy(&m, rx[i].mad.bytes.data(), sizeof m);
        SaProbeAnswer a;
        a.status = h.status.get();
        // The record only: past it a MAD through the shim may carry bytes
        // the SA never wrote (umad2sim hands on less than 256 bytes).
        const std::size_t rec = std::min(record_bytes(h.attr_id.get()), std::size_t{rx[i].len > wire::kSaHeaderSize ? rx[i].len - wire::kSaHeaderSize : 0});
        std::memcpy(a.data.data(), m.data.data(), rec);
        if (tid != nullptr) *tid = got;
        return a;
      }
    } while (std::chrono::steady_clock::now() < end);
    return std::nullopt;
  }
  // Asks `q`, re-sent under a new TID every `wait`, at most `attempts` times.
  std::optional<SaProbeAnswer> ask(const wire::SaMad& q, int attempts = 10,
                                   std::chrono::milliseconds wait = std::chrono::milliseconds(500)) {
    for (int i = 0; i < attempts; ++i) {
      const std::uint32_t tid = send(q);
      if (tid == 0) return std::nullopt;
      if (auto a = receive(tid, wait)) return a;
    }
    return std::nullopt;
  }

 private:
  UmadTransport& t_;
  std::uint32_t tid_;
};

// Asks `q` every `every` until an answer equal to `expected` comes (true,
// `at` its arrival) or `limit` passes. Successful answers that differ count
// in `wrong` (an SA answering from something the fabric is not), error
// statuses (BUSY, no records yet) in `not_ready`.
inline bool wait_for_answer(SaProbe& probe, const wire::SaMad& q, const SaProbeAnswer& expected,
                            std::chrono::microseconds every, std::chrono::milliseconds limit,
                            std::chrono::steady_clock::time_point& at, std::uint64_t& wrong, std::uint64_t& not_ready) {
  const auto end = std::chrono::steady_clock::now() + limit;
  std::uint32_t first = 0;
  while (std::chrono::steady_clock::now() < end) {
    const std::uint32_t tid = probe.send(q);
    if (first == 0) first = tid;
    if (const auto a = probe.receive(first, every)) {
      if (*a == expected) {
        at = std::chrono::steady_clock::now();
        return true;
      }
      ++(a->status != 0 ? not_ready : wrong);
    }
  }
  return false;
}

}  // namespace madengine::testing
