// What an embedder reads from a running node: the current epoch as a
// FabricView (fabric_view.cpp), and PathRecords answered in process by the SA's own path
// query code (the same answer a PathRecord Get by LIDs gets on the wire).
#include <cstring>
#include <vector>

#include "madengine/node/fabric_view.hpp"
#include "madengine/node/node.hpp"
#include "madengine/wire/sa_records.hpp"
#include "node/fabric_model.hpp"
#include "node/parts.hpp"
#include "sa/server/components.hpp"
#include "sa/server/path_query.hpp"
#include "sa/server/records.hpp"
#include "sa/snapshot.hpp"

namespace madengine::node {

FabricView Node::fabric_view() const {
  std::shared_ptr<const sa::Snapshot> snap = parts().store.current();
  if (!snap) return {};
  const sa::Snapshot* s = snap.get();
  return parts().views.get(s, [&] {
    return FabricSource::published(std::shared_ptr<const void>(std::move(snap)), s->fabric, s->lfts, s->by_lid,
                                   s->by_port_guid, s->epoch, s->top_lid);
  });
}

PathResult Node::path(std::uint16_t slid, std::uint16_t dlid, PathInfo& out) const {
  namespace cm = wire::path_record_cm;
  const std::shared_ptr<const sa::Snapshot> snap = parts().store.current();
  if (!snap) return PathResult::kNoEpoch;
  wire::PathRecord q{};
  q.slid = wire::be16::from(slid);
  q.dlid = wire::be16::from(dlid);
  const std::uint64_t mask = cm::kSLid | cm::kDLid;
  const sa::RecordLayout* layout = sa::record_layout(wire::sa_attr::kPathRecord);
  std::vector<std::uint8_t> bytes;
  sa::RecordSink sink(bytes, *layout, mask, reinterpret_cast<const std::uint8_t*>(&q), 1);
  const sa::PathQuery pq{&q, mask, slid, snap->sm.subnet_timeout, true};
  if (sa::collect_path_records(*snap, pq, sink) != 0 || sink.count() == 0) return PathResult::kNoPath;
  wire::PathRecord r;
  std::memcpy(&r, bytes.data(), sizeof r);
  out = PathInfo{.slid = r.slid.get(),
                 .dlid = r.dlid.get(),
                 .sgid_prefix = r.sgid.prefix.get(),
                 .sgid_guid = r.sgid.guid.get(),
                 .dgid_prefix = r.dgid.prefix.get(),
                 .dgid_guid = r.dgid.guid.get(),
                 .pkey = r.pkey.get(),
                 .sl = static_cast<std::uint8_t>(r.sl()),
                 .mtu = static_cast<std::uint8_t>(r.mtu()),
                 .rate = static_cast<std::uint8_t>(r.rate()),
                 .packet_life = static_cast<std::uint8_t>(r.packet_life_time()),
                 .hop_limit = static_cast<std::uint8_t>(r.hop_limit()),
                 .reversible = r.reversible(),
                 .hops = snap->paths.path(slid, dlid).hops,
                 .epoch = snap->epoch};
  return PathResult::kOk;
}

}  // namespace madengine::node
