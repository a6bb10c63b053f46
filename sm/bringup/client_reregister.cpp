// Client reregistration (see client_reregister.hpp): one PortInfo Set per
// CA port asked, as OpenSM writes it (the port's own PortInfo, state fields
// "no change", IBA 14.2.5.6), its answer read back.
#include "sm/bringup/client_reregister.hpp"

#include <memory>

#include "fabric/link_rate.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/smp/port_info.hpp"

namespace madengine::sm {

Task<ReregisterReport> ask_clients_to_reregister(SmpQueue& q, const fabric::Fabric& f,
                                                 const std::vector<std::vector<wire::DrPath>>& ca_port_paths,
                                                 ReregisterAsk ask) {
  auto rep = std::make_shared<ReregisterReport>();
  for (fabric::NodeId id = 0; id < f.nodes.size(); ++id) {
    const fabric::Node& n = f.nodes[id];
    if (n.is_switch()) continue;
    for (std::uint8_t port = 1; port <= n.num_ports() && port < ca_port_paths[id].size(); ++port) {
      const fabric::Port& p = n.ports[port];
      if (p.guid == 0 || !p.linked()) continue;
      if (!ask.all && (ask.ports == nullptr || !ask.ports->contains(p.guid))) continue;
      if (!p.info.has_cap(wire::port_cap::kIsClientReregistrationSupported)) {
        ++rep->unable;
        continue;
      }
      if (p.info.lid.get() != f.lid_of(fabric::EndPort{id, port}) || p.info.master_sm_lid.get() != ask.sm_lid) {
        ++rep->unsettled;
        continue;
      }
      wire::PortInfo w = p.info;
      w.set_port_state(0);
      w.set_port_physical_state(0);
      w.set_link_down_default_state(0);
      w.set_client_reregister(1);
      ++rep->asked;
      q.submit(make_dr_request(wire::method::kSet, wire::smp_attr::kPortInfo,
                               wire::port_info_modifier(port, fabric::extended_speeds(n, port)), ca_port_paths[id][port],
                               ask.port_num, wire::as_bytes(w), ask.m_key),
               [rep](const TxnResult& r) {
                 if (smp_response_ok(r)) ++rep->acked;
               });
    }
  }
  co_await q.drained();
  co_return *rep;
}

}  // namespace madengine::sm
