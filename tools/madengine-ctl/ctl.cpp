// madengine-ctl: asks a running madengine over its admin socket.
//   madengine-ctl [--socket PATH] [--json] COMMAND [ARGS]
// One JSON request line, one JSON reply line (docs/operations.md); the reply
// printed as a table, or as it came with --json. Exit 0 when the daemon
// said ok, 1 when it answered an error, 2 when it could not be asked or the
// command line was wrong (madengine-ctl(8)).
#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/command_line.hpp"
#include "service/service_config.hpp"

using nlohmann::json;

namespace {

constexpr int kReplyWaitMs = 30'000;  // the daemon gives the SM's core 5 s; a big lfts dump takes a while to send
constexpr std::size_t kReplyBytesMax = 512u << 20;

// Sends `request`, returns the reply line; throws std::runtime_error.
std::string ask(const std::string& path, const std::string& request) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) throw std::runtime_error("socket path too long");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::strerror(errno));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: {}{}", path, std::strerror(e),
                                         e == EACCES ? " (the admin socket is root's)" : e == ENOENT || e == ECONNREFUSED ? " (is madengine running?)" : ""));
  }
  const std::string line = request + "\n";
  for (std::size_t off = 0; off < line.size();) {
    const ssize_t w = ::send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (w <= 0) {
      ::close(fd);
      throw std::runtime_error(fmt::format("send: {}", std::strerror(errno)));
    }
    off += static_cast<std::size_t>(w);
  }
  std::string reply;
  char buf[65536];
  while (reply.find('\n') == std::string::npos && reply.size() < kReplyBytesMax) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kReplyWaitMs) <= 0) {
      ::close(fd);
      throw std::runtime_error("no answer from the daemon");
    }
    const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r <= 0) break;
    reply.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  const auto nl = reply.find('\n');
  if (nl == std::string::npos) throw std::runtime_error("the daemon closed the connection without an answer");
  return reply.substr(0, nl);
}

std::string num(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

void print_status(const json& r) {
  fmt::print("state           {}{}\n", num(r["state"]), r.value("subnet_up", false) ? " (subnet up)" : "");
  fmt::print("epoch           {}\n", num(r["epoch"]));
  fmt::print("SM LID          {}\n", num(r["sm_lid"]));
  fmt::print("SM port GUID    {}\n", num(r["sm_guid"]));
  fmt::print("priority        {}\n", num(r["priority"]));
  const std::string engine = r.value("routing_engine", std::string());
  fmt::print("routing engine  {}\n", engine.empty() ? "- (no heavy sweep routed yet)" : engine);
  fmt::print("periodic sweeps {}\n", r.value("periodic_sweeps", true) ? "on" : "off (madengine-ctl sweep on)");
  if (!r.value("polled_guid", std::string()).empty()) fmt::print("polling         {}\n", num(r["polled_guid"]));
  fmt::print("sweeps          {} heavy, {} light\n", num(r["heavy_sweeps"]), num(r["light_sweeps"]));
  fmt::print("fabric          {} nodes ({} switches)\n", num(r["nodes"]), num(r["switches"]));
  std::string ports;
  for (const auto& [k, v] : r["ports"].items()) ports += fmt::format("{}{} {}", ports.empty() ? "" : ", ", num(v), k);
  fmt::print("ports           {}\n", ports.empty() ? "-" : ports);
  const json& h = r["last_heavy_sweep"];
  fmt::print("last heavy      {:.3f} s, {} SMPs (routing {:.3f} s, path db {:.3f} s)\n", h.value("seconds", 0.0),
             num(h["smps"]), h.value("routing_seconds", 0.0), h.value("path_db_seconds", 0.0));
  const json& sa = r["sa"];
  fmt::print("SA              {} received, {} answered, {} BUSY, {} dropped, {} duplicates\n", num(sa["received"]),
             num(sa["answered"]), num(sa["busy"]), num(sa["dropped"]), num(sa["duplicates"]));
  if (r.value("replica_age_ms", -1) >= 0) fmt::print("replica age     {} ms\n", num(r["replica_age_ms"]));
  fmt::print("uptime          {:.0f} s\n", r.value("uptime_seconds", 0.0));
  fmt::print("version         {}\n", num(r["version"]));
}

void print_sms(const json& r) {
  fmt::print("{:<20} {:>6} {:>8} {:<12}\n", "GUID", "LID", "PRIORITY", "STATE");
  for (const json& s : r["sms"])
    fmt::print("{:<20} {:>6} {:>8} {:<12}{}{}\n", num(s["guid"]), num(s["lid"]), num(s["priority"]), num(s["state"]),
               s.value("self", false) ? " (this SM)" : "", s.value("sm_key_ok", true) ? "" : " (other SM_Key)");
}

void print_counters(const json& r) {
  fmt::print("{:<18} {:<9} {:>12} {:>12} {:>10} {:>8} {:>10}\n", "RECORD", "METHOD", "RECEIVED", "ANSWERED", "BUSY",
             "DROPPED", "DUPLICATES");
  for (const json& e : r["by_record"])
    fmt::print("{:<18} {:<9} {:>12} {:>12} {:>10} {:>8} {:>10}\n", num(e["record"]), num(e["method"]), num(e["received"]),
               num(e["answered"]), num(e["busy"]), num(e["dropped"]), num(e["duplicates"]));
  const json& t = r["total"];
  fmt::print("{:<18} {:<9} {:>12} {:>12} {:>10} {:>8} {:>10}\n", "total", "", num(t["received"]), num(t["answered"]),
             num(t["busy"]), num(t["dropped"]), num(t["duplicates"]));
  fmt::print("answers timed: {}, mean {:.2f} us; RMPP transfers {}; Reports sent {}, failed {}\n",
             num(r["latency"]["answers"]), r["latency"].value("mean_us", 0.0), num(r["rmpp_transfers"]),
             num(r["reports_sent"]), num(r["reports_failed"]));
}

// LINKS: the links a packet crosses, as madstorm counts them (two hosts on
// one leaf switch: 2); SW-HOPS: the switch-to-switch links among them. MTU
// in bytes and RATE in Gb/s (the JSON reply has the IBA codes too).
void print_paths(const json& r) {
  fmt::print("epoch {}, paths to LID {}\n", num(r["epoch"]), num(r["dlid"]));
  fmt::print("{:>6} {:>6} {:>5} {:>7} {:>3} {:>5} {:>10} {:>7} {}\n", "SLID", "DLID", "LINKS", "SW-HOPS", "SL", "MTU",
             "RATE", "PKEY", "REVERSIBLE");
  for (const json& p : r["paths"])
    fmt::print("{:>6} {:>6} {:>5} {:>7} {:>3} {:>5} {:>10} {:>7} {}\n", num(p["slid"]), num(p["dlid"]), num(p["links"]),
               num(p["hops"]), num(p["sl"]), num(p["mtu_bytes"]), fmt::format("{:g} Gb/s", p.value("rate_gbps", 0.0)),
               num(p["pkey"]), p.value("reversible", false) ? "yes" : "no");
  if (r.contains("route")) {
    fmt::print("route:\n");
    for (const json& h : r["route"])
      fmt::print("  switch {} LID {} '{}' -> port {}\n", num(h["switch"]), num(h["lid"]), num(h["description"]),
                 num(h["out_port"]));
  }
}

void print_portstatus(const json& r) {
  fmt::print("epoch {}: {} nodes ({} switches), {} linked ports\n", num(r["epoch"]), num(r["nodes"]), num(r["switches"]),
             num(r["linked"]));
  std::string states;
  for (const auto& [k, v] : r["states"].items()) states += fmt::format("{}{} {}", states.empty() ? "" : ", ", num(v), k);
  fmt::print("ports           {}\n", states);
  for (const auto& [k, v] : r["rates"].items()) fmt::print("links at {:<14} {}\n", k, num(v));
  if (r["reduced_width"].empty()) {
    fmt::print("no link below the width both ends enable\n");
    return;
  }
  fmt::print("links below the width both ends enable:\n");
  for (const json& p : r["reduced_width"])
    fmt::print("  {} \"{}\" port {}: {} (could be {}) to \"{}\" port {}\n", num(p["guid"]), num(p["name"]), num(p["port"]),
               num(p["width"]), num(p["could_be"]), num(p["peer"]), num(p["peer_port"]));
}

// As ibqueryerrors prints: a node line, then its ports with their non-zero error counters.
void print_errors(const json& r) {
  std::string node;
  for (const json& p : r["ports"]) {
    const std::string key = num(p["guid"]);
    if (key != node) {
      fmt::print("Errors for {} \"{}\"\n", key, num(p["name"]));
      node = key;
    }
    std::string counters;
    for (const auto& [k, v] : p["counters"].items()) counters += fmt::format(" [{} == {}]", k, num(v));
    fmt::print("   GUID {} port {} (lid {}):{}\n", key, num(p["port"]), num(p["lid"]), counters);
  }
  fmt::print("{} of {} ports read in round {} have errors\n", r["ports"].size(), num(r["ports_read"]), num(r["round"]));
}

void print_querylid(const json& r) {
  fmt::print("LID {}: {} \"{}\" ({}), port {} ({}), port GUID {}, LMC {}\n", num(r["lid"]), num(r["type"]), num(r["name"]),
             num(r["guid"]), num(r["port"]), num(r["state"]), num(r["port_guid"]), num(r["lmc"]));
  if (r.contains("peer"))
    fmt::print("  linked to \"{}\" ({}) port {}\n", num(r["peer"]["name"]), num(r["peer"]["guid"]), num(r["peer"]["port"]));
  if (!r.contains("counters")) return;
  for (const json& p : r["counters"]) {
    fmt::print("  port {}{}: {:.0f} B/s out, {:.0f} B/s in\n", num(p["port"]), p.value("extended", false) ? " (64-bit)" : "",
               p.value("xmit_bytes_per_s", 0.0), p.value("rcv_bytes_per_s", 0.0));
    for (const auto& [k, v] : p["counters"].items()) fmt::print("    {:<30} {}\n", k, num(v));
  }
}

// As OpenSM's console prints them.
void print_switchbalance(const json& r) {
  for (const json& s : r["switches"]) {
    fmt::print("{}Switch: {} ({})\n", s.value("unbalanced", false) ? "Unbalanced " : "", num(s["guid"]), num(s["name"]));
    for (const json& p : s["ports"]) fmt::print("Port {}: {}\n", num(p["port"]), num(p["lids"]));
  }
}

void print_lidbalance(const json& r) {
  for (const json& f : r["findings"]) {
    if (num(f["kind"]) == "remote") {
      fmt::print("Unbalanced Remote Forwarding: Switch {} ({}): CA {} ({}):", num(f["switch"]), num(f["switch_name"]),
                 num(f["guid"]), num(f["name"]));
      for (const json& d : f["dests"]) fmt::print(" Dest {}({}) - {}", num(d["guid"]), num(d["name"]), num(d["lids"]));
    } else {
      fmt::print("Unbalanced Port Forwarding: Switch {} ({}): CA {} ({}):", num(f["switch"]), num(f["switch_name"]),
                 num(f["guid"]), num(f["name"]));
      for (const json& p : f["ports"]) fmt::print(" Port {} - {}", num(p["port"]), num(p["lids"]));
    }
    fmt::print("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"madengine-ctl: ask a running madengine (its admin socket)"};
  std::string socket = madengine::service::kDefaultAdminSocket;
  bool as_json = false;
  app.add_option("-s,--socket", socket, "the daemon's admin socket (admin.socket)");
  app.add_flag("-j,--json", as_json, "print the daemon's JSON reply as it came");
  app.require_subcommand(0, 1);  // none is refused below: CLI11 would not name an unknown command then
  app.add_subcommand("status", "state, epoch, SM LID and port GUID, routing engine, sweeps, ports, SA totals, version");
  std::string sweep_kind = "heavy";
  app.add_subcommand("sweep", "a heavy or light sweep now, or periodic sweeping off (maintenance) and on again")
      ->add_option("KIND", sweep_kind, "heavy (the default), light, off or on")
      ->check(CLI::IsMember({"heavy", "light", "off", "on"}));
  app.add_subcommand("version", "the daemon's version (and this program's)");
  unsigned priority = 0;
  app.add_subcommand("priority", "set this SM's priority (0..15)")->add_option("N", priority, "priority")->required()->check(CLI::Range(0, 15));
  app.add_subcommand("handover", "hand mastership to the best standby (by lowering our priority below it)");
  app.add_subcommand("sms", "the SMs seen: GUID, LID, priority, state");
  app.add_subcommand("lfts", "every switch's LFT, in the layout of OpenSM's opensm-lfts.dump");
  auto* paths = app.add_subcommand("paths", "the paths to LID in the current epoch (from every end port, or --from)");
  unsigned lid = 0, from = 0;
  // Unicast LIDs (IBA 4.1.3): a value outside them is a usage error here, not a question for the daemon.
  paths->add_option("LID", lid, "destination LID")->required()->check(CLI::Range(1, 0xbfff));
  paths->add_option("--from", from, "one source LID, with the switches on the way")->check(CLI::Range(1, 0xbfff));
  app.add_subcommand("counters", "SA counters by record type and method");
  std::string level;
  app.add_subcommand("loglevel", "set the log level")
      ->add_option("LEVEL", level, "trace|debug|info|warn|error")
      ->required()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  app.add_subcommand("portstatus", "ports by state and link rate, links below the width both ends enable");
  app.add_subcommand("errors", "ports with non-zero error counters, as ibqueryerrors (the performance manager's last round)");
  unsigned qlid = 0;
  app.add_subcommand("querylid", "the node and port that own LID, its link and counters")
      ->add_option("LID", qlid, "LID")
      ->required()
      ->check(CLI::Range(1, 0xbfff));
  auto* sb = app.add_subcommand("switchbalance", "LIDs routed out of each switch-to-switch port (OpenSM's console)");
  bool verbose = false;
  std::string sb_guid, lb_guid;
  sb->add_flag("-v,--verbose", verbose, "balanced switches too");
  sb->add_option("GUID", sb_guid, "one switch");
  app.add_subcommand("lidbalance", "end ports whose LIDs a switch spreads unevenly (OpenSM's console)")
      ->add_option("GUID", lb_guid, "one switch");
  madengine::cli::add_version_flag(app, "madengine-ctl");
  if (const auto rc = madengine::cli::parse(app, argc, argv)) return *rc;
  if (app.get_subcommands().empty()) {
    fmt::print(stderr, "A command is required: status, sweep, priority, handover, sms, lfts, paths, counters, loglevel, "
                       "portstatus, errors, querylid, switchbalance, lidbalance, version\n"
                       "Run with --help for more information.\n");
    return madengine::cli::kExitUsage;
  }

  const std::string cmd = app.get_subcommands().front()->get_name();
  json req{{"cmd", cmd}};
  if (cmd == "priority") req["value"] = priority;
  if (cmd == "sweep") req["kind"] = sweep_kind;
  if (cmd == "paths") {
    req["lid"] = lid;
    if (from != 0) req["from"] = from;
  }
  if (cmd == "loglevel") req["level"] = level;
  if (cmd == "querylid") req["lid"] = qlid;
  if (cmd == "switchbalance") {
    req["verbose"] = verbose;
    if (!sb_guid.empty()) req["guid"] = sb_guid;
  }
  if (cmd == "lidbalance" && !lb_guid.empty()) req["guid"] = lb_guid;
  json reply;
  try {
    const std::string line = ask(socket, req.dump());
    if (as_json) {
      fmt::print("{}\n", line);
      reply = json::parse(line);
      return reply.value("ok", false) ? 0 : 1;
    }
    reply = json::parse(line);
  } catch (const std::exception& e) {
    fmt::print(stderr, "madengine-ctl: {}\n", e.what());
    return 2;
  }
  if (!reply.value("ok", false)) {
    fmt::print(stderr, "madengine-ctl: {}\n", reply.value("error", std::string("the daemon refused")));
    return 1;
  }
  if (cmd == "status") print_status(reply);
  else if (cmd == "sms") print_sms(reply);
  else if (cmd == "lfts") fmt::print("{}", reply["lfts"].get<std::string>());
  else if (cmd == "paths") print_paths(reply);
  else if (cmd == "counters") print_counters(reply);
  else if (cmd == "sweep") fmt::print("{}\n", num(reply["sweep"]));
  else if (cmd == "version") fmt::print("madengine {} (madengine-ctl {})\n", num(reply["version"]), MADENGINE_VERSION_STRING);
  else if (cmd == "priority") fmt::print("priority {} (was {})\n", num(reply["priority"]), num(reply["was"]));
  else if (cmd == "handover") fmt::print("handing over to {}: our priority is now {} (was {})\n", num(reply["handover_to"]), num(reply["priority"]), num(reply["was"]));
  else if (cmd == "loglevel") fmt::print("log level {} (was {})\n", num(reply["level"]), num(reply["was"]));
  else if (cmd == "portstatus") print_portstatus(reply);
  else if (cmd == "errors") print_errors(reply);
  else if (cmd == "querylid") print_querylid(reply);
  else if (cmd == "switchbalance") print_switchbalance(reply);
  else if (cmd == "lidbalance") print_lidbalance(reply);
  return 0;
}
