// MAD -> JSON for madwire. Field names follow the IBA (snake_case).
#include "describe.hpp"

#include "attributes.hpp"

#include <fmt/format.h>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/mad.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/smp.hpp"

namespace madengine::tools {

namespace w = madengine::wire;
using Json = nlohmann::ordered_json;

namespace {

std::string hex(std::uint64_t v, int digits) { return fmt::format("0x{:0{}x}", v, digits); }

Json describe_header(const w::MadHeader& h) {
  Json j;
  j["base_version"] = h.base_version;
  j["mgmt_class"] = hex(h.mgmt_class, 2);
  j["class_version"] = h.class_version;
  j["method"] = hex(h.method, 2);
  j["status"] = hex(h.status.get(), 4);
  j["class_specific"] = hex(h.class_specific.get(), 4);
  j["tid"] = hex(h.tid.get(), 16);
  j["attr_id"] = hex(h.attr_id.get(), 4);
  j["attr_mod"] = hex(h.attr_mod.get(), 8);
  return j;
}

Json path_json(const std::array<std::uint8_t, 64>& p, std::uint8_t hops) {
  Json a = Json::array();
  for (std::uint8_t i = 1; i <= hops && i < p.size(); ++i) a.push_back(p[i]);
  return a;
}

std::string hex_bytes(std::span<const std::uint8_t> b) {
  std::string s;
  for (auto c : b) s += fmt::format("{:02x}", c);
  return s;
}

}  // namespace

Json describe_mad(std::span<const std::uint8_t> bytes) {
  Json j;
  const auto hdr = w::decode<w::MadHeader>(bytes);
  if (!hdr) {
    j["error"] = fmt::format("{} bytes: shorter than a MAD header ({})", bytes.size(), w::kMadHeaderSize);
    return j;
  }
  j["header"] = describe_header(*hdr);
  switch (hdr->klass()) {
    case w::MgmtClass::kSubnDirected: {
      const auto smp = w::decode<w::DrSmp>(bytes);
      if (!smp) break;
      Json d;
      d["direction_in"] = smp->direction_in();
      d["status"] = hex(smp->smp_status(), 4);
      d["hop_pointer"] = smp->hop_pointer();
      d["hop_count"] = smp->hop_count();
      d["m_key"] = hex(smp->m_key.get(), 16);
      d["dr_slid"] = smp->dr_slid.get();
      d["dr_dlid"] = smp->dr_dlid.get();
      d["initial_path"] = path_json(smp->initial_path, smp->hop_count());
      d["return_path"] = path_json(smp->return_path, smp->hop_count());
      d["valid"] = w::to_string(w::validate(*smp));
      j["dr_smp"] = d;
      if (auto a = describe_smp_attribute(hdr->attr_id.get(), smp->data)) j["attribute"] = *a;
      else j["data"] = hex_bytes(smp->data);
      break;
    }
    case w::MgmtClass::kSubnLid: {
      const auto smp = w::decode<w::Smp>(bytes);
      if (!smp) break;
      j["smp"] = Json{{"m_key", hex(smp->m_key.get(), 16)}};
      if (auto a = describe_smp_attribute(hdr->attr_id.get(), smp->data)) j["attribute"] = *a;
      else j["data"] = hex_bytes(smp->data);
      break;
    }
    case w::MgmtClass::kSubnAdm: {
      const auto sa = w::decode<w::SaMad>(bytes);
      if (!sa) break;
      Json r;
      r["version"] = sa->rmpp.version;
      r["type"] = sa->rmpp.type;
      r["flags"] = sa->rmpp.flags();
      r["resp_time"] = sa->rmpp.resp_time();
      r["status"] = sa->rmpp.status;
      r["data1"] = sa->rmpp.data1.get();
      r["data2"] = sa->rmpp.data2.get();
      j["rmpp"] = r;
      j["sa"] = Json{{"sm_key", hex(sa->sm_key.get(), 16)},
                     {"attr_offset", sa->attr_offset.get()},
                     {"comp_mask", hex(sa->comp_mask.get(), 16)},
                     {"valid", w::to_string(w::validate(*sa))}};
      if (auto a = describe_sa_record(hdr->attr_id.get(), sa->data)) j["record"] = *a;
      else j["data"] = hex_bytes(sa->data);
      break;
    }
    default:
      break;
  }
  if (bytes.size() < w::kMadSize) j["warning"] = fmt::format("{} bytes: a MAD has {}", bytes.size(), w::kMadSize);
  return j;
}

}  // namespace madengine::tools
