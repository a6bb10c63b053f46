// The umad transport on ibsim, checked against infiniband-diags on the same
// fabric: DR SubnGet(NodeInfo) vs smpquery, SA PathRecord Get vs saquery
// (OpenSM as the SA, asked through an Engine and its TransactionManager),
// and the device life cycle when ibsim goes away.
#include <arpa/inet.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "saquery_records.hpp"
#include "umad_sa_client.hpp"
#include "madengine/engine/clock.hpp"
#include "engine/engine.hpp"
#include "engine/lifecycle.hpp"
#include "engine/transaction.hpp"
#include "madengine/wire/codec.hpp"
#include "madengine/wire/sa.hpp"
#include "madengine/wire/sa/path_record.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/node_info.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::IbsimFabric;
using ibsim::parse_dotted;

constexpr std::uint32_t kRespTimeoutMs = 1000;
constexpr auto kWaitForResponse = 10s;  // the test's own timer: the shim never times out

std::uint64_t num(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) {
    ADD_FAILURE() << "no field " << key;
    return ~0ull;
  }
  return std::stoull(it->second, nullptr, 0);
}

// Sends one request and waits (own timer) for the response with the same low
// 32 TID bits; returns it, or nullopt on timeout.
std::optional<MadBuf> transact(UmadTransport& t, MadBuf& req) {
  MadBuf* out[] = {&req};
  if (t.tx_burst(std::span<MadBuf* const>(out, 1)) != 1) return std::nullopt;
  const std::uint32_t tid_low = static_cast<std::uint32_t>(req.hdr().tid.get());
  MadBuf rx[8];
  MadBuf* rxp[8];
  for (int i = 0; i < 8; ++i) rxp[i] = &rx[i];
  const auto deadline = std::chrono::steady_clock::now() + kWaitForResponse;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{t.fd(), POLLIN, 0};
    ::poll(&p, 1, 50);  // the shim implements poll() for its own descriptors
    const std::size_t n = t.rx_burst(std::span<MadBuf*>(rxp, 8));
    for (std::size_t i = 0; i < n; ++i) {
      const auto& h = rx[i].hdr();
      if (h.is_response() && static_cast<std::uint32_t>(h.tid.get()) == tid_low) {
        std::printf("request tid 0x%016llx -> response tid 0x%016llx\n",
                    static_cast<unsigned long long>(req.hdr().tid.get()),
                    static_cast<unsigned long long>(h.tid.get()));
        return rx[i];
      }
    }
  }
  return std::nullopt;
}

MadBuf make_dr_node_info(const wire::DrPath& path, std::uint64_t tid) {
  MadBuf b{};
  const wire::DrSmp smp = wire::make_dr_smp(wire::method::kGet, wire::smp_attr::kNodeInfo, 0, tid, path);
  wire::encode(smp, std::span<std::uint8_t>(b.mad.bytes));
  b.len = wire::kMadSize;
  b.addr.lid = wire::kPermissiveLid;
  b.resp_timeout_ms = kRespTimeoutMs;
  return b;
}

std::string dr_string(const wire::DrPath& path) {
  std::string s = "0";
  for (std::uint8_t i = 1; i <= path.hops; ++i) s += "," + std::to_string(path.ports[i]);
  return s;
}

void expect_node_info_matches_smpquery(UmadTransport& t, const IbsimFabric& fabric,
                                       const wire::DrPath& path, std::uint64_t tid) {
  SCOPED_TRACE("DR path " + dr_string(path));
  MadBuf req = make_dr_node_info(path, tid);
  const auto resp = transact(t, req);
  ASSERT_TRUE(resp.has_value()) << "no NodeInfo response";
  const auto smp = wire::decode<wire::DrSmp>(std::span<const std::uint8_t>(resp->mad.bytes));
  ASSERT_TRUE(smp.has_value());
  EXPECT_EQ(smp->hdr.method, wire::method::kGetResp);
  EXPECT_EQ(smp->smp_status(), wire::status::kOk);
  EXPECT_TRUE(smp->direction_in());
  const auto ni = wire::decode<wire::NodeInfo>(std::span<const std::uint8_t>(smp->data));
  ASSERT_TRUE(ni.has_value());

  const auto r = fabric.run("smpquery -D nodeinfo " + dr_string(path), "H1");
  ASSERT_EQ(r.exit_code, 0) << r.err << (r.timed_out ? " (timed out)" : "");
  const auto m = parse_dotted(r.out);
  EXPECT_EQ(num(m, "BaseVers"), ni->base_version);
  EXPECT_EQ(num(m, "ClassVers"), ni->class_version);
  EXPECT_EQ(m.at("NodeType"), ni->is_switch() ? "Switch" : "Channel Adapter");
  EXPECT_EQ(num(m, "NumPorts"), ni->num_ports);
  EXPECT_EQ(num(m, "SystemGuid"), ni->system_image_guid.get());
  EXPECT_EQ(num(m, "Guid"), ni->node_guid.get());
  EXPECT_EQ(num(m, "PortGuid"), ni->port_guid.get());
  EXPECT_EQ(num(m, "PartCap"), ni->partition_cap.get());
  EXPECT_EQ(num(m, "DevId"), ni->device_id.get());
  EXPECT_EQ(num(m, "Revision"), ni->revision.get());
  EXPECT_EQ(num(m, "LocalPort"), ni->local_port_num);
  EXPECT_EQ(num(m, "VendorId"), ni->vendor_id());
}

TEST(UmadIbsim, DrNodeInfoMatchesSmpquery) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");

  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true})) << t.last_error();
  EXPECT_EQ(t.local_port().port_num, 1);

  wire::DrPath local;  // 0 hops: the local port's own SMA
  expect_node_info_matches_smpquery(t, fabric, local, 0x1234'0000'0000'0001ull);
  // The local NodeInfo agrees with what the transport read from (the shim's) sysfs.
  {
    MadBuf req = make_dr_node_info(local, 2);
    const auto resp = transact(t, req);
    ASSERT_TRUE(resp.has_value());
    const auto ni = wire::decode<wire::NodeInfo>(
        std::span<const std::uint8_t>(resp->mad.bytes).subspan(offsetof(wire::DrSmp, data)));
    EXPECT_EQ(ni->port_guid.get(), t.local_port().port_guid);
    EXPECT_EQ(ni->node_guid.get(), t.local_port().node_guid);
  }
  wire::DrPath three_hops;  // H1 port 1 -> S1 port 2 -> S2 port 2 -> S3
  three_hops.push(1);
  three_hops.push(2);
  three_hops.push(2);
  expect_node_info_matches_smpquery(t, fabric, three_hops, 3);

  EXPECT_EQ(t.counters().tx, 3u);
  EXPECT_EQ(t.counters().send_errors, 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);
}

std::string gid_string(const wire::Gid& g) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &g, buf, sizeof buf);
  return buf;
}

// chain3 brought up by OpenSM on H1; H2's LID, four hops away, as OpenSM
// assigned it (0, with the failure reported, if that did not work).
std::uint16_t h2_lid_from_opensm(IbsimFabric& fabric) {
  if (!fabric.start_opensm(0, "H1")) {
    ADD_FAILURE() << "OpenSM did not start";
    return 0;
  }
  if (!fabric.wait_subnet_up(60s)) {
    ADD_FAILURE() << fabric.opensm_log();
    return 0;
  }
  const auto pi = fabric.run("smpquery -D portinfo 0,1,2,2,2", "H1");
  if (pi.exit_code != 0) {
    ADD_FAILURE() << pi.err;
    return 0;
  }
  return static_cast<std::uint16_t>(num(parse_dotted(pi.out), "Lid"));
}

// A PathRecord Get from `lp` to the SM LID's QP1 for the path to `dlid`.
MadBuf path_record_get(const LocalPort& lp, std::uint16_t dlid, std::uint64_t tid) {
  wire::PathRecord q{};
  q.slid = wire::be16::from(lp.lid);
  q.dlid = wire::be16::from(dlid);
  return ibsim::sa_request_to_sm(wire::make_sa_request(wire::method::kGet, wire::sa_attr::kPathRecord, tid,
                                                       wire::path_record_cm::kSLid | wire::path_record_cm::kDLid, q),
                                 lp);
}

// Routes a core's responses to its TransactionManager.
struct TxnHook final : MadHandler {
  explicit TxnHook(TransactionManager* t) : txn(t) {}
  TransactionManager* txn;
  void on_mad(MadBuf& buf, CoreContext&) noexcept override { txn->on_response(buf); }
};

TEST(UmadIbsim, PathRecordGetMatchesSaquery) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  const std::uint16_t dlid = h2_lid_from_opensm(fabric);
  ASSERT_NE(dlid, 0);

  fabric.attach_self("H1");
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();

  // The engine as a GSI client: one core driven from this thread (the shim's
  // descriptors stay on the thread that opened them), a TransactionManager
  // on it, responses routed to it by the core bits of their TIDs.
  EngineConfig cfg;
  cfg.pin = false;
  cfg.clock = &clock;
  Engine engine(cfg);
  engine.add_transport(t, 0);
  TransactionManager txn(clock, engine.core(0), TransactionConfig{.core_id = 0});
  TxnHook hook{&txn};
  engine.set_response_hook(0, hook);
  engine.add_transaction_manager(0, txn, t.local_port().port_num);

  const std::optional<LocalPort> port = engine.local_port(t.local_port().port_num);
  ASSERT_TRUE(port.has_value());
  const LocalPort& lp = *port;
  ASSERT_NE(lp.lid, 0) << "OpenSM did not give H1 a LID";
  ASSERT_NE(lp.sm_lid, 0);
  EXPECT_EQ(lp.state, PortState::kActive);

  const MadBuf req = path_record_get(lp, dlid, 0x00000000'5a5a0001ull);

  struct Outcome {
    int calls = 0;
    TxnResult result;
  } outcome;
  const TxnStatus accepted = txn.request(
      req, RequestOptions{.timeout_ms = kRespTimeoutMs, .retries = 3},
      [](void* user, const TxnResult& r) noexcept {
        auto* o = static_cast<Outcome*>(user);
        ++o->calls;
        o->result = r;
      },
      &outcome);
  ASSERT_EQ(accepted, TxnStatus::kOk);
  // The engine's own timers end the request (timeout x 4 attempts); the
  // test's bound only keeps a broken run from hanging.
  const auto deadline = std::chrono::steady_clock::now() + kWaitForResponse;
  while (outcome.calls == 0 && std::chrono::steady_clock::now() < deadline) {
    if (engine.poll_all_once() == 0) {
      pollfd p{t.fd(), POLLIN, 0};
      ::poll(&p, 1, 1);  // the shim implements poll() for its own descriptors
    }
  }
  engine.quiesce();
  ASSERT_EQ(outcome.calls, 1) << "the transaction never completed";
  ASSERT_EQ(outcome.result.status, TxnStatus::kOk) << to_string(outcome.result.status);
  std::printf("request tid 0x%016llx -> response tid 0x%016llx, %u attempt(s)\n",
              static_cast<unsigned long long>(outcome.result.tid),
              static_cast<unsigned long long>(outcome.result.response.hdr().tid.get()),
              unsigned{outcome.result.attempts});
  EXPECT_EQ(txn.counters().matched, 1u);
  EXPECT_EQ(engine.pool().in_use(), 0u);
  const std::optional<MadBuf> resp = outcome.result.response;
  const auto rs = wire::decode<wire::SaMad>(std::span<const std::uint8_t>(resp->mad.bytes));
  ASSERT_EQ(rs->hdr.method, wire::method::kGetResp);
  ASSERT_EQ(rs->hdr.status.get(), wire::status::kOk);
  EXPECT_EQ(resp->addr.lid, lp.sm_lid);  // the SA answered from the SM's LID
  EXPECT_EQ(resp->addr.remote_qpn, 1u);
  const auto pr = wire::decode<wire::PathRecord>(std::span<const std::uint8_t>(rs->data));
  ASSERT_TRUE(pr.has_value());

  const auto r = fabric.run("saquery PR --slid " + std::to_string(lp.lid) + " --dlid " +
                                std::to_string(dlid),
                            "H1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto m = parse_dotted(r.out);
  const auto* b = reinterpret_cast<const std::uint8_t*>(&*pr);
  EXPECT_EQ(num(m, "slid"), pr->slid.get());
  EXPECT_EQ(num(m, "dlid"), pr->dlid.get());
  EXPECT_EQ(m.at("sgid"), gid_string(pr->sgid));
  EXPECT_EQ(m.at("dgid"), gid_string(pr->dgid));
  EXPECT_EQ(num(m, "service_id"), pr->service_id.get());
  EXPECT_EQ(num(m, "hop_flow_raw"), (wire::BitField<44, 0, 32>::get(b)));
  EXPECT_EQ(num(m, "tclass"), pr->tclass);
  EXPECT_EQ(num(m, "num_path_revers"), pr->reversible_numb_path);
  EXPECT_EQ(num(m, "pkey"), pr->pkey.get());
  EXPECT_EQ(num(m, "qos_class"), pr->qos_class_sl.get() >> 4);
  EXPECT_EQ(num(m, "sl"), pr->qos_class_sl.get() & 0xfu);
  EXPECT_EQ(num(m, "mtu"), pr->mtu_sel);
  EXPECT_EQ(num(m, "rate"), pr->rate_sel);
  EXPECT_EQ(num(m, "pkt_life"), pr->packet_life_sel);
  EXPECT_EQ(num(m, "preference"), pr->preference);
  EXPECT_EQ(pr->slid.get(), lp.lid);
  EXPECT_EQ(pr->dlid.get(), dlid);
  EXPECT_EQ(pr->sgid.guid.get(), lp.port_guid);
}

// The daemon's shape on ibsim: engine threads (not poll_all_once), blocking
// idle, the transport on core 0 and the requester on core 1, so the request
// crosses the tx ring and the response the rx ring. umad2sim's fd is not a
// kernel fd: core 0 waits inside the shim's poll() (2 ms at most at a time:
// the response ends its wait, the request from core 1 waits for the bound);
// core 1 sleeps on its eventfd. The cap on one eventfd wait is a minute, so
// a response that only the cap could deliver to core 1 would miss the first
// attempt's timeout: the Get must complete on its first attempt.
TEST(UmadIbsim, BlockedEngineCoresWakeForShimMads) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  const std::uint16_t dlid = h2_lid_from_opensm(fabric);
  ASSERT_NE(dlid, 0);

  fabric.attach_self("H1");
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.gsi_client = true})) << t.last_error();
  EngineConfig cfg;
  cfg.cores = 2;
  cfg.pin = false;
  cfg.clock = &clock;
  cfg.backoff.mode = IdleMode::kBlock;
  cfg.backoff.spin_loops_max = 4;
  cfg.backoff.block_max_us = 60'000'000;
  Engine engine(cfg);
  engine.add_transport(t, 0);
  TransactionManager txn(clock, engine.core(1), TransactionConfig{.core_id = 1});
  TxnHook hook{&txn};
  engine.set_response_hook(1, hook);
  engine.add_transaction_manager(1, txn, t.local_port().port_num);
  const LocalPort lp = t.local_port();
  ASSERT_NE(lp.sm_lid, 0);

  const MadBuf req = path_record_get(lp, dlid, 0x00000000'5a5a0002ull);

  // The request is made on core 1's thread, by a poller (the manager is
  // single-threaded); both cores then block until the MADs wake them.
  struct Asker final : Poller {
    TransactionManager* txn = nullptr;
    const MadBuf* req = nullptr;
    bool asked = false;
    std::atomic<int> calls{0};
    std::atomic<int> status{-1};
    std::atomic<int> attempts{0};
    std::size_t poll(Nanos) noexcept override {
      if (asked) return 0;
      asked = true;
      const TxnStatus s = txn->request(
          *req, RequestOptions{.timeout_ms = kRespTimeoutMs, .retries = 3},
          [](void* user, const TxnResult& r) noexcept {
            auto* a = static_cast<Asker*>(user);
            a->attempts.store(r.attempts);
            a->status.store(static_cast<int>(r.status));
            a->calls.fetch_add(1);
          },
          this);
      if (s != TxnStatus::kOk) status.store(static_cast<int>(s));
      return 1;
    }
  } asker;
  asker.txn = &txn;
  asker.req = &req;
  engine.add_poller(1, asker);
  engine.start();
  const auto deadline = std::chrono::steady_clock::now() + kWaitForResponse;
  while (asker.calls.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  engine.stop();  // its eventfd, not the cap, ends the cores' last waits
  ASSERT_EQ(asker.calls.load(), 1) << "the transaction never completed";
  EXPECT_EQ(asker.status.load(), static_cast<int>(TxnStatus::kOk));
  EXPECT_EQ(asker.attempts.load(), 1);  // a wake-up that only the cap brings would need a retry
  const EngineStats s = engine.stats();
  EXPECT_GE(s.cores[0].counters.idle_blocks, 1u);
  EXPECT_GE(s.cores[1].counters.idle_blocks, 1u);
  EXPECT_EQ(s.cores[1].counters.idle_wake_timeout, 0u);  // the ring's eventfd, never the cap, woke core 1
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

// An SM's SMP window kept full by an engine core, as a sweep does. umad2sim
// writes each MAD to ibsim under its device mutex, which its receiver thread
// needs to pass each answer on, and ibsim retries a write to a client whose
// queue is full without reading anything else; a send that waits for ibsim
// is refused after the transport's send timeout on the shim's socket
// (100 ms) and tried again. A full window of 64 gets every answer on its
// first attempt (the 1 s timeout is never reached), and ibsim keeps serving
// its other clients.
TEST(UmadIbsim, FullSmpWindowIsAnsweredOnFirstAttempts) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true})) << t.last_error();
  EngineConfig cfg;
  cfg.cores = 1;
  cfg.pin = false;
  cfg.clock = &clock;
  Engine engine(cfg);
  engine.add_transport(t, 0);
  constexpr std::uint32_t kWindow = 64;  // SmConfig::window_smps_max
  constexpr std::uint32_t kSmps = 5000;
  TransactionManager txn(clock, engine.core(0),
                         TransactionConfig{.core_id = 0, .window_max = kWindow, .window_per_dest_max = kWindow});
  TxnHook hook{&txn};
  engine.set_response_hook(0, hook);
  engine.add_transaction_manager(0, txn, t.local_port().port_num);

  // Requests go in as the window frees, from the core's own thread.
  struct Asker final : Poller {
    TransactionManager* txn = nullptr;
    std::uint32_t asked = 0;
    std::uint32_t in_flight = 0;
    std::atomic<std::uint32_t> ok{0};
    std::atomic<std::uint32_t> failed{0};
    std::atomic<std::uint32_t> retried{0};
    std::size_t poll(Nanos) noexcept override {
      std::size_t work = 0;
      while (asked < kSmps && in_flight < kWindow) {
        const MadBuf req = make_dr_node_info(wire::DrPath{}, 0x5000u + asked);
        const TxnStatus s = txn->request(
            req, RequestOptions{.timeout_ms = kRespTimeoutMs, .retries = 3},
            [](void* user, const TxnResult& r) noexcept {
              auto* a = static_cast<Asker*>(user);
              --a->in_flight;
              (r.status == TxnStatus::kOk ? a->ok : a->failed).fetch_add(1);
              if (r.attempts > 1) a->retried.fetch_add(1);
            },
            this);
        if (s != TxnStatus::kOk) break;
        ++asked;
        ++in_flight;
        ++work;
      }
      return work;
    }
  } asker;
  asker.txn = &txn;
  engine.add_poller(0, asker);
  engine.start();
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (asker.ok.load() + asker.failed.load() < kSmps && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  engine.stop();
  EXPECT_EQ(asker.ok.load(), kSmps);
  EXPECT_EQ(asker.failed.load(), 0u);
  EXPECT_EQ(asker.retried.load(), 0u);
  EXPECT_EQ(t.counters().send_errors, 0u);
  // ibsim serves its other clients: a diag connects and gets its answer.
  const auto r = fabric.run("smpquery -D nodeinfo 0", "H2", 20s);
  EXPECT_EQ(r.exit_code, 0) << r.err << (r.timed_out ? " (timed out)" : "");
}

// The SA-server side: with is_sm the transport holds the issm device, so
// ibsim routes SA requests for the SM LID to it. OpenSM configures the LIDs
// first and is stopped (ibsim keeps them); saquery on H2 then asks H1, the
// transport receives the request and answers ERR_NO_RECORDS.
TEST(UmadIbsim, SaServerAnswersSaquery) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  ASSERT_TRUE(fabric.start_opensm(0, "H1"));
  ASSERT_TRUE(fabric.wait_subnet_up(60s)) << fabric.opensm_log();
  fabric.stop_opensm();

  fabric.attach_self("H1");
  SteadyClock clock;
  UmadTransport t({}, clock);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true, .is_sm = true, .sa_server = true})) << t.last_error();
  const auto cap = fabric.run("smpquery portinfo " + std::to_string(t.local_port().lid), "H2");
  EXPECT_NE(cap.out.find("IsSM"), std::string::npos) << cap.out;  // CapabilityMask.IsSM

  ibsim::RunResult client;
  std::thread saquery([&] { client = fabric.run("saquery NR", "H2", 20s); });
  MadBuf rx[8];
  MadBuf* rxp[8];
  for (int i = 0; i < 8; ++i) rxp[i] = &rx[i];
  std::optional<MadBuf> request;
  std::size_t smps_seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + kWaitForResponse;
  while (!request && std::chrono::steady_clock::now() < deadline) {
    pollfd p{t.fd(), POLLIN, 0};
    ::poll(&p, 1, 50);
    const std::size_t n = t.rx_burst(std::span<MadBuf*>(rxp, 8));
    for (std::size_t i = 0; i < n; ++i) {
      if (rx[i].hdr().mgmt_class == static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm))
        request = rx[i];
      else
        ++smps_seen;  // e.g. trap 144 that ibsim sends when an SM registers
    }
  }
  ASSERT_TRUE(request.has_value()) << "no SA request reached the issm client";
  std::printf("SMI MADs seen meanwhile: %zu\n", smps_seen);
  EXPECT_EQ(request->hdr().method, wire::method::kGetTable);
  EXPECT_EQ(request->hdr().attr_id.get(), wire::sa_attr::kNodeRecord);
  EXPECT_NE(request->addr.lid, 0);  // H2's LID
  EXPECT_EQ(request->addr.remote_qpn, 1u);

  MadBuf resp = *request;
  auto& h = resp.hdr();
  h.method = wire::method::kGetTableResp;
  h.status = wire::be16::from(wire::sa_status::kNoRecords);
  resp.as<wire::SaMad>().rmpp = {};
  resp.resp_timeout_ms = 0;
  MadBuf* out[] = {&resp};
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 1u);
  saquery.join();
  EXPECT_FALSE(client.timed_out) << "saquery did not get the answer";
  EXPECT_NE(client.exit_code, 0);
  std::printf("saquery said: %s%s\n", client.out.c_str(), client.err.c_str());
  EXPECT_NE((client.out + client.err).find("NO_RECORDS"), std::string::npos)
      << client.out << client.err;
}

// What the life cycle looks like on ibsim. umad2sim connects a process to
// ibsim once, on its first device access, and never reconnects; so a killed
// ibsim is seen (the next send fails) and reported as kDeviceLost, the reopen
// against the shim's stale device "succeeds" (kDeviceBack), and the first
// send after it fails again: the transport reports kDeviceLost again rather
// than pretending to work, also after ibsim is restarted. A real HCA reset is
// the case that comes back (see engine/umad/README.md).
TEST(UmadIbsim, IbsimKilledIsDeviceLost) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");

  ManualClock clock;
  UmadConfig cfg;
  cfg.reopen_interval_ms = 100;
  UmadTransport t(cfg, clock);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true})) << t.last_error();
  wire::DrPath local;
  MadBuf req = make_dr_node_info(local, 10);
  ASSERT_TRUE(transact(t, req).has_value());
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);

  fabric.kill_ibsim();
  MadBuf again = make_dr_node_info(local, 11);
  MadBuf* out[] = {&again};
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 0u);
  EXPECT_EQ(t.counters().send_errors, 1u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceLost);
  EXPECT_FALSE(t.is_open());
  std::printf("lost: %s\n", std::string(t.last_error()).c_str());
  // Closed: the fast path does nothing and reports nothing.
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kNone);  // reopen not due yet (bounded rate)

  clock.advance_ns(cfg.reopen_interval_ms * kNanosPerMilli);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceBack);
  EXPECT_EQ(t.counters().reopens, 1u);
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceLost);

  // A new ibsim on the same socket name does not help: the shim's data socket
  // stays disconnected (ENOTCONN) for the rest of the process.
  ASSERT_TRUE(fabric.restart()) << fabric.error();
  clock.advance_ns(cfg.reopen_interval_ms * kNanosPerMilli);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceBack);
  EXPECT_EQ(t.tx_burst(std::span<MadBuf* const>(out, 1)), 0u);
  EXPECT_EQ(t.poll_events(), DeviceEvent::kDeviceLost);
  std::printf("after restart: %s\n", std::string(t.last_error()).c_str());
  EXPECT_EQ(t.counters().reopens, 2u);
  EXPECT_EQ(t.counters().tx, 1u);
}

// The engine acting on that life cycle: with a request in flight ibsim dies;
// the engine stops the transport and pauses the manager; each reopen
// (kDeviceBack on the shim's stale device) re-sends the request with its TID,
// the send fails and the device is lost again; the flapping counts as one
// outage, so once device_wait_ms passed the request fails with kDeviceLost
// and the report names its TID. Time is a ManualClock shared by the
// transport's reopen timer and the engine.
TEST(UmadIbsim, EngineFailsRequestsWhenIbsimStaysAway) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric fabric(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(fabric.ok()) << fabric.error();
  fabric.attach_self("H1");

  ManualClock clock;
  UmadConfig ucfg;
  ucfg.reopen_interval_ms = 100;
  UmadTransport t(ucfg, clock);
  ASSERT_TRUE(t.open(AgentSpec{.smi = true})) << t.last_error();
  EngineConfig cfg;
  cfg.pin = false;
  cfg.clock = &clock;
  cfg.device_wait_ms = 1000;
  Engine engine(cfg);
  engine.add_transport(t, 0);
  TransactionManager txn(clock, engine.core(0), TransactionConfig{.core_id = 0});
  TxnHook hook{&txn};
  engine.set_response_hook(0, hook);
  engine.add_transaction_manager(0, txn, 1);
  struct Reports final : LifecycleListener {
    std::vector<DeviceEvent> events;
    std::vector<std::uint64_t> resent, failed;
    void on_port_event(const PortEvent& ev) noexcept override { events.push_back(ev.event); }
    void on_txn_report(const TxnReport& r) noexcept override {
      for (std::uint64_t tid : r.tids) (r.resent ? resent : failed).push_back(tid);
    }
  } reports;
  engine.add_lifecycle_listener(0, reports);

  struct Outcome {
    int calls = 0;
    TxnResult result;
  };
  constexpr TxnCallback kRecord = [](void* user, const TxnResult& r) noexcept {
    auto* o = static_cast<Outcome*>(user);
    ++o->calls;
    o->result = r;
  };
  // One poll, waiting a little for the shim when there was nothing to do.
  auto poll_once = [&] {
    if (engine.poll_all_once() == 0 && t.is_open()) {
      pollfd p{t.fd(), POLLIN, 0};
      ::poll(&p, 1, 1);
    }
  };
  // Polls until `done`; the wall-clock bound only keeps a broken run from hanging.
  auto run = [&](auto&& done) {
    const auto deadline = std::chrono::steady_clock::now() + kWaitForResponse;
    while (!done() && std::chrono::steady_clock::now() < deadline) poll_once();
  };
  // Device events are checked every 64 iterations of the loop: poll past a few.
  auto spin = [&] {
    for (int i = 0; i < 300; ++i) (void)engine.poll_all_once();
  };
  const RequestOptions opts{.timeout_ms = kRespTimeoutMs, .retries = 3};

  Outcome first;
  ASSERT_EQ(txn.request(make_dr_node_info(wire::DrPath{}, 0), opts, kRecord, &first), TxnStatus::kOk);
  run([&] { return first.calls != 0; });
  ASSERT_EQ(first.calls, 1);
  EXPECT_EQ(first.result.status, TxnStatus::kOk);

  fabric.kill_ibsim();
  Outcome second;
  ASSERT_EQ(txn.request(make_dr_node_info(wire::DrPath{}, 0), opts, kRecord, &second), TxnStatus::kOk);
  run([&] { return engine.stats().total().device_lost != 0; });
  ASSERT_EQ(engine.stats().total().device_lost, 1u) << t.last_error();
  EXPECT_EQ(second.calls, 0);

  for (int step = 0; step < 15 && second.calls == 0; ++step) {
    clock.advance_ns(Nanos{ucfg.reopen_interval_ms} * kNanosPerMilli);
    spin();
  }
  engine.quiesce();
  ASSERT_EQ(second.calls, 1);
  EXPECT_EQ(second.result.status, TxnStatus::kDeviceLost) << to_string(second.result.status);
  const CoreCounters c = engine.stats().total();
  std::printf("device_lost %llu, device_back %llu, txn_resent %llu, txn_failed_device %llu\n",
              static_cast<unsigned long long>(c.device_lost), static_cast<unsigned long long>(c.device_back),
              static_cast<unsigned long long>(c.txn_resent), static_cast<unsigned long long>(c.txn_failed_device));
  EXPECT_GE(c.device_back, 1u);
  EXPECT_EQ(c.device_lost, c.device_back + 1);  // every return was lost again
  EXPECT_GE(c.txn_resent, 1u);
  EXPECT_EQ(c.txn_failed_device, 1u);
  EXPECT_EQ(t.counters().reopens, c.device_back);
  ASSERT_FALSE(reports.resent.empty());
  EXPECT_EQ(reports.resent.front(), second.result.tid);
  ASSERT_EQ(reports.failed.size(), 1u);
  EXPECT_EQ(reports.failed.front(), second.result.tid);
  ASSERT_FALSE(reports.events.empty());
  EXPECT_EQ(reports.events.front(), DeviceEvent::kDeviceLost);
  EXPECT_EQ(engine.pool().in_use(), 0u);
}

}  // namespace
}  // namespace madengine
