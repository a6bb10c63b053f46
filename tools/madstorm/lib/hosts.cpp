// Host discovery through a NodeRecord GetTable, and the hosts file reader.
#include "lib/hosts.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engine/rmpp.hpp"
#include "engine/tx_sink.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/get_table.hpp"
#include "madengine/wire/sa/node_record.hpp"

namespace madstorm {

namespace wire = madengine::wire;
using madengine::MadBuf;

namespace {

// Sends straight through the transport: discovery is one transfer, not a storm.
struct DirectSink final : madengine::TxSink {
  explicit DirectSink(madengine::Transport& t) : transport(t) {}
  bool send(const MadBuf& buf) noexcept override {
    MadBuf copy = buf;
    MadBuf* p = &copy;
    return transport.tx_burst(std::span<MadBuf* const>(&p, 1)) == 1;
  }
  madengine::Transport& transport;
};

struct Collector {
  std::uint32_t tid_low = 0;
  bool done = false;
  std::string error;
  std::vector<Host> hosts;
};

void on_done(void* user, const madengine::RmppRecvDone& d) noexcept {
  auto& c = *static_cast<Collector*>(user);
  if (static_cast<std::uint32_t>(d.key.tid) != c.tid_low || c.done) return;
  c.done = true;
  if (d.outcome != madengine::RmppOutcome::kDone || d.first == nullptr) {
    c.error = std::string("NodeRecord table transfer ended: ") + madengine::to_string(d.outcome);
    return;
  }
  const auto& m = d.first->as<wire::SaMad>();
  if (m.hdr.status.get() != 0) {
    c.error = "NodeRecord GetTable answered with status " + std::to_string(m.hdr.status.get());
    return;
  }
  const std::uint16_t aoff = m.attr_offset.get();
  const std::size_t n = wire::table_record_count(d.payload.size(), aoff);
  try {
    for (std::size_t i = 0; i < n; ++i) {
      const auto nr = wire::table_record<wire::NodeRecord>(d.payload, aoff, i);
      if (!nr) {
        c.error = "NodeRecord table has a bad attribute offset " + std::to_string(aoff);
        return;
      }
      // A record no SA can send means the transfer was damaged on the way
      // (umad2sim cuts every segment short): trust none of it.
      const std::uint8_t type = nr->node_info.node_type;
      if (type < static_cast<std::uint8_t>(wire::NodeType::kCa) || type > 3) {
        c.error = "NodeRecord table is corrupt: record " + std::to_string(i) + " has node type " + std::to_string(type);
        c.hosts.clear();
        return;
      }
      if (type != static_cast<std::uint8_t>(wire::NodeType::kCa)) continue;
      const Host h{nr->lid.get(), nr->node_info.port_guid.get(), nr->node_info.node_guid.get()};
      if (h.lid == 0 || h.lid >= 0xc000 || h.port_guid == 0 || h.node_guid == 0) {
        c.error = "NodeRecord table is corrupt: CA record " + std::to_string(i) + " has LID " +
                  std::to_string(h.lid) + ", a zero GUID or a multicast LID";
        c.hosts.clear();
        return;
      }
      c.hosts.push_back(h);
    }
    // Each CA port has one base LID and one GUID (IBA 15.2.5.2: one NodeRecord per port).
    std::vector<Host> s = c.hosts;
    std::sort(s.begin(), s.end(), [](const Host& a, const Host& b) { return a.lid < b.lid; });
    bool dup = std::adjacent_find(s.begin(), s.end(), [](const Host& a, const Host& b) { return a.lid == b.lid; }) != s.end();
    std::sort(s.begin(), s.end(), [](const Host& a, const Host& b) { return a.port_guid < b.port_guid; });
    dup = dup || std::adjacent_find(s.begin(), s.end(),
                                    [](const Host& a, const Host& b) { return a.port_guid == b.port_guid; }) != s.end();
    if (dup) {
      c.error = "NodeRecord table is corrupt: a CA LID or port GUID appears twice";
      c.hosts.clear();
    }
  } catch (const std::bad_alloc&) {
    c.error = "out of memory";
    c.hosts.clear();
  }
}

MadBuf sa_request(const SaTarget& sa, std::uint8_t method, std::uint64_t tid, std::uint32_t timeout_ms) {
  MadBuf req{};
  wire::SaMad m{};
  m.hdr.base_version = 1;
  m.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  m.hdr.class_version = wire::kSaClassVersion;
  m.hdr.method = method;
  m.hdr.attr_id = wire::be16::from(wire::sa_attr::kNodeRecord);
  m.hdr.tid = wire::be64::from(tid);
  wire::encode(m, std::span<std::uint8_t>(req.mad.bytes));
  req.addr.lid = sa.lid;
  req.addr.remote_qpn = 1;
  req.addr.qkey = madengine::kGsiQkey;
  req.addr.sl = sa.sl;
  req.addr.pkey_index = sa.pkey_index;
  req.resp_timeout_ms = timeout_ms;
  return req;
}

// NodeRecord Get for every LID of a batch; the next batch while any LID of
// this one had a record.
std::vector<Host> scan(madengine::Transport& transport, const madengine::Clock& clock, const SaTarget& sa,
                       const std::function<void(Nanos)>& idle, const DiscoverOptions& opts, std::string& error) {
  std::vector<Host> hosts;
  const std::uint32_t batch = std::clamp<std::uint32_t>(opts.scan_batch, 1, 1024);
  std::vector<MadBuf> reqs(batch);
  std::vector<std::uint8_t> state(batch);  // 0 waiting, 1 record, 2 no record
  std::vector<MadBuf> rx(32);
  std::vector<MadBuf*> rxp(rx.size());
  for (std::size_t i = 0; i < rx.size(); ++i) rxp[i] = &rx[i];
  const std::uint32_t tid_base = 0x5c000000u;
  for (std::uint32_t first = 1; first < 0xc000; first += batch) {
    const std::uint32_t n = std::min<std::uint32_t>(batch, 0xc000 - first);
    std::fill(state.begin(), state.end(), 0);
    bool any_record = false;
    for (unsigned attempt = 0; attempt <= opts.retries; ++attempt) {
      for (std::uint32_t k = 0; k < n; ++k) {
        if (state[k] != 0) continue;
        reqs[k] = sa_request(sa, wire::method::kGet, tid_base | (first + k), opts.timeout_ms);
        reqs[k].as<wire::SaMad>().comp_mask = wire::be64::from(wire::node_record_cm::kLid);
        wire::NodeRecord q{};
        q.lid = wire::be16::from(static_cast<std::uint16_t>(first + k));
        std::memcpy(reqs[k].mad.bytes.data() + wire::kSaHeaderSize, &q, sizeof q);
        MadBuf* p = &reqs[k];
        const Nanos give_up = clock.now_ns() + static_cast<Nanos>(opts.timeout_ms) * madengine::kNanosPerMilli;
        while (transport.tx_burst(std::span<MadBuf* const>(&p, 1)) != 1) {
          if (clock.now_ns() >= give_up) {
            error = "the transport refused NodeRecord queries";
            return {};
          }
          if (idle) idle(clock.now_ns() + madengine::kNanosPerMilli);
        }
      }
      const Nanos deadline = clock.now_ns() + static_cast<Nanos>(opts.timeout_ms) * madengine::kNanosPerMilli;
      auto waiting = [&] { return std::count(state.begin(), state.begin() + n, std::uint8_t{0}); };
      while (waiting() != 0 && clock.now_ns() < deadline) {
        const std::size_t got = transport.rx_burst(std::span<MadBuf*>(rxp));
        for (std::size_t i = 0; i < got; ++i) {
          const auto& h = rx[i].hdr();
          const auto tid = static_cast<std::uint32_t>(h.tid.get());
          if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || !h.is_response() ||
              (tid & 0xff000000u) != tid_base)
            continue;
          const std::uint32_t lid = tid & 0xffffu;
          if (lid < first || lid >= first + n || state[lid - first] != 0) continue;
          if (h.status.get() != 0) {
            if ((h.status.get() & wire::status::kBusy) != 0) continue;  // asked again next attempt
            state[lid - first] = 2;
            continue;
          }
          const auto nr = wire::decode<wire::NodeRecord>(
              std::span<const std::uint8_t>(rx[i].mad.bytes).subspan(wire::kSaHeaderSize));
          state[lid - first] = 1;
          any_record = true;
          if (nr && nr->lid.get() == lid && nr->node_info.node_type == static_cast<std::uint8_t>(wire::NodeType::kCa))
            hosts.push_back(Host{nr->lid.get(), nr->node_info.port_guid.get(), nr->node_info.node_guid.get()});
        }
        if (got == 0 && idle) idle(std::min(deadline, clock.now_ns() + 10 * madengine::kNanosPerMilli));
      }
      if (waiting() == 0) break;
    }
    if (std::count(state.begin(), state.begin() + n, std::uint8_t{0}) != 0) {
      error = "the SA at LID " + std::to_string(sa.lid) + " left NodeRecord queries unanswered";
      return {};
    }
    if (!any_record) break;
  }
  if (hosts.empty()) error = "the SA knows no CA ports";
  return hosts;
}

std::vector<Host> get_table(madengine::Transport& transport, const madengine::Clock& clock, const SaTarget& sa,
                            const std::function<void(Nanos)>& idle, const DiscoverOptions& opts, std::string& error) {
  DirectSink sink(transport);
  Collector col;
  madengine::RmppConfig rc;
  rc.transfers_max = 4;
  rc.segments_max = 4096;  // 900 KB: NodeRecords of about 8,000 ports
  madengine::RmppReceiver rmpp(clock, sink, &on_done, &col, rc);

  col.tid_low = 0x0d15c000u | (static_cast<std::uint32_t>(clock.now_ns()) & 0xfffu);
  MadBuf req = sa_request(sa, wire::method::kGetTable, col.tid_low, opts.timeout_ms);

  std::vector<MadBuf> rx(16);
  std::vector<MadBuf*> rxp(rx.size());
  for (std::size_t i = 0; i < rx.size(); ++i) rxp[i] = &rx[i];
  for (unsigned attempt = 0; attempt <= opts.retries && !col.done; ++attempt) {
    MadBuf* p = &req;
    if (transport.tx_burst(std::span<MadBuf* const>(&p, 1)) != 1) {
      error = "the transport refused the NodeRecord GetTable";
      return {};
    }
    const Nanos deadline = clock.now_ns() + static_cast<Nanos>(opts.timeout_ms) * madengine::kNanosPerMilli;
    while (!col.done) {
      const Nanos now = clock.now_ns();
      // A transfer under way gets its whole time limit, not just this attempt's.
      if (now >= deadline && rmpp.active() == 0) break;
      const std::size_t n = transport.rx_burst(std::span<MadBuf*>(rxp));
      for (std::size_t i = 0; i < n; ++i) {
        const auto& h = rx[i].hdr();
        if (h.mgmt_class != static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm) || !h.is_response()) continue;
        if (static_cast<std::uint32_t>(h.tid.get()) != col.tid_low) continue;
        const auto& rm = rx[i].as<wire::SaMad>().rmpp;
        if (rm.active() && rm.version != 1) {
          col.done = true;
          col.error = "NodeRecord table came back as one MAD flagged RMPP with version " + std::to_string(rm.version) +
                      " (not segmented)";
        } else if (rm.active()) {
          rmpp.on_mad(rx[i]);
        } else {
          col.done = true;
          col.error = "NodeRecord GetTable answered without RMPP, status " + std::to_string(h.status.get());
        }
      }
      rmpp.poll(clock.now_ns());
      if (n == 0 && idle) idle(std::min(deadline, clock.now_ns() + 10 * madengine::kNanosPerMilli));
    }
  }
  if (!col.done) {
    error = "no answer from the SA at LID " + std::to_string(sa.lid) + " to a NodeRecord GetTable";
    return {};
  }
  if (!col.error.empty()) {
    error = col.error;
    return {};
  }
  return std::move(col.hosts);
}

}  // namespace

std::vector<Host> discover_hosts(madengine::Transport& transport, const madengine::Clock& clock, const SaTarget& sa,
                                 const std::function<void(Nanos)>& idle, const DiscoverOptions& opts,
                                 std::string& error) {
  std::vector<Host> hosts;
  // kScan scans; kAuto tries the table first unless the port cuts MADs short.
  const bool table = opts.method == DiscoverMethod::kTable ||
                     (opts.method == DiscoverMethod::kAuto && !opts.mads_cut_short);
  if (table) {
    hosts = get_table(transport, clock, sa, idle, opts, error);
  } else if (opts.method == DiscoverMethod::kScan) {
    hosts = scan(transport, clock, sa, idle, opts, error);
  } else {
    error = "not asked: this port cuts received MADs short, so RMPP tables come back corrupt";
  }
  if (hosts.empty() && opts.method == DiscoverMethod::kAuto) {
    const std::string table_error = error;
    error.clear();
    hosts = scan(transport, clock, sa, idle, opts, error);
    if (hosts.empty()) error = "GetTable: " + table_error + "; scan: " + error;
  }
  std::sort(hosts.begin(), hosts.end(), [](const Host& a, const Host& b) { return a.lid < b.lid; });
  hosts.erase(std::unique(hosts.begin(), hosts.end(), [](const Host& a, const Host& b) { return a.lid == b.lid; }),
              hosts.end());
  return hosts;
}

void save_hosts_file(const std::string& path, const std::vector<Host>& hosts) {
  std::ofstream out(path);
  out << "# LID PORT_GUID NODE_GUID (madstorm --save-hosts)\n";
  for (const Host& h : hosts) out << h.lid << " 0x" << std::hex << h.port_guid << " 0x" << h.node_guid << std::dec << "\n";
  if (!out) throw std::runtime_error("cannot write hosts file " + path);
}

std::vector<Host> load_hosts_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open hosts file " + path);
  std::vector<Host> hosts;
  std::string line;
  for (unsigned lineno = 1; std::getline(in, line); ++lineno) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream ss(line);
    std::string a, b, c, extra;
    if (!(ss >> a)) continue;
    auto fail = [&](const std::string& why) {
      return std::runtime_error(path + ":" + std::to_string(lineno) + ": " + why);
    };
    if (!(ss >> b)) throw fail("expected LID PORT_GUID [NODE_GUID]");
    ss >> c;
    if (ss >> extra) throw fail("unexpected '" + extra + "'");
    auto num = [&](const std::string& s, std::uint64_t max) {
      std::size_t used = 0;
      std::uint64_t v = 0;
      try {
        v = std::stoull(s, &used, 0);
      } catch (const std::exception&) {
        throw fail("'" + s + "' is not a number");
      }
      if (used != s.size() || v > max) throw fail("'" + s + "' is not a number up to " + std::to_string(max));
      return v;
    };
    Host h;
    h.lid = static_cast<std::uint16_t>(num(a, 0xbfff));
    if (h.lid == 0) throw fail("LID 0 is not addressable");
    h.port_guid = num(b, ~std::uint64_t{0});
    h.node_guid = c.empty() ? h.port_guid : num(c, ~std::uint64_t{0});
    hosts.push_back(h);
  }
  if (hosts.empty()) throw std::runtime_error("hosts file " + path + " names no hosts");
  return hosts;
}

}  // namespace madstorm
