// Path benchmark: route a fat tree, build the compact path-record database,
// then produce every end-to-end PathRecord (N x N end ports) encoded into an
// SA response MAD, as the SA does per query minus request decoding.
//   path_bench [pods] [threads] [k] [all]  (k 36: pods 4 1,296 hosts, 36 11,664
//                                            hosts; k 56, 56 pods: 43,904 hosts;
//                                            all 0: skip the N x N PathRecords)
// Phase times are wall clock and process CPU time (all threads).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>
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
static double cpu_ms_since(std::clock_t c0) { return 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC; }

int main(int argc, char** argv) {
  const unsigned pods = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 4;
  const unsigned threads = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1;
  const unsigned half = (argc > 3 ? static_cast<unsigned>(std::atoi(argv[3])) : 36) / 2;
  const bool all_paths = argc > 4 ? std::atoi(argv[4]) != 0 : true;
  auto f = testing::fat_tree3(pods, half, half, half, half);
  for (auto& n : f.nodes)
    for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;
  sm::Guid2Lid map;
  sm::assign_lids(f, map, 0);
  sm::RoutingOptions o;
  o.threads = threads;
  auto t0 = Clock::now();
  std::clock_t c0 = std::clock();
  const auto routes = sm::compute_routes(f, o);
  const double route_ms = ms_since(t0);
  const double route_cpu_ms = cpu_ms_since(c0);

  t0 = Clock::now();
  c0 = std::clock();
  const auto db = sa::PathDb::build(f, routes.lfts, routes.top_lid, threads, threads);
  const double db_ms = ms_since(t0);
  fmt::print("hosts {}  switches {}  threads {}\n", f.nodes.size() - f.switch_count(), f.switch_count(), threads);
  fmt::print("routing (minhop)           {:>10.1f} ms wall {:>10.1f} ms CPU\n", route_ms, route_cpu_ms);
  fmt::print("path database build        {:>10.1f} ms wall {:>10.1f} ms CPU ({} entries, {} exceptions, {} palette values, {:.2f} MB)\n",
             db_ms, cpu_ms_since(c0), db.entries(), db.exceptions(), db.palette_size(), static_cast<double>(db.bytes()) / 1e6);
  std::fflush(stdout);
  if (!all_paths) return 0;

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
  fmt::print("all {:.0f} PathRecords      {:>10.1f} ms  ({:.1f} ns a path, {:.1f} M paths/s)\n", n, all_ms,
             all_ms * 1e6 / n, n / all_ms / 1e3);
  fmt::print("db build + all paths       {:>10.1f} ms\n", db_ms + all_ms);
  fmt::print("unrouted {}  checksum {}\n", unrouted, checksum);
  return unrouted == 0 ? 0 : 1;
}
