// The admin socket's commands and its server thread (see admin.hpp).
#include "service/admin.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "madengine/wire/link_rate.hpp"
#include "madengine_version.h"
#include "service/lft_dump.hpp"
#include "service/port_states.hpp"

namespace madengine::service {

using nlohmann::json;

namespace {

json error(const std::string& what) { return json{{"ok", false}, {"error", what}}; }

std::string hex_guid(std::uint64_t g) { return fmt::format("0x{:016x}", g); }

json record_counters(const node::SaRecordCounters& c) {
  return json{{"received", c.received}, {"answered", c.answered}, {"busy", c.busy},
              {"dropped", c.dropped},   {"duplicates", c.duplicates}, {"ignored", c.ignored}};
}

// A JSON integer in [lo, hi] from request[key]; false when absent or not one.
bool int_arg(const json& r, const char* key, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  const auto it = r.find(key);
  if (it == r.end() || !it->is_number_integer()) return false;
  out = it->get<std::int64_t>();
  return out >= lo && out <= hi;
}

}  // namespace

json AdminCommands::handle_line(const std::string& line) {
  json request;
  try {
    request = json::parse(line);
  } catch (const json::exception& e) {
    return error(fmt::format("not JSON: {}", e.what()));
  }
  return handle(request);
}

json AdminCommands::handle(const json& r) {
  try {
    if (!r.is_object()) return error("a request is a JSON object: {\"cmd\": ...}");
    const auto it = r.find("cmd");
    if (it == r.end() || !it->is_string()) return error("no \"cmd\" string");
    const std::string cmd = it->get<std::string>();
    if (cmd == "status") return status();
    if (cmd == "sweep") return sweep(r);
    if (cmd == "version") return json{{"ok", true}, {"version", MADENGINE_VERSION_STRING}};
    if (cmd == "priority") return priority(r);
    if (cmd == "handover") return handover();
    if (cmd == "sms") return sms();
    if (cmd == "lfts") return lfts();
    if (cmd == "paths") return paths(r);
    if (cmd == "counters") return counters();
    if (cmd == "loglevel") return loglevel(r);
    if (cmd == "portstatus") return portstatus();
    if (cmd == "errors") return errors();
    if (cmd == "querylid") return querylid(r);
    if (cmd == "switchbalance") return switchbalance(r);
    if (cmd == "lidbalance") return lidbalance(r);
    return error(fmt::format("unknown command \"{}\" (status, sweep, priority, handover, sms, lfts, paths, counters, "
                             "loglevel, portstatus, errors, querylid, switchbalance, lidbalance, version)", cmd));
  } catch (const std::exception& e) {
    return error(e.what());
  }
}

// {"cmd":"sweep"[,"kind":"heavy"|"light"|"on"|"off"]}: a sweep now, or
// periodic sweeping turned on or off (OpenSM's console `sweep on|off`).
json AdminCommands::sweep(const json& r) {
  const auto it = r.find("kind");
  const std::string kind = it == r.end() ? "heavy" : it->is_string() ? it->get<std::string>() : "";
  if (kind == "heavy") {
    node_.request_heavy_sweep();
    return json{{"ok", true}, {"sweep", "heavy sweep requested"}};
  }
  if (kind == "light") {
    if (!node_.request_light_sweep()) return error("this SM is not master: it does not sweep");
    return json{{"ok", true}, {"sweep", "light sweep requested"}};
  }
  if (kind == "on" || kind == "off") {
    const bool was = node_.set_periodic_sweeps(kind == "on");
    spdlog::info("periodic sweeps {} (admin socket)", kind);
    return json{{"ok", true},
                {"sweep", kind == "on" ? "periodic sweeps on" : "periodic sweeps off: traps and requested sweeps still sweep"},
                {"periodic_sweeps", kind == "on"},
                {"was", was}};
  }
  return error("sweep \"kind\": heavy, light, on or off");
}

json AdminCommands::status() {
  const node::SmStatus s = node_.sm_status();
  const node::FabricView epoch = node_.fabric_view();
  json ports = json::object();
  PortStates pc;
  if (!epoch.empty()) {
    pc = count_ports(epoch);
    for (std::size_t i = 1; i < pc.by_state.size(); ++i) ports[kPortStateNames[i]] = pc.by_state[i];
  }
  const node::SaRecordCounters sa = node_.sa_counters().total;
  const auto up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return json{{"ok", true},
              {"state", wire::to_string(s.state)},
              {"subnet_up", s.subnet_up},
              {"epoch", s.epoch},
              {"sm_lid", s.sm_lid},
              {"priority", s.priority},
              // Set when the node opened its port, before the SM's task started.
              {"sm_guid", hex_guid(node_.sm_guid())},
              {"routing_engine", s.last_heavy.routing_engine},
              {"periodic_sweeps", node_.periodic_sweeps()},
              {"version", MADENGINE_VERSION_STRING},
              {"polled_guid", s.polled_guid != 0 ? hex_guid(s.polled_guid) : ""},
              {"heavy_sweeps", s.heavy_sweeps},
              {"light_sweeps", s.light_sweeps},
              {"traps", s.traps},
              {"nodes", pc.nodes},
              {"switches", pc.switches},
              {"ports", ports},
              {"last_heavy_sweep",
               {{"seconds", s.last_heavy.total_s},
                {"smps", s.last_heavy.smps},
                {"routing_seconds", s.last_heavy.routing_s},
                {"path_db_seconds", s.last_heavy.path_db_s}}},
              {"sa", record_counters(sa)},
              {"replica_age_ms", s.replica_age_ms},
              {"uptime_seconds", up_s}};
}

json AdminCommands::sms() {
  const auto r = node_.sms(std::chrono::milliseconds(kCommandTimeoutMs));
  if (!r.ok()) return error(r.error);
  json list = json::array();
  for (const node::SmSeen& m : r.value) {
    json e{{"guid", hex_guid(m.guid)}, {"lid", m.lid}, {"priority", m.priority}, {"state", wire::to_string(m.state)},
           {"self", m.self}};
    if (!m.self) e["sm_key_ok"] = m.key_ok;
    list.push_back(std::move(e));
  }
  return json{{"ok", true}, {"sms", list}};
}

json AdminCommands::lfts() {
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  return json{{"ok", true}, {"epoch", epoch.epoch()}, {"lfts", dump_lfts(epoch, node_.node_names())}};
}

json AdminCommands::paths(const json& r) {
  std::int64_t dlid = 0, from = 0;
  if (!int_arg(r, "lid", 1, wire::kUnicastLidMax, dlid)) return error("paths needs \"lid\": a unicast LID 1..0xbfff");
  const bool one = r.contains("from");
  if (one && !int_arg(r, "from", 1, wire::kUnicastLidMax, from)) return error("\"from\" must be a unicast LID 1..0xbfff");
  const node::FabricView epoch = node_.fabric_view();
  if (epoch.empty()) return error("no epoch published yet (the subnet is not up)");
  const auto assigned = [&](std::int64_t lid) { return epoch.end_port_by_lid(static_cast<std::uint16_t>(lid)).has_value(); };
  if (!assigned(dlid)) return error(fmt::format("LID {} is not assigned in epoch {}", dlid, epoch.epoch()));
  json list = json::array();
  const auto add = [&](std::uint16_t slid) {
    node::PathInfo p;
    if (node_.path(slid, static_cast<std::uint16_t>(dlid), p) != node::PathResult::kOk) return;
    // IBA codes as the SA answers them, and as people read them.
    const auto is_ca = [&](std::uint16_t l) { return !epoch.node(epoch.end_port_by_lid(l)->node).is_switch(); };
    const unsigned links = p.hops + (is_ca(p.slid) ? 1u : 0u) + (is_ca(p.dlid) ? 1u : 0u);
    list.push_back(json{{"slid", p.slid}, {"dlid", p.dlid}, {"hops", p.hops}, {"links", links}, {"sl", p.sl},
                        {"mtu", p.mtu}, {"mtu_bytes", p.mtu >= 1 && p.mtu <= 5 ? 128u << p.mtu : 0u},
                        {"rate", p.rate}, {"rate_gbps", wire::rate_mbps(p.rate) / 1000.0},
                        {"pkey", fmt::format("0x{:04x}", p.pkey)}, {"reversible", p.reversible}});
  };
  json route = json::array();
  if (one) {
    if (!assigned(from)) return error(fmt::format("LID {} is not assigned in epoch {}", from, epoch.epoch()));
    add(static_cast<std::uint16_t>(from));
    // The switches on the way, by the LFTs of this epoch (at most 64 hops: IBA's directed-route limit).
    const node::EndPort at = *epoch.end_port_by_lid(static_cast<std::uint16_t>(from));
    node::NodeId n = epoch.node(at.node).is_switch() ? at.node : epoch.port(at.node, at.port).peer;
    for (int hop = 0; hop < 64 && n != node::kNoNode; ++hop) {
      const node::FabricNode sw = epoch.node(n);
      const std::uint8_t out = epoch.lft_port(n, static_cast<std::uint16_t>(dlid));
      route.push_back(json{{"switch", hex_guid(sw.node_guid)}, {"lid", sw.lid},
                           {"description", std::string(node_.node_names().name(sw.node_guid, sw.description))},
                           {"out_port", out}});
      if (out == 0 || out == node::kNoRoute || out > sw.num_ports) break;
      const node::NodeId next = epoch.port(n, out).peer;
      if (next == node::kNoNode || !epoch.node(next).is_switch()) break;
      n = next;
    }
  } else {
    for (std::uint16_t lid = 1; lid <= epoch.top_lid(); ++lid)
      if (lid != dlid && assigned(lid)) add(lid);
  }
  json reply{{"ok", true}, {"epoch", epoch.epoch()}, {"dlid", dlid}, {"paths", list}};
  if (one) reply["route"] = route;
  return reply;
}

json AdminCommands::counters() {
  const node::SaCounters c = node_.sa_counters();
  json by = json::array();
  for (const node::SaRequestCounters& r : c.by_request) {
    if (r.counters.received == 0) continue;
    json e = record_counters(r.counters);
    e["record"] = r.record;
    e["method"] = r.method;
    by.push_back(std::move(e));
  }
  const double mean_us = c.latency.count ? static_cast<double>(c.latency.sum_ns) / c.latency.count / 1000.0 : 0.0;
  return json{{"ok", true},
              {"total", record_counters(c.total)},
              {"by_record", by},
              {"latency", {{"answers", c.latency.count}, {"mean_us", mean_us}}},
              {"rmpp_transfers", c.rmpp_transfers},
              {"reports_sent", c.reports_sent},
              {"reports_failed", c.reports_failed},
              {"leases_expired", c.lease_expired}};
}

json AdminCommands::priority(const json& r) {
  std::int64_t p = 0;
  if (!int_arg(r, "value", 0, wire::kSmPriorityMax, p)) return error("priority needs \"value\": 0..15");
  const auto set = node_.set_priority(static_cast<std::uint8_t>(p), std::chrono::milliseconds(kCommandTimeoutMs));
  if (!set.ok()) return error(set.error);
  return json{{"ok", true}, {"priority", p}, {"was", set.value.was}};
}

json AdminCommands::handover() {
  const auto r = node_.handover(std::chrono::milliseconds(kCommandTimeoutMs));
  if (!r.ok()) return error(r.error);
  return json{{"ok", true}, {"handover_to", hex_guid(r.value.to_guid)}, {"priority", r.value.priority}, {"was", r.value.was}};
}

json AdminCommands::loglevel(const json& r) {
  const auto it = r.find("level");
  if (it == r.end() || !it->is_string()) return error("loglevel needs \"level\": trace, debug, info, warn or error");
  const std::string level = it->get<std::string>();
  if (level != "trace" && level != "debug" && level != "info" && level != "warn" && level != "error")
    return error(fmt::format("log level \"{}\": trace, debug, info, warn or error", level));
  const std::string before = spdlog::level::to_string_view(spdlog::get_level()).data();
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::info("log level {} (admin socket)", level);
  return json{{"ok", true}, {"level", level}, {"was", before}};
}

// ---- the socket ----

AdminServer::AdminServer(const std::string& path, AdminCommands& commands) : path_(path), commands_(commands) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    throw std::runtime_error(fmt::format("admin.socket \"{}\": empty or longer than {} bytes", path, sizeof(addr.sun_path) - 1));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // The directory is the operator's (under systemd RuntimeDirectory= makes
  // /run/madengine, mode 0700): a missing one means a mistyped path, and a
  // directory made here would have whatever mode and owner this process has.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec))
    throw std::runtime_error(fmt::format("admin.socket {}: {}", path,
                                         std::filesystem::exists(dir, ec)
                                             ? fmt::format("{} is not a directory", dir.string())
                                             : fmt::format("directory {} does not exist (madengine creates none)", dir.string())));
  // A socket file left by a daemon that died is replaced; one that answers is another daemon's.
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe >= 0) {
    const bool live = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    ::close(probe);
    if (live) throw std::runtime_error(fmt::format("admin.socket {}: another daemon answers there", path));
  }
  ::unlink(path.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(fmt::format("admin.socket: socket(): {}", std::strerror(errno)));
  // Only the owner may connect: the file is made 0600 before anyone can reach it.
  const mode_t old = ::umask(0177);
  const int rc = ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old);
  if (rc != 0 || ::listen(listen_fd_, 8) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(fmt::format("admin.socket {}: {}", path, std::strerror(rc != 0 ? bind_errno : errno)));
  }
  ::chmod(path.c_str(), 0600);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    ::close(listen_fd_);
    throw std::runtime_error(fmt::format("admin.socket: eventfd(): {}", std::strerror(errno)));
  }
  thread_ = std::thread([this] { run(); });
  spdlog::info("admin socket: {}", path);
}

AdminServer::~AdminServer() {
  const std::uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // The thread then ends at its next poll timeout.
  }
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
  ::unlink(path_.c_str());
}

void AdminServer::run() noexcept {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, 1000);
    if (n < 0 && errno != EINTR) return;
    if (fds[1].revents != 0) return;
    if (n <= 0 || (fds[0].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // Root, or the user the daemon runs as (the socket's mode says the same).
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || (cred.uid != 0 && cred.uid != ::geteuid())) {
      static constexpr char kDenied[] = "{\"ok\":false,\"error\":\"permission denied: root only\"}\n";
      if (::write(fd, kDenied, sizeof kDenied - 1) < 0) {
      }
      ::close(fd);
      continue;
    }
    serve(fd);
    ::close(fd);
  }
}

// One client, one request line after another, until it closes, goes quiet
// for kClientIdleMs or sends a line longer than kRequestBytesMax.
void AdminServer::serve(int fd) noexcept {
  std::string buffer;
  char chunk[1024];
  for (;;) {
    std::size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      const std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      std::string reply;
      try {
        reply = commands_.handle_line(line).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      } catch (...) {
        reply = "{\"ok\":false,\"error\":\"internal error\"}\n";
      }
      for (std::size_t off = 0; off < reply.size();) {
        const ssize_t w = ::send(fd, reply.data() + off, reply.size() - off, MSG_NOSIGNAL);
        if (w <= 0) return;
        off += static_cast<std::size_t>(w);
      }
    }
    if (buffer.size() > kRequestBytesMax) {
      const std::string reply = error(fmt::format("a request line is at most {} bytes", kRequestBytesMax)).dump() + "\n";
      if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) {
      }
      return;
    }
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(kClientIdleMs));
    if (n <= 0 || fds[1].revents != 0) return;
    const ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r <= 0) return;
    buffer.append(chunk, static_cast<std::size_t>(r));
  }
}

}  // namespace madengine::service
