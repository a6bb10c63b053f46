// The topology file reader: ibsim's net format (ibnetdiscover output plus a
// few extensions), nodes and their port lines, both ends of each link
// checked. Start-up code: errors are TopologyError naming the line.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cinttypes>
#include <fstream>
#include <sstream>

#include "sim/topology.hpp"

namespace madengine::sim {

namespace {

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// strtoull-like: accepts 0x hex, leading 0 octal is not used by these files.
bool parse_uint(std::string_view s, std::uint64_t& out, std::size_t* used = nullptr) noexcept {
  s = trim(s);
  int base = 10;
  std::size_t skip = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    skip = 2;
  }
  const char* begin = s.data() + skip;
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), out, base);
  if (ec != std::errc{} || ptr == begin) return false;
  if (used) *used = static_cast<std::size_t>(ptr - s.data());
  return true;
}

bool starts_with(std::string_view s, std::string_view p) noexcept { return s.substr(0, p.size()) == p; }

}  // namespace

// One pass collects nodes and each port line's claimed peer by name; a second
// pass links them and checks that both ends agree, as ibsim requires.
class TopologyParser {
 public:
  TopologyParser(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  Topology run() {
    std::string_view rest = text_;
    TopoNode* cur = nullptr;  // node whose port lines follow
    std::uint32_t cur_idx = kNoNode;
    std::size_t port_lines = 0;
    std::size_t claims_begin = 0;  // this record's claims are claims_[claims_begin..]
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
      ++line_no_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

      if (cur && (starts_with(line, "[") || starts_with(line, "@"))) {
        if (++port_lines > cur->num_ports)
          fail("more port lines than the node's " + std::to_string(cur->num_ports) + " ports");
        parse_port_line(line, cur_idx, claims_begin);
        continue;
      }
      if (starts_with(line, "#")) continue;  // comment, also inside a record
      cur = nullptr;
      if (trim(line).empty()) continue;
      if (starts_with(line, "@")) fail("port alias lines ('@') are not supported");
      if (starts_with(line, "[")) fail("port line outside a node record (a blank line ends a record)");
      if (starts_with(line, "Switch")) {
        cur_idx = parse_header(line, NodeType::kSwitch, 6);
      } else if (starts_with(line, "Hca")) {
        cur_idx = parse_header(line, NodeType::kCa, 3);
      } else if (starts_with(line, "Ca")) {
        cur_idx = parse_header(line, NodeType::kCa, 2);
      } else if (starts_with(line, "Rt")) {
        cur_idx = parse_header(line, NodeType::kRouter, 2);
      } else if (starts_with(line, "switchguid")) {
        guid_base(line, NodeType::kSwitch);
        continue;
      } else if (starts_with(line, "hcaguids") || starts_with(line, "caguid")) {
        guid_base(line, NodeType::kCa);
        continue;
      } else if (starts_with(line, "rtguid")) {
        guid_base(line, NodeType::kRouter);
        continue;
      } else if (starts_with(line, "vendid")) {
        vendor_id_ = assigned(line, 0xffffff, "vendid");
        continue;
      } else if (starts_with(line, "devid")) {
        device_id_ = assigned(line, 0xffff, "devid");
        continue;
      } else if (starts_with(line, "sysimgguid")) {
        sys_guid_ = assigned(line, ~0ull, "sysimgguid");
        continue;
      } else if (starts_with(line, "extspeed")) {
        speed_ext_ = static_cast<std::uint8_t>(assigned(line, 15, "extspeed"));
        continue;
      } else if (starts_with(line, "width")) {
        width_ = static_cast<std::uint8_t>(assigned(line, 31, "width"));
        if (!width_) fail("width must be 1..31");
        continue;
      } else if (starts_with(line, "speed")) {
        speed_ = static_cast<std::uint8_t>(assigned(line, 7, "speed"));
        if (!speed_) fail("speed must be 1..7");
        continue;
      } else if (starts_with(line, "include") || starts_with(line, "do") || starts_with(line, "module")) {
        fail("'" + std::string(line.substr(0, line.find_first_of(" \t"))) + "' lines are not supported by the sim");
      } else if (starts_with(line, "pdebug")) {
        continue;
      } else {
        fail(
            "unrecognised line (expected a node header such as 'Switch 8 \"name\"', a port line '[1] \"peer\"[2]', "
            "a '# comment' or an assignment such as 'switchguid=0x...')");
      }
      cur = &topo_.nodes[cur_idx];
      port_lines = 0;
      claims_begin = claims_.size();
    }
    link_all();
    return std::move(topo_);
  }

 private:
  struct Claim {
    std::uint32_t node;
    std::uint8_t port;
    std::string peer;
    std::uint8_t peer_port;
    std::size_t line;
  };

  [[noreturn]] void fail(const std::string& msg) const { throw TopologyError(std::string(file_), line_no_, msg); }
  [[noreturn]] void fail_at(std::size_t line, const std::string& msg) const {
    throw TopologyError(std::string(file_), line, msg);
  }

  std::uint64_t assigned(std::string_view line, std::uint64_t max, const char* what) {
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) fail(std::string(what) + ": missing '='");
    std::uint64_t v = 0;
    if (!parse_uint(line.substr(eq + 1), v)) fail(std::string(what) + ": expected a number after '='");
    if (v > max) fail(std::string(what) + ": value out of range");
    return v;
  }

  void guid_base(std::string_view line, NodeType type) {
    // "switchguid=0x...(0x...)": the number stops at '('; "caguid+N" is relative.
    const auto op = line.find_first_of("=+");
    if (op == std::string_view::npos) fail("GUID assignment: missing '=' or '+'");
    std::uint64_t v = 0;
    std::string_view num = line.substr(op + 1);
    num = num.substr(0, num.find('('));
    if (!parse_uint(num, v)) fail("GUID assignment: expected a number");
    if (line[op] == '+')
      topo_.guids.set_relative(type, v);
    else
      topo_.guids.set_base(type, v);
  }

  // Extracts the first "quoted" string at or after `pos`; updates pos past it.
  std::string_view quoted(std::string_view line, std::size_t& pos, const char* what) const {
    const auto a = line.find('"', pos);
    const auto b = a == std::string_view::npos ? a : line.find('"', a + 1);
    if (b == std::string_view::npos) fail(std::string("expected a quoted ") + what);
    pos = b + 1;
    return line.substr(a + 1, b - a - 1);
  }

  std::uint32_t parse_header(std::string_view line, NodeType type, std::size_t kw_len) {
    std::size_t pos = kw_len;
    while (pos < line.size() && std::isspace(static_cast<unsigned char>(line[pos]))) ++pos;
    std::uint64_t nports = 0;
    std::size_t used = 0;
    if (!parse_uint(line.substr(pos, line.find('"') - pos), nports, &used) || nports == 0 || nports > 254)
      fail("node header: expected a port count 1..254 before the quoted id");
    std::string_view id = quoted(line, pos, "node id");
    if (id.empty()) fail("node header: empty node id");
    if (id.find_first_of("#@") != std::string_view::npos)
      fail("node id \"" + std::string(id) + "\": '#' and '@' are reserved");
    // Optional "# "desc" [enhanced|base] port 0 lid N lmc M".
    std::string_view rest = line.substr(pos);
    std::string desc;
    bool esp0 = false;
    std::uint16_t lid = 0;
    std::uint8_t lmc = 0;
    if (const auto h = rest.find('#'); h != std::string_view::npos) {
      std::string_view d = trim(rest.substr(h + 1));
      std::string_view tail;
      if (!d.empty() && d.front() == '"') {
        const auto e = d.find('"', 1);
        if (e == std::string_view::npos) fail("node description: missing closing quote");
        desc = std::string(d.substr(1, e - 1));
        tail = d.substr(e + 1);
      } else {
        std::size_t cut = d.size();
        for (const char* m : {" enhanced port ", " base port ", " lid ", " lmc "}) cut = std::min(cut, d.find(m));
        desc = std::string(trim(d.substr(0, cut)));
        tail = cut < d.size() ? d.substr(cut) : std::string_view{};
      }
      esp0 = tail.find("enhanced port 0") != std::string_view::npos;
      if (const auto l = tail.find("lid "); l != std::string_view::npos) {
        std::uint64_t v = 0;
        if (!parse_uint(tail.substr(l + 4, tail.find_first_of(" \t", l + 4) - l - 4), v) || v > 0xffff)
          fail("node header: bad 'lid' value");
        lid = static_cast<std::uint16_t>(v);
      }
      if (const auto l = tail.find("lmc "); l != std::string_view::npos) {
        std::uint64_t v = 0;
        if (!parse_uint(tail.substr(l + 4, tail.find_first_of(" \t", l + 4) - l - 4), v) || v > 7)
          fail("node header: bad 'lmc' value");
        lmc = static_cast<std::uint8_t>(v);
      }
    }
    std::uint32_t idx;
    try {
      idx = topo_.add_node(type, static_cast<std::uint8_t>(nports), std::string(id), std::move(desc));
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
    TopoNode& n = topo_.nodes[idx];
    n.vendor_id = static_cast<std::uint32_t>(vendor_id_);
    n.device_id = static_cast<std::uint16_t>(device_id_);
    n.system_guid = sys_guid_ ? sys_guid_ : n.node_guid;
    n.enhanced_port0 = esp0;
    if (type == NodeType::kSwitch) {
      n.ports[0].lid = lid;
      n.ports[0].lmc = lmc;
    }
    for (std::size_t p = 1; p < n.ports.size(); ++p) {
      n.ports[p].width_enabled = width_;
      n.ports[p].speed_enabled = speed_;
      n.ports[p].speed_ext_enabled = speed_ext_;
    }
    // As in ibsim: vendid and sysimgguid apply to one node, devid persists.
    vendor_id_ = 0;
    sys_guid_ = 0;
    return idx;
  }

  // "[1](guid) "peer"[2](guid)  w=3 s=1   # lid 2 lmc 0 "desc" lid 1 4xSDR"
  void parse_port_line(std::string_view line, std::uint32_t node_idx, std::size_t claims_begin) {
    TopoNode& n = topo_.nodes[node_idx];
    std::size_t pos = 1;
    std::uint64_t port = 0;
    std::size_t used = 0;
    if (!parse_uint(line.substr(1, line.find(']') - 1), port, &used)) fail("port line: expected '[<port number>]'");
    if (port == 0 || port > n.num_ports)
      fail("port " + std::to_string(port) + " out of range 1.." + std::to_string(n.num_ports) + " for node \"" + n.id +
           "\"");
    TopoPort& tp = n.ports[port];
    for (std::size_t i = claims_begin; i < claims_.size(); ++i)
      if (claims_[i].port == port) fail("port " + std::to_string(port) + " listed twice");
    pos = line.find(']');
    if (pos == std::string_view::npos) fail("port line: missing ']'");
    ++pos;
    // Optional local port GUID "(hex)".
    if (pos < line.size() && line[pos] == '(') {
      const auto e = line.find(')', pos);
      std::uint64_t g = 0;
      if (e == std::string_view::npos || !parse_hex(line.substr(pos + 1, e - pos - 1), g))
        fail("port line: bad '(port GUID)'");
      if (n.type != NodeType::kSwitch) tp.guid = g;
      pos = e + 1;
    }
    std::string_view peer = quoted(line, pos, "peer node id");
    std::uint64_t peer_port = 1;  // ibsim's default when "[n]" is absent
    if (pos < line.size() && line[pos] == '[') {
      const auto e = line.find(']', pos);
      if (e == std::string_view::npos || !parse_uint(line.substr(pos + 1, e - pos - 1), peer_port) || peer_port == 0 ||
          peer_port > 254)
        fail("port line: bad peer port '[n]'");
      pos = e + 1;
    }
    if (pos < line.size() && line[pos] == '(') {  // peer's port GUID: redundant, ignored
      const auto e = line.find(')', pos);
      if (e == std::string_view::npos) fail("port line: missing ')'");
      pos = e + 1;
    }
    std::string_view rest = line.substr(pos);
    const auto hash = rest.find('#');
    std::string_view opts = rest.substr(0, hash);
    parse_port_options(opts, tp);
    if (hash != std::string_view::npos) parse_connection_data(rest.substr(hash), n, tp);
    claims_.push_back(
        {node_idx, static_cast<std::uint8_t>(port), std::string(peer), static_cast<std::uint8_t>(peer_port), line_no_});
  }

  static bool parse_hex(std::string_view s, std::uint64_t& v) noexcept {
    s = trim(s);
    if (starts_with(s, "0x") || starts_with(s, "0X")) s.remove_prefix(2);
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    return ec == std::errc{} && p == s.data() + s.size() && !s.empty();
  }

  // "w=3 s=1 e=0" (ibsim's per-port enable masks), and "x=1" for XDR.
  void parse_port_options(std::string_view opts, TopoPort& tp) {
    for (std::size_t eq = opts.find('='); eq != std::string_view::npos; eq = opts.find('=', eq + 1)) {
      if (eq == 0) fail("port option: missing name before '='");
      const char name = opts[eq - 1];
      std::uint64_t v = 0;
      if (!parse_uint(opts.substr(eq + 1, opts.find_first_of(" \t", eq + 1) - eq - 1), v))
        fail(std::string("port option ") + name + "=: expected a number");
      switch (name) {
        case 'w':
          if (v < 1 || v > 31) fail("port option w=: link width mask must be 1..31");
          tp.width_enabled = static_cast<std::uint8_t>(v);
          break;
        case 's':
          if (v > 7) fail("port option s=: link speed mask must be 1..7 (0 = QDR)");
          tp.speed_enabled = static_cast<std::uint8_t>(v ? v : link_speed::kQdr);
          break;
        case 'e':
          if (v > 15) fail("port option e=: extended speed mask must be 0..15");
          tp.speed_ext_enabled = static_cast<std::uint8_t>(v);
          break;
        case 'x':
          if (v > 1) fail("port option x=: second extended speed mask must be 0..1 (1 = XDR)");
          tp.speed_ext2_enabled = static_cast<std::uint8_t>(v);
          break;
        default:
          fail(std::string("unknown port option '") + name + "='");
      }
    }
  }

  // ibnetdiscover's "# [lid N lmc M] "desc" lid R 4xQDR": the width and speed
  // after the last "lid" set the enabled masks as ibsim does.
  void parse_connection_data(std::string_view comment, const TopoNode& n, TopoPort& tp) {
    const auto last_quote = comment.rfind('"');
    const auto l = comment.find("lid ", last_quote == std::string_view::npos ? 0 : last_quote);
    if (n.type != NodeType::kSwitch) {
      if (const auto f = comment.find("lid ");
          f != std::string_view::npos && f < last_quote && last_quote != std::string_view::npos) {
        std::uint64_t v = 0;
        if (parse_uint(comment.substr(f + 4, comment.find_first_of(" \t", f + 4) - f - 4), v) && v <= 0xffff)
          tp.lid = static_cast<std::uint16_t>(v);
        if (const auto m = comment.find("lmc "); m != std::string_view::npos && m < last_quote) {
          if (parse_uint(comment.substr(m + 4, comment.find_first_of(" \t", m + 4) - m - 4), v) && v <= 7)
            tp.lmc = static_cast<std::uint8_t>(v);
        }
      }
    }
    if (l == std::string_view::npos) return;
    std::string_view s = trim(comment.substr(l + 4));
    const auto sp = s.find_first_of(" \t");
    if (sp == std::string_view::npos) return;
    s = trim(s.substr(sp));
    const auto x = s.find('x');
    if (x == std::string_view::npos) return;
    std::uint64_t w = 0;
    if (!parse_uint(s.substr(0, x), w)) fail("port comment: bad link width before 'x' (expected e.g. 4xQDR)");
    std::string_view speed = s.substr(x + 1);
    speed = speed.substr(0, speed.find_first_of(" \t"));
    switch (w) {
      case 1:
        tp.width_enabled = link_width::k1x;
        break;
      case 2:
        tp.width_enabled = link_width::k2x;
        break;
      case 4:
        tp.width_enabled = link_width::k1x | link_width::k4x;
        break;
      case 8:
        tp.width_enabled = link_width::k8x;
        break;
      case 12:
        tp.width_enabled = link_width::k1x | link_width::k4x | link_width::k12x;
        break;
      default:
        fail("port comment: link width must be 1x, 2x, 4x, 8x or 12x");
    }
    constexpr std::uint8_t kSdrDdrQdr = link_speed::kSdr | link_speed::kDdr | link_speed::kQdr;
    if (speed == "SDR") {
      tp.speed_enabled = link_speed::kSdr;
    } else if (speed == "DDR") {
      tp.speed_enabled = link_speed::kSdr | link_speed::kDdr;
    } else if (speed == "QDR" || speed == "FDR10") {
      tp.speed_enabled = kSdrDdrQdr;
    } else if (speed == "FDR") {
      tp.speed_enabled = kSdrDdrQdr;
      tp.speed_ext_enabled = link_speed_ext::kFdr;
    } else if (speed == "EDR") {
      tp.speed_enabled = kSdrDdrQdr;
      tp.speed_ext_enabled = link_speed_ext::kFdr | link_speed_ext::kEdr;
    } else if (speed == "HDR") {
      tp.speed_enabled = kSdrDdrQdr;
      tp.speed_ext_enabled = link_speed_ext::kFdr | link_speed_ext::kEdr | link_speed_ext::kHdr;
    } else if (speed == "NDR" || speed == "XDR") {
      tp.speed_enabled = kSdrDdrQdr;
      tp.speed_ext_enabled = link_speed_ext::kFdr | link_speed_ext::kEdr | link_speed_ext::kHdr | link_speed_ext::kNdr;
      if (speed == "XDR") tp.speed_ext2_enabled = link_speed_ext2::kXdr;
    } else {
      fail("port comment: unknown link speed '" + std::string(speed) + "' (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)");
    }
  }

  void link_all() {
    for (const Claim& c : claims_) {
      const std::uint32_t peer = topo_.find(c.peer);
      if (peer == kNoNode) fail_at(c.line, "unknown peer node \"" + c.peer + "\"");
      TopoNode& pn = topo_.nodes[peer];
      if (c.peer_port > pn.num_ports)
        fail_at(c.line, "peer \"" + c.peer + "\" has no port " + std::to_string(c.peer_port) + " (it has " +
                            std::to_string(pn.num_ports) + ")");
      TopoPort& mine = topo_.nodes[c.node].ports[c.port];
      if (mine.connected()) continue;  // linked from the other end's claim
      // The other end must claim us back (ibsim refuses one-sided links).
      const Claim* back = nullptr;
      for (const Claim* b : claims_of(peer))
        if (b->port == c.peer_port) back = b;
      const TopoNode& me = topo_.nodes[c.node];
      if (!back)
        fail_at(c.line, "\"" + c.peer + "\"[" + std::to_string(c.peer_port) + "] does not list the link back to \"" +
                            me.id + "\"[" + std::to_string(c.port) + "]");
      if (back->peer != me.id || back->peer_port != c.port)
        fail_at(c.line, "\"" + me.id + "\"[" + std::to_string(c.port) + "] says it connects to \"" + c.peer + "\"[" +
                            std::to_string(c.peer_port) + "] but that port lists \"" + back->peer + "\"[" +
                            std::to_string(back->peer_port) + "] (line " + std::to_string(back->line) + ")");
      try {
        topo_.connect(c.node, c.port, peer, c.peer_port);
      } catch (const std::invalid_argument& e) {
        fail_at(c.line, e.what());
      }
    }
  }

  const std::vector<const Claim*>& claims_of(std::uint32_t node) {
    if (claims_by_node_.empty()) {
      claims_by_node_.resize(topo_.nodes.size());
      for (const Claim& c : claims_) claims_by_node_[c.node].push_back(&c);
    }
    return claims_by_node_[node];
  }

  std::string_view text_;
  std::string_view file_;
  std::size_t line_no_ = 0;
  Topology topo_;
  std::vector<Claim> claims_;
  std::vector<std::vector<const Claim*>> claims_by_node_;
  std::uint64_t vendor_id_ = 0;
  std::uint64_t device_id_ = 0;
  std::uint64_t sys_guid_ = 0;
  std::uint8_t width_ = kDefaultWidthEnabled;
  std::uint8_t speed_ = kDefaultSpeedEnabled;
  std::uint8_t speed_ext_ = kDefaultSpeedExtEnabled;
};

Topology parse_topology(std::string_view text, std::string_view file_name) {
  return TopologyParser(text, file_name).run();
}

Topology load_topology(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TopologyError(path, 0, "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_topology(ss.str(), path);
}

}  // namespace madengine::sim
