// The SA conformance method shared by the ibsim conformance tests: each SM
// brings up its own fresh ibsim fabric from bare (nothing the other wrote
// survives), OpenSM first; madengine then starts from OpenSM's own guid2lid
// file, so every port has the same LID under both and records compare field
// by field. A comparison never retries, never passes when OpenSM's side
// failed, counts records both ways and fails on a field one side lacks; the
// only fields left out are listed, with the reason, by the test, scoped to
// the query (and, where it applies, the one record) they concern. OpenSM and
// every client run over the RMPP layer (kLayered): saquery reads whole
// multi-MAD answers from both SAs, as over the kernel's MAD layer.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ibsim_harness.hpp"
#include "saquery_records.hpp"

namespace madengine::ibsim::conformance {

// The fabric of a conformance run: OpenSM and the clients over the RMPP
// layer. madengine, in the test process, does RMPP itself; the binary runs
// over the layer too (SELF_LAYERED in CMakeLists.txt), which hands it whole,
// zero-padded MADs as the kernel would.
inline constexpr IbsimFabric::Options kLayered{.rmpp_layer = true};

// A field that differs between the two SMs by configuration or by design.
struct Normalised {
  const char* query;   // saquery arguments this applies to (a prefix; "" = every query)
  const char* field;   // "*": every field but `where_field`; "row *": every field named "row ..."
  const char* reason;
  // Only in records whose `where_field` is `where_value` (e.g. the SM's own port); null: every record.
  const char* where_field = nullptr;
  const char* where_value = nullptr;
};

// A query an SA must refuse: the words saquery prints for each SA (a
// substring of its stderr; "" = answered with no records). Where the two
// differ, `why` says why madengine answers as it does (a deliberate difference).
struct ExpectedError {
  const char* query;
  const char* opensm;
  const char* madengine;
  const char* why = "";
};

// Records OpenSM lists and madengine does not, by design: tables OpenSM
// never read, which it answers as zeros (`rows`: the prefix of the table's
// row fields, e.g. "VL#"). madengine lists the tables its SM read; each of
// them must be one of OpenSM's records (paired by the comparison's order),
// and each record only OpenSM lists must be zeros in every row.
struct UnreadTables {
  const char* query;  // saquery arguments this applies to (exact)
  std::vector<const char*> rows;
  const char* reason;
};

// Whether every value in a table row ("0| 0| 0|...") is 0.
inline bool zero_row(const std::string& v) {
  return v.find_first_not_of("0| ") == std::string::npos;
}

inline bool normalised(std::span<const Normalised> rules, const std::string& q, const Record& rec, const std::string& field) {
  for (const auto& n : rules) {
    const std::string_view f = n.field;
    const bool any = f == "*";
    const bool prefix = !any && f.size() > 1 && f.back() == '*';
    const bool match = any || (prefix ? field.rfind(f.substr(0, f.size() - 1), 0) == 0 : field == f);
    if (!match || q.rfind(n.query, 0) != 0) continue;
    if (n.where_field == nullptr) return true;
    if (any && field == n.where_field) continue;
    const auto it = rec.find(n.where_field);
    if (it != rec.end() && it->second == n.where_value) return true;
  }
  return false;
}

// One saquery, exactly once: no repeat hides a difference.
inline Outcome saquery_once(const IbsimFabric& f, const std::string& args, const char* host) {
  const RunResult r = f.run("saquery " + args, host, std::chrono::seconds(20));
  return {r.timed_out ? -1 : r.exit_code, r.out, r.err};
}

// One run of each diag command (smpquery, ibroute...) from `host`, keyed
// by the command, its exit status in the text: what the SM wrote, to compare
// between the two SMs' fabrics.
inline std::map<std::string, std::string> run_each(const IbsimFabric& f, const std::vector<std::string>& cmds,
                                                   const char* host) {
  std::map<std::string, std::string> out;
  for (const auto& c : cmds) {
    const RunResult r = f.run(c, host, std::chrono::seconds(20));
    out[c] = "exit " + std::to_string(r.timed_out ? -1 : r.exit_code) + "\n" + r.out + r.err;
  }
  return out;
}

struct Tally {
  std::size_t queries = 0, records = 0, errors_matched = 0;
};

// Differences between OpenSM's (`a`) and madengine's (`b`) answer to `q`;
// empty when they agree. `order` sorts records of both before comparing
// (null: as the SAs sent them).
inline std::string compare(const std::string& q, const Outcome& a, const Outcome& b, std::span<const Normalised> rules,
                           std::span<const ExpectedError> expected, Tally& tally,
                           const std::function<bool(const Record&, const Record&)>& order = nullptr,
                           std::span<const UnreadTables> unread = {}) {
  std::ostringstream d;
  ++tally.queries;
  const ExpectedError* want_error = nullptr;
  for (const auto& e : expected)
    if (q == e.query) want_error = &e;
  if (want_error != nullptr) {
    for (const Outcome* o : {&a, &b}) {
      const char* who = o == &a ? "OpenSM" : "madengine";
      const std::string want = o == &a ? want_error->opensm : want_error->madengine;
      if (want.empty()) {
        if (o->exit_code != 0 || !parse_records(o->out).empty())
          d << who << ": expected no records, got exit " << o->exit_code << ": " << o->out << o->err << "\n";
      } else if (o->exit_code == 0) {
        d << who << " answered; expected the error '" << want << "'\n";
      } else if (o->err.find(want) == std::string::npos) {
        d << who << " failed otherwise: " << o->err << "\n";
      }
    }
    if (d.str().empty()) ++tally.errors_matched;
    return d.str();
  }
  if (a.exit_code != 0) d << "OpenSM's saquery failed (exit " << a.exit_code << "): " << a.err << "\n";
  if (b.exit_code != 0) d << "madengine's saquery failed (exit " << b.exit_code << "): " << b.err << "\n";
  if (a.exit_code != 0 || b.exit_code != 0) return d.str();
  auto ra = parse_records(a.out), rb = parse_records(b.out);
  if (order) {
    std::sort(ra.begin(), ra.end(), order);
    std::sort(rb.begin(), rb.end(), order);
  }
  const UnreadTables* lists_unread = nullptr;
  for (const auto& u : unread)
    if (q == u.query) lists_unread = &u;
  if (lists_unread != nullptr && order) {
    // Pair the records by `order`: OpenSM's unpaired ones must be tables of
    // zeros, and madengine has none of its own.
    std::vector<Record> pa, pb;
    std::size_t i = 0, j = 0, zeros = 0;
    while (i < ra.size() || j < rb.size()) {
      if (j == rb.size() || (i < ra.size() && order(ra[i], rb[j]))) {
        for (const auto& [k, v] : ra[i])
          for (const char* row : lists_unread->rows)
            if (k.rfind(row, 0) == 0 && !zero_row(v)) d << "OpenSM's record " << i << " only: " << k << " " << v << "\n";
        ++zeros;
        ++i;
      } else if (i == ra.size() || order(rb[j], ra[i])) {
        d << "madengine's record " << j << " is not one of OpenSM's\n";
        ++j;
      } else {
        pa.push_back(ra[i++]);
        pb.push_back(rb[j++]);
      }
    }
    if (pb.empty()) d << "no record in common\n";
    std::printf("%s: OpenSM %zu records, madengine %zu, %zu of OpenSM's are zero tables madengine does not list\n",
                q.c_str(), ra.size(), rb.size(), zeros);
    ra = std::move(pa);
    rb = std::move(pb);
  }
  if (ra.size() != rb.size()) d << "records: OpenSM " << ra.size() << ", madengine " << rb.size() << "\n";
  for (std::size_t i = 0; i < std::min(ra.size(), rb.size()); ++i) {
    for (const auto& [k, v] : ra[i]) {
      if (normalised(rules, q, ra[i], k)) continue;
      const auto it = rb[i].find(k);
      if (it == rb[i].end()) d << "record " << i << ": field " << k << " missing from madengine's\n";
      else if (it->second != v) d << "record " << i << ": " << k << ": " << v << " vs " << it->second << "\n";
    }
    for (const auto& [k, v] : rb[i])
      if (!ra[i].contains(k) && !normalised(rules, q, rb[i], k))
        d << "record " << i << ": field " << k << " only in madengine's (" << v << ")\n";
  }
  if (d.str().empty()) tally.records += ra.size();
  return d.str();
}

// The fields that name a record in saquery's output (LIDs, ports, blocks,
// GIDs, names), as a key: two SAs may list a table in different orders.
inline std::string record_key(const Record& r) {
  static const char* const kKeys[] = {"lid",  "EndPortLid", "PortNum", "FromLID", "FromPort", "LID",
                                      "Port", "InPort",     "OutPort", "Block",   "slid",     "dlid",
                                      "MGID", "PortGid",    "ServiceName", "SubscriberGID"};
  std::string key;
  for (const char* k : kKeys) {
    const auto it = r.find(k);
    if (it == r.end()) continue;
    const std::string& v = it->second;
    // Decimal numbers sort as numbers.
    const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    key += (number ? std::string(10 - std::min<std::size_t>(v.size(), 10), '0') : "") + v + "|";
  }
  return key;
}

inline bool by_record_key(const Record& a, const Record& b) { return record_key(a) < record_key(b); }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// OpenSM on a fresh fabric of `topology`: brought up from bare ibsim,
// `actions` (client set-up, may be empty), then every query once. Returns
// the answers and OpenSM's guid2lid file (for madengine to keep its LIDs).
struct OpenSmRun {
  bool ok = false;
  std::string error;
  std::map<std::string, Outcome> answers;
  std::string guid2lid;
};

inline OpenSmRun run_opensm(const std::string& topology, const char* sm_host, const char* query_host,
                            const std::vector<std::string>& queries, const std::vector<std::string>& opensm_args = {},
                            const std::function<void(const IbsimFabric&)>& actions = nullptr,
                            const IbsimFabric::Options& fabric_options = {}) {
  OpenSmRun out;
  IbsimFabric fabric(topology, fabric_options);
  if (!fabric.ok()) {
    out.error = fabric.error();
    return out;
  }
  if (!fabric.start_opensm(0, sm_host, opensm_args) || !fabric.wait_subnet_up(std::chrono::seconds(60))) {
    out.error = "OpenSM did not come up:\n" + fabric.opensm_log();
    return out;
  }
  if (actions) actions(fabric);
  for (const auto& q : queries) out.answers[q] = saquery_once(fabric, q, query_host);
  out.guid2lid = read_text(fabric.work_dir() + "/opensm/guid2lid");
  fabric.stop_opensm();
  out.ok = !out.guid2lid.empty();
  if (!out.ok) out.error = "OpenSM wrote no guid2lid file in " + fabric.work_dir() + "/opensm";
  return out;
}

}  // namespace madengine::ibsim::conformance
