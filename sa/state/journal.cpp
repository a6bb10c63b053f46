// SA state journal (see journal.hpp). Layout, all integers big-endian:
//   "MADSAJ" u16 version (2) | u64 SM port GUID | u64 subnet prefix |
//   u32 services | u32 groups | u32 subscriptions
//   (version 1, still read: no SM port GUID and subnet prefix)
//   service:      ServiceRecord (176) | owner GID (16) | i64 lease left ns (-1: infinite)
//   group:        MCMemberRecord (52) | u32 members | members x (GID 16, JoinState 1, proxy 1)
//   subscription: InformInfo (36) | subscriber GID (16) | port 1 | LID 2 | QPN 4 | Q_Key 4 | SL 1 |
//                 P_Key index 2 | enumeration 2
//   u64 FNV-1a of everything before it
#include "sa/state/journal.hpp"

#include "engine/durable_file.hpp"
#include "sa/state/byte_codec.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

namespace madengine::sa {

namespace {

constexpr std::array<std::uint8_t, 6> kMagic = {'M', 'A', 'D', 'S', 'A', 'J'};
constexpr std::uint16_t kVersion = 2;
constexpr std::uint16_t kVersionWithoutFabric = 1;

std::uint64_t fnv1a(std::span<const std::uint8_t> b) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const std::uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Big-endian integers of `bytes` bytes beside the buffers' own values.
class Writer : public ByteWriter {
 public:
  void u(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
};

class Reader : public ByteReader {
 public:
  using ByteReader::ByteReader;
  template <typename T>
  bool u(T& v, int bytes) noexcept {
    if (left() < static_cast<std::size_t>(bytes)) return false;
    std::uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) x = x << 8 | b_[pos_++];
    v = static_cast<T>(x);
    return true;
  }
};

}  // namespace

SaStateImage capture(const ServiceStore& services, const McastStore& groups, const InformStore& subs) {
  SaStateImage img;
  img.services = *services.view();
  img.groups = *groups.view();
  img.subscriptions = *subs.view();
  return img;
}

std::size_t apply(SaStateImage image, ServiceStore& services, McastStore& groups, InformStore& subs) {
  services.restore(std::move(image.services));
  subs.restore(std::move(image.subscriptions));
  return groups.restore(std::move(image.groups));
}

std::vector<std::uint8_t> encode_journal(const SaStateImage& img, Nanos now_ns, const FabricIdentity& fabric) {
  Writer w;
  w.raw(kMagic.data(), kMagic.size());
  w.u(kVersion, 2);
  w.u(fabric.sm_port_guid, 8);
  w.u(fabric.subnet_prefix, 8);
  w.u(img.services.size(), 4);
  w.u(img.groups.size(), 4);
  w.u(img.subscriptions.size(), 4);
  for (const ServiceEntry& e : img.services) {
    w.pod(e.rec);
    w.pod(e.owner);
    const Nanos left = e.expires_ns < 0 ? -1 : std::max<Nanos>(e.expires_ns - now_ns, 0);
    w.u(static_cast<std::uint64_t>(left), 8);
  }
  for (const McGroupEntry& g : img.groups) {
    w.pod(g.params);
    w.u(g.members.size(), 4);
    for (const McMember& m : g.members) {
      w.pod(m.port_gid);
      w.u(m.join_state, 1);
      w.u(m.proxy ? 1 : 0, 1);
    }
  }
  for (const Subscription& s : img.subscriptions) {
    w.pod(s.info);
    w.pod(s.subscriber);
    w.u(s.addr.port_num, 1);
    w.u(s.addr.lid, 2);
    w.u(s.addr.remote_qpn, 4);
    w.u(s.addr.qkey, 4);
    w.u(s.addr.sl, 1);
    w.u(s.addr.pkey_index, 2);
    w.u(s.enumeration, 2);
  }
  w.u(fnv1a(w.bytes()), 8);
  return std::move(w.bytes());
}

bool decode_journal(std::span<const std::uint8_t> bytes, Nanos now_ns, SaStateImage& out, std::string& error,
                    FabricIdentity* fabric) {
  out = {};
  if (fabric != nullptr) *fabric = {};
  if (bytes.size() < kMagic.size() + 2 + 12 + 8) {
    error = "journal too short";
    return false;
  }
  const auto body = bytes.first(bytes.size() - 8);
  std::uint64_t sum = 0;
  for (std::size_t i = body.size(); i < bytes.size(); ++i) sum = sum << 8 | bytes[i];
  if (std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    error = "not a madengine SA journal (bad magic)";
    return false;
  }
  if (sum != fnv1a(body)) {
    error = "journal checksum mismatch (torn or corrupt file)";
    return false;
  }
  Reader r(body.subspan(kMagic.size()));
  std::uint16_t version = 0;
  std::uint32_t n_services = 0, n_groups = 0, n_subs = 0;
  FabricIdentity id;
  r.u(version, 2);
  if (version != kVersion && version != kVersionWithoutFabric) {
    error = "journal version " + std::to_string(version) + " is not " + std::to_string(kVersion);
    return false;
  }
  if (version == kVersion && (!r.u(id.sm_port_guid, 8) || !r.u(id.subnet_prefix, 8))) {
    error = "journal truncated";
    return false;
  }
  if (!r.u(n_services, 4) || !r.u(n_groups, 4) || !r.u(n_subs, 4)) {
    error = "journal truncated";
    return false;
  }
  if (n_services > kJournalServicesMax || n_groups > kJournalGroupsMax || n_subs > kJournalSubscriptionsMax) {
    error = "journal counts out of bounds";
    return false;
  }
  const auto truncated = [&error] {
    error = "journal truncated";
    return false;
  };
  SaStateImage img;
  img.services.reserve(n_services);
  for (std::uint32_t i = 0; i < n_services; ++i) {
    ServiceEntry e;
    std::uint64_t left = 0;
    if (!r.pod(e.rec) || !r.pod(e.owner) || !r.u(left, 8)) return truncated();
    const auto l = static_cast<Nanos>(left);
    e.expires_ns = l < 0 ? -1 : now_ns + l;
    img.services.push_back(e);
  }
  img.groups.reserve(n_groups);
  for (std::uint32_t i = 0; i < n_groups; ++i) {
    McGroupEntry g;
    std::uint32_t n = 0;
    if (!r.pod(g.params) || !r.u(n, 4)) return truncated();
    if (n > kJournalMembersMax || std::size_t{n} * 18 > r.left()) return truncated();
    g.members.resize(n);
    for (McMember& m : g.members) {
      std::uint8_t proxy = 0;
      if (!r.pod(m.port_gid) || !r.u(m.join_state, 1) || !r.u(proxy, 1)) return truncated();
      m.proxy = proxy != 0;
    }
    img.groups.push_back(std::move(g));
  }
  img.subscriptions.reserve(n_subs);
  for (std::uint32_t i = 0; i < n_subs; ++i) {
    Subscription s;
    if (!r.pod(s.info) || !r.pod(s.subscriber) || !r.u(s.addr.port_num, 1) || !r.u(s.addr.lid, 2) ||
        !r.u(s.addr.remote_qpn, 4) || !r.u(s.addr.qkey, 4) || !r.u(s.addr.sl, 1) || !r.u(s.addr.pkey_index, 2) ||
        !r.u(s.enumeration, 2))
      return truncated();
    img.subscriptions.push_back(s);
  }
  if (r.left() != 0) {
    error = "journal has trailing bytes";
    return false;
  }
  out = std::move(img);
  if (fabric != nullptr) *fabric = id;
  return true;
}

bool write_journal_file(const std::string& path, const SaStateImage& image, Nanos now_ns, std::string& error,
                        const FabricIdentity& fabric) {
  const std::vector<std::uint8_t> bytes = encode_journal(image, now_ns, fabric);
  return write_file_durably(path, bytes, error);
}

bool read_journal_file(const std::string& path, Nanos now_ns, SaStateImage& out, bool& found, std::string& error,
                       FabricIdentity* fabric) {
  out = {};
  std::ifstream in(path, std::ios::binary);
  found = in.good();
  if (!found) return true;
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!decode_journal(bytes, now_ns, out, error, fabric)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

}  // namespace madengine::sa
