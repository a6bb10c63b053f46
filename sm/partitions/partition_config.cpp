// The partitions.conf parser (see partition_config.hpp). It follows the
// grammar OpenSM 3.3.23 accepts, including its leniencies (a keyword or flag
// may be abbreviated to any prefix, an unknown flag is a warning, numbers are
// C literals: 0x hex, leading-0 octal, decimal), so an operator's file reads
// the same. Where OpenSM gives up on a bad file and falls back to its default
// partition, this parser names file:line and the caller keeps what it had.
#include "sm/partitions/partition_config.hpp"

#include <arpa/inet.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "madengine/wire/link_rate.hpp"

namespace madengine::sm {

namespace {

// OpenSM compares a word with strncmp(word, keyword, strlen(word)): any
// non-empty prefix of the keyword names it.
bool abbreviates(std::string_view word, std::string_view keyword) noexcept {
  return !word.empty() && word.size() <= keyword.size() && keyword.substr(0, word.size()) == word;
}

// A C integer literal (strtoull base 0). `rest_ok` tells a number followed by
// junk ("4x") from no number at all.
struct Number {
  bool ok = false;       // a number, and nothing after it
  bool partial = false;  // a number followed by other characters
  std::uint64_t value = 0;
};

Number parse_number(std::string_view s) {
  Number n;
  const std::string text(trim_blanks(s));
  if (text.empty() || text[0] == '-' || text[0] == '+') return n;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (end == text.c_str() || errno == ERANGE) return n;
  n.value = v;
  n.ok = *end == '\0';
  n.partial = !n.ok;
  return n;
}

// "name" or "name=value", both trimmed.
struct Token {
  std::string_view name, value;
  bool has_value = false;
};

Token split_token(std::string_view item) {
  Token t;
  const auto eq = item.find('=');
  t.name = trim_blanks(item.substr(0, eq));
  if (eq != std::string_view::npos) {
    t.value = trim_blanks(item.substr(eq + 1));
    t.has_value = true;
  }
  return t;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

class Parser {
 public:
  Parser(const std::string& file, FileIssue& error) : file_(file), error_(error) { cfg_.file = file; }

  bool line(std::string_view text, unsigned line_no) {
    line_ = line_no;
    if (const auto hash = text.find('#'); hash != std::string_view::npos) text = text.substr(0, hash);
    while (!trim_blanks(text).empty()) {
      const auto semi = text.find(';');
      const std::string_view piece = text.substr(0, semi);
      if (!this->piece(piece)) return false;
      if (semi == std::string_view::npos) break;
      open_ = false;  // ';' ends the statement
      text.remove_prefix(semi + 1);
    }
    return true;
  }

  std::optional<PartitionConfig> finish() {
    if (open_)
      warn(cfg_.defs.back().line, "the last partition definition has no closing ';' (taken as ended by the file)");
    return std::move(cfg_);
  }

 private:
  // Text up to a ';' or the end of a line: a header (when no statement is
  // open) and then members and mgid lines.
  bool piece(std::string_view p) {
    if (trim_blanks(p).empty()) return true;
    if (!open_) {
      const auto colon = p.find(':');
      if (colon == std::string_view::npos) return fail("no partition definition found (expected 'Name=PKey[,flags] : members')");
      if (!header(p.substr(0, colon))) return false;
      open_ = true;
      p.remove_prefix(colon + 1);
    }
    PartitionDef& def = cfg_.defs.back();
    while (!trim_blanks(p).empty()) {
      const auto comma = p.find(',');
      const std::string_view item = p.substr(0, comma);
      const Token t = split_token(item);
      if (t.name == "mgid") return mgroup(def, t.value, comma == std::string_view::npos ? std::string_view{} : p.substr(comma + 1));
      if (!member(def, t)) return false;
      if (comma == std::string_view::npos) break;
      p.remove_prefix(comma + 1);
    }
    return true;
  }

  bool header(std::string_view h) {
    PartitionDef def;
    def.line = line_;
    defmember_ = Membership::kLimited;  // each statement starts with OpenSM's default
    const auto items = split(h, ',');
    const Token first = split_token(items[0]);
    std::string_view id = first.value;
    if (!first.has_value && !first.name.empty() && first.name[0] >= '0' && first.name[0] <= '9') {
      id = first.name;  // "0x8001 : ..." names the P_Key alone
    } else {
      def.name = std::string(first.name);
    }
    if (!id.empty() || first.has_value) {
      const Number n = parse_number(id);
      if (!n.ok || n.value > 0xffff) return fail("bad partition definition: P_Key '" + std::string(id) + "' is not a number up to 0xffff");
      def.pkey = static_cast<std::uint16_t>(n.value & 0x7fff);
    }
    for (std::size_t i = 1; i < items.size(); ++i) {
      const Token t = split_token(items[i]);
      if (t.name.empty()) return fail("bad partition flags: an empty flag");
      partition_flag(def, t);
    }
    cfg_.defs.push_back(std::move(def));
    return true;
  }

  // A group flag (partition header or mgid line); false if `t` is none.
  bool group_flag(McGroupParams& g, const Token& t) {
    const std::string flag(t.name);
    auto value = [&](std::uint64_t max, bool zero_ok, std::uint64_t& out) {
      const Number n = parse_number(t.value);
      if (!t.has_value || (!n.ok && !n.partial) || n.value > max || (!zero_ok && n.value == 0)) {
        warn(line_, "flag '" + flag + "' needs a valid value: skipped");
        return false;
      }
      if (n.partial) warn(line_, "flag '" + flag + "': suspicious value '" + std::string(t.value) + "'");
      out = n.value;
      return true;
    };
    std::uint64_t v = 0;
    // OpenSM's order of tests decides what an abbreviation means ("s" is scope).
    if (abbreviates(t.name, "mtu")) {
      if (value(5, false, v)) g.mtu = static_cast<std::uint8_t>(v);
    } else if (abbreviates(t.name, "rate")) {
      if (value(wire::rate_code::kMax, false, v) && wire::rate_mbps(static_cast<std::uint8_t>(v)) != 0)
        g.rate = static_cast<std::uint8_t>(v);
      else if (v != 0) warn(line_, "flag 'rate': " + std::to_string(v) + " is no IBA rate code (2..24): skipped");
    } else if (abbreviates(t.name, "scope")) {
      if (value(15, false, v)) g.scope_mask = static_cast<std::uint16_t>(g.scope_mask | 1u << v);
    } else if (abbreviates(t.name, "Q_Key")) {
      if (value(0xffffffff, true, v)) g.qkey = static_cast<std::uint32_t>(v);
    } else if (abbreviates(t.name, "TClass")) {
      if (value(0xff, true, v)) g.tclass = static_cast<std::uint8_t>(v);
    } else if (abbreviates(t.name, "sl")) {
      if (value(15, true, v)) g.sl = static_cast<std::uint8_t>(v);
    } else if (abbreviates(t.name, "FlowLabel")) {
      if (value(0xfffff, true, v)) g.flow_label = static_cast<std::uint32_t>(v);
    } else {
      return false;
    }
    return true;
  }

  void partition_flag(PartitionDef& def, const Token& t) {
    if (group_flag(def.params, t)) return;
    if (abbreviates(t.name, "ipoib")) {
      def.ipoib = true;
    } else if (abbreviates(t.name, "defmember")) {
      if (abbreviates(t.value, "full")) defmember_ = Membership::kFull;
      else if (abbreviates(t.value, "both")) defmember_ = Membership::kBoth;
      else if (abbreviates(t.value, "limited")) defmember_ = Membership::kLimited;
      else warn(line_, "flag 'defmember' needs full, limited or both: skipped");
      return;
    } else if (t.name == "indx0") {
      def.indx0 = true;
    } else {
      warn(line_, "unknown partition flag '" + std::string(t.name) + "': ignored");
    }
  }

  bool member(PartitionDef& def, const Token& t) {
    if (t.name.empty() || abbreviates(t.name, "NONE")) return true;  // an empty list is allowed
    PartitionMember m;
    m.line = line_;
    m.membership = defmember_;
    if (t.has_value) {
      // A flag given resets the default: anything but full/both is limited.
      if (abbreviates(t.value, "full")) m.membership = Membership::kFull;
      else if (abbreviates(t.value, "both")) m.membership = Membership::kBoth;
      else if (abbreviates(t.value, "limited")) m.membership = Membership::kLimited;
      else {
        m.membership = Membership::kLimited;
        warn(line_, "unknown membership '" + std::string(t.value) + "' for " + std::string(t.name) + ": limited");
      }
    }
    if (abbreviates(t.name, "ALL")) m.kind = MemberKind::kAll;
    else if (abbreviates(t.name, "ALL_CAS")) m.kind = MemberKind::kAllCas;
    else if (abbreviates(t.name, "ALL_SWITCHES")) m.kind = MemberKind::kAllSwitches;
    else if (abbreviates(t.name, "ALL_ROUTERS")) m.kind = MemberKind::kAllRouters;
    else if (abbreviates(t.name, "SELF")) m.kind = MemberKind::kSelf;
    else {
      const Number n = parse_number(t.name);
      if (!n.ok || n.value == 0) return fail("bad PortGUID '" + std::string(t.name) + "'");
      m.guid = n.value;
    }
    def.members.push_back(m);
    return true;
  }

  // "mgid=GID[,flag=value]*": the rest of the piece belongs to the group.
  bool mgroup(PartitionDef& def, std::string_view gid_text, std::string_view flags) {
    PartitionMgroup g;
    g.line = line_;
    // Inherited from the partition: all but TClass (as OpenSM).
    g.params = def.params;
    g.params.tclass = 0;
    const std::string gid(gid_text);
    std::array<std::uint8_t, 16> raw{};
    if (::inet_pton(AF_INET6, gid.c_str(), raw.data()) != 1 || raw[0] != 0xff) {
      // OpenSM logs it and goes on without the group.
      warn(line_, "mgid \"" + gid + "\" is not a multicast GID: no group");
      return true;
    }
    std::uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 8; ++i) hi = hi << 8 | raw[i];
    for (int i = 8; i < 16; ++i) lo = lo << 8 | raw[i];
    g.mgid = {wire::be64::from(hi), wire::be64::from(lo)};
    if (!trim_blanks(flags).empty())
      for (const std::string_view f : split(flags, ',')) {
        const Token t = split_token(f);
        if (t.name.empty()) continue;
        if (!group_flag(g.params, t)) warn(line_, "unknown mgroup flag '" + std::string(t.name) + "': ignored");
      }
    def.mgroups.push_back(g);
    return true;
  }

  void warn(unsigned line, std::string what) { cfg_.warnings.push_back({file_, line, std::move(what)}); }
  bool fail(std::string what) {
    error_ = {file_, line_, std::move(what)};
    return false;
  }

  const std::string& file_;
  FileIssue& error_;
  PartitionConfig cfg_;
  unsigned line_ = 0;
  bool open_ = false;  // a statement's header was read and no ';' yet
  Membership defmember_ = Membership::kLimited;  // the open statement's defmember
};

}  // namespace

std::optional<PartitionConfig> parse_partition_config(std::string_view text, const std::string& file,
                                                      FileIssue& error) {
  Parser p(file, error);
  if (!for_each_line(text, [&](std::string_view line, unsigned n) { return p.line(line, n); })) return std::nullopt;
  return p.finish();
}

std::optional<PartitionConfig> load_partition_config(const std::string& path, FileIssue& error) {
  return load_text_file<PartitionConfig>(path, error, parse_partition_config);
}

}  // namespace madengine::sm
