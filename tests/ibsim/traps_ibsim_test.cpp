// Traps to subscribers on ibsim: madengine's SM and SA on H1 (the daemon's
// node: SmConfig::on_notice -> SaServer::forward_notice), a
// plain libibumad client on H2 that subscribes with SubnAdmSet(InformInfo)
// and answers Reports (IBA 13.4.8.3), and the ibsim console taking H3's link
// down and up: the client must receive trap 65 and then trap 64 for H3's GID
// (and trap 128 from the switch, which ibsim sends and the SM forwards).
#include <gtest/gtest.h>
#include <infiniband/umad.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "ibsim_harness.hpp"
#include "madengine_rig.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/inform_info.hpp"
#include "madengine/wire/smp/notice.hpp"
#include "sa/server/sa_server.hpp"
#include "sa/snapshot.hpp"
#include "sm/sm.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;

constexpr std::uint32_t kQkey = 0x80010000;  // the GSI Q_Key (IBA 13.5.1)
constexpr int kMadBytes = static_cast<int>(wire::kMadSize);

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- the subscriber: a child process on H2 (runs only when the parent asks) ----

// One umad buffer: the kernel/shim header, then the 256-byte MAD.
struct UmadBuf {
  std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(umad_size() + wire::kMadSize);
  void* umad() { return bytes.data(); }
  wire::SaMad& mad() { return *reinterpret_cast<wire::SaMad*>(static_cast<std::uint8_t*>(umad_get_mad(umad()))); }
};

TEST(SmTrapsIbsimChild, Subscribe) {
  const char* out_path = std::getenv("MADENGINE_TRAP_CHILD_OUT");
  if (out_path == nullptr) GTEST_SKIP() << "runs only as a child of SubscriberHearsGidOutOfAndInService";
  std::FILE* out = std::fopen(out_path, "w");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(umad_init(), 0);
  const int fd = umad_open_port(nullptr, 0);
  ASSERT_GE(fd, 0);
  umad_port_t port{};
  ASSERT_EQ(umad_get_port(nullptr, 0, &port), 0);
  const std::uint16_t sm_lid = static_cast<std::uint16_t>(port.sm_lid);
  umad_release_port(&port);
  ASSERT_NE(sm_lid, 0);
  // ibsim hands requests on QP0/QP1 (a Report is one) only to a client that
  // holds the issm device, so the subscriber declares itself an SM; it then
  // also receives our SM's SMInfo Gets, and the shim crashes a client that
  // has no agent for their class: register 0x01 and 0x81 and ignore them,
  // before IsSM is set (its trap 144 makes our SM poll this port at once).
  long none[16 / sizeof(long)] = {};
  ASSERT_GE(umad_register(fd, 0x01, 1, 0, none), 0);
  ASSERT_GE(umad_register(fd, 0x81, 1, 0, none), 0);
  char issm_path[256] = {};
  ASSERT_EQ(umad_get_issm_path(nullptr, 0, issm_path, sizeof issm_path), 0);
  const int issm_fd = open(issm_path, O_RDWR);
  ASSERT_GE(issm_fd, 0);
  // Unsolicited Reports reach an agent whose method mask has Report.
  long mask[16 / sizeof(long)] = {};
  constexpr unsigned kBits = 8 * sizeof(long);
  mask[wire::method::kReport / kBits] |= 1L << (wire::method::kReport % kBits);
  const int agent = umad_register(fd, 0x03, wire::kSaClassVersion, 0, mask);
  ASSERT_GE(agent, 0);

  UmadBuf req;
  wire::SaMad& sa = req.mad();
  sa = wire::SaMad{};
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = 0x03;
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = wire::method::kSet;
  sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kInformInfo);
  sa.hdr.tid = wire::be64::from(0x7a00'0001);
  wire::InformInfo ii{};
  ii.lid_range_begin = wire::be16::from(wire::kInformAllLids);
  ii.is_generic = 1;
  ii.subscribe = 1;
  ii.type = wire::be16::from(wire::inform_type::kAll);
  ii.set_trap_number(wire::kInformAllTraps);
  ii.set_producer_type(wire::kInformAllProducers);
  std::memcpy(sa.data.data(), &ii, sizeof ii);
  umad_set_addr(req.umad(), sm_lid, 1, 0, kQkey);
  // The shim never times a send out: our own loop bounds every wait.
  ASSERT_EQ(umad_send(fd, agent, req.umad(), kMadBytes, 0, 0), 0);

  bool subscribed = false, saw65 = false, saw64 = false;
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < end && !(saw65 && saw64)) {
    UmadBuf in;
    int len = kMadBytes;
    if (umad_recv(fd, in.umad(), &len, 200) < 0) continue;
    wire::SaMad& m = in.mad();
    if (m.hdr.method == wire::method::kGetResp && m.hdr.attr_id.get() == wire::sa_attr::kInformInfo) {
      subscribed = m.hdr.status.get() == 0;
      std::fprintf(out, "subscribed %d\n", subscribed ? 1 : 0);
      std::fflush(out);
      continue;
    }
    if (m.hdr.method != wire::method::kReport) continue;
    wire::Notice n;
    std::memcpy(&n, m.data.data(), sizeof n);
    const std::uint16_t trap = n.trap_number.get();
    const std::uint64_t guid = n.details<wire::NoticeDetailsGid>().gid.guid.get();
    std::fprintf(out, "report %u %llx\n", trap, static_cast<unsigned long long>(guid));
    std::fflush(out);
    // ReportResp: the same MAD back to the sender (IBA 13.4.8.3).
    const ib_mad_addr_t* from = umad_get_mad_addr(in.umad());
    m.hdr.method = wire::method::kReportResp;
    umad_set_addr(in.umad(), ntohs(from->lid), ntohl(from->qpn), from->sl, kQkey);
    umad_send(fd, agent, in.umad(), kMadBytes, 0, 0);
    saw65 = saw65 || trap == wire::trap::kGidOutOfService;
    saw64 = saw64 || (saw65 && trap == wire::trap::kGidInService);
  }
  std::fclose(out);
  umad_unregister(fd, agent);
  umad_close_port(fd);
  close(issm_fd);
  EXPECT_TRUE(subscribed);
  EXPECT_TRUE(saw65 && saw64);
}

// ---- the parent: SM and SA on H1, the console, the child on H2 ----

// The daemon's node on H1 (madengine_rig.hpp), light sweeps every 200 ms.
struct Rig : ibsim::MadengineRig {
  bool start() {
    node::NodeConfig c = config(0);
    c.sm.sweep_interval_ms = 200;
    return MadengineRig::start(c);
  }
};

bool wait_file(const std::string& path, const std::string& needle, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (read_all(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST(SmTrapsIbsim, SubscriberHearsGidOutOfAndInService) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("star3.topo"), {.console = true});
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");
  Rig rig;
  ASSERT_TRUE(rig.start()) << rig.error;
  ASSERT_TRUE(rig.sm().wait_subnet_up(60s));
  std::uint64_t h3 = 0;
  {
    const auto snap = rig.store().current();
    for (const auto& n : snap->fabric.nodes)
      if (n.description == "H3") h3 = n.ports[1].guid;
  }
  ASSERT_NE(h3, 0u);

  const std::string out = fabric.work_dir() + "/subscriber.out";
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof self - 1), 0);
  ibsim::RunResult child;
  std::thread t([&] {
    child = fabric.run("MADENGINE_TRAP_CHILD_OUT=" + out + " " + self + " --gtest_filter=SmTrapsIbsimChild.Subscribe",
                       "H2", 90s);
  });
  const bool subscribed = wait_file(out, "subscribed 1", 30s);
  std::ostringstream g;
  g << std::hex << h3;
  bool down = false, up = false;
  if (subscribed) {
    EXPECT_TRUE(fabric.console("Unlink \"H3\"[1]"));
    down = wait_file(out, "report 65 " + g.str(), 30s);
    EXPECT_TRUE(fabric.console("Link \"H3\"[1] \"S1\"[3]"));
    up = wait_file(out, "report 64 " + g.str(), 30s);
  }
  t.join();
  EXPECT_TRUE(subscribed) << read_all(out) << child.out << child.err;
  EXPECT_TRUE(down) << read_all(out);
  EXPECT_TRUE(up) << read_all(out);
  EXPECT_EQ(child.exit_code, 0) << child.out << child.err;
  std::printf("subscriber on H2 (H3 is %llx):\n%s", static_cast<unsigned long long>(h3), read_all(out).c_str());
  const auto c = rig.sa().counters();
  std::printf("SA: reports sent %llu, acknowledged %llu; SM traps received %llu\n",
              static_cast<unsigned long long>(c.reports_sent), static_cast<unsigned long long>(c.reports_acked),
              static_cast<unsigned long long>(rig.sm().status().traps));
  EXPECT_GE(c.reports_acked, 2u);
}

}  // namespace
}  // namespace madengine
