// A madsim scenario: everything one seed draws before the run starts, a
// fabric, the SMs and their priorities, the client population and the fault
// schedule. draw_scenario() is a pure function of (seed, size): the same
// seed always gives the same scenario, and describe() prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "node/fault_points.hpp"
#include "sim/topology.hpp"

namespace madsim {

class Rng;
using madengine::Nanos;

enum class Size : std::uint8_t { kSmall, kMedium, kLarge };
bool parse_size(const std::string& text, Size& out) noexcept;
const char* to_string(Size s) noexcept;

enum class FabricKind : std::uint8_t { kFatTree2, kFatTree3, kRandom, kTwoSubnets, kTorus, kMesh, kDragonfly };
const char* to_string(FabricKind k) noexcept;

struct SmDraw {
  std::uint32_t node = 0;  // a CA of the topology
  std::uint8_t priority = 0;
};

enum class FaultKind : std::uint8_t {
  kSmpLoss,        // rate over [at, at + length), attr 0 = every attribute
  kLinkFlap,       // port a (switch-to-switch or host link) down for `length`
  kLinkFlapInPhase,// the same, when the master enters `phase`
  kSwitchReboot,   // node a reset (tables cleared, LID lost)
  kSmaMute,        // node a's SMA silent for `length`
  kSmaResetting,   // node a reset `count` times, `length` apart
  kMasterKill,     // the master dies when it (or a standby copying from it) enters `phase`
  kMasterKillJournal,  // the master dies writing its SA journal, before `step`
  kSmPortBounce,   // SM a's port vanishes for `length` (its node dies and returns)
  kJoinSubnets,    // the two subnets are cabled together
  kPartitionsReload,  // the partitions file changes and every live SM re-reads it (SIGHUP)
};
// Kinds the main draw picks from (the reload comes with the policy draw).
inline constexpr unsigned kFaultKindCount = 10;
const char* to_string(FaultKind k) noexcept;

struct FaultDraw {
  FaultKind kind = FaultKind::kSmpLoss;
  Nanos at_ns = 0;      // not before this
  Nanos length_ns = 0;
  std::uint32_t a = 0;  // port, node or SM index, by kind
  std::uint16_t attr = 0;
  double rate = 0.0;
  unsigned count = 0;
  madengine::node::SmPhase phase = madengine::node::SmPhase::kDiscovery;
  unsigned step = 0;    // kMasterKillJournal: a DurableStep
  bool restart = true;  // kMasterKill*: the dead SM comes back (after `length`)
};

enum class ClientOp : std::uint8_t {
  kPathRecord,     // Get by SLID/DLID (both ends are clients' or any hosts')
  kGetTable,       // NodeRecord or PortInfoRecord table
  kServiceSet,     // register with a lease
  kServiceDelete,
  kMcJoin,
  kMcLeave,
  kInformSubscribe,
};
const char* to_string(ClientOp op) noexcept;

struct ClientAction {
  Nanos at_ns = 0;
  unsigned client = 0;     // index into Scenario::clients
  ClientOp op = ClientOp::kPathRecord;
  std::uint32_t peer = 0;  // kPathRecord: the destination host node
  std::uint32_t key = 0;   // service or group number
  std::uint32_t lease_s = 0;  // kServiceSet: 0xffffffff = infinite
  std::uint16_t table = 0;    // kGetTable: attribute
  bool verify = false;        // kPathRecord sent once the fabric settled: checked against the LFT walk
  // kPathRecord in the shape a client's library sends (SGID, DGID, P_Key,
  // NumbPath 1, Reversible), else by SLID/DLID. `pkey_pick` chooses, when
  // the query is sent, among the partitions both ends then share.
  bool gid_shaped = false;
  std::uint32_t pkey_pick = 0;
};

// A partition beyond the default one (every port a full member): its CA
// members, each a full or a limited member, and its SL (QoS on).
struct PartitionDraw {
  std::uint16_t pkey = 0;  // base, 0x0001..0x7ffe
  std::vector<std::pair<std::uint32_t, bool>> members;  // (CA node, full)
  std::uint8_t sl = 0;
};

// The site's policy every SM of the scenario is configured with: routing,
// partitions (and a second set an operator reloads), QoS, M_Key.
struct Policy {
  std::string routing = "minhop";  // sm.routing
  bool deadlock_free = false;      // the routing promises it: the channel dependencies are checked
  bool layered = false;            // its paths' SLs are their routes' layers (dfsssp, nue, dor)
  std::vector<PartitionDraw> partitions;
  std::vector<PartitionDraw> partitions_reloaded;  // kPartitionsReload's file
  bool qos = false;
  std::string qos_sl2vl;  // qos_sl2vl ("" = OpenSM's default)
  std::uint64_t m_key = 0;
  unsigned m_key_lease_s = 0;
  unsigned m_key_protection = 0;
  // A lone SM that restarts comes back with another key (the site rotated
  // it while the SM was down): it re-keys ports through its guid2mkey, or,
  // with that file lost too, once their leases end.
  std::uint64_t m_key_after_restart = 0;  // 0: the same key
  bool guid2mkey_lost = false;
  // Clients per host beyond the first, and the share of PathRecord queries
  // sent in a client library's shape (SGID/DGID, P_Key, Reversible).
  unsigned extra_clients = 0;
  double gid_share = 0.0;
};

struct Scenario {
  std::uint64_t seed = 0;
  Size size = Size::kSmall;
  FabricKind fabric_kind = FabricKind::kFatTree2;
  std::string fabric_spec;  // human-readable, e.g. "ft2 k=6 leaves=4"
  madengine::sim::Topology topo;
  // Two subnets: the cable that joins them (node, port each), -1 otherwise.
  std::uint32_t join_a = madengine::sim::kNoNode, join_b = madengine::sim::kNoNode;
  std::uint8_t join_a_port = 0, join_b_port = 0;
  std::vector<SmDraw> sms;
  Policy policy;
  std::vector<std::uint32_t> clients;  // host node of each SA client (a host may run several)
  std::vector<ClientAction> actions;   // by time
  std::vector<FaultDraw> faults;       // by time
  Nanos faults_end_ns = 0;             // no fault starts after this
  Nanos run_ns = 0;                    // faults and clients; then the fabric settles and is checked
};

Scenario draw_scenario(std::uint64_t seed, Size size);
// The CA nodes of a topology, in node order.
std::vector<std::uint32_t> cas_of(const madengine::sim::Topology& t);
// One client action at `at_ms` by one of `count` clients from `first` on,
// to a host of `hosts` (the main draw's and the policy draw's clients).
ClientAction draw_action(Rng& r, const std::vector<std::uint32_t>& hosts, std::uint64_t at_ms, unsigned count,
                         unsigned first);
std::string describe(const Scenario& s);

}  // namespace madsim
