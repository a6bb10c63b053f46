// Conformance of the sim against ibsim: the same topology file is loaded into
// both, the same SMPs (byte for byte, same TID) go to both, and the answers
// are compared field by field. The ibsim side is this process's own umad
// transport through umad2sim. Deliberate differences are listed in
// kKnownDifferences with the reason; anything else fails the test.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/umad/umad_transport.hpp"
#include "ibsim_harness.hpp"
#include "madengine/engine/clock.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/node_description.hpp"
#include "madengine/wire/smp/node_info.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/switch_info.hpp"
#include "sim/bringup.hpp"
#include "sim/fabric.hpp"
#include "sim/generators.hpp"
#include "sim/smp_client.hpp"
#include "sim/topology.hpp"

namespace madengine::sim {
namespace {

using namespace std::chrono_literals;
using wire::method::kGet;
using wire::method::kSet;

// Fields where the sim deliberately differs from ibsim 0.10, with the reason.
// Keys are "Attribute.Field".
const std::map<std::string, std::string> kKnownDifferences = {
    {"PortInfo.LocalPhyErrors",
     "ibsim 0.10 answers a switch port without a cable from its template table, whose byte 53 holds "
     "0x40 (LocalPhyErrors 4); the sim keeps error counters at 0, as a port that never trained"},
};

std::optional<MadBuf> umad_transact(UmadTransport& t, MadBuf req) {
  req.resp_timeout_ms = 1000;
  MadBuf* out[] = {&req};
  if (t.tx_burst(std::span<MadBuf* const>(out, 1)) != 1) return std::nullopt;
  const auto tid_low = static_cast<std::uint32_t>(req.hdr().tid.get());
  MadBuf rx[8];
  MadBuf* rxp[8];
  for (int i = 0; i < 8; ++i) rxp[i] = &rx[i];
  // The shim never times a request out: the test runs its own (short) timer,
  // since a dropped SMP is a legitimate outcome to compare.
  const auto deadline = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{t.fd(), POLLIN, 0};
    ::poll(&p, 1, 20);
    const std::size_t n = t.rx_burst(std::span<MadBuf*>(rxp, 8));
    for (std::size_t i = 0; i < n; ++i)
      if (rx[i].hdr().is_response() && static_cast<std::uint32_t>(rx[i].hdr().tid.get()) == tid_low) return rx[i];
  }
  return std::nullopt;
}

struct Field {
  const char* name;
  std::function<std::uint64_t(const std::uint8_t*)> get;
};

template <typename T, typename F>
Field field(const char* name, F f) {
  return {name, [f](const std::uint8_t* d) { return static_cast<std::uint64_t>(f(*reinterpret_cast<const T*>(d))); }};
}

const std::vector<Field>& fields_of(std::uint16_t attr) {
  using NI = wire::NodeInfo;
  using PI = wire::PortInfo;
  using SI = wire::SwitchInfo;
  static const std::vector<Field> node_info = {
      field<NI>("BaseVersion", [](const NI& x) { return x.base_version; }),
      field<NI>("ClassVersion", [](const NI& x) { return x.class_version; }),
      field<NI>("NodeType", [](const NI& x) { return x.node_type; }),
      field<NI>("NumPorts", [](const NI& x) { return x.num_ports; }),
      field<NI>("SystemImageGUID", [](const NI& x) { return x.system_image_guid.get(); }),
      field<NI>("NodeGUID", [](const NI& x) { return x.node_guid.get(); }),
      field<NI>("PortGUID", [](const NI& x) { return x.port_guid.get(); }),
      field<NI>("PartitionCap", [](const NI& x) { return x.partition_cap.get(); }),
      field<NI>("DeviceID", [](const NI& x) { return x.device_id.get(); }),
      field<NI>("Revision", [](const NI& x) { return x.revision.get(); }),
      field<NI>("LocalPortNum", [](const NI& x) { return x.local_port_num; }),
      field<NI>("VendorID", [](const NI& x) { return x.vendor_id(); }),
  };
  static const std::vector<Field> port_info = {
      field<PI>("M_Key", [](const PI& x) { return x.m_key.get(); }),
      field<PI>("GidPrefix", [](const PI& x) { return x.gid_prefix.get(); }),
      field<PI>("LID", [](const PI& x) { return x.lid.get(); }),
      field<PI>("MasterSMLID", [](const PI& x) { return x.master_sm_lid.get(); }),
      field<PI>("CapabilityMask", [](const PI& x) { return x.capability_mask.get(); }),
      field<PI>("DiagCode", [](const PI& x) { return x.diag_code.get(); }),
      field<PI>("M_KeyLeasePeriod", [](const PI& x) { return x.m_key_lease_period.get(); }),
      field<PI>("LocalPortNum", [](const PI& x) { return x.local_port_num; }),
      field<PI>("LinkWidthEnabled", [](const PI& x) { return x.link_width_enabled; }),
      field<PI>("LinkWidthSupported", [](const PI& x) { return x.link_width_supported; }),
      field<PI>("LinkWidthActive", [](const PI& x) { return x.link_width_active; }),
      field<PI>("LinkSpeedSupported", [](const PI& x) { return x.link_speed_supported(); }),
      field<PI>("PortState", [](const PI& x) { return x.port_state(); }),
      field<PI>("PortPhysicalState", [](const PI& x) { return x.port_physical_state(); }),
      field<PI>("LinkDownDefaultState", [](const PI& x) { return x.link_down_default_state(); }),
      field<PI>("M_KeyProtectBits", [](const PI& x) { return x.m_key_protect_bits(); }),
      field<PI>("LMC", [](const PI& x) { return x.lmc(); }),
      field<PI>("LinkSpeedActive", [](const PI& x) { return x.link_speed_active(); }),
      field<PI>("LinkSpeedEnabled", [](const PI& x) { return x.link_speed_enabled(); }),
      field<PI>("NeighborMTU", [](const PI& x) { return x.neighbor_mtu(); }),
      field<PI>("MasterSMSL", [](const PI& x) { return x.master_sm_sl(); }),
      field<PI>("VLCap", [](const PI& x) { return x.vl_cap(); }),
      field<PI>("InitType", [](const PI& x) { return x.init_type(); }),
      field<PI>("VLHighLimit", [](const PI& x) { return x.vl_high_limit; }),
      field<PI>("VLArbitrationHighCap", [](const PI& x) { return x.vl_arbitration_high_cap; }),
      field<PI>("VLArbitrationLowCap", [](const PI& x) { return x.vl_arbitration_low_cap; }),
      field<PI>("InitTypeReply", [](const PI& x) { return x.init_type_reply(); }),
      field<PI>("MTUCap", [](const PI& x) { return x.mtu_cap(); }),
      field<PI>("VLStallCount", [](const PI& x) { return x.vl_stall_count(); }),
      field<PI>("HOQLife", [](const PI& x) { return x.hoq_life(); }),
      field<PI>("OperationalVLs", [](const PI& x) { return x.operational_vls(); }),
      field<PI>("PartitionEnforcementInbound", [](const PI& x) { return x.partition_enforcement_inbound(); }),
      field<PI>("PartitionEnforcementOutbound", [](const PI& x) { return x.partition_enforcement_outbound(); }),
      field<PI>("FilterRawInbound", [](const PI& x) { return x.filter_raw_inbound(); }),
      field<PI>("FilterRawOutbound", [](const PI& x) { return x.filter_raw_outbound(); }),
      field<PI>("M_KeyViolations", [](const PI& x) { return x.m_key_violations.get(); }),
      field<PI>("P_KeyViolations", [](const PI& x) { return x.p_key_violations.get(); }),
      field<PI>("Q_KeyViolations", [](const PI& x) { return x.q_key_violations.get(); }),
      field<PI>("GUIDCap", [](const PI& x) { return x.guid_cap; }),
      field<PI>("ClientReregister", [](const PI& x) { return x.client_reregister(); }),
      field<PI>("SubnetTimeOut", [](const PI& x) { return x.subnet_timeout(); }),
      field<PI>("RespTimeValue", [](const PI& x) { return x.resp_time_value(); }),
      field<PI>("LocalPhyErrors", [](const PI& x) { return x.local_phy_errors(); }),
      field<PI>("OverrunErrors", [](const PI& x) { return x.overrun_errors(); }),
      field<PI>("MaxCreditHint", [](const PI& x) { return x.max_credit_hint.get(); }),
      field<PI>("LinkRoundTripLatency", [](const PI& x) { return x.link_round_trip_latency(); }),
      field<PI>("CapabilityMask2", [](const PI& x) { return x.capability_mask2.get(); }),
      field<PI>("LinkSpeedExtActive", [](const PI& x) { return x.link_speed_ext_active(); }),
      field<PI>("LinkSpeedExtSupported", [](const PI& x) { return x.link_speed_ext_supported(); }),
      field<PI>("LinkSpeedExtEnabled", [](const PI& x) { return x.link_speed_ext_enabled(); }),
  };
  static const std::vector<Field> switch_info = {
      field<SI>("LinearFDBCap", [](const SI& x) { return x.linear_fdb_cap.get(); }),
      field<SI>("RandomFDBCap", [](const SI& x) { return x.random_fdb_cap.get(); }),
      field<SI>("MulticastFDBCap", [](const SI& x) { return x.multicast_fdb_cap.get(); }),
      field<SI>("LinearFDBTop", [](const SI& x) { return x.linear_fdb_top.get(); }),
      field<SI>("DefaultPort", [](const SI& x) { return x.default_port; }),
      field<SI>("DefaultMulticastPrimaryPort", [](const SI& x) { return x.default_multicast_primary_port; }),
      field<SI>("DefaultMulticastNotPrimaryPort", [](const SI& x) { return x.default_multicast_not_primary_port; }),
      field<SI>("LifeTimeValue", [](const SI& x) { return x.life_time_value(); }),
      field<SI>("PortStateChange", [](const SI& x) { return x.port_state_change(); }),
      field<SI>("LIDsPerPort", [](const SI& x) { return x.lids_per_port.get(); }),
      field<SI>("PartitionEnforcementCap", [](const SI& x) { return x.partition_enforcement_cap.get(); }),
      field<SI>("InboundEnforcementCap", [](const SI& x) { return x.inbound_enforcement_cap(); }),
      field<SI>("OutboundEnforcementCap", [](const SI& x) { return x.outbound_enforcement_cap(); }),
      field<SI>("FilterRawInboundCap", [](const SI& x) { return x.filter_raw_inbound_cap(); }),
      field<SI>("FilterRawOutboundCap", [](const SI& x) { return x.filter_raw_outbound_cap(); }),
      field<SI>("EnhancedPort0", [](const SI& x) { return x.enhanced_port0(); }),
      field<SI>("MulticastFDBTop", [](const SI& x) { return x.multicast_fdb_top.get(); }),
  };
  static const std::vector<Field> bytes = [] {
    std::vector<Field> v;
    static const char* names[64] = {};
    static std::string storage[64];
    for (int i = 0; i < 64; ++i) {
      storage[i] = "byte" + std::to_string(i);
      names[i] = storage[i].c_str();
      v.push_back({names[i], [i](const std::uint8_t* d) { return std::uint64_t{d[i]}; }});
    }
    return v;
  }();
  switch (attr) {
    case wire::smp_attr::kNodeInfo:
      return node_info;
    case wire::smp_attr::kPortInfo:
      return port_info;
    case wire::smp_attr::kSwitchInfo:
      return switch_info;
    default:
      return bytes;
  }
}

const char* attr_name(std::uint16_t attr) {
  switch (attr) {
    case wire::smp_attr::kNodeInfo:
      return "NodeInfo";
    case wire::smp_attr::kNodeDescription:
      return "NodeDescription";
    case wire::smp_attr::kPortInfo:
      return "PortInfo";
    case wire::smp_attr::kSwitchInfo:
      return "SwitchInfo";
    case wire::smp_attr::kLinearFwdTable:
      return "LinearForwardingTable";
    case wire::smp_attr::kPKeyTable:
      return "P_KeyTable";
    case wire::smp_attr::kSl2VlTable:
      return "SLtoVLMappingTable";
    case wire::smp_attr::kVlArbTable:
      return "VLArbitrationTable";
    default:
      return "Attribute";
  }
}

std::string path_string(const wire::DrPath& p) {
  std::string s = "0";
  for (std::uint8_t i = 1; i <= p.hops; ++i) s += "," + std::to_string(p.ports[i]);
  return s;
}

class Conformance {
 public:
  Conformance(const std::string& file, const std::string& host) : topo_(load_topology(file)), ib_(file) {
    FabricConfig cfg;
    cfg.linear_fdb_cap = 30720;  // ibsim 0.10's MAXLINEARCAP
    sim_ = std::make_unique<Fabric>(topo_, cfg);
    AgentSpec spec;
    spec.smi = true;
    ep_ = sim_->attach(sim_->find_node(host), 1, spec);
    client_ = std::make_unique<SmpClient>(*sim_, ep_);
    if (!ib_.ok()) return;
    ib_.attach_self(host);
    umad_ = std::make_unique<UmadTransport>(UmadConfig{}, clock_);
    opened_ = umad_->open(AgentSpec{.smi = true});
  }
  bool ok() const { return ib_.ok() && opened_; }
  std::string error() const { return ib_.ok() ? std::string(umad_->last_error()) : ib_.error(); }
  SmpClient& client() { return *client_; }

  // Sends one DR SMP to both and compares; returns the sim's answer.
  std::optional<wire::DrSmp> both(std::uint8_t method, std::uint16_t attr, std::uint32_t mod, const wire::DrPath& path,
                                  std::span<const std::uint8_t> data = {}) {
    ++compared_;
    MadBuf req;
    auto& smp = req.as<wire::DrSmp>();
    smp = wire::make_dr_smp(method, attr, mod, 0x00c0'0000'0000'0000ull + compared_, path);
    if (!data.empty()) std::memcpy(smp.data.data(), data.data(), std::min<std::size_t>(data.size(), 64));
    req.addr.lid = wire::kPermissiveLid;
    const std::string where = std::string(method == kSet ? "Set " : "Get ") + attr_name(attr) + " mod " +
                              std::to_string(mod) + " path " + path_string(path);
    const auto ib = umad_transact(*umad_, req);
    const auto sim_buf = client_->transact(req);
    if (!ib || !sim_buf) {
      EXPECT_EQ(ib.has_value(), sim_buf.has_value()) << where << ": answered by only one side";
      return std::nullopt;
    }
    const auto& a = ib->as<wire::DrSmp>();
    const auto& b = sim_buf->as<wire::DrSmp>();
    EXPECT_EQ(a.hdr.method, b.hdr.method) << where;
    EXPECT_EQ(a.hdr.status.get(), b.hdr.status.get()) << where << ": status (with D bit)";
    EXPECT_EQ(a.hop_pointer(), b.hop_pointer()) << where;
    EXPECT_EQ(a.hop_count(), b.hop_count()) << where;
    EXPECT_EQ(a.hdr.attr_mod.get(), b.hdr.attr_mod.get()) << where;
    for (std::uint8_t i = 1; i <= a.hop_count(); ++i) {
      EXPECT_EQ(a.initial_path[i], b.initial_path[i]) << where << ": initial path [" << int(i) << "]";
      EXPECT_EQ(a.return_path[i], b.return_path[i]) << where << ": return path [" << int(i) << "]";
    }
    if (a.smp_status() == 0 && b.smp_status() == 0) {
      for (const Field& f : fields_of(attr)) {
        const std::string key = std::string(attr_name(attr)) + "." + f.name;
        const std::uint64_t x = f.get(a.data.data()), y = f.get(b.data.data());
        if (x == y) continue;
        if (kKnownDifferences.count(key)) {
          known_.insert(key);
          continue;
        }
        ADD_FAILURE() << where << ": " << key << " ibsim " << x << " sim " << y;
      }
    }
    return b;
  }

  std::size_t compared() const { return compared_; }
  const std::set<std::string>& known_seen() const { return known_; }

 private:
  Topology topo_;
  ibsim::IbsimFabric ib_;
  std::unique_ptr<Fabric> sim_;
  EndpointId ep_ = kNoEndpoint;
  std::unique_ptr<SmpClient> client_;
  SteadyClock clock_;
  std::unique_ptr<UmadTransport> umad_;
  bool opened_ = false;
  std::size_t compared_ = 0;
  std::set<std::string> known_;
};

// Gets of NodeInfo, NodeDescription, PortInfo (every port), SwitchInfo and a
// few tables at every node, along the DR paths the sim's discovery found.
void compare_whole_fabric(Conformance& c) {
  const BringUpResult disc = bring_up(c.client(), false);
  ASSERT_TRUE(disc.ok) << disc.error;
  for (const DiscoveredNode& n : disc.nodes) {
    SCOPED_TRACE("node " + std::to_string(n.guid));
    c.both(kGet, wire::smp_attr::kNodeInfo, 0, n.path);
    c.both(kGet, wire::smp_attr::kNodeDescription, 0, n.path);
    for (std::uint8_t p = 0; p <= n.num_ports; ++p) c.both(kGet, wire::smp_attr::kPortInfo, p, n.path);
    c.both(kGet, wire::smp_attr::kPortInfo, n.num_ports + 1u, n.path);  // out of range
    c.both(kGet, wire::smp_attr::kSwitchInfo, 0, n.path);               // unsupported on a CA
    c.both(kGet, wire::smp_attr::kPKeyTable, 0, n.path);
    if (n.is_switch) c.both(kGet, wire::smp_attr::kLinearFwdTable, 0, n.path);
  }
}

TEST(SimConformance, IbsimExampleTwoSwitchesTwoPortCas) {
  SKIP_WITHOUT_SHIM();
  Conformance c("/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca2port", "Hca1");
  ASSERT_TRUE(c.ok()) << c.error();
  compare_whole_fabric(c);
  EXPECT_GT(c.compared(), 40u);
  std::printf("SMPs compared: %zu\n", c.compared());
  for (const auto& k : c.known_seen())
    std::printf("known difference seen: %s (%s)\n", k.c_str(), kKnownDifferences.at(k).c_str());
}

TEST(SimConformance, GeneratedFatTreeAndSets) {
  SKIP_WITHOUT_SHIM();
  const std::string file =
      (std::filesystem::temp_directory_path() / ("madengine-sim-ft-" + std::to_string(::getpid()) + ".topo")).string();
  save_topology(make_fat_tree_2level({4}), file);
  Conformance c(file, "host-0-0");
  ASSERT_TRUE(c.ok()) << c.error();
  compare_whole_fabric(c);

  // Sets: our own port's LID and SM LID, a remote CA's, a switch's LFT block and LinearFDBTop.
  wire::DrPath self;
  wire::DrPath leaf, remote;
  leaf.push(1);
  for (std::uint8_t p : {1, 3, 3, 1}) remote.push(p);
  for (const wire::DrPath* path : {&self, &remote}) {
    auto cur = c.both(kGet, wire::smp_attr::kPortInfo, 0, *path);
    ASSERT_TRUE(cur);
    wire::PortInfo pi = *reinterpret_cast<const wire::PortInfo*>(cur->data.data());
    pi.lid = wire::be16::from(path == &self ? 1 : 7);
    pi.master_sm_lid = wire::be16::from(1);
    pi.set_port_state(0);
    pi.set_port_physical_state(0);
    c.both(kSet, wire::smp_attr::kPortInfo, 0, *path,
           std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&pi), sizeof pi));
    c.both(kGet, wire::smp_attr::kPortInfo, 0, *path);
  }
  wire::LftBlock blk{};
  for (std::size_t i = 0; i < wire::kLftBlockSize; ++i) blk.set_port(i, static_cast<std::uint8_t>(i % 5));
  c.both(kSet, wire::smp_attr::kLinearFwdTable, 0, leaf,
         std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&blk), sizeof blk));
  c.both(kGet, wire::smp_attr::kLinearFwdTable, 0, leaf);
  auto si = c.both(kGet, wire::smp_attr::kSwitchInfo, 0, leaf);
  ASSERT_TRUE(si);
  wire::SwitchInfo info = *reinterpret_cast<const wire::SwitchInfo*>(si->data.data());
  info.linear_fdb_top = wire::be16::from(63);
  c.both(kSet, wire::smp_attr::kSwitchInfo, 0, leaf,
         std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&info), sizeof info));
  // Port state machine on both ends of the leaf's link to host-0-0: ACTIVE
  // straight from INIT is refused, INIT -> ARMED -> ACTIVE is taken.
  for (std::uint8_t state : {std::uint8_t{4}, std::uint8_t{3}, std::uint8_t{4}}) {
    for (const wire::DrPath* path : {&leaf, &self}) {
      const std::uint32_t mod = path == &leaf ? 1 : 0;
      auto cur = c.both(kGet, wire::smp_attr::kPortInfo, mod, *path);
      ASSERT_TRUE(cur);
      wire::PortInfo pi = *reinterpret_cast<const wire::PortInfo*>(cur->data.data());
      pi.set_port_state(state);
      pi.set_port_physical_state(0);
      c.both(kSet, wire::smp_attr::kPortInfo, mod, *path,
             std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(&pi), sizeof pi));
    }
  }
  // A path through a CA is dropped by both (each side's own timer).
  wire::DrPath through_ca;
  for (std::uint8_t p : {1, 1, 1}) through_ca.push(p);
  c.both(kGet, wire::smp_attr::kNodeInfo, 0, through_ca);
  std::printf("SMPs compared: %zu\n", c.compared());
  std::filesystem::remove(file);
  for (const auto& k : c.known_seen())
    std::printf("known difference seen: %s (%s)\n", k.c_str(), kKnownDifferences.at(k).c_str());
}

}  // namespace
}  // namespace madengine::sim

namespace madengine::sim {
namespace {

// The generated topologies ibsim must load too: a seeded random irregular
// fabric, and the two separate subnets (only the SM's own one is reachable).
void compare_generated(const Topology& topo, const char* host, const char* tag) {
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("madengine-sim-" + std::string(tag) + "-" + std::to_string(::getpid()) + ".topo"))
                               .string();
  save_topology(topo, file);
  Conformance c(file, host);
  ASSERT_TRUE(c.ok()) << c.error();
  compare_whole_fabric(c);
  std::printf("SMPs compared: %zu\n", c.compared());
  std::filesystem::remove(file);
}

TEST(SimConformance, GeneratedRandomFabric) {
  SKIP_WITHOUT_SHIM();
  compare_generated(make_random({12, 4, 2, 8, 7}), "host-0-0", "random");
}

TEST(SimConformance, GeneratedTwoSubnets) {
  SKIP_WITHOUT_SHIM();
  compare_generated(make_two_subnets(4).topo, "a-host-0-0", "two");
}

}  // namespace
}  // namespace madengine::sim
