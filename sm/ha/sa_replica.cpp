// Standby replication of the SA state (see sa_replica.hpp).
#include "sm/ha/sa_replica.hpp"

#include <cstring>
#include <map>

#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"

namespace madengine::sm::ha {

namespace {

constexpr std::array<std::uint16_t, 3> kAttrs = {wire::sa_attr::kServiceRecord, wire::sa_attr::kMcMemberRecord,
                                                 wire::sa_attr::kInformInfoRecord};

template <typename T>
bool parse_table(const MadBuf& first, std::span<const std::uint8_t> payload, std::vector<T>& out, std::string& err) {
  const auto& m = first.as<wire::SaMad>();
  const std::uint16_t aoff = m.attr_offset.get();
  const std::size_t n = wire::table_record_count(payload.size(), aoff);
  if (n != 0 && wire::table_stride(aoff) < sizeof(T)) {
    err = "attribute offset " + std::to_string(aoff) + " is shorter than the record";
    return false;
  }
  out.clear();
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = wire::table_record<T>(payload, aoff, i);
    if (!r) {
      err = "record " + std::to_string(i) + " does not fit the table";
      return false;
    }
    out.push_back(*r);
  }
  return true;
}

}  // namespace

MadBuf make_replica_query(std::uint16_t attr, std::uint64_t tid, std::uint64_t sm_key, const SaTarget& sa) noexcept {
  MadBuf b{};
  // An empty component mask: every record.
  b.as<wire::SaMad>() = wire::make_sa_request(wire::method::kGetTable, attr, tid, 0, std::uint64_t{0}, sm_key);
  b.len = wire::kMadSize;
  b.addr.lid = sa.lid;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  b.addr.sl = sa.sl;
  b.addr.pkey_index = sa.pkey_index;
  b.addr.port_num = sa.port_num;
  return b;
}

sa::SaStateImage image_from_records(std::span<const wire::ServiceRecord> services,
                                    std::span<const wire::McMemberRecord> members,
                                    std::span<const wire::InformInfoRecord> informs, const LidOfGid& lid_of,
                                    Nanos now_ns) {
  sa::SaStateImage img;
  img.services.reserve(services.size());
  for (const wire::ServiceRecord& r : services) {
    sa::ServiceEntry e;
    e.rec = r;
    e.owner = r.service_gid;
    const std::uint32_t lease = r.service_lease.get();
    e.expires_ns = lease == wire::kServiceLeaseInfinite ? -1 : now_ns + Nanos{lease} * kNanosPerSecond;
    img.services.push_back(e);
  }
  // Members in the order the master listed them, groups in order of first sight.
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> by_mgid;
  for (const wire::McMemberRecord& r : members) {
    const auto key = std::pair{r.mgid.prefix.get(), r.mgid.guid.get()};
    auto [it, fresh] = by_mgid.emplace(key, img.groups.size());
    if (fresh) {
      sa::McGroupEntry g;
      g.params = r;
      g.params.port_gid = wire::Gid{};
      g.params.set_join_state(0);
      g.params.set_proxy_join(false);
      img.groups.push_back(std::move(g));
    }
    img.groups[it->second].members.push_back(
        sa::McMember{.port_gid = r.port_gid, .join_state = r.join_state(), .proxy = r.proxy_join()});
  }
  img.subscriptions.reserve(informs.size());
  for (const wire::InformInfoRecord& r : informs) {
    sa::Subscription s;
    s.info = r.inform_info;
    s.subscriber = r.subscriber_gid;
    s.enumeration = r.subscriber_enum.get();
    s.addr.lid = lid_of ? lid_of(r.subscriber_gid) : 0;
    s.addr.remote_qpn = r.inform_info.qpn() != 0 ? r.inform_info.qpn() : 1;
    s.addr.qkey = kGsiQkey;
    img.subscriptions.push_back(s);
  }
  return img;
}

ReplicaRound::ReplicaRound(std::uint64_t tid_base, std::uint64_t sm_key, const SaTarget& sa) noexcept
    : tid_base_(tid_base), sm_key_(sm_key), sa_(sa) {}

std::array<MadBuf, 3> ReplicaRound::queries() const noexcept {
  std::array<MadBuf, 3> q;
  for (std::size_t i = 0; i < 3; ++i) q[i] = make_replica_query(kAttrs[i], tid_base_ + i, sm_key_, sa_);
  return q;
}

bool ReplicaRound::on_answer(const MadBuf& first, std::span<const std::uint8_t> payload) {
  const auto& m = first.as<wire::SaMad>();
  const std::uint64_t tid = m.hdr.tid.get();
  // Kernels and ibsim's shim may rewrite the high 32 TID bits: match the low ones.
  const auto low = [](std::uint64_t t) { return static_cast<std::uint32_t>(t); };
  std::size_t i = 0;
  while (i < 3 && low(tid) != low(tid_base_ + i)) ++i;
  if (i == 3) return false;
  if (got_[i]) return true;  // a duplicate answer
  got_[i] = true;
  ++done_;
  const char* what = i == 0 ? "ServiceRecord" : i == 1 ? "MCMemberRecord" : "InformInfoRecord";
  const std::uint16_t status = m.hdr.status.get();
  if (status == wire::sa_status::kNoRecords) return true;  // an empty table
  if (status != 0) {
    if (error_.empty()) error_ = std::string(what) + " GetTable answered with status " + std::to_string(status);
    return true;
  }
  std::string err;
  const bool ok = i == 0   ? parse_table(first, payload, services_, err)
                  : i == 1 ? parse_table(first, payload, members_, err)
                           : parse_table(first, payload, informs_, err);
  if (!ok && error_.empty()) error_ = std::string(what) + " table: " + err;
  return true;
}

sa::SaStateImage ReplicaRound::image(const LidOfGid& lid_of, Nanos now_ns) const {
  return image_from_records(services_, members_, informs_, lid_of, now_ns);
}

}  // namespace madengine::sm::ha
