// verbs-ud on a real device (label hw): two transports (two UD QPs) on one
// port exchange MADs in loopback. Skips with a clear message when there is no
// RDMA device or its port is not ACTIVE, which is every machine without an HCA.
#include <infiniband/verbs.h>

#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/verbs/verbs_transport.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {
namespace {

constexpr std::uint32_t kTestQkey = 0x0000c0de;  // not controlled: no CAP_NET_RAW needed
constexpr int kPollRoundsMax = 200000;           // bound on polling, not a time limit

bool have_rdma_device() {
  int n = 0;
  ibv_device** l = ibv_get_device_list(&n);
  if (l == nullptr) return false;
  ibv_free_device_list(l);
  return n > 0;
}

// Receives up to `want` MADs, polling a bounded number of rounds.
std::size_t receive(VerbsUdTransport& t, std::vector<MadBuf>& into, std::size_t want) {
  std::vector<MadBuf*> ptrs;
  for (auto& b : into) ptrs.push_back(&b);
  std::size_t got = 0;
  for (int i = 0; i < kPollRoundsMax && got < want; ++i) {
    got += t.rx_burst(std::span<MadBuf*>(ptrs.data() + got, want - got));
    if (got < want) std::this_thread::yield();
  }
  return got;
}

MadAddr address_of(const VerbsUdTransport& to) {
  MadAddr a;
  a.port_num = to.local_port().port_num;
  a.lid = to.local_port().lid;
  a.remote_qpn = to.qp_num();
  a.qkey = to.qkey();
  if (to.is_roce()) {  // RoCE addresses by GID only
    a.has_grh = true;
    a.gid.prefix = wire::be64::from(to.local_port().subnet_prefix);
    a.gid.guid = wire::be64::from(to.local_port().port_guid);
    a.hop_limit = 1;
  }
  return a;
}

TEST(VerbsHw, LoopbackTwoQpsOnOnePort) {
  if (!have_rdma_device()) GTEST_SKIP() << "no RDMA device: untested-on-hardware";
  SteadyClock clock;
  VerbsConfig c;
  c.qkey = kTestQkey;
  c.sq_depth = 64;
  c.rq_depth = 128;
  c.ah_cache_max = 128;
  VerbsUdTransport a(c, clock), b(c, clock);
  AgentSpec spec;
  spec.gsi_client = true;
  ASSERT_TRUE(a.open(spec)) << a.last_error();
  ASSERT_TRUE(b.open(spec)) << b.last_error();
  if (a.local_port().state != PortState::kActive)
    GTEST_SKIP() << "port " << int{a.local_port().port_num} << " of " << a.device_name()
                 << " is not ACTIVE";

  // A burst of distinct MADs from a to b, one post.
  constexpr std::size_t kBurst = 16;
  std::vector<MadBuf> out(kBurst);
  std::vector<MadBuf*> out_ptrs;
  for (std::size_t i = 0; i < kBurst; ++i) {
    auto& h = out[i].hdr();
    h.base_version = 1;
    h.mgmt_class = 0x03;
    h.class_version = 2;
    h.method = 0x01;
    h.tid = wire::be64::from(0x1000 + i);
    out[i].mad.bytes[100] = static_cast<std::uint8_t>(i);
    out[i].addr = address_of(b);
    out_ptrs.push_back(&out[i]);
  }
  EXPECT_EQ(a.tx_burst(out_ptrs), kBurst);
  std::vector<MadBuf> in(kBurst);
  ASSERT_EQ(receive(b, in, kBurst), kBurst) << "b received fewer MADs than a sent";
  for (std::size_t i = 0; i < kBurst; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(in[i].len, wire::kMadSize);
    EXPECT_EQ(in[i].hdr().tid.get(), 0x1000 + i);  // UD on one QP pair arrives in order
    EXPECT_EQ(in[i].mad.bytes[100], i);
    EXPECT_EQ(in[i].addr.remote_qpn, a.qp_num());
    EXPECT_EQ(in[i].addr.lid, a.local_port().lid);
  }
  EXPECT_EQ(a.counters().tx, kBurst);
  EXPECT_EQ(b.counters().rx, kBurst);

  // The reply goes back to the address it came from.
  MadBuf reply = in[0];
  reply.hdr().method = 0x81;
  MadBuf* const rp[1] = {&reply};
  EXPECT_EQ(b.tx_burst(rp), 1u);
  std::vector<MadBuf> back(1);
  ASSERT_EQ(receive(a, back, 1), 1u);
  EXPECT_EQ(back[0].hdr().method, 0x81);
  EXPECT_EQ(back[0].addr.remote_qpn, b.qp_num());

  // Back-pressure: more than the send queue holds is never all accepted at
  // once without completions being reaped, and what is accepted arrives.
  std::vector<MadBuf> many(c.sq_depth * 2, out[0]);
  std::vector<MadBuf*> many_ptrs;
  for (auto& m : many) many_ptrs.push_back(&m);
  const std::size_t first = a.tx_burst(many_ptrs);
  EXPECT_LE(first, c.sq_depth);
  std::vector<MadBuf> sink(first);
  EXPECT_EQ(receive(b, sink, first), first);
  EXPECT_EQ(a.counters().send_errors, 0u);
  EXPECT_EQ(b.counters().rx_errors, 0u);
  EXPECT_EQ(a.poll_events(), DeviceEvent::kNone);
}

}  // namespace
}  // namespace madengine
