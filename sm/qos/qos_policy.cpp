// The qos-policy.conf subset (see qos_policy.hpp): a line-oriented reader
// of OpenSM's keywords. A section or subsection opens and closes on its own
// line ("qos-levels" ... "end-qos-levels"); inside, "key: value" lines, a
// repeated key adding to the list; '#' starts a comment; names may be quoted.
#include "sm/qos/qos_policy.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "madengine/wire/link_rate.hpp"

namespace madengine::sm {

namespace {

std::string unquote(std::string_view s) {
  s = trim_blanks(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::vector<std::string> names(std::string_view value) {
  std::vector<std::string> out;
  while (true) {
    const auto c = value.find(',');
    const std::string n = unquote(value.substr(0, c));
    if (!n.empty()) out.push_back(n);
    if (c == std::string_view::npos) return out;
    value.remove_prefix(c + 1);
  }
}

bool number(std::string_view s, std::uint64_t& out) {
  const std::string t(trim_blanks(s));
  if (t.empty() || t[0] == '-' || t[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  out = std::strtoull(t.c_str(), &end, 0);
  return errno == 0 && end != t.c_str() && *end == '\0';
}

enum class Section { kTop, kPortGroups, kPortGroup, kQosSetup, kLevels, kLevel, kRules, kRule };

class Parser {
 public:
  Parser(const std::string& file, FileIssue& error) : file_(file), error_(error) { p_.file = file; }

  bool line(std::string_view text, unsigned n) {
    line_ = n;
    if (const auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
    text = trim_blanks(text);
    if (text.empty()) return true;
    if (sec_ == Section::kQosSetup) {  // read and ignored, as OpenSM does (its tables come from the options)
      if (text == "end-qos-setup") sec_ = Section::kTop;
      return true;
    }
    const auto colon = text.find(':');
    if (colon == std::string_view::npos) return keyword(text);
    return key(trim_blanks(text.substr(0, colon)), trim_blanks(text.substr(colon + 1)));
  }

  std::optional<QosPolicy> finish() {
    if (sec_ != Section::kTop) return fail(open_line_, "section not closed before the end of the file"), std::nullopt;
    const auto def = std::find_if(p_.levels.begin(), p_.levels.end(), [](const QosLevelDef& l) { return l.name == "DEFAULT"; });
    if (def == p_.levels.end()) return fail(0, "no qos-level named DEFAULT (OpenSM requires one)"), std::nullopt;
    p_.default_level = static_cast<std::size_t>(def - p_.levels.begin());
    for (const QosMatchRuleDef& r : p_.rules) {
      if (r.level.empty()) return fail(r.line, "qos-match-rule without qos-level-name"), std::nullopt;
      if (std::none_of(p_.levels.begin(), p_.levels.end(), [&](const QosLevelDef& l) { return l.name == r.level; }))
        return fail(r.line, "qos-level-name '" + r.level + "' names no qos-level"), std::nullopt;
      for (const auto* list : {&r.source, &r.destination})
        for (const std::string& g : *list)
          if (std::none_of(p_.groups.begin(), p_.groups.end(), [&](const QosPortGroupDef& x) { return x.name == g; }))
            return fail(r.line, "port group '" + g + "' is not defined in port-groups"), std::nullopt;
    }
    return std::move(p_);
  }

 private:
  bool keyword(std::string_view k) {
    struct Step {
      std::string_view word;
      Section from, to;
    };
    static constexpr Step kSteps[] = {
        {"port-groups", Section::kTop, Section::kPortGroups},     {"end-port-groups", Section::kPortGroups, Section::kTop},
        {"port-group", Section::kPortGroups, Section::kPortGroup}, {"end-port-group", Section::kPortGroup, Section::kPortGroups},
        {"qos-setup", Section::kTop, Section::kQosSetup},
        {"qos-levels", Section::kTop, Section::kLevels},           {"end-qos-levels", Section::kLevels, Section::kTop},
        {"qos-level", Section::kLevels, Section::kLevel},          {"end-qos-level", Section::kLevel, Section::kLevels},
        {"qos-match-rules", Section::kTop, Section::kRules},       {"end-qos-match-rules", Section::kRules, Section::kTop},
        {"qos-match-rule", Section::kRules, Section::kRule},       {"end-qos-match-rule", Section::kRule, Section::kRules},
    };
    if (k == "qos-ulps") return fail(line_, "qos-ulps (the simplified policy) is not supported: write qos-match-rules");
    for (const Step& s : kSteps) {
      if (k != s.word) continue;
      if (sec_ != s.from) return fail(line_, "'" + std::string(k) + "' is not allowed here");
      sec_ = s.to;
      if (s.from == Section::kTop) open_line_ = line_;
      if (s.to == Section::kPortGroup) p_.groups.push_back({.line = line_});
      if (s.to == Section::kLevel) p_.levels.push_back({.line = line_});
      if (s.to == Section::kRule) p_.rules.push_back({.line = line_});
      if (s.from == Section::kPortGroup && p_.groups.back().name.empty()) return fail(p_.groups.back().line, "port-group without a name");
      if (s.from == Section::kLevel && p_.levels.back().name.empty()) return fail(p_.levels.back().line, "qos-level without a name");
      return true;
    }
    return fail(line_, "unknown keyword '" + std::string(k) + "'");
  }

  // "0x10, 0x20-0x2f" (what OpenSM's ranges look like).
  bool ranges(std::string_view value, std::uint64_t max, std::vector<QosRange>& out, const char* what) {
    while (true) {
      const auto c = value.find(',');
      const std::string_view item = trim_blanks(value.substr(0, c));
      const auto dash = item.find('-');
      QosRange r;
      const bool ok = dash == std::string_view::npos ? number(item, r.lo) && (r.hi = r.lo, true)
                                                     : number(item.substr(0, dash), r.lo) && number(item.substr(dash + 1), r.hi);
      if (!ok || r.lo > r.hi || r.hi > max) return fail(line_, std::string(what) + ": '" + std::string(item) + "' is not a number or range");
      out.push_back(r);
      if (c == std::string_view::npos) return true;
      value.remove_prefix(c + 1);
    }
  }

  bool small(std::string_view value, std::uint64_t max, std::optional<std::uint8_t>& out, const char* what) {
    std::uint64_t v = 0;
    if (!number(value, v) || v > max) return fail(line_, std::string(what) + ": '" + std::string(value) + "' is not 0.." + std::to_string(max));
    out = static_cast<std::uint8_t>(v);
    return true;
  }

  bool key(std::string_view k, std::string_view v) {
    if (k == "use") return true;  // a description, for logs
    switch (sec_) {
      case Section::kPortGroup: {
        QosPortGroupDef& g = p_.groups.back();
        if (k == "name") return (g.name = unquote(v)), true;
        if (k == "port-guid") return ranges(v, ~0ull, g.port_guids, "port-guid");
        if (k == "pkey") return ranges(v, 0xffff, g.pkeys, "pkey");
        if (k == "partition") {
          for (auto& n : names(v)) g.partitions.push_back(std::move(n));
          return true;
        }
        if (k == "node-type") {
          for (const std::string& t : names(v)) {
            if (t == "CA") g.node_types |= qos_node_type::kCa;
            else if (t == "SWITCH") g.node_types |= qos_node_type::kSwitch;
            else if (t == "ROUTER") g.node_types |= qos_node_type::kRouter;
            else if (t == "SELF") g.node_types |= qos_node_type::kSelf;
            else if (t == "ALL") g.node_types |= qos_node_type::kAll;
            else return fail(line_, "node-type '" + t + "' is not CA, SWITCH, ROUTER, SELF or ALL");
          }
          return true;
        }
        if (k == "port-name") return fail(line_, "port-name is not supported: name the ports by port-guid");
        break;
      }
      case Section::kLevel: {
        QosLevelDef& l = p_.levels.back();
        if (k == "name") return (l.name = unquote(v)), true;
        if (k == "sl") return small(v, 15, l.sl, "sl");
        if (k == "mtu-limit") return small(v, 5, l.mtu_limit, "mtu-limit");
        if (k == "rate-limit") {
          if (!small(v, wire::rate_code::kMax, l.rate_limit, "rate-limit")) return false;
          if (wire::rate_mbps(*l.rate_limit) == 0) return fail(line_, "rate-limit " + std::string(v) + " is no IBA rate code (2..24)");
          return true;
        }
        if (k == "packet-life") return small(v, 0x3f, l.packet_life, "packet-life");
        if (k == "pkey") return ranges(v, 0xffff, l.pkeys, "pkey");
        if (k == "path-bits") return fail(line_, "path-bits is not supported");
        break;
      }
      case Section::kRule: {
        QosMatchRuleDef& r = p_.rules.back();
        if (k == "source") {
          for (auto& n : names(v)) r.source.push_back(std::move(n));
          return true;
        }
        if (k == "destination") {
          for (auto& n : names(v)) r.destination.push_back(std::move(n));
          return true;
        }
        if (k == "qos-class") return ranges(v, 0xfff, r.qos_class, "qos-class");
        if (k == "service-id") return ranges(v, ~0ull, r.service_id, "service-id");
        if (k == "pkey") return ranges(v, 0xffff, r.pkey, "pkey");
        if (k == "qos-level-name") return (r.level = unquote(v)), true;
        break;
      }
      default: break;
    }
    return fail(line_, "'" + std::string(k) + ":' is not known here");
  }

  bool fail(unsigned line, std::string what) {
    error_ = {file_, line, std::move(what)};
    return false;
  }

  const std::string& file_;
  FileIssue& error_;
  QosPolicy p_;
  Section sec_ = Section::kTop;
  unsigned line_ = 0, open_line_ = 0;
};

}  // namespace

bool in_ranges(const std::vector<QosRange>& r, std::uint64_t v) noexcept {
  return std::any_of(r.begin(), r.end(), [&](const QosRange& x) { return x.contains(v); });
}

std::optional<QosPolicy> parse_qos_policy(std::string_view text, const std::string& file, FileIssue& error) {
  Parser p(file, error);
  if (!for_each_line(text, [&](std::string_view line, unsigned n) { return p.line(line, n); })) return std::nullopt;
  return p.finish();
}

std::optional<QosPolicy> load_qos_policy(const std::string& path, FileIssue& error) {
  return load_text_file<QosPolicy>(path, error, parse_qos_policy);
}

}  // namespace madengine::sm
