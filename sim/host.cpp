// Simulated client host (see host.hpp).
#include "sim/host.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace madengine::sim {

namespace {
// The upper half of a host's TIDs: the instance in the top byte, the node below.
std::uint32_t tid_tag(std::uint32_t node, std::uint8_t instance) {
  return static_cast<std::uint32_t>(0x4a + instance) << 24 | (node & 0xffffffu);
}
}  // namespace

Host::Host(Fabric& fabric, std::uint32_t node, std::uint8_t port_num, std::uint32_t inbox_max, std::uint8_t instance)
    : fabric_(fabric), inbox_max_(inbox_max), next_tid_(std::uint64_t{tid_tag(node, instance)} << 32 | 1) {
  if (node >= fabric.node_count() || fabric.is_switch(node) || fabric.port(node, port_num) == kNoPortIdx)
    throw std::invalid_argument("host: node " + std::to_string(node) + " has no CA port " + std::to_string(port_num));
  if (node > 0xffffffu || instance >= kInstancesMax)
    throw std::invalid_argument("host: node " + std::to_string(node) + " instance " + std::to_string(instance) + " out of range");
  AgentSpec spec;
  spec.gsi_client = true;
  if (instance == 0) {
    ep_ = fabric.attach(node, port_num, spec);
  } else {
    const PortIdx p = fabric.port(node, port_num);
    ep_ = fabric.attach_ports(std::span<const PortIdx>(&p, 1), spec, inbox_max, tid_tag(node, instance));
  }
  inbox_.reserve(inbox_max);
}

std::optional<std::uint64_t> Host::query(std::uint8_t method, std::uint16_t attr_id, std::uint64_t comp_mask,
                                         std::span<const std::uint8_t> record, std::uint32_t attr_mod,
                                         std::uint64_t sm_key, std::uint64_t retry_tid) {
  const LocalPort lp = fabric_.local_port(ep_);
  if (lp.sm_lid == 0 || !fabric_.device_present(ep_)) {
    ++counters_.send_refused;
    return std::nullopt;
  }
  MadBuf b;
  auto& sa = b.as<wire::SaMad>();
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = method;
  const std::uint64_t tid = retry_tid != 0 ? retry_tid : next_tid_++;
  sa.hdr.tid = wire::be64::from(tid);
  sa.hdr.attr_id = wire::be16::from(attr_id);
  sa.hdr.attr_mod = wire::be32::from(attr_mod);
  sa.comp_mask = wire::be64::from(comp_mask);
  sa.sm_key = wire::be64::from(sm_key);
  if (!record.empty()) std::memcpy(sa.data.data(), record.data(), std::min(record.size(), sa.data.size()));
  b.addr.lid = lp.sm_lid;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  b.addr.sl = lp.sm_sl;
  if (!fabric_.send(ep_, b)) {
    ++counters_.send_refused;
    return std::nullopt;
  }
  ++counters_.queries;
  if (std::find(awaited_.begin(), awaited_.end(), tid) == awaited_.end()) awaited_.push_back(tid);
  return tid;
}

std::size_t Host::poll() {
  std::size_t n = 0;
  MadBuf in;
  MadBuf* one[1] = {&in};
  while (fabric_.receive(ep_, one) == 1) {
    ++n;
    const wire::MadHeader& h = in.hdr();
    if (h.method == wire::method::kReport) {
      ++counters_.reports;
      if (reports_.size() < inbox_max_) reports_.push_back(in);
      MadBuf resp = in;  // ReportResp: same TID and attribute, back to the sender
      resp.hdr().method = wire::method::kReportResp;
      resp.addr.remote_qpn = 1;
      resp.addr.qkey = kGsiQkey;
      fabric_.send(ep_, resp);
      continue;
    }
    if (h.is_response()) {
      if (std::find(awaited_.begin(), awaited_.end(), h.tid.get()) == awaited_.end()) {
        ++counters_.stray;
        continue;
      }
      ++counters_.responses;
      if (inbox_.size() < inbox_max_) inbox_.push_back(in);
    }
  }
  return n;
}

std::optional<MadBuf> Host::take_response(std::uint64_t tid) {
  poll();
  auto it = std::find_if(inbox_.begin(), inbox_.end(), [&](const MadBuf& b) { return b.hdr().tid.get() == tid; });
  if (it == inbox_.end()) return std::nullopt;
  MadBuf b = *it;
  inbox_.erase(it);
  forget(tid);
  return b;
}

void Host::forget(std::uint64_t tid) {
  std::erase(awaited_, tid);
  std::erase_if(inbox_, [tid](const MadBuf& m) { return m.hdr().tid.get() == tid; });
}

}  // namespace madengine::sim
