// umad transport, fast path: rx_burst drains the umad fd without blocking,
// tx_burst hands each MAD to umad_send (libibumad has no batch send: one
// write(2) per MAD is the floor; under ibsim's shim, only once its socket
// has room, umad_shim.hpp). No allocation; only varying fields are set.
#include <endian.h>
#include <infiniband/umad.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/umad/umad_shim.hpp"
#include "engine/umad/umad_transport.hpp"
#include "madengine/wire/mad.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine {

// Under umad2sim: the shim's poll() on its own fd, in whole milliseconds
// (a MAD ends it at once: the shim's receiver thread signals it).
int UmadTransport::wait_alone(Nanos timeout_ns) noexcept {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(std::max<Nanos>(1, (timeout_ns + kNanosPerMilli - 1) / kNanosPerMilli)));
}

std::size_t UmadTransport::rx_burst(std::span<MadBuf*> bufs) noexcept {
  if (fd_ < 0 || lost_) return 0;
  std::size_t n = 0;
  std::size_t discards = 0;
  std::uint8_t* const umad = rx_umad_.get();
  // Timeout 0: umad_recv skips poll() and reads the non-blocking fd until it
  // would block (the kernel's EAGAIN, or the shim's -EWOULDBLOCK return).
  while (n < bufs.size() && discards < kRxDiscardsPerBurstMax) {
    int len = static_cast<int>(wire::kMadSize);
    const int rc = umad_recv(fd_, umad, &len, 0);
    if (rc < 0) {
      const int err = -rc;
      if (err == EWOULDBLOCK || err == EAGAIN || err == EINTR) break;
      if (is_fatal_errno(err)) {
        note_fatal(err);
      } else {
        ++counters_.dropped;  // ENOSPC etc.: cannot happen without kernel RMPP
      }
      break;
    }
    const int status = umad_status(umad);
    if (status != 0) {
      // Our own request, returned by the kernel: its response did not come
      // within resp_timeout_ms. The engine's own timer handles the retry.
      if (status == ETIMEDOUT)
        ++counters_.kernel_timeouts;
      else
        ++counters_.send_errors;
      ++discards;
      continue;
    }
    if (len < static_cast<int>(wire::kMadHeaderSize) || len > static_cast<int>(wire::kMadSize)) {
      ++counters_.dropped;
      ++discards;
      continue;
    }
    MadBuf& b = *bufs[n];
    const auto bytes = static_cast<std::size_t>(len);
    std::memcpy(b.mad.bytes.data(), umad_get_mad(umad), bytes);
    std::memset(b.mad.bytes.data() + bytes, 0, wire::kMadSize - bytes);
    b.len = static_cast<std::uint16_t>(bytes);

    const ib_mad_addr_t* a = umad_get_mad_addr(umad);
    MadAddr& d = b.addr;
    d.port_num = port_.port_num;
    d.lid = be16toh(a->lid);
    d.remote_qpn = be32toh(a->qpn);
    d.qkey = be32toh(a->qkey);
    d.sl = a->sl;
    d.path_bits = a->path_bits;
    d.pkey_index = static_cast<std::uint16_t>(umad_get_pkey(umad));
    d.has_grh = a->grh_present != 0;
    if (d.has_grh) {
      std::memcpy(&d.gid, a->gid, sizeof d.gid);
      d.gid_index = a->gid_index;
      d.hop_limit = a->hop_limit;
      d.traffic_class = a->traffic_class;
      d.flow_label = be32toh(a->flow_label);
    } else {
      d.gid = {};
      d.gid_index = d.hop_limit = d.traffic_class = 0;
      d.flow_label = 0;
    }
    ++n;
  }
  counters_.rx += n;
  return n;
}

std::size_t UmadTransport::tx_burst(std::span<MadBuf* const> bufs) noexcept {
  if (fd_ < 0 || lost_) return 0;
  std::uint8_t* const umad = tx_umad_.get();
  std::uint8_t* const mad = static_cast<std::uint8_t*>(umad_get_mad(umad));
  std::size_t n = 0;
  for (; n < bufs.size(); ++n) {
    const MadBuf& b = *bufs[n];
    if (b.len < wire::kMadHeaderSize || b.len > wire::kMadSize) {
      ++counters_.dropped;  // consumed: it can never be sent
      continue;
    }
    const std::uint8_t klass = b.mad.bytes[1];
    const bool smp = klass == static_cast<std::uint8_t>(wire::MgmtClass::kSubnLid) ||
                     klass == static_cast<std::uint8_t>(wire::MgmtClass::kSubnDirected);
    int agent = klass == static_cast<std::uint8_t>(wire::MgmtClass::kSubnLid)        ? smi_agent_[0]
                : klass == static_cast<std::uint8_t>(wire::MgmtClass::kSubnDirected) ? smi_agent_[1]
                                                                                     : gsi_agent_;
    if (klass == static_cast<std::uint8_t>(wire::MgmtClass::kPerf)) agent = perf_agent_;
    for (const auto& [vendor_class, id] : vendor_agents_)
      if (vendor_class == klass) agent = id;
    if (agent < 0) {
      ++counters_.dropped;  // no agent registered for this QP (see AgentSpec)
      continue;
    }
    if (shim_data_fd_ >= 0 && !umad_shim::shim_data_writable(shim_data_fd_, umad_shim::kDataRoomWaitUs)) {
      ++counters_.tx_deferred;  // back-pressure: the caller keeps this MAD and the rest
      break;
    }
    std::memcpy(mad, b.mad.bytes.data(), b.len);
    std::memset(mad + b.len, 0, wire::kMadSize - b.len);

    const MadAddr& a = b.addr;
    if (smp) {
      // A directed-route SMP whose caller left the LID at 0 goes out permissive.
      const std::uint16_t dlid = a.lid != 0 ? a.lid : wire::kPermissiveLid;
      umad_set_addr(umad, dlid, 0, a.sl, 0);
    } else {
      // ibsim reports Q_Key 0 on received GSI MADs: answer with the GSI Q_Key.
      umad_set_addr(umad, a.lid, a.remote_qpn != 0 ? static_cast<int>(a.remote_qpn) : 1, a.sl,
                    static_cast<int>(a.qkey != 0 ? a.qkey : kGsiQkey));
    }
    ib_mad_addr_t* ua = umad_get_mad_addr(umad);
    ua->path_bits = a.path_bits;
    umad_set_pkey(umad, a.pkey_index);
    if (a.has_grh) {
      ib_mad_addr_t grh{};
      std::memcpy(grh.gid, &a.gid, sizeof grh.gid);
      grh.hop_limit = a.hop_limit;
      grh.traffic_class = a.traffic_class;
      grh.flow_label = a.flow_label;  // umad_set_grh converts it to network order
      umad_set_grh(umad, &grh);
      ua->gid_index = a.gid_index;
    } else {
      umad_set_grh(umad, nullptr);
    }
    // A request stays outstanding in ib_umad for resp_timeout_ms so its
    // response can be matched; retries stay 0 because the engine retries.
    const bool response = (b.mad.bytes[3] & wire::method::kResponse) != 0;
    const int timeout_ms = response ? 0 : static_cast<int>(b.resp_timeout_ms);
    // Send the MAD's own length: ib_umad pads a short MAD itself, and clients
    // behind ibsim's shim (saquery) count records from the length they get.
    if (umad_send(fd_, agent, umad, static_cast<int>(b.len), timeout_ms, 0) < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ENOMEM || err == ENOSPC || err == EINTR)
        break;  // back-pressure: the caller keeps this MAD and the rest
      ++counters_.send_errors;
      if (is_fatal_errno(err)) {
        note_fatal(err);
        break;
      }
      continue;  // a MAD the kernel refuses (EINVAL...): consumed and counted
    }
    ++counters_.tx;
  }
  return n;
}

}  // namespace madengine
