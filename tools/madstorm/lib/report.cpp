// Summary table, JSON, SVG, HTML and comparison output; the strict verdict.
#include "lib/report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace madstorm {

namespace {

constexpr std::array<std::pair<const char*, double>, 6> kQuantiles = {
    {{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}, {"p999", 0.999}, {"min", 0.0}, {"max", 1.0}}};

double us(std::uint64_t ns) { return static_cast<double>(ns) / 1e3; }

nlohmann::json histogram_json(const LatencyHistogram& h) {
  nlohmann::json buckets = nlohmann::json::array();
  for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i)
    if (h.at(i) != 0) buckets.push_back({i, h.at(i)});
  return {{"sub_bits", LatencyHistogram::kSubBits}, {"count", h.count()},
          {"sum_ns", h.sum()},
          {"min_ns", h.min()}, {"max_ns", h.max()}, {"buckets", buckets}};
}

std::string error_kinds_text(const StormCounters& c) {
  std::string kinds;
  for (std::size_t k = 0; k < kErrorKindCount; ++k)
    if (c.error_by[k] != 0) kinds += fmt::format(" {}={}", to_string(static_cast<ErrorKind>(k)), c.error_by[k]);
  return kinds;
}

std::string oracle_wrong_text(const StormCounters& c) {
  std::string s;
  for (std::size_t v = 1; v < kPathVerdictCount; ++v)
    if (c.oracle_wrong_by[v] != 0) s += fmt::format(" {}={}", to_string(static_cast<PathVerdict>(v)), c.oracle_wrong_by[v]);
  return s;
}

// Links crossed by the oracle's walks (two hosts on one leaf: 2), as
// madengine-ctl paths counts LINKS; its SW-HOPS are the switch-to-switch ones.
std::string hops_text(const StormCounters& c) {
  std::string s;
  for (std::size_t h = 0; h <= kPathHopsMax; ++h)
    if (c.oracle_hops[h] != 0) s += fmt::format("{}{} links: {}", s.empty() ? "" : ", ", h, c.oracle_hops[h]);
  return s;
}

std::uint64_t oracle_wrong(const StormCounters& c) {
  std::uint64_t n = 0;
  for (std::size_t v = 1; v < kPathVerdictCount; ++v) n += c.oracle_wrong_by[v];
  return n;
}

// Hosts that drew BUSY answers, most first (at most `max_listed`).
std::vector<std::pair<std::uint32_t, std::uint32_t>> busiest(const StormResult& r, std::size_t max_listed) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> v;
  for (std::uint32_t i = 0; i < r.busy_answers_by_host.size(); ++i)
    if (r.busy_answers_by_host[i] != 0) v.emplace_back(i, r.busy_answers_by_host[i]);
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (v.size() > max_listed) v.resize(max_listed);
  return v;
}

std::size_t hosts_with_busy(const StormResult& r) {
  return static_cast<std::size_t>(
      std::count_if(r.busy_answers_by_host.begin(), r.busy_answers_by_host.end(), [](std::uint32_t n) { return n != 0; }));
}

std::string html_escape(std::string_view in) {
  std::string out;
  for (const char ch : in) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const RunInfo& info, const StormResult& r) {
  using nlohmann::json;
  const StormCounters& c = r.counters;
  json j;
  j["schema"] = "madstorm/2";
  j["label"] = info.label;
  j["transport"] = info.transport;
  j["config"] = {
      {"pattern", to_string(info.workload.pattern)},
      {"by_gid", info.storm.by_gid},
      {"hosts", r.hosts},
      {"shard", {{"index", info.workload.shard_index}, {"count", info.workload.shard_count}}},
      {"seed", info.workload.seed},
      {"sa_lid", info.storm.sa.lid},
      {"window_max", info.storm.window_max},
      {"window_per_host_max", info.storm.window_per_host_max},
      {"rate_qps", info.storm.rate_qps},
      {"open_loop", info.storm.rate_qps > 0},
      {"queries_max", info.storm.queries_max},
      {"duration_ms", info.storm.duration_ms},
      {"warmup_ms", info.storm.warmup_ms},
      {"timeout_ms", info.storm.retry.timeout_ms},
      {"retries", info.storm.retry.retries},
      {"busy_backoff_ms", info.storm.retry.busy_backoff_ms},
      {"busy_retries", info.storm.retry.busy_retries},
      {"window_overrides", info.storm.window_overrides},
  };
  j["wall"] = {{"start_unix_ns", info.wall.start_unix_ns},
               {"start_at_unix_ns", info.wall.start_at_unix_ns},
               {"host", info.wall.host},
               {"shard_source", info.wall.shard_source}};
  json errors = json::object();
  for (std::size_t k = 0; k < kErrorKindCount; ++k) errors[to_string(static_cast<ErrorKind>(k))] = c.error_by[k];
  json by_kind = json::object(), answered_by = json::object();
  for (std::size_t k = 0; k < kQueryKindCount; ++k) {
    by_kind[to_string(static_cast<QueryKind>(k))] = c.issued_by[k];
    answered_by[to_string(static_cast<QueryKind>(k))] = c.answered_by[k];
  }
  j["counts"] = {
      {"issued", c.issued},         {"answered", c.answered},     {"busy", c.busy},
      {"timeouts", c.timeouts},     {"errors", c.errors},         {"error_kinds", errors},
      {"issued_by_kind", by_kind},  {"answered_by_kind", answered_by},
      {"sent", c.sent},             {"resent", c.resent},
      {"busy_answers", c.busy_answers}, {"unmatched", c.unmatched}, {"late", c.late},
      {"not_sa", c.not_sa},         {"records", c.records},       {"rmpp_transfers", c.rmpp_transfers},
      {"warmup_issued", c.warmup_issued}, {"tx_stalls", c.tx_stalls}, {"tx_dropped", c.tx_dropped},
      {"device_lost", c.device_lost},
  };
  json lat = {{"count", r.latency.count()}, {"mean_us", r.latency.mean() / 1e3}};
  for (const auto& [name, q] : kQuantiles) lat[std::string(name) + "_us"] = us(r.latency.quantile(q));
  j["latency"] = lat;
  j["latency_histogram"] = histogram_json(r.latency);
  j["schedule_lag_histogram"] = histogram_json(r.schedule_lag);
  if (r.oracle) {
    json wrong = json::object(), hops = json::object();
    for (std::size_t v = 1; v < kPathVerdictCount; ++v) wrong[to_string(static_cast<PathVerdict>(v))] = c.oracle_wrong_by[v];
    for (std::size_t h = 0; h <= kPathHopsMax; ++h)
      if (c.oracle_hops[h] != 0) hops[std::to_string(h)] = c.oracle_hops[h];
    j["oracle"] = {{"checked", c.oracle_checked}, {"wrong", oracle_wrong(c)}, {"wrong_by", wrong}, {"hops", hops}};
  } else {
    j["oracle"] = nullptr;
  }
  json busy = json::array();
  for (std::uint32_t i = 0; i < r.busy_answers_by_host.size(); ++i)
    if (r.busy_answers_by_host[i] != 0) busy.push_back({i, r.busy_answers_by_host[i]});
  j["requesters"] = {{"per_host_ports", r.per_host_ports},
                     {"hosts_with_busy", hosts_with_busy(r)},
                     {"busy_answers_by_host", busy}};
  j["schedule_lag"] = {{"count", r.schedule_lag.count()},
                       {"p50_us", us(r.schedule_lag.quantile(0.5))},
                       {"p99_us", us(r.schedule_lag.quantile(0.99))},
                       {"max_us", us(r.schedule_lag.max())}};
  const double cpu_s = r.cpu_user_s + r.cpu_sys_s;
  j["timing"] = {
      {"elapsed_s", r.elapsed_s()},
      {"throughput_qps", r.throughput_qps()},
      {"throughput_without_oracle_qps", r.throughput_without_oracle_qps()},
      {"oracle_s", static_cast<double>(r.counters.oracle_ns) / 1e9},
      {"issue_rate_qps", r.issue_rate_qps()},
      {"first_issue_ns", r.first_issue_ns - r.measure_start_ns},
      {"last_issue_ns", r.last_issue_ns - r.measure_start_ns},
      {"end_ns", r.end_ns - r.measure_start_ns},
      {"window_peak", r.window_peak},
      {"cpu_user_s", r.cpu_user_s},
      {"cpu_sys_s", r.cpu_sys_s},
      {"cpu_us_per_query", c.sent == 0 ? 0.0 : cpu_s * 1e6 / static_cast<double>(c.issued + c.warmup_issued)},
  };
  json series = json::array();
  for (const SeriesBucket& b : r.series) series.push_back({b.issued, b.answered, b.failed, b.latency_max_us});
  j["series"] = {{"bucket_ms", static_cast<double>(r.bucket_ns) / 1e6},
                 {"columns", {"issued", "answered", "failed", "latency_max_us"}},
                 {"buckets", series}};
  j["counts_add_up"] = r.counts_add_up();
  j["stopped_early"] = r.stopped_early;
  return j;
}

void print_summary(std::FILE* out, const RunInfo& info, const StormResult& r) {
  const StormCounters& c = r.counters;
  fmt::print(out, "madstorm: {} storm{}, {} hosts, {} via {}, {}\n", to_string(info.workload.pattern),
             info.label.empty() ? "" : " against " + info.label, r.hosts, info.storm.by_gid ? "GID" : "LID",
             info.transport,
             info.storm.rate_qps > 0 ? fmt::format("open loop at {:.0f} q/s", info.storm.rate_qps)
                                     : fmt::format("closed loop, window {}", info.storm.window_max));
  fmt::print(out, "  {:<14}{:>12}\n", "queries", c.issued);
  fmt::print(out, "  {:<14}{:>12}\n", "answered", c.answered);
  fmt::print(out, "  {:<14}{:>12}   ({} BUSY answers seen)\n", "BUSY", c.busy, c.busy_answers);
  fmt::print(out, "  {:<14}{:>12}   ({} re-sends)\n", "timeouts", c.timeouts, c.resent);
  fmt::print(out, "  {:<14}{:>12}  {}\n", "errors", c.errors, error_kinds_text(c));
  if (r.oracle)
    fmt::print(out, "  {:<14}{:>12}   PathRecords checked against the fabric's LFTs, {} wrong{}{}\n", "oracle",
               c.oracle_checked, oracle_wrong(c), oracle_wrong_text(c),
               c.oracle_checked != 0 ? " (" + hops_text(c) + ")" : "");
  if (r.per_host_ports || c.busy_answers != 0) {
    std::string who;
    for (const auto& [h, n] : busiest(r, 4)) who += fmt::format("{}#{}: {}", who.empty() ? "" : ", ", h, n);
    fmt::print(out, "  {:<14}{:>12}   {}; BUSY answers at {} host(s){}\n", "requesters", r.hosts,
               r.per_host_ports ? "each from its own port" : "all from one port", hosts_with_busy(r),
               who.empty() ? "" : " (host " + who + ")");
  }
  if (c.unmatched + c.late + c.not_sa != 0)
    fmt::print(out, "  {:<14}{:>12}   (unmatched TID {}, late {}, not SA {})\n", "stray answers",
               c.unmatched + c.late + c.not_sa, c.unmatched, c.late, c.not_sa);
  if (c.tx_stalls + c.tx_dropped + c.device_lost != 0)
    fmt::print(out, "  {:<14}{:>12}   (tx stalls {}, attempts not sent {}, device lost {})\n", "transport",
               c.tx_stalls + c.tx_dropped + c.device_lost, c.tx_stalls, c.tx_dropped, c.device_lost);
  fmt::print(out, "  {:<14}{:>12.1f} q/s over {:.3f} s\n", "throughput", r.throughput_qps(), r.elapsed_s());
  if (r.oracle && r.counters.oracle_ns != 0)
    fmt::print(out, "  {:<14}{:>12.1f} q/s without the oracle's {:.3f} s of checks\n", "unchecked",
               r.throughput_without_oracle_qps(), static_cast<double>(r.counters.oracle_ns) / 1e9);
  if (info.storm.rate_qps > 0)
    fmt::print(out, "  {:<14}{:>12.1f} q/s (target {:.0f}), schedule lag p99 {:.0f} us\n", "issue rate",
               r.issue_rate_qps(), info.storm.rate_qps, us(r.schedule_lag.quantile(0.99)));
  fmt::print(out, "  latency us    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "min", "p50", "p90", "p99", "p999", "max");
  fmt::print(out, "  {:<14}{:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f}\n", "", us(r.latency.min()),
             us(r.latency.quantile(0.5)), us(r.latency.quantile(0.9)), us(r.latency.quantile(0.99)),
             us(r.latency.quantile(0.999)), us(r.latency.max()));
  const double cpu_s = r.cpu_user_s + r.cpu_sys_s;
  const std::uint64_t all = c.issued + c.warmup_issued;
  fmt::print(out, "  {:<14}{:>12.2f} CPU-us per query ({:.3f} s user, {:.3f} s sys)\n", "madstorm cost",
             all == 0 ? 0.0 : cpu_s * 1e6 / static_cast<double>(all), r.cpu_user_s, r.cpu_sys_s);
  if (!r.counts_add_up()) fmt::print(out, "  WARNING: issued != answered + BUSY + timeouts + errors\n");
  if (r.stopped_early)
    fmt::print(out, "  STOPPED EARLY: {}\n", c.device_lost != 0 ? "the port or device was lost" : "interrupted");
}

std::string svg_plot(const RunInfo& info, const StormResult& r) {
  constexpr int kW = 900, kPlotH = 260, kGap = 70, kLeft = 70, kRight = 20, kTop = 40;
  const int h = kTop + 2 * kPlotH + 2 * kGap;
  const int pw = kW - kLeft - kRight;
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kW, h);
  s += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"15\">madstorm {} {}: {} answered, p99 {:.0f} us</text>\n",
                   kLeft, to_string(info.workload.pattern), info.label, r.counters.answered,
                   us(r.latency.quantile(0.99)));

  // 1. Latency histogram: log2-spaced columns (merged log-linear buckets), height = share of answers.
  {
    const int y0 = kTop + 10, base = y0 + kPlotH;
    s += fmt::format("<text x=\"{}\" y=\"{}\">latency (log scale), share of answers</text>\n", kLeft, y0 - 2);
    std::vector<std::uint64_t> oct(LatencyHistogram::kTopBit + 2, 0);
    for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
      const std::uint64_t lo = std::max<std::uint64_t>(1, LatencyHistogram::lower_of(i));
      oct[static_cast<std::size_t>(std::log2(static_cast<double>(lo)))] += r.latency.at(i);
    }
    std::size_t first = oct.size(), last = 0;
    for (std::size_t k = 0; k < oct.size(); ++k)
      if (oct[k] != 0) first = std::min(first, k), last = k;
    if (first <= last) {
      const std::uint64_t peak = *std::max_element(oct.begin(), oct.end());
      const double bw = static_cast<double>(pw) / static_cast<double>(last - first + 1);
      for (std::size_t k = first; k <= last; ++k) {
        const double bh = static_cast<double>(oct[k]) / static_cast<double>(peak) * (kPlotH - 20);
        const double x = kLeft + bw * static_cast<double>(k - first);
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"#4477aa\"/>\n",
                         x + 1, base - bh, bw - 2, bh);
        const double lo_us = std::ldexp(1.0, static_cast<int>(k)) / 1e3;
        s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\n",
                         x + bw / 2, base + 14, lo_us < 1 ? fmt::format("{:.2f}", lo_us) : fmt::format("{:.0f}", lo_us));
        const double share = 100.0 * static_cast<double>(oct[k]) / static_cast<double>(r.latency.count());
        if (oct[k] != 0)
          s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"9\">{:.1f}%</text>\n",
                           x + bw / 2, base - bh - 3, share);
      }
    }
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", kLeft, base, kLeft + pw, base);
    s += fmt::format("<text x=\"{}\" y=\"{}\">us (bucket lower edge)</text>\n", kLeft + pw - 140, base + 30);
  }
  // 2. Throughput over time: answered and failed per second, per bucket.
  {
    const int y0 = kTop + kPlotH + kGap, base = y0 + kPlotH;
    const double per_s = 1e9 / static_cast<double>(std::max<Nanos>(r.bucket_ns, 1));
    s += fmt::format("<text x=\"{}\" y=\"{}\">throughput over time (answers/s: blue; failures/s: red)</text>\n", kLeft,
                     y0 - 2);
    double peak = 1;
    for (const SeriesBucket& b : r.series) peak = std::max({peak, b.answered * per_s, b.failed * per_s});
    const std::size_t n = std::max<std::size_t>(r.series.size(), 2);
    auto poly = [&](auto value, const char* color) {
      std::string pts;
      for (std::size_t i = 0; i < r.series.size(); ++i) {
        const double x = kLeft + static_cast<double>(pw) * static_cast<double>(i) / static_cast<double>(n - 1);
        const double y = base - value(r.series[i]) * per_s / peak * (kPlotH - 10);
        pts += fmt::format("{:.1f},{:.1f} ", x, y);
      }
      s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", color, pts);
    };
    poly([](const SeriesBucket& b) { return static_cast<double>(b.answered); }, "#4477aa");
    poly([](const SeriesBucket& b) { return static_cast<double>(b.failed); }, "#cc3311");
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", kLeft, base, kLeft + pw, base);
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", kLeft, y0, kLeft, base);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0f}/s</text>\n", kLeft - 4, y0 + 12, peak);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">0</text>\n", kLeft - 4, base);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.1f} s</text>\n", kLeft + pw, base + 14,
                     static_cast<double>(r.series.size()) * static_cast<double>(r.bucket_ns) / 1e9);
  }
  s += "</svg>\n";
  return s;
}

void write_svg(const std::string& path, const RunInfo& info, const StormResult& r) {
  std::ofstream f(path);
  f << svg_plot(info, r);
  if (!f) throw std::runtime_error("cannot write " + path);
}

void write_html(const std::string& path, const RunInfo& info, const StormResult& r,
                std::span<const nlohmann::json> parts) {
  const StormCounters& c = r.counters;
  std::string h;
  const std::string title =
      fmt::format("madstorm: {} storm{}", to_string(info.workload.pattern), info.label.empty() ? "" : " against " + info.label);
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(title) + "</title>\n";
  h += "<style>body{font-family:sans-serif;margin:2em;max-width:960px}table{border-collapse:collapse;margin:1em 0}"
       "td,th{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}td.l,th.l{text-align:left}"
       ".bad{color:#b00;font-weight:bold}.ok{color:#070;font-weight:bold}</style></head><body>\n";
  h += "<h1>" + html_escape(title) + "</h1>\n";
  const auto problems = strict_problems(r, 0);
  h += problems.empty() ? "<p class=\"ok\">Every query answered, every answer right.</p>\n"
                        : "<p class=\"bad\">" + html_escape(fmt::format("{}", fmt::join(problems, "; "))) + "</p>\n";
  h += fmt::format("<p>{} hosts, {} via {}, {}{}.</p>\n", r.hosts, info.storm.by_gid ? "GID" : "LID",
                   html_escape(info.transport),
                   info.storm.rate_qps > 0 ? fmt::format("open loop at {:.0f} q/s", info.storm.rate_qps)
                                           : fmt::format("closed loop, window {}", info.storm.window_max),
                   info.wall.host.empty() ? "" : ", on " + html_escape(info.wall.host));
  auto row = [&](std::string_view name, const std::string& value, std::string_view note = {}) {
    h += fmt::format("<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>\n", name, value,
                     html_escape(note));
  };
  h += "<table><tr><th class=\"l\">figure</th><th>value</th><th class=\"l\">note</th></tr>\n";
  row("queries", std::to_string(c.issued));
  row("answered", std::to_string(c.answered));
  row("BUSY", std::to_string(c.busy), fmt::format("{} BUSY answers seen", c.busy_answers));
  row("timeouts", std::to_string(c.timeouts), fmt::format("{} re-sends", c.resent));
  row("errors", std::to_string(c.errors), error_kinds_text(c));
  row("stray answers", std::to_string(c.unmatched + c.late + c.not_sa),
      fmt::format("unmatched TID {}, late {}, not SA {}", c.unmatched, c.late, c.not_sa));
  row("throughput", fmt::format("{:.1f} q/s", r.throughput_qps()), fmt::format("over {:.3f} s", r.elapsed_s()));
  row("madstorm CPU", fmt::format("{:.3f} s", r.cpu_user_s + r.cpu_sys_s), "user + sys of this process");
  h += "</table>\n<h2>Latency (us)</h2>\n<table><tr>";
  for (const auto& [name, q] : kQuantiles) h += fmt::format("<th>{}</th>", name);
  h += "</tr><tr>";
  for (const auto& [name, q] : kQuantiles) h += fmt::format("<td>{:.1f}</td>", us(r.latency.quantile(q)));
  h += "</tr></table>\n";
  if (r.oracle) {
    h += "<h2>Fabric-truth oracle</h2>\n";
    h += fmt::format("<p>{} PathRecords checked against a walk of the fabric's LFTs; {} wrong{}.</p>\n", c.oracle_checked,
                     oracle_wrong(c), html_escape(oracle_wrong_text(c)));
    h += "<table><tr><th>links crossed</th><th>paths</th></tr>\n";
    for (std::size_t n = 0; n <= kPathHopsMax; ++n)
      if (c.oracle_hops[n] != 0) h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", n, c.oracle_hops[n]);
    h += "</table>\n";
  }
  h += fmt::format("<h2>Requesters</h2>\n<p>{} hosts, {}; BUSY answers at {} of them.</p>\n", r.hosts,
                   r.per_host_ports ? "each sending from its own port" : "all sending from one port", hosts_with_busy(r));
  if (const auto top = busiest(r, 20); !top.empty()) {
    h += "<table><tr><th>host #</th><th>BUSY answers</th></tr>\n";
    for (const auto& [i, n] : top) h += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", i, n);
    h += "</table>\n";
  }
  if (!parts.empty()) {
    h += "<h2>Merged runs</h2>\n<table><tr><th class=\"l\">host</th><th>shard</th><th>issued</th><th>answered</th>"
         "<th>BUSY</th><th>timeouts</th><th>errors</th><th>q/s</th><th>p99 us</th></tr>\n";
    for (const auto& p : parts) {
      const auto& pc = p.at("counts");
      h += fmt::format(
          "<tr><td class=\"l\">{}</td><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td>"
          "<td>{:.1f}</td></tr>\n",
          html_escape(p.at("wall").value("host", std::string())), p.at("config").at("shard").at("index").get<unsigned>(),
          p.at("config").at("shard").at("count").get<unsigned>(), pc.at("issued").get<std::uint64_t>(),
          pc.at("answered").get<std::uint64_t>(), pc.at("busy").get<std::uint64_t>(),
          pc.at("timeouts").get<std::uint64_t>(), pc.at("errors").get<std::uint64_t>(),
          p.at("timing").at("throughput_qps").get<double>(), p.at("latency").at("p99_us").get<double>());
    }
    h += "</table>\n";
  }
  h += "<h2>Plots</h2>\n" + svg_plot(info, r);
  h += "</body></html>\n";
  std::ofstream f(path);
  f << h;
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<std::string> strict_problems(const StormResult& r, std::uint64_t planned) {
  const StormCounters& c = r.counters;
  std::vector<std::string> p;
  if (!r.counts_add_up())
    p.push_back(fmt::format("counts do not add up: issued {} != answered {} + BUSY {} + timeouts {} + errors {}",
                            c.issued, c.answered, c.busy, c.timeouts, c.errors));
  if (c.errors != 0) {
    std::string what = fmt::format("{} wrong answer{} ({})", c.errors, c.errors == 1 ? "" : "s", error_kinds_text(c).substr(1));
    if (oracle_wrong(c) != 0) what += fmt::format(", the oracle found:{}", oracle_wrong_text(c));
    p.push_back(what);
  }
  if (c.timeouts != 0) p.push_back(fmt::format("{} quer{} timed out (lost)", c.timeouts, c.timeouts == 1 ? "y" : "ies"));
  if (c.busy != 0) p.push_back(fmt::format("{} quer{} still BUSY after every retry", c.busy, c.busy == 1 ? "y" : "ies"));
  if (planned != 0 && c.issued != planned)
    p.push_back(fmt::format("{} queries issued, {} planned", c.issued, planned));
  if (r.stopped_early) p.push_back(c.device_lost != 0 ? "stopped early: the port was lost" : "stopped early");
  if (c.unmatched != 0) p.push_back(fmt::format("{} answers matched no query (wrong TID)", c.unmatched));
  if (r.oracle) {
    const std::uint64_t want = c.answered_by[static_cast<std::size_t>(QueryKind::kPathRecord)] + c.records;
    if (c.oracle_checked < want)
      p.push_back(fmt::format("the oracle checked {} PathRecords of {} answered", c.oracle_checked, want));
  }
  return p;
}

void print_compare(std::FILE* out, const nlohmann::json& a, const nlohmann::json& b) {
  auto get = [](const nlohmann::json& j, const char* sect, const char* key) -> double {
    if (!j.contains(sect) || !j[sect].contains(key) || !j[sect][key].is_number())
      throw std::runtime_error(std::string("JSON lacks ") + sect + "." + key);
    return j[sect][key].get<double>();
  };
  const std::string la = a.value("label", "A"), lb = b.value("label", "B");
  fmt::print(out, "  {:<18}{:>14}{:>14}{:>10}\n", "figure", la.empty() ? "A" : la, lb.empty() ? "B" : lb, "B/A");
  const std::array<std::pair<const char*, const char*>, 15> rows = {{{"counts", "issued"},
                                                                     {"counts", "answered"},
                                                                     {"counts", "busy"},
                                                                     {"counts", "timeouts"},
                                                                     {"counts", "errors"},
                                                                     {"timing", "throughput_qps"},
                                                                     {"timing", "elapsed_s"},
                                                                     {"latency", "min_us"},
                                                                     {"latency", "p50_us"},
                                                                     {"latency", "p90_us"},
                                                                     {"latency", "p99_us"},
                                                                     {"latency", "p999_us"},
                                                                     {"latency", "max_us"},
                                                                     {"timing", "cpu_us_per_query"},
                                                                     {"counts", "resent"}}};
  for (const auto& [sect, key] : rows) {
    const double va = get(a, sect, key), vb = get(b, sect, key);
    const std::string ratio = va != 0 ? fmt::format("{:.2f}", vb / va) : (vb == 0 ? "=" : "inf");
    fmt::print(out, "  {:<18}{:>14.1f}{:>14.1f}{:>10}\n", key, va, vb, ratio);
  }
}

}  // namespace madstorm
