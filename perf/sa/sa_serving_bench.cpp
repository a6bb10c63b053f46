// SA serving benchmark: PathRecord Get queries answered in-process, from
// request MAD to response MAD (admission, decode, snapshot lookup, encode,
// the engine's rx/dispatch/tx around it), on an 11,664-host fat tree
// (fat_tree3(36,18,18,18,18)) with 1 and 2 cores. The loopback transport
// replays 64 Ki distinct queries (distinct requesters and TIDs) and discards
// the answers. Two query shapes: LIDs (SLID|DLID) and the shape rdma_cm and
// IPoIB send (SGID|DGID|P_Key|NumbPath|Reversible); each on a subnet with
// the default partition only and on one with ten partitions (8 tenant
// partitions, full members; a storage partition of limited clients and full
// servers; the default), queries naming a P_Key the pair shares. Also
// the bare per-query cost without the engine, the same loop copying the
// request into the answer without a lookup (the floor under it), and the
// loopback replay's own. Every query is meant to find its record: answers
// with a record and error answers are counted apart, and a run in which any
// query got none fails (SkipWithError), so a regression cannot read as speed.
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

namespace cm = wire::path_record_cm;

enum Shape : int { kLids = 0, kGids = 1 };
constexpr std::size_t kPartitions = 8;           // tenant partitions 0x8001..0x8008
constexpr std::uint16_t kStoragePKey = 0x0100;    // storage: clients limited, servers full
constexpr std::size_t kStorageServerEvery = 16;   // every 16th host a storage server

struct Fixture {
  std::shared_ptr<const sa::Snapshot> plain, partitioned;
  std::vector<std::uint16_t> hosts;
  std::vector<MadBuf> queries[2][2];  // by Shape, then partitions (0 default only, 1 configured)
};

MadBuf path_query(std::uint64_t tid, std::uint64_t mask, const wire::PathRecord& q, std::uint16_t from) {
  MadBuf b;
  auto& sa = b.as<wire::SaMad>();
  sa = wire::SaMad{};
  sa.hdr.base_version = 1;
  sa.hdr.mgmt_class = 0x03;
  sa.hdr.class_version = wire::kSaClassVersion;
  sa.hdr.method = wire::method::kGet;
  sa.hdr.attr_id = wire::be16::from(wire::sa_attr::kPathRecord);
  sa.hdr.tid = wire::be64::from(tid);
  sa.comp_mask = wire::be64::from(mask);
  std::memcpy(sa.data.data(), &q, sizeof(q));
  b.addr.lid = from;
  b.addr.remote_qpn = 1;
  b.addr.qkey = kGsiQkey;
  return b;
}

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
    // The same subnet with partitions, as the SM publishes P_Key tables for
    // a partitions.conf like
    //   Default=0x7fff, ipoib : ALL=full;
    //   tenant1=0x8001 : <hosts 0, 8, 16, ...>=full;  ... tenant8=0x8008
    //   storage=0x0100 : ALL_CAS=limited, <every 16th host>=full;
    // every host a full member of the default partition and of one tenant
    // partition, and a limited member of the storage partition unless it is
    // one of its servers (every 16th host: a full member).
    auto p = std::make_shared<sa::Snapshot>(*s);
    sa::PortTableView::Rows rows(p->fabric.nodes.size());
    const auto tenant_of = [](std::size_t host) { return static_cast<std::uint16_t>(1 + host % kPartitions); };
    const auto storage_server = [](std::size_t host) { return host % kStorageServerEvery == 0; };
    for (std::size_t h = 0; h < x.hosts.size(); ++h) {
      const fabric::EndPort e = s->by_lid[x.hosts[h]];
      rows[e.node].resize(e.port + 1u);
      std::vector<std::uint16_t> keys(64, 0);
      keys[0] = 0xffff;
      keys[1] = static_cast<std::uint16_t>(0x8000 | tenant_of(h));
      keys[2] = static_cast<std::uint16_t>(kStoragePKey | (storage_server(h) ? 0x8000 : 0));
      rows[e.node][e.port].pkeys = std::move(keys);
    }
    p->port_tables = std::make_shared<sa::PortTableView>(std::move(rows));
    for (std::uint16_t k = 1; k <= kPartitions; ++k) p->partitions.push_back({k, 0});
    p->partitions.push_back({kStoragePKey, 0});
    p->index();
    x.plain = s;
    x.partitioned = p;
    for (int shape : {kLids, kGids})
      for (int parts : {0, 1}) {
        std::mt19937 rng(7);  // the same pairs in every set
        auto& queries = x.queries[shape][parts];
        queries.resize(65536);
        for (std::size_t q = 0; q < queries.size(); ++q) {
          std::size_t src = rng() % x.hosts.size(), dst = rng() % x.hosts.size();
          std::uint16_t pkey = 0xffff;
          // With partitions, a third of the pairs in one tenant partition, a
          // third between a storage client and a server (storage P_Key), a
          // third in the default partition: every pair shares the P_Key it
          // names (as its source holds it), as rdma_cm's and IPoIB's do.
          if (parts != 0 && q % 3 == 0) {
            dst = dst - dst % kPartitions + src % kPartitions;
            if (dst >= x.hosts.size()) dst = src;
            pkey = static_cast<std::uint16_t>(0x8000 | tenant_of(src));
          } else if (parts != 0 && q % 3 == 1) {
            dst -= dst % kStorageServerEvery;
            if (rng() % 2 != 0) std::swap(src, dst);
            pkey = static_cast<std::uint16_t>(kStoragePKey | (storage_server(src) ? 0x8000 : 0));  // as the source holds it
          }
          const std::uint16_t slid = x.hosts[src], dlid = x.hosts[dst];
          wire::PathRecord r{};
          std::uint64_t mask = cm::kSLid | cm::kDLid;
          if (shape == kLids) {
            r.slid = wire::be16::from(slid);
            r.dlid = wire::be16::from(dlid);
          } else {
            // rdma_cm and IPoIB: both GIDs in the subnet prefix, the P_Key, one path, reversible.
            r.sgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(s->lid_info[slid].port_guid)};
            r.dgid = {wire::be64::from(wire::kDefaultSubnetPrefix), wire::be64::from(s->lid_info[dlid].port_guid)};
            r.pkey = wire::be16::from(pkey);
            r.set_numb_path(1);
            r.set_reversible(true);
            mask = cm::kSGid | cm::kDGid | cm::kPKey | cm::kNumbPath | cm::kReversible;
          }
          queries[q] = path_query(0x1000000000ull + q, mask, r, slid);
        }
      }
    return x;
  }();
  return fx;
}

const sa::Snapshot& snapshot_of(const Fixture& fx, std::int64_t partitioned) {
  return partitioned != 0 ? *fx.partitioned : *fx.plain;
}

sa::SaServerConfig bench_config() {
  sa::SaServerConfig c;
  c.dedup_ttl_ns = 0;  // every replayed query is answered afresh, not from the retry cache
  c.rmpp.segments_max = 64;
  return c;
}

// One core, driven from the benchmark thread: each poll receives a burst,
// admits it, answers it and transmits the answers.
// Args: the query shape (0 LIDs, 1 GIDs+P_Key), partitions (0 default only, 1 ten).
void BM_PathRecordGet_1core(benchmark::State& state) {
  const Fixture& fx = fixture();
  EngineConfig ec;
  ec.cores = 1;
  ec.pin = false;
  Engine engine(ec);
  LoopbackTransport lo("lo", 1, 64);
  lo.open({});
  lo.set_replay(fx.queries[state.range(0)][state.range(1)]);
  lo.set_record_tx(false);
  engine.add_transport(lo, 0);
  sa::SnapshotStore store;
  store.publish(state.range(1) != 0 ? fx.partitioned : fx.plain);
  sa::SaServer server(engine, store, bench_config());
  std::uint64_t before = server.counters()[sa::SaRecordKind::kPath].answered;
  for (auto _ : state) engine.poll_all_once();
  const auto c = server.counters()[sa::SaRecordKind::kPath];
  std::uint64_t errors = 0;  // answers with a status (no record, invalid GID, ...), BUSY apart
  for (const std::uint64_t e : c.errors) errors += e;
  const std::uint64_t answered = c.answered - before;
  state.SetItemsProcessed(static_cast<std::int64_t>(answered));
  state.counters["records"] = static_cast<double>(answered - errors);
  state.counters["errors"] = static_cast<double>(errors);
  state.counters["busy"] = static_cast<double>(c.busy);
  state.counters["dropped"] = static_cast<double>(c.dropped);
  engine.quiesce();
  if (errors != 0 || c.busy != 0 || c.dropped != 0 || answered == 0)
    state.SkipWithError("a query meant to find a PathRecord got none (errors, BUSY or dropped)");
}
BENCHMARK(BM_PathRecordGet_1core)
    ->ArgNames({"gids", "partitions"})
    ->Args({kLids, 0})
    ->Args({kGids, 0})
    ->Args({kLids, 1})
    ->Args({kGids, 1})
    ->Unit(benchmark::kMicrosecond);

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
  lo.set_replay(fx.queries[state.range(0)][state.range(1)]);
  lo.set_record_tx(false);
  engine.add_transport(lo, 0);
  sa::SnapshotStore store;
  store.publish(state.range(1) != 0 ? fx.partitioned : fx.plain);
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
  std::uint64_t errors = 0;
  for (const std::uint64_t e : c.errors) errors += e;
  state.SetItemsProcessed(static_cast<std::int64_t>(answered));
  state.counters["errors"] = static_cast<double>(errors);
  state.counters["busy"] = static_cast<double>(c.busy);
  state.counters["dropped"] = static_cast<double>(c.dropped);
  if (errors != 0 || c.dropped != 0) state.SkipWithError("a query meant to find a PathRecord got none (errors or dropped)");
}
BENCHMARK(BM_PathRecordGet_2cores)
    ->ArgNames({"gids", "partitions"})
    ->Args({kLids, 0})
    ->Args({kGids, 1})
    ->UseRealTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

// The queries are read in order from a 21 MB array, as the loopback replay
// reads them; like the replay, the loops below prefetch a few queries ahead,
// so what they time is the answer, not the array's DRAM misses (a server's
// request is in cache, just received).
constexpr std::size_t kQueriesAhead = 8;

void prefetch_query(const std::vector<MadBuf>& queries, std::size_t i) noexcept {
  const auto* p = reinterpret_cast<const char*>(&queries[(i + kQueriesAhead) & 65535]);
  for (std::size_t at = 0; at < sizeof(MadBuf); at += 64) __builtin_prefetch(p + at);
}

// The SA's own work per query without the engine: decode the request, look
// the path up in the snapshot, build and encode the response record.
void BM_PathRecordAnswerOnly(benchmark::State& state) {
  const Fixture& fx = fixture();
  const auto& queries = fx.queries[state.range(0)][state.range(1)];
  const sa::Snapshot& snap = snapshot_of(fx, state.range(1));
  std::vector<std::uint8_t> scratch;
  scratch.reserve(4096);
  const sa::RecordLayout& layout = *sa::record_layout(wire::sa_attr::kPathRecord);
  std::size_t i = 0, found = 0, errors = 0;
  MadBuf resp;
  for (auto _ : state) {
    prefetch_query(queries, i);
    const MadBuf& req = queries[i++ & 65535];
    const auto& sa_req = req.as<wire::SaMad>();
    wire::PathRecord q;
    std::memcpy(&q, sa_req.data.data(), sizeof(q));
    // The components the server's sink checks again on each record (as sa_server.cpp's kPathFilterMask).
    sa::RecordSink sink(scratch, layout,
                        sa_req.comp_mask.get() & (cm::kServiceId | cm::kDLid | cm::kSLid | cm::kSl | cm::kTClass | cm::kFlowLabel),
                        sa_req.data.data(), 1);
    sa::PathQuery pq{&q, sa_req.comp_mask.get(), req.addr.lid, 18, true};
    const std::uint16_t status = sa::collect_path_records(snap, pq, sink);
    auto& out = resp.as<wire::SaMad>();
    out.hdr = sa_req.hdr;
    out.hdr.method = wire::method::kGetResp;
    if (status == 0 && sink.count() == 1) {
      std::memcpy(out.data.data(), scratch.data(), sizeof(wire::PathRecord));
      ++found;
    } else {
      out.hdr.status = wire::be16::from(status != 0 ? status : wire::sa_status::kNoRecords);
      ++errors;
    }
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["records"] = static_cast<double>(found);
  state.counters["errors"] = static_cast<double>(errors);
  if (errors != 0) state.SkipWithError("a query meant to find a PathRecord got none");
}
BENCHMARK(BM_PathRecordAnswerOnly)
    ->ArgNames({"gids", "partitions"})
    ->Args({kLids, 0})
    ->Args({kGids, 0})
    ->Args({kLids, 1})
    ->Args({kGids, 1});

// The floor under BM_PathRecordAnswerOnly: the same loop over the same
// queries with the answer made by copying the request's header and record,
// no lookup. AnswerOnly minus this is what finding the path costs.
void BM_PathRecordCopyOnly(benchmark::State& state) {
  const Fixture& fx = fixture();
  const auto& queries = fx.queries[state.range(0)][0];
  std::size_t i = 0;
  MadBuf resp;
  for (auto _ : state) {
    prefetch_query(queries, i);
    const MadBuf& req = queries[i++ & 65535];
    const auto& sa_req = req.as<wire::SaMad>();
    wire::PathRecord q;
    std::memcpy(&q, sa_req.data.data(), sizeof(q));
    auto& out = resp.as<wire::SaMad>();
    out.hdr = sa_req.hdr;
    out.hdr.method = wire::method::kGetResp;
    std::memcpy(out.data.data(), &q, sizeof(q));
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_PathRecordCopyOnly)->ArgNames({"gids"})->Arg(kLids)->Arg(kGids);

// The benchmark's own transport alone: the loopback replay copying each
// query out of the 65,536-query array into the core's rx buffer, a burst of
// 32 per iteration as the core asks for it. Subtracted from
// BM_PathRecordGet_1core it leaves the SA and engine's share.
void BM_LoopbackReplayOnly(benchmark::State& state) {
  const Fixture& fx = fixture();
  LoopbackTransport lo("lo", 1, 64);
  lo.open({});
  lo.set_replay(fx.queries[kLids][0]);
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
