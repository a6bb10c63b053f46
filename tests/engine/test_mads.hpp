// MADs the engine tests inject: a bare request or response header, and an
// SA PathRecord Get carrying only its DLID (the field handlers shard on).
#pragma once

#include <cstdint>

#include "engine/dispatch.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine::testing {

inline MadBuf make_mad(std::uint8_t klass, std::uint8_t meth, std::uint16_t attr, std::uint64_t tid,
                       std::uint8_t port = 1) {
  MadBuf b;
  auto& h = b.hdr();
  h.base_version = 1;
  h.mgmt_class = klass;
  h.class_version = 2;
  h.method = meth;
  h.attr_id = wire::be16::from(attr);
  h.tid = wire::be64::from(tid);
  b.addr.port_num = port;
  return b;
}

inline MadBuf path_query(std::uint16_t dlid, std::uint64_t tid, std::uint8_t port = 1) {
  MadBuf b = make_mad(static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm), wire::method::kGet,
                      wire::sa_attr::kPathRecord, tid, port);
  b.mad.bytes[kPathRecordDlidOffset] = static_cast<std::uint8_t>(dlid >> 8);
  b.mad.bytes[kPathRecordDlidOffset + 1] = static_cast<std::uint8_t>(dlid);
  return b;
}

}  // namespace madengine::testing
