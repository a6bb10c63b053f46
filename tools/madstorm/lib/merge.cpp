// parse_run / merge_runs: madstorm/2 JSON back into a StormResult, and many
// runs into one.
#include "lib/merge.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace madstorm {

namespace {

using nlohmann::json;

// The field at `path` ("a.b.c") or a runtime_error naming the file and field.
const json& at(const json& j, std::string_view path, const std::string& source) {
  const json* cur = &j;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = path.find('.', start);
    const std::string key(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!cur->is_object() || !cur->contains(key))
      throw std::runtime_error(source + ": no field '" + std::string(path) + "' (not a madstorm/2 result?)");
    cur = &(*cur)[key];
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return *cur;
}

template <typename T>
T num(const json& j, std::string_view path, const std::string& source) {
  const json& v = at(j, path, source);
  if (!v.is_number() && !v.is_boolean()) throw std::runtime_error(source + ": field '" + std::string(path) + "' is not a number");
  return v.get<T>();
}

LatencyHistogram histogram(const json& j, std::string_view path, const std::string& source) {
  const json& h = at(j, path, source);
  if (num<unsigned>(h, "sub_bits", source) != LatencyHistogram::kSubBits)
    throw std::runtime_error(source + ": " + std::string(path) + " has another bucket layout");
  std::vector<std::pair<std::size_t, std::uint64_t>> buckets;
  for (const json& b : at(h, "buckets", source)) {
    if (!b.is_array() || b.size() != 2) throw std::runtime_error(source + ": bad bucket in " + std::string(path));
    buckets.emplace_back(b[0].get<std::size_t>(), b[1].get<std::uint64_t>());
  }
  LatencyHistogram out;
  if (!out.restore(buckets, num<std::uint64_t>(h, "sum_ns", source), num<std::uint64_t>(h, "min_ns", source),
                   num<std::uint64_t>(h, "max_ns", source)))
    throw std::runtime_error(source + ": " + std::string(path) + " is inconsistent (bucket index or min/max)");
  return out;
}

template <typename Enum, std::size_t N>
void by_name(const json& obj, std::array<std::uint64_t, N>& out, const std::string& source, std::string_view what,
             std::size_t first = 0) {
  for (std::size_t k = first; k < N; ++k) {
    const char* name = to_string(static_cast<Enum>(k));
    if (obj.contains(name)) out[k] = obj[name].template get<std::uint64_t>();
    else throw std::runtime_error(source + ": " + std::string(what) + " lacks '" + name + "'");
  }
}

}  // namespace

ParsedRun parse_run(const json& j, const std::string& source) {
  if (j.value("schema", std::string()) != "madstorm/2")
    throw std::runtime_error(source + ": schema '" + j.value("schema", std::string("?")) +
                             "' is not madstorm/2 (only madstorm/2 results carry the histograms a merge needs)");
  ParsedRun p;
  p.source = source;
  RunInfo& info = p.info;
  info.label = j.value("label", std::string());
  info.transport = j.value("transport", std::string());
  const auto pattern = pattern_from_string(at(j, "config.pattern", source).get<std::string>());
  if (!pattern) throw std::runtime_error(source + ": unknown pattern");
  info.workload.pattern = *pattern;
  info.workload.shard_index = num<std::uint32_t>(j, "config.shard.index", source);
  info.workload.shard_count = num<std::uint32_t>(j, "config.shard.count", source);
  info.workload.seed = num<std::uint64_t>(j, "config.seed", source);
  info.storm.by_gid = num<bool>(j, "config.by_gid", source);
  info.storm.sa.lid = num<std::uint16_t>(j, "config.sa_lid", source);
  info.storm.window_max = num<std::uint32_t>(j, "config.window_max", source);
  info.storm.window_per_host_max = num<std::uint32_t>(j, "config.window_per_host_max", source);
  info.storm.rate_qps = num<double>(j, "config.rate_qps", source);
  info.storm.retry.timeout_ms = num<std::uint32_t>(j, "config.timeout_ms", source);
  info.wall.start_unix_ns = num<std::int64_t>(j, "wall.start_unix_ns", source);
  info.wall.start_at_unix_ns = num<std::int64_t>(j, "wall.start_at_unix_ns", source);
  info.wall.host = at(j, "wall.host", source).get<std::string>();
  info.wall.shard_source = at(j, "wall.shard_source", source).get<std::string>();

  StormResult& r = p.result;
  StormCounters& c = r.counters;
  const json& counts = at(j, "counts", source);
  c.issued = num<std::uint64_t>(counts, "issued", source);
  c.answered = num<std::uint64_t>(counts, "answered", source);
  c.busy = num<std::uint64_t>(counts, "busy", source);
  c.timeouts = num<std::uint64_t>(counts, "timeouts", source);
  c.errors = num<std::uint64_t>(counts, "errors", source);
  c.sent = num<std::uint64_t>(counts, "sent", source);
  c.resent = num<std::uint64_t>(counts, "resent", source);
  c.busy_answers = num<std::uint64_t>(counts, "busy_answers", source);
  c.unmatched = num<std::uint64_t>(counts, "unmatched", source);
  c.late = num<std::uint64_t>(counts, "late", source);
  c.not_sa = num<std::uint64_t>(counts, "not_sa", source);
  c.records = num<std::uint64_t>(counts, "records", source);
  c.rmpp_transfers = num<std::uint64_t>(counts, "rmpp_transfers", source);
  c.warmup_issued = num<std::uint64_t>(counts, "warmup_issued", source);
  c.tx_stalls = num<std::uint64_t>(counts, "tx_stalls", source);
  c.tx_dropped = num<std::uint64_t>(counts, "tx_dropped", source);
  c.device_lost = num<std::uint64_t>(counts, "device_lost", source);
  by_name<ErrorKind>(at(counts, "error_kinds", source), c.error_by, source, "counts.error_kinds");
  by_name<QueryKind>(at(counts, "issued_by_kind", source), c.issued_by, source, "counts.issued_by_kind");
  by_name<QueryKind>(at(counts, "answered_by_kind", source), c.answered_by, source, "counts.answered_by_kind");
  const json& oracle = at(j, "oracle", source);
  r.oracle = !oracle.is_null();
  if (r.oracle) {
    c.oracle_checked = num<std::uint64_t>(oracle, "checked", source);
    by_name<PathVerdict>(at(oracle, "wrong_by", source), c.oracle_wrong_by, source, "oracle.wrong_by", 1);
    for (const auto& [hops, n] : at(oracle, "hops", source).items()) {
      const unsigned long h = std::stoul(hops);
      if (h > kPathHopsMax) throw std::runtime_error(source + ": oracle.hops has " + hops);
      c.oracle_hops[h] = n.get<std::uint64_t>();
    }
  }
  r.latency = histogram(j, "latency_histogram", source);
  r.schedule_lag = histogram(j, "schedule_lag_histogram", source);
  r.hosts = num<std::uint64_t>(j, "config.hosts", source);
  r.measure_start_ns = info.wall.start_unix_ns;
  r.first_issue_ns = r.measure_start_ns + num<std::int64_t>(j, "timing.first_issue_ns", source);
  r.last_issue_ns = r.measure_start_ns + num<std::int64_t>(j, "timing.last_issue_ns", source);
  r.end_ns = r.measure_start_ns + num<std::int64_t>(j, "timing.end_ns", source);
  r.window_peak = num<std::uint32_t>(j, "timing.window_peak", source);
  r.cpu_user_s = num<double>(j, "timing.cpu_user_s", source);
  r.cpu_sys_s = num<double>(j, "timing.cpu_sys_s", source);
  r.bucket_ns = static_cast<Nanos>(std::llround(num<double>(j, "series.bucket_ms", source) * 1e6));
  if (r.bucket_ns <= 0) throw std::runtime_error(source + ": series.bucket_ms must be positive");
  for (const json& b : at(j, "series.buckets", source)) {
    // Three columns in reports written before latency_max_us.
    if (!b.is_array() || b.size() < 3 || b.size() > 4) throw std::runtime_error(source + ": bad series bucket");
    r.series.push_back(SeriesBucket{b[0].get<std::uint32_t>(), b[1].get<std::uint32_t>(), b[2].get<std::uint32_t>(),
                                    b.size() == 4 ? b[3].get<std::uint32_t>() : 0});
  }
  r.per_host_ports = num<bool>(j, "requesters.per_host_ports", source);
  r.busy_answers_by_host.assign(r.hosts, 0);
  for (const json& b : at(j, "requesters.busy_answers_by_host", source)) {
    const auto i = b.at(0).get<std::size_t>();
    if (i >= r.hosts) throw std::runtime_error(source + ": requesters.busy_answers_by_host names host " + std::to_string(i));
    r.busy_answers_by_host[i] = b.at(1).get<std::uint32_t>();
  }
  r.stopped_early = num<bool>(j, "stopped_early", source);
  if (num<bool>(j, "counts_add_up", source) != r.counts_add_up())
    throw std::runtime_error(source + ": counts_add_up disagrees with the counts");
  return p;
}

MergedRun merge_runs(std::span<const ParsedRun> runs) {
  if (runs.empty()) throw std::runtime_error("merge: no runs");
  MergedRun m;
  const ParsedRun& first = runs.front();
  m.info = first.info;
  StormResult& r = m.result;
  r.hosts = first.result.hosts;
  r.bucket_ns = first.result.bucket_ns;
  r.busy_answers_by_host.assign(r.hosts, 0);
  r.per_host_ports = true;
  std::set<std::uint32_t> shards;
  std::set<std::string> labels, hosts;
  Nanos start = first.result.measure_start_ns;
  for (const ParsedRun& p : runs) start = std::min(start, p.result.measure_start_ns);
  r.measure_start_ns = start;
  bool any_issue = false;
  for (const ParsedRun& p : runs) {
    const StormResult& x = p.result;
    auto differs = [&](std::string_view what) {
      return std::runtime_error(fmt::format("merge: {} has another {} than {}", p.source, what, first.source));
    };
    if (p.info.workload.pattern != first.info.workload.pattern) throw differs("pattern");
    if (x.hosts != first.result.hosts) throw differs("host count");
    if (p.info.workload.shard_count != first.info.workload.shard_count) throw differs("shard count");
    if (x.bucket_ns != first.result.bucket_ns) throw differs("time-series bucket");
    if (!shards.insert(p.info.workload.shard_index).second)
      m.notes.push_back(fmt::format("shard {} appears twice ({})", p.info.workload.shard_index, p.source));
    labels.insert(p.info.label);
    hosts.insert(p.info.wall.host);

    StormCounters& c = r.counters;
    const StormCounters& o = x.counters;
    for (auto [dst, src] : {std::pair{&c.issued, &o.issued}, {&c.answered, &o.answered}, {&c.busy, &o.busy},
                            {&c.timeouts, &o.timeouts}, {&c.errors, &o.errors}, {&c.sent, &o.sent},
                            {&c.resent, &o.resent}, {&c.busy_answers, &o.busy_answers}, {&c.unmatched, &o.unmatched},
                            {&c.late, &o.late}, {&c.not_sa, &o.not_sa}, {&c.records, &o.records},
                            {&c.rmpp_transfers, &o.rmpp_transfers}, {&c.warmup_issued, &o.warmup_issued},
                            {&c.tx_stalls, &o.tx_stalls}, {&c.tx_dropped, &o.tx_dropped},
                            {&c.device_lost, &o.device_lost}, {&c.oracle_checked, &o.oracle_checked}})
      *dst += *src;
    auto add = [](auto& a, const auto& b) {
      for (std::size_t k = 0; k < a.size(); ++k) a[k] += b[k];
    };
    add(c.error_by, o.error_by);
    add(c.issued_by, o.issued_by);
    add(c.answered_by, o.answered_by);
    add(c.oracle_wrong_by, o.oracle_wrong_by);
    add(c.oracle_hops, o.oracle_hops);
    r.latency.merge(x.latency);
    r.schedule_lag.merge(x.schedule_lag);
    if (o.issued != 0) {
      r.first_issue_ns = any_issue ? std::min(r.first_issue_ns, x.first_issue_ns) : x.first_issue_ns;
      r.last_issue_ns = std::max(r.last_issue_ns, x.last_issue_ns);
      any_issue = true;
    }
    r.end_ns = std::max(r.end_ns, x.end_ns);
    r.cpu_user_s += x.cpu_user_s;
    r.cpu_sys_s += x.cpu_sys_s;
    r.window_peak += x.window_peak;  // each process's own peak: the sum bounds the fabric-wide one
    r.per_host_ports = r.per_host_ports && x.per_host_ports;
    r.oracle = r.oracle || x.oracle;
    r.stopped_early = r.stopped_early || x.stopped_early;
    for (std::size_t i = 0; i < x.busy_answers_by_host.size() && i < r.busy_answers_by_host.size(); ++i)
      r.busy_answers_by_host[i] += x.busy_answers_by_host[i];
    // The runs' buckets on one time line: each starts where its wall clock says.
    const auto offset = static_cast<std::size_t>(
        std::llround(static_cast<double>(x.measure_start_ns - start) / static_cast<double>(r.bucket_ns)));
    if (r.series.size() < offset + x.series.size()) r.series.resize(offset + x.series.size());
    for (std::size_t i = 0; i < x.series.size(); ++i) {
      r.series[offset + i].issued += x.series[i].issued;
      r.series[offset + i].answered += x.series[i].answered;
      r.series[offset + i].failed += x.series[i].failed;
      r.series[offset + i].latency_max_us = std::max(r.series[offset + i].latency_max_us, x.series[i].latency_max_us);
    }
  }
  if (!any_issue) r.first_issue_ns = r.last_issue_ns = start;
  const std::uint32_t n = first.info.workload.shard_count;
  std::vector<std::uint32_t> missing;
  for (std::uint32_t i = 0; i < n; ++i)
    if (!shards.contains(i)) missing.push_back(i);
  if (!missing.empty())
    m.notes.push_back(fmt::format("{} of {} shards merged; missing: {}", n - missing.size(), n, fmt::join(missing, ", ")));
  if (labels.size() > 1) m.info.label = fmt::format("{}", fmt::join(labels, " + "));
  m.info.wall.host = hosts.size() == 1 ? *hosts.begin() : fmt::format("{} hosts", hosts.size());
  m.info.wall.start_unix_ns = start;
  m.info.wall.shard_source = "merge";
  m.info.workload.shard_index = 0;
  m.info.workload.shard_count = 1;
  return m;
}

json merged_json(const MergedRun& m, std::span<const ParsedRun> runs) {
  json j = to_json(m.info, m.result);
  json parts = json::array();
  for (const ParsedRun& p : runs)
    parts.push_back({{"source", p.source},
                     {"host", p.info.wall.host},
                     {"shard", {{"index", p.info.workload.shard_index}, {"count", p.info.workload.shard_count}}},
                     {"label", p.info.label}});
  j["merged"] = {{"runs", runs.size()}, {"parts", parts}, {"notes", m.notes}};
  return j;
}

}  // namespace madstorm
