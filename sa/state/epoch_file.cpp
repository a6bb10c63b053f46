// The persisted epoch (see epoch_file.hpp). Layout: a header
//   "MADSAE" u16 version | u16 byte-order mark | u64 SM port GUID |
//   u64 subnet prefix | u64 payload bytes | u64 payload checksum
// then the payload in the writer's byte order (the file never leaves the
// management node; a reader of the other order refuses it): plain-data
// records and vectors copied whole, so a 11,664-host epoch (tens of MB)
// decodes in milliseconds. Every count is bounded by the bytes left and
// every reference (node, switch, exception) checked, so a damaged file
// that passes the checksum still cannot make the SA read out of bounds.
#include "sa/state/epoch_file.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "engine/durable_file.hpp"
#include "fabric/cow_vector.hpp"
#include "sa/state/byte_codec.hpp"

namespace madengine::sa {

// PathDb's private layout, read and written here only.
struct PathDbCodec;

namespace {

constexpr std::array<std::uint8_t, 6> kMagic = {'M', 'A', 'D', 'S', 'A', 'E'};
constexpr std::uint16_t kVersion = 1;
constexpr std::uint16_t kByteOrderMark = 0x0102;
constexpr std::size_t kHeaderBytes = kMagic.size() + 2 + 2 + 8 + 8 + 8 + 8;

// Eight Fletcher-style lanes over 64-bit words (each a running sum and a
// sum of sums, so a changed, lost or moved word shows): independent lanes
// the compiler vectorises, so a torn or damaged file is caught at memory
// speed; FNV-1a's byte loop would cost tens of ms of a large fabric's
// restart. Damage, not forgery, is what it is for.
std::uint64_t checksum(std::span<const std::uint8_t> b) noexcept {
  constexpr std::size_t kLanes = 8;
  std::array<std::uint64_t, kLanes> sum{}, sum2{};
  std::size_t i = 0;
  for (; i + 8 * kLanes <= b.size(); i += 8 * kLanes) {
    std::array<std::uint64_t, kLanes> w;
    std::memcpy(w.data(), b.data() + i, sizeof w);
    for (std::size_t k = 0; k < kLanes; ++k) {
      sum[k] += w[k];
      sum2[k] += sum[k];
    }
  }
  std::uint64_t h = 0xcbf29ce484222325ull ^ b.size();
  for (std::size_t k = 0; k < kLanes; ++k) h = (h ^ sum[k] ^ (sum2[k] << 1 | sum2[k] >> 63)) * 0x100000001b3ull;
  for (; i < b.size(); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

class Writer : public ByteWriter {
 public:
  // A std::vector or a CowVector: its count, then its items as they lie.
  template <typename V>
  void vec(const V& v) {
    using T = typename V::value_type;
    static_assert(std::is_trivially_copyable_v<T>);
    pod(static_cast<std::uint64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<std::uint64_t>(s.size()));
    raw(s.data(), s.size());
  }
};

class Reader : public ByteReader {
 public:
  using ByteReader::ByteReader;
  // A count of `elem`-byte items that the bytes left can hold.
  bool count(std::uint64_t& n, std::size_t elem) noexcept {
    return pod(n) && (elem == 0 ? n <= kEpochNodesMax : n <= left() / elem);
  }
  // assign() from the mapped file, not resize() then copy: each byte is
  // written once (page faults are most of a large epoch's read).
  template <typename T>
  bool vec(std::vector<T>& v) {
    std::uint64_t n = 0;
    if (!count(n, sizeof(T))) return false;
    if constexpr (sizeof(T) == 1) {
      const auto* p = reinterpret_cast<const T*>(b_.data() + pos_);
      v.assign(p, p + n);
    } else {
      v.resize(n);
      if (n != 0) std::memcpy(static_cast<void*>(v.data()), b_.data() + pos_, n * sizeof(T));
    }
    pos_ += n * sizeof(T);
    return true;
  }
  // Shared tables as read back own their copy (interned again by the next sweep).
  template <typename T>
  bool vec(fabric::CowVector<T>& v) {
    std::vector<T> plain;
    if (!vec(plain)) return false;
    v = fabric::CowVector<T>(std::move(plain));
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t n = 0;
    if (!count(n, 1)) return false;
    s.resize(n);
    return raw(s.data(), n);
  }
};

void put_fabric(Writer& w, const fabric::Fabric& f) {
  w.pod(static_cast<std::uint64_t>(f.nodes.size()));
  for (const fabric::Node& n : f.nodes) {
    w.pod(n.kind);
    w.pod(n.node_guid);
    w.pod(n.system_guid);
    w.str(n.description);
    w.vec(n.ports);
    w.pod(n.base_lid);
    w.pod(n.lmc);
    w.vec(n.port_lids);
    w.pod(n.node_info);
    w.pod(n.node_desc);
    w.pod(n.switch_info);
    w.pod(n.dr_path);
  }
}

bool get_fabric(Reader& r, fabric::Fabric& f) {
  std::uint64_t nodes = 0;
  if (!r.count(nodes, 0)) return false;
  f.nodes.resize(nodes);
  for (fabric::Node& n : f.nodes) {
    if (!r.pod(n.kind) || !r.pod(n.node_guid) || !r.pod(n.system_guid) || !r.str(n.description) || !r.vec(n.ports) ||
        !r.pod(n.base_lid) || !r.pod(n.lmc) || !r.vec(n.port_lids) || !r.pod(n.node_info) || !r.pod(n.node_desc) ||
        !r.pod(n.switch_info) || !r.pod(n.dr_path))
      return false;
    if (n.ports.size() > 256 || n.port_lids.size() > 256 || n.lmc > 7) return false;
  }
  for (const fabric::Node& n : f.nodes)
    for (const fabric::Port& p : n.ports)
      if (p.peer != fabric::kNoNode && (p.peer >= nodes || p.peer_port >= f.nodes[p.peer].ports.size())) return false;
  return true;
}

void put_qos_policy(Writer& w, const QosPolicyView& q) {
  w.pod(static_cast<std::uint64_t>(q.groups.size()));
  for (const auto& g : q.groups) w.vec(g);
  w.pod(static_cast<std::uint64_t>(q.levels.size()));
  for (const QosLevelView& l : q.levels) {
    w.str(l.name);
    for (const bool b : {l.sl_set, l.mtu_set, l.rate_set, l.life_set}) w.pod(b);
    for (const std::uint8_t v : {l.sl, l.mtu_limit, l.rate_limit, l.packet_life}) w.pod(v);
    w.vec(l.pkeys);
  }
  w.pod(static_cast<std::uint64_t>(q.rules.size()));
  for (const QosRuleView& r : q.rules) {
    w.vec(r.source);
    w.vec(r.destination);
    w.vec(r.qos_class);
    w.vec(r.service_id);
    w.vec(r.pkey);
    w.pod(r.level);
  }
  w.pod(q.default_level);
}

bool get_qos_policy(Reader& r, QosPolicyView& q) {
  std::uint64_t n = 0;
  if (!r.count(n, 8)) return false;
  q.groups.resize(n);
  for (auto& g : q.groups)
    if (!r.vec(g)) return false;
  if (!r.count(n, 8)) return false;
  q.levels.resize(n);
  for (QosLevelView& l : q.levels)
    if (!r.str(l.name) || !r.pod(l.sl_set) || !r.pod(l.mtu_set) || !r.pod(l.rate_set) || !r.pod(l.life_set) ||
        !r.pod(l.sl) || !r.pod(l.mtu_limit) || !r.pod(l.rate_limit) || !r.pod(l.packet_life) || !r.vec(l.pkeys))
      return false;
  if (!r.count(n, 8)) return false;
  q.rules.resize(n);
  for (QosRuleView& x : q.rules)
    if (!r.vec(x.source) || !r.vec(x.destination) || !r.vec(x.qos_class) || !r.vec(x.service_id) || !r.vec(x.pkey) ||
        !r.pod(x.level))
      return false;
  return r.pod(q.default_level);  // level_for() checks every level index it reads
}

void put_port_tables(Writer& w, const std::vector<std::vector<PortTables>>& t) {
  w.pod(static_cast<std::uint64_t>(t.size()));
  for (const auto& node : t) {
    w.pod(static_cast<std::uint64_t>(node.size()));
    for (const PortTables& p : node) {
      w.vec(p.pkeys);
      w.vec(p.sl2vl);
      w.vec(p.vl_arb);
      w.vec(p.guids);
    }
  }
}

bool get_port_tables(Reader& r, std::vector<std::vector<PortTables>>& t) {
  std::uint64_t n = 0;
  if (!r.count(n, 8)) return false;
  t.resize(n);
  for (auto& node : t) {
    if (!r.count(n, 32)) return false;
    node.resize(n);
    for (PortTables& p : node)
      if (!r.vec(p.pkeys) || !r.vec(p.sl2vl) || !r.vec(p.vl_arb) || !r.vec(p.guids)) return false;
  }
  return true;
}

void put_mfts(Writer& w, const std::vector<SwitchMft>& mfts) {
  w.pod(static_cast<std::uint64_t>(mfts.size()));
  for (const SwitchMft& m : mfts) {
    w.pod(m.node);
    w.pod(static_cast<std::uint64_t>(m.masks.size()));
    for (const auto& positions : m.masks) w.vec(positions);
  }
}

bool get_mfts(Reader& r, std::vector<SwitchMft>& mfts, std::size_t nodes) {
  std::uint64_t n = 0;
  if (!r.count(n, 12)) return false;
  mfts.resize(n);
  for (SwitchMft& m : mfts) {
    if (!r.pod(m.node) || m.node >= nodes || !r.count(n, 8)) return false;
    m.masks.resize(n);
    for (auto& positions : m.masks)
      if (!r.vec(positions)) return false;
  }
  return true;
}

}  // namespace

struct PathDbCodec {
  static void put(Writer& w, const PathDb& db) {
    w.pod(db.shards_);
    w.vec(db.group_);
    w.pod(db.palette_);
    w.pod(db.palette_count_);
    w.vec(db.exceptions_);
    w.vec(db.dense_);
    w.vec(db.switch_index_);
    w.vec(db.attach_);
    w.pod(db.switches_);
    w.pod(db.top_lid_);
    w.pod(db.all_routed_);
    w.pod(db.layered_);
    w.pod(db.generation_);
  }
  static bool get(Reader& r, PathDb& db) {
    if (!r.pod(db.shards_) || !r.vec(db.group_) || !r.pod(db.palette_) || !r.pod(db.palette_count_) ||
        !r.vec(db.exceptions_) || !r.vec(db.dense_) || !r.vec(db.switch_index_) || !r.vec(db.attach_) ||
        !r.pod(db.switches_) || !r.pod(db.top_lid_) || !r.pod(db.all_routed_) || !r.pod(db.layered_) ||
        !r.pod(db.generation_))
      return false;
    // What lookups index with, in range: they read the tables unchecked.
    const std::uint64_t sw = db.switches_;
    if (db.shards_ == 0 || db.group_.size() != sw * sw || db.attach_.size() != db.top_lid_ + 1u) return false;
    for (const std::uint32_t s : db.switch_index_)
      if (s != ~0u && s >= sw) return false;
    for (const auto& e : db.exceptions_)
      if (e.switch_index >= sw) return false;
    for (const PathDb::Attach& a : db.attach_) {
      if (a.switch_index != ~0u && a.switch_index >= sw) return false;
      const std::uint64_t end = a.dense != 0 ? std::uint64_t{a.exc_offset} + sw : std::uint64_t{a.exc_offset} + a.exc_count;
      if (end > (a.dense != 0 ? db.dense_.size() : db.exceptions_.size())) return false;
    }
    return true;
  }
};

std::vector<std::uint8_t> encode_epoch(const Snapshot& snap, const FabricIdentity& fabric) {
  Writer w;
  w.raw(kMagic.data(), kMagic.size());
  w.pod(kVersion);
  w.pod(kByteOrderMark);
  w.pod(fabric.sm_port_guid);
  w.pod(fabric.subnet_prefix);
  w.pod(std::uint64_t{0});  // payload bytes and checksum, filled in below
  w.pod(std::uint64_t{0});
  w.pod(snap.epoch);
  w.pod(snap.sm);
  w.pod(snap.subnet_prefix);
  w.pod(snap.top_lid);
  w.pod(snap.qos);
  w.pod(snap.valid_sl_mask);
  put_fabric(w, snap.fabric);
  w.pod(static_cast<std::uint64_t>(snap.lfts.size()));
  for (const fabric::Lft& l : snap.lfts) {
    w.pod(l.node);
    w.vec(l.ports);
  }
  PathDbCodec::put(w, snap.paths);
  put_port_tables(w, *snap.port_tables->load());
  w.vec(snap.partitions);
  w.pod(snap.qos_policy != nullptr);
  if (snap.qos_policy != nullptr) put_qos_policy(w, *snap.qos_policy);
  put_mfts(w, *snap.mfts->load());
  std::vector<std::uint8_t>& out = w.bytes();
  const std::span<const std::uint8_t> payload(out.data() + kHeaderBytes, out.size() - kHeaderBytes);
  const std::uint64_t len = payload.size(), sum = checksum(payload);
  std::memcpy(out.data() + kHeaderBytes - 16, &len, 8);
  std::memcpy(out.data() + kHeaderBytes - 8, &sum, 8);
  return std::move(out);
}

bool decode_epoch(std::span<const std::uint8_t> bytes, Snapshot& out, FabricIdentity& fabric, std::string& error) {
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0) {
    error = bytes.size() < kHeaderBytes ? "too short for a header" : "not a madengine epoch file (bad magic)";
    return false;
  }
  Reader h(bytes.subspan(kMagic.size(), kHeaderBytes - kMagic.size()));
  std::uint16_t version = 0, bom = 0;
  std::uint64_t len = 0, sum = 0;
  FabricIdentity id;
  h.pod(version);
  h.pod(bom);
  h.pod(id.sm_port_guid);
  h.pod(id.subnet_prefix);
  h.pod(len);
  h.pod(sum);
  if (bom != kByteOrderMark) {
    error = "written on a machine of the other byte order";
    return false;
  }
  if (version != kVersion) {
    error = "version " + std::to_string(version) + " is not " + std::to_string(kVersion);
    return false;
  }
  const std::span<const std::uint8_t> payload = bytes.subspan(kHeaderBytes);
  if (len != payload.size()) {
    error = "payload of " + std::to_string(payload.size()) + " bytes, the header says " + std::to_string(len) +
            " (torn or truncated file)";
    return false;
  }
  if (sum != checksum(payload)) {
    error = "checksum mismatch (torn or corrupt file)";
    return false;
  }
  Snapshot& s = out;  // the caller's fresh snapshot; dropped by the caller on failure
  Reader r(payload);
  std::uint64_t lfts = 0;
  bool has_policy = false;
  bool ok = r.pod(s.epoch) && r.pod(s.sm) && r.pod(s.subnet_prefix) && r.pod(s.top_lid) && r.pod(s.qos) &&
            r.pod(s.valid_sl_mask) && get_fabric(r, s.fabric) && r.count(lfts, 12);
  if (ok) {
    s.lfts.resize(lfts);
    for (fabric::Lft& l : s.lfts)
      if (!r.pod(l.node) || l.node >= s.fabric.nodes.size() || !r.vec(l.ports)) ok = false;
  }
  PortTableView::Rows port_tables;
  ok = ok && PathDbCodec::get(r, s.paths) && get_port_tables(r, port_tables) &&
       r.vec(s.partitions) && r.pod(has_policy);
  if (ok && has_policy) {
    auto policy = std::make_shared<QosPolicyView>();
    ok = get_qos_policy(r, *policy);
    s.qos_policy = std::move(policy);
  }
  std::vector<SwitchMft> mfts;
  ok = ok && get_mfts(r, mfts, s.fabric.nodes.size());
  if (!ok || r.left() != 0) {
    error = ok ? "trailing bytes" : "a count or reference out of range (damaged file)";
    return false;
  }
  for (const fabric::Node& n : s.fabric.nodes)
    for (const std::uint16_t lid : n.port_lids)
      if (lid > s.top_lid) {
        error = "a LID above the epoch's top LID (damaged file)";
        return false;
      }
  s.mfts->store(std::move(mfts));
  s.port_tables = std::make_shared<PortTableView>(std::move(port_tables));
  s.index();
  fabric = id;
  return true;
}

bool write_epoch_file(const std::string& path, const Snapshot& snap, const FabricIdentity& fabric, std::string& error) {
  const std::vector<std::uint8_t> bytes = encode_epoch(snap, fabric);
  return write_file_durably(path, bytes, error);
}

// The decoded epoch takes about as much heap as the file. Its pages are
// faulted in up front, a few calls for all of them (huge pages where the
// kernel gives them), and handed back to malloc, which keeps them: the
// decode's allocations then land on pages already there. Touched one by
// one they cost ~15 us each on a virtual machine: 600 ms for the 40 MB of
// an 11,664-host epoch, against 100 ms for the whole restart.
namespace {

void prefault_heap(std::size_t bytes) {
  constexpr std::size_t kChunk = std::size_t{16} << 20;  // under glibc's largest mmap threshold: from the heap
  ::mallopt(M_MMAP_THRESHOLD, static_cast<int>(2 * kChunk));
  ::mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min<std::size_t>(bytes + kChunk, std::size_t{1} << 30)));
  std::vector<void*> chunks;
  for (std::size_t done = 0; done < bytes; done += kChunk) {
    void* p = std::malloc(kChunk);
    if (p == nullptr) break;
    chunks.push_back(p);
    const auto first = (reinterpret_cast<std::uintptr_t>(p) + 4095) & ~std::uintptr_t{4095};
    const auto last = (reinterpret_cast<std::uintptr_t>(p) + kChunk) & ~std::uintptr_t{4095};
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
    ::madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_WRITE);
  }
  for (void* p : chunks) std::free(p);
}

}  // namespace

// The file mapped with its pages populated in one call: no copy into a
// buffer, no fault per page (tens of MB at 11,664 hosts, read at start
// while the SA waits).
bool read_epoch_file(const std::string& path, Snapshot& out, FabricIdentity& fabric, bool& found, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  found = fd >= 0 || errno != ENOENT;
  if (!found) return true;
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size <= 0 || static_cast<std::uint64_t>(st.st_size) > kEpochBytesMax) {
    error = path + ": unreadable, empty or too large";
    if (fd >= 0) ::close(fd);
    return false;
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    error = path + ": cannot map it";
    return false;
  }
  prefault_heap(size + size / 4);
  const bool ok = decode_epoch({static_cast<const std::uint8_t*>(map), size}, out, fabric, error);
  // glibc's defaults again (its adaptive mmap threshold now fixed at them).
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  ::munmap(map, size);
  if (!ok) error = path + ": " + error;
  return ok;
}

}  // namespace madengine::sa
