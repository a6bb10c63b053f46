// QoS programming (IBA 7.6.6, 7.6.9, 14.2.5.8/9), as OpenSM 3.3.23 does it
// with -Q: after bring-up (OperationalVLs final), every port gets its
// class's VL arbitration blocks (the blocks its caps give) and SL2VL table:
// CA and router ports one table, switches one per (input, output) pair for
// every output port not down and every input port, an enhanced port 0 its
// own; VLs are limited to each port's OperationalVLs. Only tables that
// differ from what was last written are sent.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <tuple>

#include "engine/task.hpp"
#include "sa/snapshot.hpp"
#include "sm/discovery/discovery.hpp"
#include "sm/qos/qos_options.hpp"
#include "sm/smp_queue.hpp"

namespace madengine::sm {

// What was written and acknowledged, by (node GUID, port, attribute,
// modifier): a re-sweep sends only what differs.
struct QosProgrammed {
  using Key = std::tuple<std::uint64_t, std::uint8_t, std::uint16_t, std::uint32_t>;
  std::map<Key, std::array<std::uint8_t, 64>> written;
};

struct QosReport {
  std::uint32_t sl2vl_sets = 0;
  std::uint32_t vlarb_sets = 0;
  std::uint32_t kept = 0;    // tables already as wanted
  std::uint32_t errors = 0;  // failed Sets (sent again next sweep)
  std::uint64_t smps = 0;
};

struct QosProgramOptions {
  std::uint8_t port_num = 1;
  std::uint64_t m_key = 0;
};

// `q` must be idle.
Task<QosReport> program_qos(SmpQueue& q, const DiscoveryResult& d, const QosConfig& cfg, QosProgramOptions opts,
                            QosProgrammed& state);

// The class a port belongs to.
QosPortClass qos_class_of(const fabric::Node& n, std::uint8_t port) noexcept;

// What `state` says each port holds, into `rows` ([node][port]) where the SM
// did not read the port (switch external ports): the SA reports what was written.
void fill_qos_tables(const fabric::Fabric& f, const QosProgrammed& state, sa::PortTableView::Rows& rows);

}  // namespace madengine::sm
