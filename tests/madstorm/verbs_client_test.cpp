// madstorm's verbs-ud client without an HCA: the transport's configuration
// for a storm, and madstorm's own requests through the verbs pieces that run
// on every send and receive (check_send, the address handle key, the UD work
// request) and back (a receive completion from the SA's QP1). The verbs
// transport is untested on hardware; verbs_hw_test runs it where an HCA is.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "engine/verbs/verbs_transport.hpp"
#include "lib/storm.hpp"
#include "lib/verbs_client.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/path_record.hpp"

namespace madstorm {
namespace {

namespace wire = madengine::wire;
namespace verbs = madengine::verbs;
using madengine::MadBuf;

TEST(VerbsClient, ConfigOwnsTheGsiQkeyAndFitsTheWindow) {
  const auto c = verbs_client_config("mlx5_0", 0, 64);
  EXPECT_EQ(c.device_name, "mlx5_0");
  EXPECT_EQ(c.port_num, 1);
  EXPECT_EQ(c.qkey, madengine::kGsiQkey);
  EXPECT_GE(c.sq_depth, 64u + 256u);  // the window and the RMPP ACKs queued beside it
  EXPECT_GE(c.rq_depth, 2u * 64u);
  EXPECT_GT(c.ah_cache_max, c.sq_depth);
  EXPECT_EQ(madengine::validate_verbs_config(c), nullptr);
  const auto big = verbs_client_config("", 2, 1u << 20);  // clamped to the transport's bounds
  EXPECT_EQ(big.port_num, 2);
  EXPECT_EQ(big.sq_depth, madengine::kVerbsSqDepthMax);
  EXPECT_EQ(big.rq_depth, madengine::kVerbsRqDepthMax);
  EXPECT_EQ(madengine::validate_verbs_config(big), nullptr);
  EXPECT_THROW(verbs_client_config("", 300, 64), std::invalid_argument);
}

class VerbsClientRequest : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg.sa.lid = 7;
    cfg.sa.sl = 3;
    hosts = {Host{11, 0x0002c90300001111ull, 0x0002c90300001110ull}, Host{12, 0x0002c90300001222ull, 0x0002c90300001220ull}};
    Storm::build_request(cfg, hosts, Query{.kind = QueryKind::kPathRecord, .src = 0, .dst = 1}, req);
    req.hdr().tid = wire::be64::from(std::uint64_t{kStormTidTag} << 32 | 0x1234);
  }
  StormConfig cfg;
  std::vector<Host> hosts;
  MadBuf req;
};

TEST_F(VerbsClientRequest, GoesToTheSasQp1WithTheGsiQkey) {
  // A QP that owns the GSI Q_Key may send it; any other QP would have the HCA
  // replace the controlled Q_Key with its own, so the transport refuses.
  EXPECT_EQ(verbs::check_send(req, madengine::kGsiQkey), verbs::SendReject::kNone);
  EXPECT_EQ(verbs::check_send(req, 0x0000c0de), verbs::SendReject::kControlledQkey);
  const verbs::AhKey k = verbs::ah_key_of(req.addr);
  EXPECT_EQ(k.dlid, 7);
  EXPECT_EQ(k.sl, 3);
  EXPECT_FALSE(k.has_grh);

  std::vector<std::uint8_t> area(4 * verbs::kSendSlotStride);
  const verbs::SendArea send_area{area.data(), 0x77, 4};
  std::vector<ibv_send_wr> wrs(4);
  std::vector<ibv_sge> sges(4);
  std::vector<std::uint32_t> wr_buf(4);
  auto* ah = reinterpret_cast<ibv_ah*>(std::uintptr_t{0x5000});
  MadBuf* p = &req;
  const auto r = verbs::build_send_chain(std::span<MadBuf* const>(&p, 1), 4, send_area, 0, madengine::kGsiQkey,
                                         [&](const verbs::AhKey&) { return ah; }, wrs, sges, wr_buf);
  ASSERT_EQ(r.wrs, 1u);
  EXPECT_EQ(wrs[0].wr.ud.remote_qpn, 1u);
  EXPECT_EQ(wrs[0].wr.ud.remote_qkey, madengine::kGsiQkey);
  EXPECT_EQ(wrs[0].wr.ud.ah, ah);
  EXPECT_EQ(wrs[0].send_flags, unsigned{IBV_SEND_SIGNALED});
  // On the wire: the PathRecord Get as the storm built it (SLID of the asking host, DLID of the other).
  const auto sa = *wire::decode<wire::SaMad>(std::span<const std::uint8_t>(area.data(), wire::kMadSize));
  EXPECT_EQ(sa.hdr.mgmt_class, static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm));
  EXPECT_EQ(sa.hdr.method, wire::method::kGet);
  const auto pr = *wire::decode<wire::PathRecord>(std::span<const std::uint8_t>(sa.data));
  EXPECT_EQ(pr.slid.get(), 11);
  EXPECT_EQ(pr.dlid.get(), 12);
}

TEST_F(VerbsClientRequest, TheAnswerFromQp1ComesBackAddressedToQp1) {
  // The SA's answer as a UD receive: GRH space, then the MAD, from QP1 at the SA's LID.
  std::vector<std::uint8_t> slot(verbs::kRecvSlotStride, 0);
  MadBuf answer = req;
  answer.hdr().method = wire::method::kGetResp;
  std::memcpy(slot.data() + verbs::kGrhBytes, answer.mad.bytes.data(), wire::kMadSize);
  ibv_wc wc{};
  wc.status = IBV_WC_SUCCESS;
  wc.opcode = IBV_WC_RECV;
  wc.byte_len = static_cast<std::uint32_t>(verbs::kGrhBytes + wire::kMadSize);
  wc.src_qp = 1;
  wc.slid = 7;
  wc.sl = 3;
  MadBuf out;
  ASSERT_TRUE(verbs::fill_from_recv(wc, slot.data(), 1, madengine::kGsiQkey, out));
  EXPECT_EQ(out.addr.lid, 7);
  EXPECT_EQ(out.addr.remote_qpn, 1u);
  EXPECT_EQ(out.addr.qkey, madengine::kGsiQkey);  // an RMPP ACK built from it goes back to QP1 with the GSI Q_Key
  EXPECT_EQ(out.hdr().tid.get(), req.hdr().tid.get());
  EXPECT_EQ(verbs::check_send(out, madengine::kGsiQkey), verbs::SendReject::kNone);
}

TEST(VerbsClient, OpeningWithoutADeviceFailsWithAReason) {
  int n = 0;
  if (ibv_device** l = ibv_get_device_list(&n)) ibv_free_device_list(l);
  if (n > 0) GTEST_SKIP() << "an RDMA device is present: see madstorm_verbs_hw_test";
  madengine::SteadyClock clock;
  madengine::VerbsUdTransport t(verbs_client_config("", 1, 64), clock);
  EXPECT_FALSE(t.open(madengine::AgentSpec{.gsi_client = true}));
  EXPECT_FALSE(t.last_error().empty());
}

}  // namespace
}  // namespace madstorm
