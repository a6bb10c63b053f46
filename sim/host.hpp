// A simulated client host: an endpoint on a CA port that sends SA queries
// (GMPs to its port's SM LID on QP1) and collects the responses and Reports,
// answering each Report with a ReportResp as IBA 13.4.9 asks of a subscriber.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "madengine/wire/sa.hpp"
#include "sim/fabric.hpp"

namespace madengine::sim {

struct HostCounters {
  std::uint64_t queries = 0;
  std::uint64_t responses = 0;
  std::uint64_t reports = 0;
  std::uint64_t send_refused = 0;  // no SM LID yet, or the device is gone
  std::uint64_t stray = 0;         // responses to no query outstanding here: dropped
};

class Host {
 public:
  // Throws std::invalid_argument on a node without that CA port. Several
  // hosts (processes) may share a port, each with its own `instance`: the
  // upper half of its TIDs names both, and responses reach the process that
  // asked, as ib_umad tells two agents on one port apart. Reports go to
  // instance 0.
  Host(Fabric& fabric, std::uint32_t node, std::uint8_t port_num = 1, std::uint32_t inbox_max = 1024,
       std::uint8_t instance = 0);
  static constexpr unsigned kInstancesMax = 32;

  // Sends an SA request to the SM LID; returns its TID, or nullopt when the
  // port has no SM LID (not configured yet) or its device is gone. A
  // non-zero `sm_key` makes it a trusted request (if it is the SM's key).
  // A non-zero `tid` re-sends a request under the TID it had (a client's
  // retry: the SA answers a retried TID once, IBA 13.4.6.4).
  std::optional<std::uint64_t> query(std::uint8_t method, std::uint16_t attr_id, std::uint64_t comp_mask,
                                     std::span<const std::uint8_t> record, std::uint32_t attr_mod = 0,
                                     std::uint64_t sm_key = 0, std::uint64_t tid = 0);
  // Moves what arrived into the inbox (answering Reports); returns how many.
  // A response whose TID no query here awaits is dropped, as the kernel
  // drops a response it cannot match to a send (a late answer, or one
  // meant for a port that had this LID before two subnets were joined).
  std::size_t poll();
  // The response with this TID, removed from the inbox; the TID is no
  // longer awaited.
  std::optional<MadBuf> take_response(std::uint64_t tid);
  // Stops awaiting `tid` (the client gave up on it).
  void forget(std::uint64_t tid);
  const std::vector<MadBuf>& reports() const noexcept { return reports_; }
  const HostCounters& counters() const noexcept { return counters_; }
  EndpointId endpoint() const noexcept { return ep_; }

 private:
  Fabric& fabric_;
  EndpointId ep_;
  std::uint32_t inbox_max_;
  // The upper half names the host, as the kernel gives each agent its own:
  // no two hosts' requests share a TID.
  std::uint64_t next_tid_;
  std::vector<std::uint64_t> awaited_;
  std::vector<MadBuf> inbox_;
  std::vector<MadBuf> reports_;
  HostCounters counters_;
};

}  // namespace madengine::sim
