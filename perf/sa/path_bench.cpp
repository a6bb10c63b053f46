// Path benchmark: route a fat tree, build the compact path-record database,
// then produce every end-to-end PathRecord (N x N end ports) encoded into an
// SA response MAD, as the SA does per query minus request decoding.
//   path_bench [pods] [threads]      (pods 4: 1,296 hosts; 36: 11,664 hosts)
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "fabric_builders.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "sa/paths/path_db.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

using namespace madengine;
using Clock = std::chrono::steady_clock;

static double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

int main(int argc, char** argv) {
  const unsigned pods = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 4;
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  auto f = testing::fat_tree3(pods, 18, 18, 18, 18);
  for (auto& n : f.nodes)
    for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;
  sm::Guid2Lid map;
  sm::assign_lids(f, map, 0);
  sm::RoutingOptions o;
  o.threads = threads;
  auto t0 = Clock::now();
  const auto routes = sm::compute_routes(f, o);
  const double route_ms = ms_since(t0);

  t0 = Clock::now();
  const auto db = sa::PathDb::build(f, routes.lfts, routes.top_lid, threads, threads);
  const double db_ms = ms_since(t0);

  std::vector<std::pair<std::uint16_t, std::uint64_t>> ports;  // LID, port GUID
  for (auto e : f.end_ports())
    if (!f.nodes[e.node].is_switch()) ports.push_back({f.lid_of(e), f.nodes[e.node].ports[e.port].guid});

  wire::SaMad resp{};
  resp.hdr.base_version = 1;
  resp.hdr.mgmt_class = static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm);
  resp.hdr.class_version = wire::kSaClassVersion;
  resp.hdr.method = wire::method::kGetResp;
  resp.hdr.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
  std::uint64_t checksum = 0, unrouted = 0;
  t0 = Clock::now();
  for (const auto& [slid, sguid] : ports)
    for (const auto& [dlid, dguid] : ports) {
      const sa::PathAttrs a = db.path(slid, dlid);
      if (!a.routed()) {
        ++unrouted;
        continue;
      }
      wire::PathRecord pr{};
      pr.sgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(sguid)};
      pr.dgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(dguid)};
      pr.slid = wire::be16::from(slid);
      pr.dlid = wire::be16::from(dlid);
      pr.pkey = wire::be16::from(0xffff);
      pr.set_reversible(true);
      pr.set_numb_path(1);
      pr.set_mtu_selector(2);
      pr.set_mtu(a.mtu);
      pr.set_rate_selector(2);
      pr.set_rate(a.rate);
      pr.set_packet_life_time_selector(2);
      pr.set_packet_life_time(static_cast<std::uint8_t>(a.hops + 0x12 > 0x3f ? 0x3f : a.hops + 0x12));
      wire::encode(pr, std::span<std::uint8_t>(resp.data));
      resp.hdr.tid = wire::be64::from(checksum);
      checksum += resp.data[3] + resp.data[40];  // keep the work observable
    }
  const double all_ms = ms_since(t0);
  const double n = static_cast<double>(ports.size()) * static_cast<double>(ports.size());
  fmt::print("hosts {}  switches {}  threads {}\n", ports.size(), f.switch_count(), threads);
  fmt::print("routing (minhop)           {:>10.1f} ms\n", route_ms);
  fmt::print("path database build        {:>10.1f} ms  ({} entries, {} exceptions, {} palette values, {:.2f} MB)\n",
             db_ms, db.entries(), db.exceptions(), db.palette_size(), static_cast<double>(db.bytes()) / 1e6);
  fmt::print("all {:.0f} PathRecords      {:>10.1f} ms  ({:.1f} ns a path, {:.1f} M paths/s)\n", n, all_ms,
             all_ms * 1e6 / n, n / all_ms / 1e3);
  fmt::print("db build + all paths       {:>10.1f} ms\n", db_ms + all_ms);
  fmt::print("unrouted {}  checksum {}\n", unrouted, checksum);
  return unrouted == 0 ? 0 : 1;
}
