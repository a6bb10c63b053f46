// SA serving benchmark: PathRecord Get queries answered in-process, from
// request MAD to response MAD (admission, decode, snapshot lookup, encode,
// the engine's rx/dispatch/tx around it), on an 11,664-host fat tree
// (fat_tree3(36,18,18,18,18)) with 1 and 2 cores. The loopback transport
// replays 64 Ki distinct queries (distinct requesters and TIDs) and discards
// the answers. Also the bare per-query cost without the engine, and the
// loopback replay's own cost.
//   sa_serving_bench [--pods=N] [google-benchmark flags]
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "engine/loopback_transport.hpp"
#include "fabric_builders.hpp"
#include "engine/engine.hpp"
#include "madengine/wire/sa_records.hpp"
#include "sa/server/path_query.hpp"
#include "sa/server/sa_server.hpp"
#include "sm/lids/lid_assign.hpp"
#include "sm/routing/routing.hpp"

using namespace madengine;

namespace {

unsigned g_pods = 36;

struct Fixture {
  std::shared_ptr<const sa::Snapshot> snap;
  std::vector<std::uint16_t> hosts;
  std::vector<MadBuf> queries;
};

const Fixture& fixture() {
  static const Fixture fx = [] {
    Fixture x;
    auto f = testing::fat_tree3(g_pods, 18, 18, 18, 18);
    for (auto& n : f.nodes)
      for (auto& p : n.ports) p.mtu = 5, p.link_width = 2, p.link_speed = 4;
    sm::Guid2Lid map;
    sm::assign_lids(f, map, 0);
    sm::RoutingOptions o;
    o.threads = 2;
    const auto routes = sm::compute_routes(f, o);
    auto s = std::make_shared<sa::Snapshot>();
    s->epoch = 1;
    s->top_lid = routes.top_lid;
    s->paths = sa::PathDb::build(f, routes.lfts, routes.top_lid, 2, 2);
    s->lfts = routes.lfts;
    s->fabric = std::move(f);
    s->index();
    for (const auto e : s->fabric.end_ports())
      if (!s->fabric.nodes[e.node].is_switch()) x.hosts.push_back(s->fabric.lid_of(e));
    x.snap = s;
    std::mt19937 rng(7);
    x.queries.resize(65536);
    for (std::size_t i = 0; i < x.queries.size(); ++i) {
      MadBuf& b = x.queries[i];
      auto& sa = b.as<wire::SaMad>();
      sa = wire::SaMad{};
      sa.hdr.base_version = 1;
      sa.hdr.mgmt_class = 0x03;
      sa.hdr.class_version = wire::kSaClassVersion;
      sa.hdr.method = wire::method::kGet;
      sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
      sa.hdr.tid = wire::be64::from(0x1000000000ull + i);
      sa.comp_mask = wire::be64::from(wire::path_record_cm::kSLid | wire::path_record_cm::kDLid);
      wire::PathRecord q{};
      const std::uint16_t src = x.hosts[rng() % x.hosts.size()];
      q.slid = wire::be16::from(src);
      q.dlid = wire::be16::from(x.hosts[rng() % x.hosts.size()]);
      std::memcpy(sa.data.data(), &q, sizeof(q));
      b.addr.lid = src;
      b.addr.remote_qpn = 1;
      b.addr.qkey = kGsiQkey;
    }
    return x;
  }();
  return fx;
}

sa::SaServerConfig bench_config() {
  sa::SaServerConfig c;
  c.dedup_ttl_ns = 0;  // every replayed query is answered afresh, not from the retry cache
  c.rmpp.segments_max = 64;
  return c;
}

// One core, driven from the benchmark thread: each poll receives a burst,
// admits it, answers it and transmits the answers.
void BM_PathRecordGet_1core(benchmark::State& state) {
  const Fixture& fx = fixture();
  EngineConfig ec;
  ec.cores = 1;
  ec.pin = false;
  Engine engine(ec);
  LoopbackTransport lo("lo", 1, 64);
  lo.open({});
  lo.set_replay(fx.queries);
  lo.set_record_tx(false);
  engine.add_transport(lo, 0);
  sa::SnapshotStore store;
  store.publish(fx.snap);
  sa::SaServer server(engine, store, bench_config());
  std::uint64_t before = server.counters()[sa::SaRecordKind::kPath].answered;
  for (auto _ : state) engine.poll_all_once();
  const auto c = server.counters()[sa::SaRecordKind::kPath];
  state.SetItemsProcessed(static_cast<std::int64_t>(c.answered - before));
  state.counters["busy"] = static_cast<double>(c.busy);
  state.counters["dropped"] = static_cast<double>(c.dropped);
  state.counters["errors"] = static_cast<double>(c.errors[wire::sa_status::kNoRecords >> 8]);
  engine.quiesce();
}
BENCHMARK(BM_PathRecordGet_1core)->Unit(benchmark::kMicrosecond);

// Two worker threads: core 0 owns the transport and hands queries of odd
// DLIDs to core 1 (the owner of that shard: the replay's bursts are always
// full, a backlog, so the SA's spread Gets go to their owners), which sends
// its answers back through the tx mesh. Each iteration is 100 ms of wall time.
void BM_PathRecordGet_2cores(benchmark::State& state) {
  const Fixture& fx = fixture();
  EngineConfig ec;
  ec.cores = 2;
  ec.pin = true;
  ec.pool.ring_depth = 1024;
  Engine engine(ec);
  LoopbackTransport lo("lo", 1, 64);
  lo.open({});
  lo.set_replay(fx.queries);
  lo.set_record_tx(false);
  engine.add_transport(lo, 0);
  sa::SnapshotStore store;
  store.publish(fx.snap);
  sa::SaServer server(engine, store, bench_config());
  engine.start();
  std::uint64_t answered = 0;
  for (auto _ : state) {
    const std::uint64_t a0 = server.counters()[sa::SaRecordKind::kPath].answered;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answered += server.counters()[sa::SaRecordKind::kPath].answered - a0;
  }
  engine.stop();
  const auto c = server.counters()[sa::SaRecordKind::kPath];
  state.SetItemsProcessed(static_cast<std::int64_t>(answered));
  state.counters["busy"] = static_cast<double>(c.busy);
  state.counters["dropped"] = static_cast<double>(c.dropped);
}
BENCHMARK(BM_PathRecordGet_2cores)->UseRealTime()->Iterations(20)->Unit(benchmark::kMillisecond);

// The SA's own work per query without the engine: decode the request, look
// the path up in the snapshot, build and encode the response record.
void BM_PathRecordAnswerOnly(benchmark::State& state) {
  const Fixture& fx = fixture();
  std::vector<std::uint8_t> scratch;
  scratch.reserve(4096);
  const sa::RecordLayout& layout = *sa::record_layout(wire::sa_attr::kPathRecord);
  std::size_t i = 0, found = 0;
  MadBuf resp;
  for (auto _ : state) {
    const MadBuf& req = fx.queries[i++ & 65535];
    const auto& sa_req = req.as<wire::SaMad>();
    wire::PathRecord q;
    std::memcpy(&q, sa_req.data.data(), sizeof(q));
    sa::RecordSink sink(scratch, layout, sa_req.comp_mask.get() & (wire::path_record_cm::kSLid | wire::path_record_cm::kDLid),
                        sa_req.data.data(), 1);
    sa::PathQuery pq{&q, sa_req.comp_mask.get(), req.addr.lid, 18, true};
    sa::collect_path_records(*fx.snap, pq, sink);
    auto& out = resp.as<wire::SaMad>();
    out.hdr = sa_req.hdr;
    out.hdr.method = wire::method::kGetResp;
    std::memcpy(out.data.data(), scratch.data(), sizeof(wire::PathRecord));
    found += sink.count();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["found"] = static_cast<double>(found);
}
BENCHMARK(BM_PathRecordAnswerOnly);

// The benchmark's own transport alone: the loopback replay copying each
// query out of the 65,536-query array into the core's rx buffer, a burst of
// 32 per iteration as the core asks for it. Subtracted from
// BM_PathRecordGet_1core it leaves the SA and engine's share.
void BM_LoopbackReplayOnly(benchmark::State& state) {
  const Fixture& fx = fixture();
  LoopbackTransport lo("lo", 1, 64);
  lo.open({});
  lo.set_replay(fx.queries);
  std::vector<MadBuf> bufs(32);
  std::array<MadBuf*, 32> ptrs{};
  for (std::size_t i = 0; i < ptrs.size(); ++i) ptrs[i] = &bufs[i];
  for (auto _ : state) {
    benchmark::DoNotOptimize(lo.rx_burst(ptrs));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(lo.rx_count()));
}
BENCHMARK(BM_LoopbackReplayOnly);

}  // namespace

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pods=", 7) == 0) g_pods = static_cast<unsigned>(std::stoul(argv[i] + 7));
    else argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
