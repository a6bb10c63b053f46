// The in-process fabric: nodes, ports and links built from a Topology, an SMA
// per node answering SubnGet/SubnSet, directed-route (IBA 14.2.2) and
// LID-routed forwarding through the LFTs an SM programmed, endpoints where
// engines and hosts attach, the simulator's clock and seeded fault injection.
//
// Single-threaded by design: everything (engines' polls included) runs on the
// thread that drives the fabric, so a run replays exactly from its seed.
// Memory: per-node and per-port state is struct-of-arrays for the fields the
// forwarding loop touches (peer, state, LID), a compact record for the rest,
// and tables (LFT, MFT, P_Key, SL2VL, VLArb, GUIDInfo) exist only once set.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "madengine/engine/transport.hpp"
#include "madengine/wire/smp.hpp"
#include "madengine/wire/smp/lft.hpp"
#include "madengine/wire/smp/port_info.hpp"
#include "madengine/wire/smp/sm_info.hpp"
#include "sim/event_queue.hpp"
#include "sim/lft_pool.hpp"
#include "sim/port_counters.hpp"
#include "sim/topology.hpp"

namespace madengine::sim {

using PortIdx = std::uint32_t;  // a port's index over the whole fabric
inline constexpr PortIdx kNoPortIdx = 0xffffffffu;
using EndpointId = std::uint32_t;
inline constexpr EndpointId kNoEndpoint = 0xffffffffu;

// Why the fabric dropped a packet; each has a counter.
enum class DropReason : std::uint8_t {
  kBadMad,         // header fails validation (base version, hop pointer/count)
  kBadPath,        // DR path names a port the node lacks, or starts at another port
  kNotSwitch,      // a DR path or LID route would continue through a CA
  kLinkDown,       // no cable, or a port of the link is not physically up
  kPortNotActive,  // LID-routed through a port that is not ACTIVE
  kNoRoute,        // no LFT entry (255, above LinearFDBTop) or LID not on the reached port
  kHopLimit,       // LID-routed loop
  kNodeMuted,      // the node's SMA does not answer (fault)
  kNodeDead,       // the node is dead (fault)
  kLoss,           // random loss (fault)
  kMKey,           // M_Key check failed: no response (IBA 14.2.4.1)
  kNoAgent,        // nothing listens for this MAD at the reached port
  kRxFull,         // the endpoint's receive queue is full
  kCount,
};
const char* to_string(DropReason r) noexcept;

struct FabricConfig {
  Nanos hop_latency_ns = 100;             // per link traversal
  Nanos sma_latency_ns = 1000;            // SMA processing per request
  std::uint16_t linear_fdb_cap = 0xc000;  // ibsim 0.10 uses 30720
  std::uint16_t multicast_fdb_cap = 1024;
  std::uint16_t ca_partition_cap = 64;
  std::uint16_t switch_partition_cap = 8;     // NodeInfo.PartitionCap of a switch (port 0)
  std::uint16_t switch_enforcement_cap = 64;  // SwitchInfo.PartitionEnforcementCap
  std::uint8_t ca_guid_cap = 32;
  std::uint8_t mtu_cap = 4;                // 2048, as ibsim
  std::uint8_t vl_cap = 4;                 // VL0-7
  std::uint32_t endpoint_rx_depth = 1024;  // MADs an endpoint holds before kRxFull
  std::uint8_t lid_hops_max = 64;
  // CA ports advertise IsClientReregistrationSupported (PortInfo
  // CapabilityMask bit 25), as HCAs do; ibsim 0.10 does not, hence the default.
  bool ca_client_reregistration = false;
  std::uint64_t seed = 1;  // loss decisions; print it on failure to replay
};

struct FabricCounters {
  std::uint64_t sma_requests = 0;
  std::uint64_t sma_responses = 0;
  std::uint64_t delivered = 0;
  std::uint64_t link_traversals = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(DropReason::kCount)> drops{};
  std::uint64_t drop(DropReason r) const noexcept { return drops[static_cast<std::size_t>(r)]; }
  std::uint64_t drops_total() const noexcept;
};

// A MAD in flight with its LRH fields (the MAD alone has no LIDs).
struct Packet {
  wire::Mad mad;
  std::uint16_t slid = 0;
  std::uint16_t dlid = 0;
  std::uint32_t src_qp = 0;
  std::uint32_t dst_qp = 0;
  std::uint32_t qkey = 0;
  std::uint16_t pkey_index = 0;
  std::uint8_t sl = 0;
  std::uint16_t hops = 0;        // links crossed so far (latency)
  std::uint16_t dr_end_lid = 0;  // DR SMP with a LID-routed tail: the LID of the switch that ended the DR part
  PortIdx at = kNoPortIdx;       // port where it currently is
  std::uint32_t from_endpoint = kNoEndpoint;
};

// A fault that decides per link crossing whether a packet is lost, beyond
// the loss rates (sim/faults/ has them: loss by attribute, by class). It is
// called on the fabric's thread only and must be deterministic (its own
// seeded generator).
class PacketFault {
 public:
  virtual ~PacketFault() = default;
  // True: the packet is dropped on its way out of port `out` (kLoss).
  virtual bool drop(const Packet& pkt, PortIdx out) noexcept = 0;
};

class Fabric {
 public:
  explicit Fabric(const Topology& topo, const FabricConfig& config = {});
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // ---- structure --------------------------------------------------------
  std::uint32_t node_count() const noexcept { return static_cast<std::uint32_t>(node_type_.size()); }
  std::uint32_t port_count() const noexcept { return static_cast<std::uint32_t>(peer_.size()); }
  NodeType node_type(std::uint32_t n) const noexcept { return static_cast<NodeType>(node_type_[n]); }
  bool is_switch(std::uint32_t n) const noexcept {
    return node_type_[n] == static_cast<std::uint8_t>(NodeType::kSwitch);
  }
  std::uint8_t num_ports(std::uint32_t n) const noexcept { return num_ports_[n]; }
  std::uint64_t node_guid(std::uint32_t n) const noexcept { return node_guid_[n]; }
  std::string_view description(std::uint32_t n) const noexcept;
  std::uint32_t find_node(std::string_view id) const noexcept;  // by topology id
  std::uint32_t node_of(PortIdx p) const noexcept { return port_node_[p]; }
  std::uint8_t port_num_of(PortIdx p) const noexcept;
  // kNoPortIdx if the node has no such port (CAs have no port 0).
  PortIdx port(std::uint32_t node, std::uint8_t port_num) const noexcept;
  PortIdx peer(PortIdx p) const noexcept { return peer_[p]; }
  std::uint64_t port_guid(PortIdx p) const noexcept { return cfg_[p].guid; }
  std::uint16_t lid(PortIdx p) const noexcept { return lid_[p]; }
  wire::PortState port_state(PortIdx p) const noexcept { return static_cast<wire::PortState>(state_[p]); }
  wire::PortPhysState phys_state(PortIdx p) const noexcept { return static_cast<wire::PortPhysState>(phys_[p]); }
  // The LFT entry of a switch (kLftNoPort when unset).
  std::uint8_t lft_port(std::uint32_t node, std::uint16_t lid) const noexcept;
  // SwitchInfo.LinearFDBTop: LID routing drops anything above it.
  std::uint16_t linear_fdb_top(std::uint32_t node) const noexcept;

  // What a port's PortInfo holds about its link, read-only: for checks that
  // must not trust the SM or SA (madstorm's fabric-truth oracle).
  struct LinkState {
    std::uint8_t neighbor_mtu = 0;  // MTU code the port sends with (set by the SM)
    std::uint8_t mtu_cap = 0;       // MTU code the port can take
    std::uint8_t width_active = 0, speed_active = 0, speed_ext_active = 0, speed_ext2_active = 0;
    std::uint8_t op_vls = 0;        // OperationalVLs code (1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14)
    std::uint8_t lmc = 0;
    std::uint8_t vl_high_limit = 0;
    std::uint8_t part_enforce = 0;  // 1 inbound, 2 outbound (switch external ports)
    // M_Key (IBA 14.2.4): on CA ports and a switch's port 0, which guards the switch.
    std::uint64_t m_key = 0;
    std::uint8_t m_key_protect = 0;
    std::uint16_t m_key_lease = 0;  // seconds; 0: protection never lapses
    std::uint16_t m_key_violations = 0;
  };
  LinkState link_state(PortIdx p) const noexcept;
  // The port's P_Key table: the default partition alone until an SM set one.
  std::span<const std::uint16_t> pkey_table(PortIdx p) const noexcept;
  // The SL2VL table a packet leaving port `out` uses (IBA 14.2.5.8: SL 2i in
  // the high nibble of byte i, SL 2i+1 in the low one): a switch's for
  // (in_port_num, out), a CA port's own (in_port_num ignored); the default
  // until an SM set one.
  std::array<std::uint8_t, 8> sl2vl(PortIdx out, std::uint8_t in_port_num) const noexcept;
  bool port_state_change(std::uint32_t node) const noexcept;
  // How many PortInfo Sets asked the port's clients to reregister (IBA
  // 14.4.11): a simulated client re-registers when this moves.
  std::uint32_t client_reregisters(PortIdx p) const noexcept { return cfg_[p].client_reregisters; }

  // Bytes the model holds (nodes, ports, switch tables, names), without the
  // fixed pools below: the figure behind "bytes per node".
  std::size_t memory_bytes() const noexcept;
  // In-flight packet slots and endpoint receive rings (independent of size).
  std::size_t pool_bytes() const noexcept;

  // ---- time -------------------------------------------------------------
  // The simulator's clock: give it to engines (EngineConfig::clock) so engine
  // timers and fabric latency share one time line.
  const ManualClock& clock() const noexcept { return clock_; }
  Nanos now_ns() const noexcept { return clock_.now_ns(); }
  // Runs every event due at or before now; returns how many ran.
  std::size_t poll() noexcept;
  // Moves time to the next event if it is due within max_step_ns, else by
  // max_step_ns (so engine timers between events still fire), then polls.
  std::size_t advance(Nanos max_step_ns) noexcept;
  // Runs events until none is left or time reaches deadline_ns.
  void run_until(Nanos deadline_ns) noexcept;
  bool idle() const noexcept { return events_.empty(); }
  Nanos next_event_ns() const noexcept;

  // ---- endpoints (engines, hosts) ---------------------------------------
  // Attaches a MAD consumer at a node's port (CA port, or a switch's port 0).
  // Several endpoints may share a port; each MAD goes to the first whose
  // AgentSpec wants it. Throws std::invalid_argument on a bad port.
  EndpointId attach(std::uint32_t node, std::uint8_t port_num, const AgentSpec& spec);
  // One endpoint at several CA ports sharing one receive ring of rx_depth
  // MADs: a client that speaks for many hosts, each from its own port (LID),
  // as madstorm's requesters do. It sends with send_from(); send() uses the
  // first port. GSI responses whose TID carries `tid_tag` in its high 32 bits
  // go to it before any other endpoint of the port (ib_umad tells two agents
  // on one port apart by those bits the same way), so it can share a port
  // with an SM. Faults act on it as a whole: kill_node of any of its nodes
  // takes its device away. Throws std::invalid_argument on a port that is
  // not a CA's.
  EndpointId attach_ports(std::span<const PortIdx> ports, const AgentSpec& spec, std::uint32_t rx_depth,
                          std::uint32_t tid_tag);
  void detach(EndpointId e) noexcept;
  // Sends a copy of `buf` (addr.lid = destination LID for LID-routed MADs;
  // a DR SMP carries its path). False if the endpoint's device is gone.
  bool send(EndpointId e, const MadBuf& buf) noexcept;
  // The same from one of the endpoint's ports (attach_ports); false if the
  // port is not one of them.
  bool send_from(EndpointId e, PortIdx from, const MadBuf& buf) noexcept;
  // Copies up to bufs.size() received MADs; returns the count.
  std::size_t receive(EndpointId e, std::span<MadBuf*> bufs) noexcept;
  // The same, and the port each MAD arrived at (arrived_at.size() >= bufs.size()).
  std::size_t receive(EndpointId e, std::span<MadBuf*> bufs, std::span<PortIdx> arrived_at) noexcept;
  std::size_t pending(EndpointId e) const noexcept;
  // The endpoint's view of its port, and life-cycle events since last asked.
  LocalPort local_port(EndpointId e) const noexcept;
  DeviceEvent take_event(EndpointId e) noexcept;
  bool device_present(EndpointId e) const noexcept;
  PortIdx endpoint_port(EndpointId e) const noexcept { return endpoints_[e].port; }

  // ---- SMInfo for SM nodes without an attached engine --------------------
  void set_sm_info(std::uint32_t node, const wire::SmInfo& info);

  // ---- faults (all deterministic; schedule with the *_at variants) --------
  void set_loss_rate(double rate) noexcept { global_loss_ = rate; }
  void set_link_loss_rate(PortIdx p, double rate);
  // Consulted on every link crossing (nullptr: none); must outlive its use.
  void set_packet_fault(PacketFault* fault) noexcept { packet_fault_ = fault; }
  void link_down(PortIdx p) noexcept;
  void link_up(PortIdx p) noexcept;
  // Physically connects two free ports (e.g. joining two subnets); false if busy.
  bool link(PortIdx a, PortIdx b) noexcept;
  void mute_node(std::uint32_t n, bool muted) noexcept;
  void reset_node(std::uint32_t n) noexcept;
  void kill_node(std::uint32_t n) noexcept;
  void revive_node(std::uint32_t n) noexcept;
  bool node_dead(std::uint32_t n) const noexcept { return (node_flags_[n] & kDead) != 0; }
  bool node_muted(std::uint32_t n) const noexcept { return (node_flags_[n] & kMuted) != 0; }
  void schedule(Nanos at_ns, EventKind kind, std::uint32_t a, std::uint32_t b = 0) { events_.push(at_ns, kind, a, b); }

  // ---- performance management (pma.cpp) ----------------------------------
  // Every node's PMA answers PerfMgt (class 0x04) Gets and Sets of
  // ClassPortInfo, PortCounters and PortCountersExtended (sim/port_counters.hpp).
  const SimPortCounters& port_counters(PortIdx p) const noexcept { return perf_[p]; }
  // Raises a counter of port `p` by n (saturating): the fault injector's
  // symbol errors, link recoveries, discards, XmitWait...
  void add_port_counter(PortIdx p, PortCounter c, std::uint32_t n) noexcept;
  // A node whose PMA lacks PortCountersExtended (ClassPortInfo without
  // IsExtendedWidthSupported): its 32-bit counters are all there is.
  void set_pma_extended(std::uint32_t node, bool supported) noexcept;
  bool pma_extended(std::uint32_t node) const noexcept { return (node_flags_[node] & kNoPerfExt) == 0; }

  const FabricCounters& counters() const noexcept { return counters_; }
  std::uint64_t seed() const noexcept { return config_.seed; }
  const FabricConfig& config() const noexcept { return config_; }

 private:
  // Port fields the forwarding loop does not touch.
  struct PortCfg {
    std::uint64_t guid = 0;
    std::uint64_t m_key = 0;
    std::uint64_t gid_prefix = 0;
    std::uint16_t sm_lid = 0;
    std::uint16_t m_key_lease = 0;
    std::uint16_t m_key_violations = 0;
    std::uint32_t client_reregisters = 0;  // PortInfo Sets with ClientReregister
    std::uint8_t lmc = 0;
    std::uint8_t sm_sl = 0;
    std::uint8_t m_key_protect = 0;
    Nanos m_key_lease_end_ns = -1;  // the lease timer (IBA 14.2.4.2); -1: not running
    std::uint8_t width_enabled = 0, width_active = 0;
    std::uint8_t speed_enabled = 0, speed_active = 0;
    std::uint8_t speed_ext_enabled = 0, speed_ext_active = 0;
    std::uint8_t speed_ext2_enabled = 0, speed_ext2_active = 0;
    std::uint8_t link_down_default = 2;  // Polling
    std::uint8_t neighbor_mtu = 4;
    std::uint8_t op_vls = 4;
    std::uint8_t vl_high_limit = 0;
    std::uint8_t hoq_life = 0;
    std::uint8_t vl_stall = 0;
    std::uint8_t part_enforce = 0;  // PortInfo bits: 1 inbound, 2 outbound (switch external ports)
    std::uint8_t subnet_timeout = 0;
    std::uint8_t init_type = 0;
  };
  struct SwitchState {
    std::uint16_t linear_fdb_top = 0;
    std::uint16_t multicast_fdb_top = 0;
    std::uint8_t default_port = 0;
    std::uint8_t default_mcast_primary = 0;
    std::uint8_t default_mcast_not_primary = 0;
    std::uint8_t life_time = 0;
    bool port_state_change = false;
    bool enhanced_port0 = false;
    std::vector<std::uint32_t> lft;  // LFT block ids in lft_pool_, up to the highest block set
    std::vector<std::uint16_t> mft;  // [block*32 + i] * positions, lazily
  };
  struct Endpoint {
    PortIdx port = kNoPortIdx;
    std::vector<PortIdx> ports;  // attach_ports: every port, sorted (empty for one port)
    std::uint32_t tid_tag = 0;   // attach_ports: responses with this TID high half come here first
    AgentSpec spec{};
    bool attached = false;
    bool device_present = true;
    DeviceEvent event = DeviceEvent::kNone;
    bool owe_back = false;     // kDeviceBack follows the pending kDeviceLost
    std::vector<MadBuf> ring;  // fixed capacity, allocated at attach
    std::vector<PortIdx> ring_at;  // attach_ports: where each ring entry arrived
    std::size_t head = 0, count = 0;
  };

  // Forwarding: each returns false (and counts) when the packet is dropped.
  void inject(Packet& pkt, PortIdx src) noexcept;
  bool send_at(EndpointId e, PortIdx src, const MadBuf& buf) noexcept;
  void dr_request_at(Packet& pkt, PortIdx in) noexcept;
  void dr_response_at(Packet& pkt, PortIdx in, bool at_responder) noexcept;
  bool cross(Packet& pkt, PortIdx out, PortIdx& arrived) noexcept;  // one link
  bool lid_route(Packet& pkt, PortIdx from, std::uint16_t dlid, PortIdx& arrived) noexcept;
  void arrive_lid(Packet& pkt, PortIdx at) noexcept;  // a LID-routed MAD reached its port
  void to_sma(Packet& pkt, PortIdx in) noexcept;
  void to_endpoint(Packet& pkt, PortIdx at, bool smi) noexcept;
  void deliver(std::uint32_t slot, EndpointId e) noexcept;
  void run_sma(std::uint32_t slot) noexcept;
  void drop(DropReason r) noexcept { ++counters_.drops[static_cast<std::size_t>(r)]; }
  std::uint32_t store(const Packet& pkt);
  bool lost(PortIdx out) noexcept;
  bool lid_matches(PortIdx p, std::uint16_t dlid) const noexcept;
  std::uint8_t mtu_cap_of(PortIdx p) const noexcept;
  void set_state(PortIdx p, std::uint8_t state) noexcept;
  void note_port_change(PortIdx p) noexcept;
  void run_event(const Event& e) noexcept;

  // SMA (sma.cpp): fills the response in place; false = answer nothing.
  bool sma_process(Packet& pkt, PortIdx in) noexcept;
  std::uint16_t sma_node_info(std::uint32_t node, PortIdx in, std::uint8_t* data) noexcept;
  std::uint16_t sma_port_info(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t* data,
                              bool show_mkey) noexcept;
  std::uint16_t sma_switch_info(bool set, std::uint32_t node, std::uint8_t* data) noexcept;
  std::uint16_t sma_lft(bool set, std::uint32_t node, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_mft(bool set, std::uint32_t node, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_pkey(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_sl2vl(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_vlarb(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_guid_info(bool set, std::uint32_t node, PortIdx in, std::uint32_t mod, std::uint8_t* data) noexcept;
  std::uint16_t sma_sm_info(bool set, std::uint32_t node, std::uint8_t* data) noexcept;
  PortIdx mgmt_port(std::uint32_t node, PortIdx in) const noexcept;  // whose M_Key guards the node
  // PMA (pma.cpp): fills the PerfMgt response in place; false = answer nothing.
  bool pma_process(Packet& pkt, PortIdx in) noexcept;
  void count_crossing(PortIdx out, PortIdx in) noexcept;

  FabricConfig config_;
  ManualClock clock_;
  EventQueue events_;
  std::mt19937_64 rng_;
  FabricCounters counters_;

  // Nodes (struct of arrays).
  std::vector<std::uint8_t> node_type_;
  std::vector<std::uint8_t> num_ports_;
  std::vector<std::uint8_t> node_flags_;  // kMuted, kDead, kHostsSm
  std::vector<PortIdx> first_port_;       // switch: port 0; CA: port 1
  std::vector<std::uint64_t> node_guid_;
  std::vector<std::uint64_t> sys_guid_;
  std::vector<std::uint32_t> vendor_id_;
  std::vector<std::uint16_t> device_id_;
  std::vector<std::uint32_t> desc_off_;  // into desc_pool_; desc_off_[n+1] ends it
  std::string desc_pool_;
  std::vector<std::uint32_t> switch_of_;  // node -> index into switches_ (or kNoNode)
  std::vector<SwitchState> switches_;
  LftPool lft_pool_{wire::kLftNoPort};  // every switch's LFT blocks, shared where equal
  std::uint8_t lft_entry(const SwitchState& sw, std::uint16_t lid) const noexcept {
    const std::size_t b = lid / LftPool::kBlockLids;
    return b < sw.lft.size() ? lft_pool_.block(sw.lft[b])[lid % LftPool::kBlockLids] : wire::kLftNoPort;
  }
  std::unordered_map<std::string, std::uint32_t> by_id_;

  // Ports (struct of arrays for the hot fields).
  std::vector<PortIdx> peer_;
  std::vector<std::uint32_t> port_node_;
  std::vector<std::uint16_t> lid_;
  std::vector<std::uint8_t> state_;  // wire::PortState
  std::vector<std::uint8_t> phys_;   // wire::PortPhysState
  std::vector<PortCfg> cfg_;
  std::vector<SimPortCounters> perf_;  // the PMA's counters, by port
  // Tables that differ from the defaults, by port.
  std::unordered_map<PortIdx, std::vector<std::uint16_t>> pkeys_;
  std::unordered_map<std::uint64_t, std::array<std::uint8_t, 8>> sl2vl_;   // key: port << 8 | out port
  std::unordered_map<std::uint64_t, std::array<std::uint8_t, 64>> vlarb_;  // key: port << 8 | block
  std::unordered_map<PortIdx, std::vector<std::uint64_t>> guid_info_;
  std::unordered_map<std::uint32_t, wire::SmInfo> sm_info_;
  std::unordered_map<PortIdx, double> link_loss_;
  double global_loss_ = 0.0;
  PacketFault* packet_fault_ = nullptr;

  std::vector<Packet> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<Endpoint> endpoints_;
  std::unordered_map<PortIdx, std::vector<EndpointId>> port_endpoints_;

  // kCurrent: a node of NDR or later hardware (a port enables NDR or XDR):
  // today's capability masks and MTU 4096, and extended speeds reported
  // only to an SM that sets SMSupportExtendedSpeeds. Other nodes answer as
  // ibsim 0.10 does.
  static constexpr std::uint8_t kMuted = 1, kDead = 2, kHostsSm = 4, kCurrent = 8, kXdr = 16,
                                   kNoPerfExt = 32;
  bool current_hardware(std::uint32_t node) const noexcept { return (node_flags_[node] & kCurrent) != 0; }
};

}  // namespace madengine::sim
