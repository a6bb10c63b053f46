// Workload: the order of queries for each load pattern.
#include "lib/workload.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <stdexcept>

namespace madstorm {

namespace {
constexpr std::array<const char*, kPatternCount> kPatternNames = {
    "job-start", "restart", "random", "hotspot", "gettable", "noderecord", "mcast", "mix", "rereg-join", "rereg"};
}

const char* to_string(Pattern p) noexcept { return kPatternNames[static_cast<std::size_t>(p)]; }

std::optional<Pattern> pattern_from_string(std::string_view s) noexcept {
  for (std::size_t i = 0; i < kPatternCount; ++i)
    if (s == kPatternNames[i]) return static_cast<Pattern>(i);
  return std::nullopt;
}

const char* to_string(QueryKind k) noexcept {
  switch (k) {
    case QueryKind::kPathRecord: return "path_record";
    case QueryKind::kPathTable: return "path_table";
    case QueryKind::kNodeRecord: return "node_record";
    case QueryKind::kMcJoin: return "mc_join";
    case QueryKind::kMcLeave: return "mc_leave";
    case QueryKind::kInformSub: return "inform_sub";
  }
  return "unknown";
}

std::optional<MixWeights> parse_mix(std::string_view s, std::string& error) {
  MixWeights w{0, 0, 0, 0};
  while (!s.empty()) {
    const auto comma = s.find(',');
    const std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) {
      error = "mix item '" + std::string(item) + "' is not NAME:WEIGHT";
      return std::nullopt;
    }
    const std::string_view name = item.substr(0, colon), num = item.substr(colon + 1);
    std::uint32_t v = 0;
    const auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc{} || ptr != num.data() + num.size() || v > 1'000'000) {
      error = "mix weight '" + std::string(num) + "' is not a number up to 1000000";
      return std::nullopt;
    }
    if (name == "pr") w.path_record = v;
    else if (name == "table") w.path_table = v;
    else if (name == "nr") w.node_record = v;
    else if (name == "mc") w.mc_join = v;
    else {
      error = "mix record type '" + std::string(name) + "' is not pr, table, nr or mc";
      return std::nullopt;
    }
  }
  if (w.path_record + w.path_table + w.node_record + w.mc_join == 0) {
    error = "mix weights are all zero";
    return std::nullopt;
  }
  return w;
}

Workload::Workload(const WorkloadConfig& cfg, std::span<const Host> hosts)
    : cfg_(cfg), hosts_(static_cast<std::uint32_t>(hosts.size())), rng_(cfg.seed) {
  if (hosts.size() < 2) throw std::invalid_argument("a storm needs at least two hosts, found " + std::to_string(hosts.size()));
  if (hosts.size() > 0xffffffu) throw std::invalid_argument("too many hosts");
  if (cfg.shard_count == 0 || cfg.shard_index >= cfg.shard_count)
    throw std::invalid_argument("shard " + std::to_string(cfg.shard_index) + "/" + std::to_string(cfg.shard_count) +
                                " is out of range");
  std::uint32_t members = hosts_;
  if (cfg.pattern == Pattern::kJobStart && cfg.job_size != 0) {
    if (cfg.job_size < 2 || cfg.job_size > hosts_)
      throw std::invalid_argument("job size " + std::to_string(cfg.job_size) + " must be 2.." + std::to_string(hosts_));
    members = cfg.job_size;
  }
  if (cfg.pattern == Pattern::kHotSpot && (cfg.hot_dests == 0 || cfg.hot_dests >= hosts_))
    throw std::invalid_argument("hot destinations " + std::to_string(cfg.hot_dests) + " must be 1.." +
                                std::to_string(hosts_ - 1));
  for (std::uint32_t i = cfg.shard_index; i < members; i += cfg.shard_count) sources_.push_back(i);
  if (sources_.empty()) throw std::invalid_argument("shard has no hosts");
  const auto s = static_cast<std::uint64_t>(sources_.size());

  switch (cfg.pattern) {
    case Pattern::kJobStart:
      per_source_total_ = members - 1;
      total_ = s * per_source_total_;
      break;
    case Pattern::kRestart: {
      per_source_total_ = hosts_ - 1;
      total_ = s * per_source_total_;
      // Each host walks its peers from a random offset with a random stride
      // coprime to the peer count: a full, distinct walk without a table.
      const std::uint32_t peers = hosts_ - 1;
      offset_.resize(sources_.size());
      stride_.resize(sources_.size());
      for (std::size_t i = 0; i < sources_.size(); ++i) {
        offset_[i] = random_below(peers);
        std::uint32_t st = 1 + random_below(peers);
        while (std::gcd(st, peers) != 1) st = st % peers + 1;
        stride_[i] = st;
      }
      turn_order_.resize(sources_.size());
      std::iota(turn_order_.begin(), turn_order_.end(), 0u);
      std::shuffle(turn_order_.begin(), turn_order_.end(), rng_);
      break;
    }
    case Pattern::kMcastJoin: total_ = 2 * s; break;
    case Pattern::kReregJoin:
      per_source_total_ = kReregGroups + 1u;
      total_ = s * per_source_total_;
      break;
    case Pattern::kRereg:
      per_source_total_ = 2u * kReregGroups + 1u;
      total_ = s * per_source_total_;
      break;
    case Pattern::kGetTable:
      per_source_total_ = 1;
      total_ = s;
      break;
    case Pattern::kMix: {
      const MixWeights& w = cfg.mix;
      mix_cum_ = {w.path_record, w.path_record + w.path_table, w.path_record + w.path_table + w.node_record,
                  w.path_record + w.path_table + w.node_record + w.mc_join};
      if (mix_cum_[3] == 0) throw std::invalid_argument("mix weights are all zero");
      break;
    }
    default: break;
  }
}

std::uint32_t Workload::random_below(std::uint32_t n) noexcept {
  // Lemire's multiply-shift: bias below 2^-32, fine for load generation.
  return static_cast<std::uint32_t>(((rng_() >> 32) * std::uint64_t{n}) >> 32);
}

std::uint32_t Workload::random_peer(std::uint32_t src, std::uint32_t n) noexcept {
  const std::uint32_t d = random_below(n - 1);
  return d >= src ? d + 1 : d;
}

bool Workload::per_source() const noexcept {
  return cfg_.pattern == Pattern::kJobStart || cfg_.pattern == Pattern::kRestart || cfg_.pattern == Pattern::kGetTable ||
         cfg_.pattern == Pattern::kReregJoin || cfg_.pattern == Pattern::kRereg;
}

// A host's reregistration as IPoIB and the SA client make it: every group
// left, then joined again in order, then the subscription Set again
// (rereg-join: the joins and the subscription alone). One query at a time
// per host (--window-per-host 1) keeps a group's leave before its join.
void Workload::rereg_query(std::uint64_t m, Query& q) const noexcept {
  q.dst = q.src;
  const bool leaves = cfg_.pattern == Pattern::kRereg;
  const std::uint64_t joins_from = leaves ? kReregGroups : 0;
  if (m < joins_from) {
    q.kind = QueryKind::kMcLeave;
    q.group = static_cast<std::uint8_t>(m);
  } else if (m < joins_from + kReregGroups) {
    q.kind = QueryKind::kMcJoin;
    q.group = static_cast<std::uint8_t>(m - joins_from);
  } else {
    q.kind = QueryKind::kInformSub;
  }
}

void Workload::query_of(std::uint32_t t, std::uint64_t m, Query& q) const noexcept {
  q = Query{};
  q.src = sources_[t];
  switch (cfg_.pattern) {
    case Pattern::kJobStart: {
      const std::uint32_t members = cfg_.job_size != 0 ? cfg_.job_size : hosts_;
      q.dst = static_cast<std::uint32_t>((q.src + 1 + m) % members);
      return;
    }
    case Pattern::kRestart: {
      const std::uint32_t peers = hosts_ - 1;
      const auto step = static_cast<std::uint32_t>((offset_[t] + m * stride_[t]) % peers);
      q.dst = (q.src + 1 + step) % hosts_;
      return;
    }
    case Pattern::kReregJoin:
    case Pattern::kRereg:
      rereg_query(m, q);
      return;
    default:  // kGetTable
      q.kind = QueryKind::kPathTable;
      q.dst = q.src;
      return;
  }
}

bool Workload::next(Query& q) noexcept {
  if (total_ != 0 && produced_ >= total_ && !cfg_.repeat) return false;
  // A repeating pattern runs its rounds again (restart: the same walks).
  const std::uint64_t i = total_ != 0 ? produced_ % total_ : produced_;
  ++produced_;
  const auto s = static_cast<std::uint64_t>(sources_.size());
  q = Query{};
  switch (cfg_.pattern) {
    case Pattern::kJobStart: {
      // Round k: every rank r asks for rank r + k, so all ranks start at once
      // and each walks its peers starting after itself.
      const std::uint32_t members = cfg_.job_size != 0 ? cfg_.job_size : hosts_;
      const std::uint64_t k = 1 + i / s;
      q.src = sources_[static_cast<std::size_t>(i % s)];
      q.dst = static_cast<std::uint32_t>((q.src + k) % members);
      return true;
    }
    case Pattern::kRestart: {
      const std::uint32_t peers = hosts_ - 1;
      const std::uint64_t k = i / s;
      const std::uint32_t t = turn_order_[static_cast<std::size_t>(i % s)];
      q.src = sources_[t];
      const auto step = static_cast<std::uint32_t>((offset_[t] + k * stride_[t]) % peers);
      q.dst = (q.src + 1 + step) % hosts_;
      return true;
    }
    case Pattern::kRandomPairs:
      q.src = random_source();
      q.dst = random_peer(q.src, hosts_);
      return true;
    case Pattern::kHotSpot:
      q.src = random_source();
      q.dst = random_below(cfg_.hot_dests);
      // A hot host does not ask for itself: the next hot host instead, or
      // (one hot host) any other host.
      if (q.dst == q.src) q.dst = cfg_.hot_dests > 1 ? (q.dst + 1) % cfg_.hot_dests : (q.src + 1) % hosts_;
      return true;
    case Pattern::kGetTable:
      q.kind = QueryKind::kPathTable;
      q.src = sources_[static_cast<std::size_t>(i % s)];
      q.dst = q.src;
      return true;
    case Pattern::kReregJoin:
    case Pattern::kRereg:
      // Round m: every host's m-th query.
      q.src = sources_[static_cast<std::size_t>(i % s)];
      rereg_query(i / s, q);
      return true;
    case Pattern::kNodeRecord:
      q.kind = QueryKind::kNodeRecord;
      q.src = random_source();
      q.dst = random_below(hosts_);
      return true;
    case Pattern::kMcastJoin:
      // Every host joins; the leaves wait until every join was answered.
      q.src = sources_[static_cast<std::size_t>(i % s)];
      q.dst = q.src;
      q.kind = i < s ? QueryKind::kMcJoin : QueryKind::kMcLeave;
      q.barrier = i == s;
      return true;
    case Pattern::kMix: {
      const std::uint32_t r = random_below(mix_cum_[3]);
      q.src = random_source();
      if (r < mix_cum_[0]) {
        q.dst = random_peer(q.src, hosts_);
      } else if (r < mix_cum_[1]) {
        q.kind = QueryKind::kPathTable;
        q.dst = q.src;
      } else if (r < mix_cum_[2]) {
        q.kind = QueryKind::kNodeRecord;
        q.dst = random_below(hosts_);
      } else if (pending_leave_) {
        q.kind = QueryKind::kMcLeave;
        q.src = q.dst = *pending_leave_;
        q.barrier = true;  // after its join was answered
        pending_leave_.reset();
      } else {
        q.kind = QueryKind::kMcJoin;
        q.dst = q.src;
        pending_leave_ = q.src;
      }
      return true;
    }
  }
  return false;
}

}  // namespace madstorm
