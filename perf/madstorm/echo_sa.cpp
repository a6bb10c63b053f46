// echo_sa: the cheapest SA a libibumad program can be, to measure what the
// transport alone costs. One thread answers every SubnAdm Get at once with
// the request's own record (status 0): no lookup, no state. Under ibsim's
// umad2sim shim its q/s at a madstorm window is the ceiling any SA reaches
// through the shim on this machine, and its CPU per query the shim's share
// of every SA's CPU (perf/madstorm/ibsim_side_by_side.sh, HOSTS_FROM_A=1).
// Not an SA: nothing else is answered. Given madstorm's hosts file it fills
// a LID-addressed PathRecord's SGID and DGID from it (an array lookup), so
// madstorm accepts the answer; every other field stays as asked.
//
//   echo_sa [HOSTS_FILE [CA [PORT]]]   (ECHO_SA_TRACE=1: a line per answer on stderr)
#include <endian.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int kSaClass = 0x03;
constexpr int kSaClassVersion = 2;
constexpr int kSmiClasses[] = {0x01, 0x81};  // LID-routed and directed-route SMPs
constexpr std::uint8_t kGet = 0x01;
constexpr std::uint8_t kResponseBit = 0x80;
constexpr std::uint32_t kGsiQkey = 0x80010000;
constexpr int kMadSize = 256;
constexpr std::size_t kSaData = 56;  // PathRecord: DGID at +8, SGID at +24, DLID at +40, SLID at +42
constexpr std::uint64_t kSubnetPrefix = 0xfe80000000000000ull;

volatile std::sig_atomic_t g_stop = 0;

void put_gid(std::uint8_t* at, std::uint64_t guid) {
  const std::uint64_t be[2] = {htobe64(kSubnetPrefix), htobe64(guid)};
  std::memcpy(at, be, sizeof be);
}

// "LID PORT_GUID [NODE_GUID]" lines (madstorm --save-hosts): port GUID by LID.
std::vector<std::uint64_t> load_hosts(const char* path) {
  std::vector<std::uint64_t> guid(0xc000, 0);
  std::FILE* f = std::fopen(path, "r");
  if (f == nullptr) return {};
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long lid = 0, port_guid = 0;
    if (line[0] != '#' && std::sscanf(line, "%llu %llx", &lid, &port_guid) == 2 && lid < guid.size())
      guid[lid] = port_guid;
  }
  std::fclose(f);
  return guid;
}

int fail(const char* what, int err) {
  std::fprintf(stderr, "echo_sa: %s: %s\n", what, std::strerror(err));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint64_t> guid_of_lid;
  if (argc > 1 && (guid_of_lid = load_hosts(argv[1])).empty()) return fail(argv[1], errno);
  const char* ca = argc > 2 ? argv[2] : nullptr;
  const int port_arg = argc > 3 ? std::atoi(argv[3]) : 0;
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  const bool trace = std::getenv("ECHO_SA_TRACE") != nullptr;

  umad_port_t port{};  // the issm path needs the CA's name and the port's number, not defaults
  if (int rc = umad_get_port(ca, port_arg, &port); rc < 0) return fail("umad_get_port", -rc);
  const int fd = umad_open_port(port.ca_name, port.portnum);
  if (fd < 0) return fail("umad_open_port", -fd);
  long gets[16 / sizeof(long)] = {};
  gets[0] = 1L << kGet;
  const int agent = umad_register(fd, kSaClass, kSaClassVersion, 0, gets);
  if (agent < 0) return fail("umad_register (SA)", -agent);
  // An SM's port also receives SMPs (traps, SMInfo): umad2sim dereferences
  // the agent of whatever class arrives, so every class gets one; their
  // MADs are read and dropped.
  for (const int klass : kSmiClasses) {
    long any[16 / sizeof(long)] = {};
    if (int id = umad_register(fd, klass, 1, 0, any); id < 0) return fail("umad_register (SMI)", -id);
  }
  // Hold the port's IsSM bit, as an SM's SA does: ibsim hands QP1 requests
  // only to a client that opened the issm device.
  char issm_path[256] = {};
  int issm_fd = -1;
  if (umad_get_issm_path(port.ca_name, port.portnum, issm_path, sizeof issm_path) == 0)
    issm_fd = ::open(issm_path, O_RDWR | O_NONBLOCK);
  if (issm_fd < 0) return fail("open issm device", errno);
  std::fprintf(stderr, "echo_sa: %s port %d, LID %d: answering SA Gets\n", port.ca_name, port.portnum, port.base_lid);
  umad_release_port(&port);

  void* umad = umad_alloc(1, umad_size() + kMadSize);
  unsigned long answered = 0;
  while (g_stop == 0) {
    int len = kMadSize;
    if (umad_recv(fd, umad, &len, 1000) < 0 || umad_status(umad) != 0) continue;  // 1 s: notice SIGTERM
    auto* mad = static_cast<std::uint8_t*>(umad_get_mad(umad));
    if (len < 24 || mad[1] != kSaClass || mad[3] != kGet) continue;
    mad[3] = kGet | kResponseBit;  // GetResp, the record as the request had it
    mad[4] = mad[5] = 0;           // status
    if (!guid_of_lid.empty() && len >= static_cast<int>(kSaData + 44) && mad[16] == 0x00 && mad[17] == 0x35) {
      std::uint8_t* pr = mad + kSaData;
      const unsigned dlid = pr[40] << 8 | pr[41], slid = pr[42] << 8 | pr[43];
      if (dlid < guid_of_lid.size()) put_gid(pr + 8, guid_of_lid[dlid]);
      if (slid < guid_of_lid.size()) put_gid(pr + 24, guid_of_lid[slid]);
    }
    const ib_mad_addr_t* a = umad_get_mad_addr(umad);
    const int lid = be16toh(a->lid);
    const int qpn = static_cast<int>(be32toh(a->qpn));
    // ibsim reports Q_Key 0 on received GSI MADs: answer with the GSI Q_Key.
    umad_set_addr(umad, lid, qpn, a->sl, static_cast<int>(kGsiQkey));
    const int sent = umad_send(fd, agent, umad, len, 0, 0);
    if (sent == 0) ++answered;
    if (trace) std::fprintf(stderr, "echo_sa: len %d lid %d qpn %d sent %d\n", len, lid, qpn, sent);
  }
  std::fprintf(stderr, "echo_sa: %lu Gets answered\n", answered);
  umad_free(umad);
  ::close(issm_fd);
  umad_close_port(fd);
  return 0;
}
