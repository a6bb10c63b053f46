// madstorm's options: registration and what follows from them.
#include "lib/options.hpp"

#include <charconv>
#include <cmath>
#include <ctime>
#include <stdexcept>

namespace madstorm {

namespace {

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "S[.fff]" seconds as ns; nullopt if malformed or out of range.
std::optional<std::int64_t> seconds_ns(std::string_view s) {
  const auto dot = s.find('.');
  const auto whole = to_u64(s.substr(0, dot));
  if (!whole || *whole > 100'000'000'000ull) return std::nullopt;
  std::int64_t ns = static_cast<std::int64_t>(*whole) * 1'000'000'000;
  if (dot != std::string_view::npos) {
    const std::string_view frac = s.substr(dot + 1);
    if (frac.empty() || frac.size() > 9 || !to_u64(frac)) return std::nullopt;
    std::int64_t f = static_cast<std::int64_t>(*to_u64(frac));
    for (std::size_t i = frac.size(); i < 9; ++i) f *= 10;
    ns += f;
  }
  return ns;
}

}  // namespace

void add_options(CLI::App& app, Options& o) {
  app.add_option("--transport", o.transport, "umad (QP1 through libibumad) | verbs (a UD QP; untested on hardware)")
      ->capture_default_str();
  app.add_option("--ca", o.ca, "HCA (umad) or RDMA device (verbs) name (default: the first)");
  app.add_option("--port", o.port, "HCA port (default: the first)")->check(CLI::Range(0, 254));
  app.add_option("--sa-lid", o.sa_lid, "SA LID (default: the port's SM LID)")->check(CLI::Range(0, 0xbfff));
  app.add_option("--sl", o.sl, "SL to reach the SA")->check(CLI::Range(0, 15));
  app.add_option("--pattern,-p", o.pattern,
                 "job-start | restart | random | hotspot | gettable | noderecord | mcast | mix | rereg-join | rereg")
      ->capture_default_str();
  app.add_flag("--by-gid", o.by_gid, "name hosts by GID in PathRecords (default: by LID)");
  app.add_option("--hosts-file", o.hosts_file, "LID PORT_GUID [NODE_GUID] lines instead of asking the SA");
  app.add_option("--save-hosts", o.save_hosts, "write the hosts found to this file (--hosts-file's format)");
  app.add_option("--job-size", o.workload.job_size, "job start: hosts in the job (default: all)");
  app.add_option("--hot-dests", o.workload.hot_dests, "hot spot: destinations")->capture_default_str();
  app.add_option("--mix", o.mix, "mix weights: pr:N,table:N,nr:N,mc:N")->capture_default_str();
  app.add_option("--shard", o.shard,
                 "this process's share of the requesters, i/n (default: from SLURM_PROCID/SLURM_NTASKS, "
                 "PMI_RANK/PMI_SIZE or OMPI_COMM_WORLD_RANK/SIZE, else 0/1)");
  app.add_option("--start-at", o.start_at,
                 "start the storm at this wall-clock instant, after set-up: ISO 8601 (2026-12-01T10:00:00Z), "
                 "@UNIX_SECONDS or +SECONDS");
  app.add_option("--seed", o.workload.seed, "random seed")->capture_default_str();
  app.add_option("--window,-w", o.storm.window_max, "queries in flight in all")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  app.add_option("--window-per-host", o.storm.window_per_host_max, "queries in flight per emulated host")
      ->capture_default_str()->check(CLI::Range(1u, 65535u));
  app.add_option("--host-window", o.host_windows, "HOST:N: host number HOST (by LID order) keeps N in flight (repeatable)");
  app.add_option("--rate,-r", o.storm.rate_qps, "open loop: queries per second (0 = closed loop)")->check(CLI::Range(0.0, 1e8));
  app.add_option("--count,-n", o.storm.queries_max, "measured queries to issue (0 = pattern or duration)");
  app.add_option("--duration,-d", o.storm.duration_ms, "measured time, ms (0 = count or pattern)");
  app.add_option("--warmup", o.storm.warmup_ms, "warm-up, ms: issued, not counted");
  app.add_option("--timeout", o.storm.retry.timeout_ms, "client timeout per attempt, ms")->capture_default_str()->check(CLI::Range(1u, 600000u));
  app.add_option("--retries", o.retries, "re-sends after a timeout")->capture_default_str()->check(CLI::Range(0u, 255u));
  app.add_option("--busy-backoff", o.storm.retry.busy_backoff_ms, "wait after a BUSY answer, ms")->capture_default_str();
  app.add_option("--busy-retries", o.busy_retries, "asks again after BUSY answers")->capture_default_str()->check(CLI::Range(0u, 255u));
  app.add_flag("--repeat", o.workload.repeat, "finite patterns start over until --count or --duration");
  app.add_option("--discover", o.discover, "how to find the hosts: auto | table | scan")->capture_default_str();
  app.add_option("--json", o.json_path, "write every figure as JSON");
  app.add_option("--plot", o.plot_path, "write an SVG: latency histogram and throughput over time");
  app.add_option("--html", o.html_path, "write a self-contained HTML report (tables and plots)");
  app.add_option("--label", o.label, "name of the SA in reports (e.g. opensm, madengine)");
  app.add_flag("--strict", o.strict,
               "exit 4 unless every planned query was answered right: no timeouts, no BUSY left, counts add up "
               "(exit 3 on wrong answers either way)");
  app.add_flag("--compare", o.compare, "run the storm twice (two SAs in turn) and print the ratios");
  app.add_option("--sa-lid2", o.sa_lid2, "--compare: the second SA's LID (default: the SM LID then)")->check(CLI::Range(0, 0xbfff));
  app.add_option("--between", o.between_cmd, "--compare: shell command run between the two storms (switch SAs)");
  app.add_flag("--pause", o.pause, "--compare: wait for Enter between the two storms");
  app.add_option("--label2", o.label2, "--compare: name of the second SA")->capture_default_str();
  app.add_option("--compare-files", o.compare_files, "print the ratios of two earlier --json results, run nothing")
      ->expected(2);
  app.add_flag("--no-progress", o.no_progress, "no live progress line even on a terminal");
  app.add_option("--embedded", o.embedded,
                 "run madengine (SM + SA) in this process on a simulated fabric and storm it, every host from its "
                 "own port, every PathRecord checked against the fabric: ft2:RADIX[:LEAVES[:HOSTS_PER_LEAF]] | "
                 "ft3:RADIX[:PODS] | random:SWITCHES:DEGREE:HOSTS[:SEED], each with @PROFILE for its links (sdr qdr fdr edr hdr ndr xdr ndr200 "
                 "hdr-ndr; e.g. ft2:64@ndr200)");
  app.add_option("--embedded-cores", o.embedded_cores, "--embedded: madengine engine cores")->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--embedded-sa-share", o.embedded_sa_share,
                 "--embedded: queries one requester may have queued at the SA (sa.requester_share_max)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--embedded-metrics-listen", o.embedded_metrics,
                 "--embedded: serve the embedded madengine's Prometheus metrics on HOST:PORT, as the daemon's "
                 "--metrics-listen does");
  app.add_flag("--no-oracle", o.no_oracle, "--embedded: do not check PathRecords against the fabric's LFTs");
  app.add_option("--plant-wrong-answer", o.plant,
                 "--embedded: corrupt one PathRecord answer on its way in, FIELD[:N] (the Nth answer; FIELD: "
                 "mtu | rate | pkey | sl | dlid | hop-limit), to show the checks catch it");
}

std::optional<Shard> parse_shard(std::string_view s) {
  const auto slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto i = to_u64(s.substr(0, slash)), n = to_u64(s.substr(slash + 1));
  if (!i || !n || *n == 0 || *i >= *n || *n > 0xffffffu) return std::nullopt;
  return Shard{static_cast<std::uint32_t>(*i), static_cast<std::uint32_t>(*n), "--shard"};
}

std::optional<Shard> shard_from_env(const EnvLookup& env) {
  static constexpr std::array<std::pair<const char*, const char*>, 3> kLaunchers = {{
      {"SLURM_PROCID", "SLURM_NTASKS"},
      {"PMI_RANK", "PMI_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
  }};
  for (const auto& [rank_var, size_var] : kLaunchers) {
    const char* rank = env(rank_var);
    const char* size = env(size_var);
    if (rank == nullptr && size == nullptr) continue;
    const std::string source = std::string(rank_var) + "/" + size_var;
    if (rank == nullptr || size == nullptr)
      throw std::invalid_argument(source + ": only one of the two is set");
    auto s = parse_shard(std::string(rank) + "/" + size);
    if (!s)
      throw std::invalid_argument(source + " = " + rank + "/" + size + ": want a rank below a positive size");
    s->source = source;
    return s;
  }
  return std::nullopt;
}

std::optional<std::int64_t> parse_start_at(std::string_view s, std::int64_t now_unix_ns) {
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') {
    const auto d = seconds_ns(s.substr(1));
    if (!d) return std::nullopt;
    return now_unix_ns + *d;
  }
  if (s.front() == '@') return seconds_ns(s.substr(1));
  // ISO 8601: date, 'T' (or a space), time, optional fraction, zone (Z or +-HH:MM; none = UTC).
  if (s.size() < 19 || (s[10] != 'T' && s[10] != ' ')) return std::nullopt;
  std::tm tm{};
  const std::string head(s.substr(0, 19));
  const char* end = ::strptime(head.c_str(), s[10] == 'T' ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  std::string_view rest = s.substr(19);
  std::int64_t frac_ns = 0;
  if (!rest.empty() && rest.front() == '.') {
    std::size_t k = 1;
    while (k < rest.size() && rest[k] >= '0' && rest[k] <= '9') ++k;
    const auto f = seconds_ns("0" + std::string(rest.substr(0, k)));
    if (!f || k == 1) return std::nullopt;
    frac_ns = *f;
    rest = rest.substr(k);
  }
  std::int64_t offset_s = 0;
  if (rest == "Z" || rest.empty()) {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const auto hh = to_u64(rest.substr(1, 2)), mm = to_u64(rest.substr(4, 2));
    if (!hh || !mm || *hh > 23 || *mm > 59) return std::nullopt;
    offset_s = static_cast<std::int64_t>(*hh * 3600 + *mm * 60) * (rest[0] == '+' ? 1 : -1);
  } else {
    return std::nullopt;
  }
  const time_t t = ::timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return (static_cast<std::int64_t>(t) - offset_s) * 1'000'000'000 + frac_ns;
}

void finish_options(Options& o, const EnvLookup& env, std::int64_t now_unix_ns) {
  if (o.transport == "umad") o.transport_kind = TransportKind::kUmad;
  else if (o.transport == "verbs") o.transport_kind = TransportKind::kVerbs;
  else throw std::invalid_argument("--transport wants umad or verbs, got '" + o.transport + "'");

  const auto pattern = pattern_from_string(o.pattern);
  if (!pattern) throw std::invalid_argument("unknown pattern '" + o.pattern + "'");
  o.workload.pattern = *pattern;
  std::string err;
  const auto mix = parse_mix(o.mix, err);
  if (!mix) throw std::invalid_argument(err);
  o.workload.mix = *mix;

  std::optional<Shard> shard;
  if (!o.shard.empty()) {
    shard = parse_shard(o.shard);
    if (!shard) throw std::invalid_argument("--shard wants i/n with i < n, got '" + o.shard + "'");
  } else {
    shard = shard_from_env(env);
  }
  if (!shard) shard = Shard{0, 1, "default"};
  o.workload.shard_index = shard->index;
  o.workload.shard_count = shard->count;
  o.shard_source = shard->source;

  if (!o.start_at.empty()) {
    const auto at = parse_start_at(o.start_at, now_unix_ns);
    if (!at)
      throw std::invalid_argument("--start-at wants 2026-12-01T10:00:00[.f][Z|+HH:MM], @UNIX_SECONDS or +SECONDS, got '" +
                                  o.start_at + "'");
    o.start_at_unix_ns = *at;
  }

  o.storm.window_overrides.clear();
  for (const std::string& hw : o.host_windows) {
    const auto colon = hw.find(':');
    const auto host = colon == std::string::npos ? std::nullopt : to_u64(std::string_view(hw).substr(0, colon));
    const auto window = colon == std::string::npos ? std::nullopt : to_u64(std::string_view(hw).substr(colon + 1));
    if (!host || !window || *window == 0 || *window > 0xffff || *host > 0xffffff)
      throw std::invalid_argument("--host-window wants HOST:N (N 1..65535), got '" + hw + "'");
    o.storm.window_overrides.emplace_back(static_cast<std::uint32_t>(*host), static_cast<std::uint32_t>(*window));
  }

  o.plant_fault = PlantedFault::kNone;
  o.plant_nth = 1;
  if (!o.plant.empty()) {
    const auto colon = o.plant.find(':');
    const auto f = planted_fault_from_string(std::string_view(o.plant).substr(0, colon));
    const auto nth = colon == std::string::npos ? std::optional<std::uint64_t>(1)
                                                : to_u64(std::string_view(o.plant).substr(colon + 1));
    if (!f || !nth || *nth == 0)
      throw std::invalid_argument("--plant-wrong-answer wants FIELD[:N] (mtu, rate, pkey, sl, dlid, hop-limit), got '" +
                                  o.plant + "'");
    if (o.embedded.empty()) throw std::invalid_argument("--plant-wrong-answer needs --embedded");
    o.plant_fault = *f;
    o.plant_nth = *nth;
  }

  o.storm.by_gid = o.by_gid;
  o.storm.retry.retries = static_cast<std::uint8_t>(o.retries);
  o.storm.retry.busy_retries = static_cast<std::uint8_t>(o.busy_retries);
  if (o.discover != "auto" && o.discover != "table" && o.discover != "scan")
    throw std::invalid_argument("--discover wants auto, table or scan, got '" + o.discover + "'");
  o.storm.sa.sl = static_cast<std::uint8_t>(o.sl);
}

}  // namespace madstorm
