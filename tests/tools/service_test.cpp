// The daemon's service parts on a started node on the sim transport (label
// sim): madengine-ctl against the admin socket (status, lfts checked line by
// line against the simulated switches' LFTs, paths, priority run on the SM's
// core), malformed requests answered with errors, and the metrics endpoint.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "madengine/wire/link_rate.hpp"
#include "madengine_version.h"
#include "node/internal_node.hpp"
#include "sa/server/sa_server.hpp"
#include "service/admin.hpp"
#include "service/metrics.hpp"
#include "service/service_config.hpp"
#include "service_helpers.hpp"
#include "sim/fabric.hpp"
#include "sm/sm.hpp"

namespace madengine::service {
namespace {

using nlohmann::json;
namespace st = service_test;

class Service : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = st::temp_dir("service-test");
    node::NodeConfig cfg;
    cfg.transport.kind = node::TransportKind::kSim;
    cfg.transport.generate = "ft2:8";
    cfg.transport.sim_speed = 0;  // as fast as possible
    cfg.engine.cores = 2;
    cfg.engine.pin = false;
    cfg.log.level = "warn";
    node::InternalOptions options;
    options.perfmgr.enabled = true;  // the fabric health series and commands
    options.perfmgr.interval_ms = 500;
    node_ = new node::InternalNode(cfg, {}, options);
    commands_ = new AdminCommands(*node_);
    std::filesystem::create_directories(dir_ / "run");  // the daemon creates no directory (systemd's RuntimeDirectory= does)
    socket_ = (dir_ / "run" / "admin.sock").string();
    admin_ = new AdminServer(socket_, *commands_);
    renderer_ = new MetricsRenderer(*node_);
    metrics_ = new MetricsServer("127.0.0.1:0", [] { return renderer_->render(); });
    node_->start();
    ASSERT_TRUE(node_->wait_subnet_up(std::chrono::milliseconds(30'000)));
  }
  static void TearDownTestSuite() {
    delete metrics_;
    delete renderer_;
    delete admin_;
    delete commands_;
    node_->stop();
    delete node_;
    std::filesystem::remove_all(dir_);
  }
  static std::string ctl(const std::string& args, int& status) {
    return st::run(std::string("\"") + MADENGINE_CTL_BIN + "\" --socket '" + socket_ + "' " + args + " 2>&1", status);
  }
  // Request lines on one connection; the reply lines.
  static std::vector<std::string> raw(const std::vector<std::string>& lines) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_.c_str(), sizeof a.sun_path - 1);
    std::vector<std::string> out;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return out;
    }
    for (const std::string& l : lines) {
      const std::string s = l + "\n";
      if (::send(fd, s.data(), s.size(), MSG_NOSIGNAL) < 0) break;
    }
    ::shutdown(fd, SHUT_WR);
    std::string all;
    char buf[4096];
    for (ssize_t r; (r = ::recv(fd, buf, sizeof buf, 0)) > 0;) all.append(buf, static_cast<std::size_t>(r));
    ::close(fd);
    std::istringstream in(all);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }

  static inline std::filesystem::path dir_;
  static inline std::string socket_;
  static inline node::InternalNode* node_ = nullptr;
  static inline AdminCommands* commands_ = nullptr;
  static inline AdminServer* admin_ = nullptr;
  static inline MetricsRenderer* renderer_ = nullptr;
  static inline MetricsServer* metrics_ = nullptr;
};

TEST_F(Service, SocketIsOwnerOnly) {
  struct stat s{};
  ASSERT_EQ(::stat(socket_.c_str(), &s), 0);
  EXPECT_TRUE(S_ISSOCK(s.st_mode));
  EXPECT_EQ(s.st_mode & 0777, 0600u);
}

TEST_F(Service, CtlStatusAnswers) {
  int rc = 0;
  const json j = json::parse(ctl("--json status", rc));
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["state"], "MASTER");
  EXPECT_TRUE(j["subnet_up"].get<bool>());
  EXPECT_GE(j["epoch"].get<int>(), 1);
  EXPECT_EQ(j["nodes"].get<int>(), 44);
  EXPECT_EQ(j["switches"].get<int>(), 12);
  EXPECT_EQ(j["ports"]["active"].get<int>(), 128);  // 64 links, both ends
  const std::string table = ctl("status", rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(table.find("MASTER (subnet up)"), std::string::npos) << table;
  EXPECT_NE(table.find("44 nodes (12 switches)"), std::string::npos) << table;
  // The routing engine of the last heavy sweep and our SM port's GUID, as OpenSM's console status shows them.
  EXPECT_EQ(j["routing_engine"], node_->sm().status().last_heavy.routing_engine);
  EXPECT_FALSE(j["routing_engine"].get<std::string>().empty());
  const std::string guid = fmt::format("0x{:016x}", node_->sm().identity().guid);
  EXPECT_EQ(j["sm_guid"], guid);
  EXPECT_NE(table.find("routing engine  " + j["routing_engine"].get<std::string>()), std::string::npos) << table;
  EXPECT_NE(table.find("SM port GUID    " + guid), std::string::npos) << table;
  EXPECT_NE(table.find(std::string("version         ") + MADENGINE_VERSION_STRING), std::string::npos) << table;
}

TEST_F(Service, CtlVersionIsTheDaemons) {
  int rc = 0;
  const std::string out = ctl("version", rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, fmt::format("madengine {} (madengine-ctl {})\n", MADENGINE_VERSION_STRING, MADENGINE_VERSION_STRING));
}

// `sweep light` sweeps at once; `sweep off` stops the periodic light sweeps
// (maintenance) while a requested one still runs; `sweep on` resumes them.
TEST_F(Service, CtlLightSweepAndPeriodicSweepsOffOn) {
  sm::SubnetManager& sm = node_->sm();
  const auto light = [&] { return sm.status().light_sweeps; };
  const auto grows_from = [&](std::uint64_t from, int limit_ms) {
    return sm.wait_for([from](const sm::SmStatus& s) { return s.light_sweeps > from; }, std::chrono::milliseconds(limit_ms));
  };
  int rc = 0;
  EXPECT_EQ(ctl("sweep off", rc), "periodic sweeps off: traps and requested sweeps still sweep\n");
  EXPECT_EQ(rc, 0);
  EXPECT_FALSE(json::parse(ctl("--json status", rc))["periodic_sweeps"].get<bool>());
  EXPECT_NE(ctl("status", rc).find("periodic sweeps off"), std::string::npos);
  // A periodic light sweep may have been under way when sweeping went off.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::uint64_t off = light();
  // The sim runs as fast as it can: ten simulated light sweep intervals pass in well under this.
  EXPECT_FALSE(grows_from(off, 2000)) << light() - off << " light sweeps while sweeping was off";
  EXPECT_EQ(ctl("sweep light", rc), "light sweep requested\n");
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(grows_from(off, 5000)) << "a requested light sweep did not run";
  EXPECT_EQ(light(), off + 1);
  EXPECT_EQ(ctl("sweep on", rc), "periodic sweeps on\n");
  EXPECT_TRUE(json::parse(ctl("--json status", rc))["periodic_sweeps"].get<bool>());
  EXPECT_TRUE(grows_from(off + 1, 30000)) << "periodic light sweeps did not resume";
  EXPECT_NE(ctl("sweep sideways", rc).find("sideways"), std::string::npos);
  EXPECT_EQ(rc, 2);  // a usage error: nothing sent
}

TEST_F(Service, CtlLftsAreTheFabricsLfts) {
  int rc = 0;
  const std::string out = ctl("lfts", rc);
  ASSERT_EQ(rc, 0) << out;
  // OpenSM's layout: a header per switch, "0xLLLL PPP # ..." per routed LID, a count.
  const std::regex header(R"(^Unicast lids \[0-(\d+)\] of switch Lid (\d+) guid 0x([0-9a-f]{16}) \('([^']*)'\):$)");
  const std::regex entry(R"(^0x([0-9a-f]{4}) (\d{3}) # (Channel Adapter|Switch) portguid 0x([0-9a-f]{16}): '([^']*)'$)");
  const std::regex footer(R"(^(\d+) lids dumped$)");
  struct Dump {
    unsigned max_lid = 0, base_lid = 0;
    std::map<unsigned, unsigned> ports;
    bool closed = false;
  };
  std::map<std::uint64_t, Dump> dumps;
  Dump* cur = nullptr;
  std::uint64_t last_guid = 0;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, header)) {
      const std::uint64_t guid = std::stoull(m[3], nullptr, 16);
      EXPECT_GT(guid, last_guid) << "switches in GUID order";
      last_guid = guid;
      cur = &dumps[guid];
      cur->max_lid = std::stoul(m[1]);
      cur->base_lid = std::stoul(m[2]);
    } else if (std::regex_match(line, m, entry)) {
      ASSERT_NE(cur, nullptr) << line;
      cur->ports[std::stoul(m[1], nullptr, 16)] = std::stoul(m[2]);
    } else if (std::regex_match(line, m, footer)) {
      ASSERT_NE(cur, nullptr);
      EXPECT_EQ(std::stoul(m[1]), cur->max_lid);
      cur->closed = true;
    } else {
      ADD_FAILURE() << "line not in OpenSM's dump layout: " << line;
    }
  }
  ASSERT_EQ(dumps.size(), 12u);
  // What the simulated switches hold (the SM wrote it at bring-up; nothing
  // rewrites an LFT of this stable fabric while we read).
  const sim::Fabric& f = *node_->fabric();
  std::size_t entries = 0;
  for (const auto& [guid, d] : dumps) {
    EXPECT_TRUE(d.closed);
    std::uint32_t n = 0;
    while (n < f.node_count() && (!f.is_switch(n) || f.node_guid(n) != guid)) ++n;
    ASSERT_LT(n, f.node_count()) << std::hex << guid;
    EXPECT_EQ(f.lid(f.port(n, 0)), d.base_lid);
    for (unsigned lid = 1; lid <= d.max_lid; ++lid) {
      const std::uint8_t p = f.lft_port(n, static_cast<std::uint16_t>(lid));
      const auto it = d.ports.find(lid);
      if (p == 0xff) {
        EXPECT_EQ(it, d.ports.end()) << "LID " << lid;
        continue;
      }
      ASSERT_NE(it, d.ports.end()) << "switch " << std::hex << guid << std::dec << " LID " << lid;
      EXPECT_EQ(it->second, p) << "switch " << std::hex << guid << std::dec << " LID " << lid;
      ++entries;
    }
  }
  EXPECT_EQ(entries, 12u * 44u);  // every switch routes every LID
}

TEST_F(Service, CtlPathsFollowTheRoute) {
  int rc = 0;
  const json j = json::parse(ctl("--json paths 3 --from 20", rc));
  ASSERT_EQ(rc, 0);
  ASSERT_EQ(j["paths"].size(), 1u);
  EXPECT_EQ(j["paths"][0]["slid"], 20);
  EXPECT_EQ(j["paths"][0]["dlid"], 3);
  // The switches on the way: hops + 1 of them; between two hosts two more
  // links than switch-to-switch hops (madstorm counts links).
  const json& p = j["paths"][0];
  EXPECT_EQ(j["route"].size(), p["hops"].get<std::size_t>() + 1);
  EXPECT_EQ(p["links"].get<std::size_t>(), j["route"].size() + 1);
  // MTU and rate as people read them, from the codes the SA answers (IBA 15.2.5.16).
  EXPECT_EQ(p["mtu_bytes"].get<unsigned>(), 128u << p["mtu"].get<unsigned>());
  EXPECT_EQ(p["rate_gbps"].get<double>(), wire::rate_mbps(p["rate"].get<std::uint8_t>()) / 1000.0);
  const std::string table = ctl("paths 3 --from 20", rc);
  EXPECT_NE(table.find("LINKS SW-HOPS"), std::string::npos) << table;
  EXPECT_NE(table.find(fmt::format(" {} {:>10} ", p["mtu_bytes"].get<unsigned>(),
                                   fmt::format("{:g} Gb/s", p["rate_gbps"].get<double>()))),
            std::string::npos)
      << table;
  const json all = json::parse(ctl("--json paths 3", rc));
  EXPECT_EQ(all["paths"].size(), 43u);  // from every other LID
  const json bad = json::parse(ctl("--json paths 999", rc));
  EXPECT_EQ(rc, 1);
  EXPECT_FALSE(bad["ok"].get<bool>());
}

TEST_F(Service, PriorityRunsOnTheSmCore) {
  int rc = 0;
  const json j = json::parse(ctl("--json priority 7", rc));
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(j["was"], 15);
  EXPECT_EQ(node_->sm().status().priority, 7);
  const json sms = json::parse(ctl("--json sms", rc));
  ASSERT_EQ(rc, 0);
  ASSERT_GE(sms["sms"].size(), 1u);
  EXPECT_EQ(sms["sms"][0]["priority"], 7);
  EXPECT_TRUE(sms["sms"][0]["self"].get<bool>());
  ctl("priority 15", rc);
  EXPECT_EQ(rc, 0);
  // Alone on its subnet: no standby to hand over to, said as an error.
  const json h = json::parse(ctl("--json handover", rc));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(h["error"].get<std::string>().find("no standby"), std::string::npos);
}

TEST_F(Service, MalformedRequestsGetErrors) {
  const std::vector<std::string> bad = {
      "not json",
      "[1,2]",
      "{}",
      "{\"cmd\":5}",
      "{\"cmd\":\"reboot\"}",
      "{\"cmd\":\"priority\"}",
      "{\"cmd\":\"priority\",\"value\":\"high\"}",
      "{\"cmd\":\"priority\",\"value\":16}",
      "{\"cmd\":\"paths\"}",
      "{\"cmd\":\"paths\",\"lid\":-1}",
      "{\"cmd\":\"paths\",\"lid\":3,\"from\":70000}",
      "{\"cmd\":\"loglevel\",\"level\":\"loud\"}",
      "{\"cmd\":\"sweep\",\"kind\":\"sideways\"}",
      "{\"cmd\":\"sweep\",\"kind\":1}",
      "{\"cmd\":\"status\"",
      std::string("\xff\xfe{\"cmd\"", 8),
  };
  const std::vector<std::string> replies = raw(bad);
  ASSERT_EQ(replies.size(), bad.size());
  for (std::size_t i = 0; i < bad.size(); ++i) {
    const json r = json::parse(replies[i]);
    EXPECT_FALSE(r["ok"].get<bool>()) << bad[i];
    EXPECT_FALSE(r["error"].get<std::string>().empty()) << bad[i];
  }
  // A line longer than the bound closes the connection with an error.
  const std::vector<std::string> long_reply = raw({std::string(kRequestBytesMax + 100, 'x')});
  ASSERT_EQ(long_reply.size(), 1u);
  EXPECT_FALSE(json::parse(long_reply[0])["ok"].get<bool>());
  // The daemon still answers.
  const std::vector<std::string> ok = raw({"{\"cmd\":\"status\"}", "{\"cmd\":\"counters\"}"});
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_TRUE(json::parse(ok[0])["ok"].get<bool>());
  EXPECT_TRUE(json::parse(ok[1])["ok"].get<bool>());
}

TEST_F(Service, MetricsEndpoint) {
  const std::string r = st::http_get(metrics_->port());
  ASSERT_EQ(r.rfind("HTTP/1.", 0), 0u) << r;
  EXPECT_NE(r.find(" 200 "), std::string::npos);
  EXPECT_NE(r.find("text/plain; version=0.0.4"), std::string::npos);
  EXPECT_GE(st::metric(r, "madengine_epoch").value_or(0), 1);
  EXPECT_EQ(st::metric(r, "madengine_subnet_up").value_or(0), 1);
  EXPECT_EQ(st::metric(r, "madengine_ha_state{state=\"master\"}").value_or(0), 1);
  EXPECT_EQ(st::metric(r, "madengine_ports{state=\"active\"}").value_or(0), 128);
  EXPECT_GE(st::metric(r, "madengine_sm_sweeps_total{kind=\"heavy\"}").value_or(0), 1);
  EXPECT_GT(st::metric(r, "madengine_sm_smps_sent_total").value_or(0), 0);
  EXPECT_NE(st::http_get(metrics_->port(), "/nothing").find(" 404 "), std::string::npos);
  EXPECT_EQ(st::metric(r, std::string("madengine_build_info{version=\"") + MADENGINE_VERSION_STRING + "\"}"), 1);
  // The families clients ask for have samples before their first request
  // (no SA client talks to this node: they are at 0).
  const sa::SaCounters sa = node_->sa().counters();
  for (const auto& [record, method] : std::vector<std::pair<sa::SaRecordKind, sa::SaMethodKind>>{
           {sa::SaRecordKind::kPath, sa::SaMethodKind::kGet},
           {sa::SaRecordKind::kPath, sa::SaMethodKind::kGetTable},
           {sa::SaRecordKind::kMultiPath, sa::SaMethodKind::kGetMulti},
           {sa::SaRecordKind::kService, sa::SaMethodKind::kSet},
           {sa::SaRecordKind::kMcMember, sa::SaMethodKind::kDelete},
           {sa::SaRecordKind::kNode, sa::SaMethodKind::kGetTable},
           {sa::SaRecordKind::kInformInfo, sa::SaMethodKind::kSet}}) {
    const std::string labels = fmt::format("{{record=\"{}\",method=\"{}\"}}", sa::to_string(record), sa::to_string(method));
    const auto& c = sa.by_kind_method[static_cast<std::size_t>(record)][static_cast<std::size_t>(method)];
    EXPECT_EQ(st::metric(r, "madengine_sa_requests_received_total" + labels), static_cast<double>(c.received)) << labels;
    EXPECT_EQ(st::metric(r, "madengine_sa_requests_busy_total" + labels), static_cast<double>(c.busy)) << labels;
  }
  EXPECT_EQ(st::metric(r, "madengine_sa_requests_received_total{record=\"other\",method=\"Get\"}"), std::nullopt);
  // Every sample line is NAME{LABELS} VALUE or NAME VALUE, prefixed madengine_.
  const std::string body = r.substr(r.find("\r\n\r\n") + 4);
  const std::regex sample(R"(^madengine_[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.e]+$)");
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') {
      EXPECT_TRUE(std::regex_match(line, sample)) << line;
    }
}

// The fabric health commands: tables with exit 0, a LID nobody has is the
// daemon's error (1), a LID outside the unicast range a usage error (2).
TEST_F(Service, CtlFabricHealthCommands) {
  int status = -1;
  std::string out = ctl("portstatus", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("no link below the width both ends enable"), std::string::npos) << out;
  out = ctl("switchbalance --verbose", status);
  EXPECT_EQ(status, 0) << out;
  // ft2:8: every leaf spreads the other leaves' hosts over its spines.
  EXPECT_NE(out.find("Switch: 0x"), std::string::npos) << out;
  EXPECT_EQ(out.find("Unbalanced"), std::string::npos) << out;
  out = ctl("lidbalance", status);
  EXPECT_EQ(status, 0) << out;
  out = ctl("querylid 1", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("LID 1: "), std::string::npos) << out;
  out = ctl("querylid 49000", status);
  EXPECT_EQ(status, 1) << out;
  out = ctl("querylid 0", status);
  EXPECT_EQ(status, 2) << out;
  // The manager's first round ends within its interval (500 ms) after subnet up.
  for (int i = 0; i < 100; ++i) {
    out = ctl("errors", status);
    if (status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("0 of "), std::string::npos) << out;  // no port of the sim has errors
}

// Every series the Grafana dashboard plots is one the daemon exports.
TEST_F(Service, DashboardNamesExportedMetrics) {
  std::ifstream in(MADENGINE_DASHBOARD);
  ASSERT_TRUE(in) << MADENGINE_DASHBOARD;
  const json dash = json::parse(in);
  const std::string text = st::http_get(metrics_->port());
  std::set<std::string> families;
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("# TYPE ", 0) == 0) families.insert(l.substr(7, l.find(' ', 7) - 7));
  families.insert("madengine_ha_replica_age_seconds");  // a standby's only
  std::size_t checked = 0;
  const std::regex name(R"(madengine_[a-z_]+)");
  for (const json& p : dash["panels"])
    for (const json& t : p["targets"]) {
      const std::string expr = t["expr"].get<std::string>();
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) {
        std::string n = it->str();
        if (n.ends_with("_bucket")) n.resize(n.size() - 7);
        EXPECT_TRUE(families.contains(n)) << p["title"] << ": " << n;
        ++checked;
      }
    }
  EXPECT_GT(checked, 20u);
}

TEST(ServiceConfig, SectionsAndErrors) {
  const ServiceConfig c = parse_service_config("[metrics]\nlisten = \"127.0.0.1:9464\"\n[admin]\nsocket = \"/tmp/a.sock\"\n", "t.toml");
  EXPECT_EQ(c.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(c.admin_socket, "/tmp/a.sock");
  EXPECT_EQ(parse_service_config("", "t.toml").admin_socket, kDefaultAdminSocket);
  EXPECT_TRUE(parse_service_config("", "t.toml").metrics_listen.empty());
  try {
    parse_service_config("[metrics]\n\nlisten = \"localhost\"\n", "t.toml");
    FAIL();
  } catch (const node::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("t.toml:3"), std::string::npos) << e.what();
  }
  // The node's section reader's words and lines; an unknown key before a key's type.
  const auto message = [](const std::string& text) {
    try {
      parse_service_config(text, "t.toml");
    } catch (const node::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("[admin]\nsockets = \"x\"\n"), "t.toml:2: unknown key admin.sockets");
  EXPECT_EQ(message("[metrics]\nlisten = 9464\n"), "t.toml:2: metrics.listen must be a string");
  EXPECT_EQ(message("[metrics]\nlisten = 9464\nport = 1\n"), "t.toml:3: unknown key metrics.port");
  EXPECT_EQ(message("metrics = 1\n"), "t.toml:1: [metrics] must be a table");
  // The node's own parser passes over both sections.
  EXPECT_NO_THROW(node::parse_config("[metrics]\nlisten = \"127.0.0.1:9464\"\n[admin]\nsocket = \"\"\n", "t.toml"));
}

}  // namespace
}  // namespace madengine::service
