// umad transport, setup side: picking the CA/port, registering agents, the
// IsSM device, LocalPort from sysfs, and the device life cycle (lost, reopen,
// port changes). Nothing here runs per MAD; see README.md for the split.
#include <fcntl.h>
#include <infiniband/umad.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "engine/umad/umad_shim.hpp"
#include "engine/umad/umad_transport.hpp"
#include "madengine/wire/perf.hpp"
#include "madengine/wire/mad.hpp"
#include "madengine/wire/sa.hpp"

namespace madengine {
namespace {

// libibumad's method mask: 128 bits as an array of long (ib_user_mad_reg_req).
constexpr std::size_t kMaskLongs = 128 / (8 * sizeof(long));
using MethodMask = std::array<long, kMaskLongs>;

constexpr MethodMask make_mask(std::initializer_list<std::uint8_t> methods) noexcept {
  MethodMask m{};
  constexpr unsigned kBits = 8 * sizeof(long);
  for (std::uint8_t meth : methods)
    m[meth / kBits] |= static_cast<long>(1UL << (meth % kBits));
  return m;
}

// Only request methods can be registered: responses (GetResp, ReportResp,
// TrapRepress is a request) reach the agent that sent the request by the
// TID's high 32 bits, never through the method table.
constexpr MethodMask kSmiServerMask =
    make_mask({wire::method::kGet, wire::method::kSet, wire::method::kTrap,
               wire::method::kTrapRepress});
constexpr MethodMask kSaServerMask =
    make_mask({wire::method::kGet, wire::method::kSet, wire::method::kGetTable,
               wire::method::kGetTraceTable, wire::method::kGetMulti, wire::method::kDelete});

constexpr MethodMask kVendorServerMask =
    make_mask({wire::method::kGet, wire::method::kSet, wire::method::kSend, wire::method::kTrap,
               wire::method::kGetTable, wire::method::kDelete});

constexpr std::uint8_t kSmiClassVersion = 1;
constexpr std::uint8_t kVendorClassVersion = 1;
constexpr std::uint8_t kRmppNone = 0;  // madengine segments RMPP itself, on ibsim and HCAs alike

PortState to_port_state(unsigned s) noexcept {
  switch (s) {
    case 1: return PortState::kDown;
    case 2: return PortState::kInit;
    case 3: return PortState::kArmed;
    case 4:
    case 5: return PortState::kActive;  // 5 = ACTIVE_DEFER
    default: return PortState::kNop;
  }
}

}  // namespace

UmadTransport::UmadTransport(UmadConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock) {}

UmadTransport::~UmadTransport() { close(); }

void UmadTransport::set_error(const char* what, int err) noexcept {
  if (err != 0)
    std::snprintf(last_error_.data(), last_error_.size(), "%s: %s", what, std::strerror(err));
  else
    std::snprintf(last_error_.data(), last_error_.size(), "%s", what);
}

bool UmadTransport::is_fatal_errno(int err) noexcept {
  switch (err) {
    case ENODEV:
    case ENXIO:
    case EIO:
    case EBADF:
    case ENETDOWN:
    case EPIPE:
    case ECONNREFUSED:  // umad2sim: ibsim went away under the shim's socket
    case ECONNRESET:
    case ENOTCONN:
      return true;
    default:
      return false;
  }
}

// An SM belongs on an InfiniBand port that is up: ACTIVE (a running
// subnet) ranks first, then a physical link that is up (a subnet no SM has
// configured yet: ports wait in INIT), then any InfiniBand port. RoCE ports
// (link layer Ethernet) never.
bool UmadTransport::choose_port() noexcept {
  if (ca_resolved_[0] && port_resolved_ >= 0) return true;
  char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  int n_cas = 0;
  if (ca_resolved_[0]) {
    std::memcpy(names[0], ca_resolved_.data(), std::min(sizeof names[0], ca_resolved_.size()));
    names[0][sizeof names[0] - 1] = '\0';
    n_cas = 1;
  } else {
    n_cas = umad_get_cas_names(names, UMAD_MAX_DEVICES);
    if (n_cas < 0) {
      set_error("umad_get_cas_names", -n_cas);
      return false;
    }
  }
  int best_rank = 0, best_ca = -1, best_port = 0;
  for (int c = 0; c < n_cas && best_rank < 3; ++c) {
    umad_ca_t ca{};
    if (umad_get_ca(names[c], &ca) < 0) continue;
    for (int i = 0; i < UMAD_CA_MAX_PORTS && best_rank < 3; ++i) {
      const umad_port_t* p = ca.ports[i];
      if (p == nullptr || (config_.port_num != 0 && i != config_.port_num)) continue;
      // sysfs says "InfiniBand", ibsim's shim "IB"; RoCE ports say "Ethernet".
      if (std::strcmp(p->link_layer, "Ethernet") == 0) continue;
      const int rank = p->state == 4 ? 3 : p->phys_state == 5 ? 2 : 1;
      if (rank > best_rank) best_rank = rank, best_ca = c, best_port = i;
    }
    umad_release_ca(&ca);
  }
  if (best_ca < 0) {
    set_error(config_.port_num != 0 ? "no InfiniBand port with that number" : "no InfiniBand port found", 0);
    return false;
  }
  std::snprintf(ca_resolved_.data(), ca_resolved_.size(), "%s", names[best_ca]);
  port_resolved_ = best_port;
  return true;
}

bool UmadTransport::read_port(LocalPort& out) noexcept {
  if (!choose_port()) return false;
  umad_ca_t ca_info{};
  if (int rc = umad_get_ca(ca_resolved_.data(), &ca_info); rc < 0) {
    set_error("umad_get_ca", -rc);
    return false;
  }
  const int port_num = port_resolved_;
  const bool is_switch = ca_info.node_type == 2;
  out.node_guid = be64toh(ca_info.node_guid);
  umad_release_ca(&ca_info);
  umad_port_t p{};
  if (int rc = umad_get_port(ca_resolved_.data(), port_num, &p); rc < 0) {
    set_error("umad_get_port", -rc);
    return false;
  }
  out.port_num = static_cast<std::uint8_t>(port_num);
  out.port_guid = be64toh(p.port_guid);
  out.subnet_prefix = be64toh(p.gid_prefix);
  out.lid = static_cast<std::uint16_t>(p.base_lid);
  out.lmc = static_cast<std::uint8_t>(p.lmc);
  out.sm_lid = static_cast<std::uint16_t>(p.sm_lid);
  out.sm_sl = static_cast<std::uint8_t>(p.sm_sl);
  out.state = to_port_state(p.state);
  out.is_switch = is_switch && port_num == 0;
  umad_release_port(&p);
  return true;
}

bool UmadTransport::open(const AgentSpec& agents) {
  close();
  agents_ = agents;
  std::snprintf(ca_resolved_.data(), ca_resolved_.size(), "%s", config_.ca_name.c_str());
  port_resolved_ = -1;
  last_error_[0] = '\0';
  if (umad_init() < 0) {
    set_error("umad_init", errno);
    spdlog::warn("umad: {}", last_error_.data());
    return false;
  }
  if (!open_device()) {
    spdlog::warn("umad: cannot open {} port {}: {}", ca_resolved_[0] ? ca_name() : "(any CA)",
                 port_resolved_ >= 0 ? port_resolved_ : config_.port_num, last_error_.data());
    return false;
  }
  want_open_ = true;
  lost_ = false;
  next_state_check_ns_ = clock_.now_ns() + config_.state_check_interval_ms * kNanosPerMilli;
  spdlog::info("umad: opened {} port {} (lid {}, sm lid {})", ca_name(), port_.port_num,
               port_.lid, port_.sm_lid);
  return true;
}

bool UmadTransport::open_device() noexcept {
  LocalPort p;
  if (!read_port(p)) return false;

  const int fd = umad_open_port(ca_resolved_.data(), p.port_num);
  if (fd < 0) {
    set_error("umad_open_port", -fd);
    return false;
  }
  fd_ = fd;
  umad_hdr_size_ = umad_size();
  // Under ibsim's shim the calls below and close_device() wait on ibsim's
  // replies: bounded here, on every open (a reopen included).
  shim_fd_ = umad_shim::is_shim_fd(fd_);
  shim_data_fd_ = shim_fd_ ? umad_shim::bound_shim_sockets() : -1;

  auto reg = [&](std::uint8_t klass, std::uint8_t version, const MethodMask* mask) {
    MethodMask m = mask ? *mask : MethodMask{};
    const int id = umad_register(fd_, klass, version, kRmppNone, m.data());
    if (id < 0) set_error("umad_register", -id);
    return id;
  };
  // The SMI agents are registered for an SM even when it does not ask for
  // them: ibsim sends trap 144 to the SM node and the shim dereferences a null
  // queue for a class nobody registered.
  if (agents_.smi || agents_.is_sm) {
    const MethodMask* mask = agents_.smi ? &kSmiServerMask : nullptr;
    smi_agent_[0] = reg(static_cast<std::uint8_t>(wire::MgmtClass::kSubnLid), kSmiClassVersion, mask);
    smi_agent_[1] =
        reg(static_cast<std::uint8_t>(wire::MgmtClass::kSubnDirected), kSmiClassVersion, mask);
    if (smi_agent_[0] < 0 || smi_agent_[1] < 0) {
      close_device();
      return false;
    }
  }
  // One QP1 agent serves both roles: an SA server's agent can send requests
  // too, and their responses come back to it by TID.
  if (agents_.sa_server || agents_.gsi_client) {
    gsi_agent_ = reg(static_cast<std::uint8_t>(wire::MgmtClass::kSubnAdm), wire::kSaClassVersion,
                     agents_.sa_server ? &kSaServerMask : nullptr);
    if (gsi_agent_ < 0) {
      close_device();
      return false;
    }
  }
  // A GSI client may also read PMAs (the performance manager): the kernel
  // and ibsim's shim hand class 0x04 responses only to an agent of that class.
  if (agents_.gsi_client) {
    perf_agent_ = reg(static_cast<std::uint8_t>(wire::MgmtClass::kPerf), wire::kPerfClassVersion, nullptr);
    if (perf_agent_ < 0) {
      close_device();
      return false;
    }
  }
  // Vendor classes: the kernel hands a class's requests only to an agent
  // registered for it, and that agent sends its responses.
  for (const std::uint8_t klass : agents_.vendor_classes) {
    const int id = reg(klass, kVendorClassVersion, &kVendorServerMask);
    if (id < 0) {
      close_device();
      return false;
    }
    vendor_agents_.emplace_back(klass, id);
  }
  if (agents_.is_sm) {
    char path[256];
    if (int rc = umad_get_issm_path(ca_resolved_.data(), p.port_num, path, sizeof path); rc < 0) {
      set_error("umad_get_issm_path", -rc);
      close_device();
      return false;
    }
    // Holding the issm device open sets PortInfo.CapabilityMask.IsSM (IBA 14.4.9 via ib_umad).
    issm_fd_ = ::open(path, O_RDWR | O_NONBLOCK);
    if (issm_fd_ < 0) {
      set_error("open issm device", errno);
      close_device();
      return false;
    }
  }

  const std::size_t umad_bytes = umad_hdr_size_ + wire::kMadSize;
  if (!rx_umad_) {
    rx_umad_.reset(new (std::nothrow) std::uint8_t[umad_bytes]());
    tx_umad_.reset(new (std::nothrow) std::uint8_t[umad_bytes]());
    if (!rx_umad_ || !tx_umad_) {
      set_error("out of memory", ENOMEM);
      close_device();
      return false;
    }
  }
  std::memset(tx_umad_.get(), 0, umad_bytes);
  port_ = p;
  fatal_pending_ = false;
  fatal_errno_ = 0;
  return true;
}

void UmadTransport::close_device() noexcept {
  if (issm_fd_ >= 0) {
    ::close(issm_fd_);
    issm_fd_ = -1;
  }
  if (fd_ >= 0) {
    // Unregistering on a dead device fails harmlessly; closing frees the agents anyway.
    for (int& a : smi_agent_)
      if (a >= 0) umad_unregister(fd_, a);
    if (gsi_agent_ >= 0) umad_unregister(fd_, gsi_agent_);
    if (perf_agent_ >= 0) umad_unregister(fd_, perf_agent_);
    for (const auto& [klass, id] : vendor_agents_) umad_unregister(fd_, id);
    umad_close_port(fd_);
  }
  fd_ = -1;
  shim_data_fd_ = -1;
  smi_agent_[0] = smi_agent_[1] = -1;
  gsi_agent_ = -1;
  perf_agent_ = -1;
  vendor_agents_.clear();
}

void UmadTransport::close() noexcept {
  if (fd_ >= 0 && shim_fd_ && !lost_) {
    // Under ibsim's shim a MAD that arrives for a class with no agent kills
    // the process (its receiver thread dereferences the closed fd's null
    // queue), and answers to SMPs still in flight arrive after a close. So
    // the agents stay registered, their fd open, and late MADs wait there
    // unread; a later open registers anew and receives in their place.
    if (issm_fd_ >= 0) ::close(issm_fd_);
    issm_fd_ = -1;
    fd_ = shim_data_fd_ = -1;
    smi_agent_[0] = smi_agent_[1] = -1;
    gsi_agent_ = perf_agent_ = -1;
    vendor_agents_.clear();
  }
  close_device();
  want_open_ = false;
  lost_ = false;
  fatal_pending_ = false;
}

void UmadTransport::lose(const char* why, int err) noexcept {
  set_error(why, err);
  close_device();
  lost_ = true;
  fatal_pending_ = false;
  next_reopen_ns_ = clock_.now_ns() + config_.reopen_interval_ms * kNanosPerMilli;
}

DeviceEvent UmadTransport::poll_events() noexcept {
  if (!want_open_) return DeviceEvent::kNone;
  const Nanos now = clock_.now_ns();

  if (!lost_) {
    if (fatal_pending_) {
      lose("device error on send/receive", fatal_errno_);
      return DeviceEvent::kDeviceLost;
    }
    if (now < next_state_check_ns_) return DeviceEvent::kNone;
    next_state_check_ns_ = now + config_.state_check_interval_ms * kNanosPerMilli;
    LocalPort p = port_;
    if (!read_port(p)) {
      lose("port vanished from sysfs", 0);
      return DeviceEvent::kDeviceLost;
    }
    // A link that drops loses every MAD in flight: treat it like a reset.
    if (p.state == PortState::kDown && port_.state != PortState::kDown) {
      lose("port went down", 0);
      return DeviceEvent::kDeviceLost;
    }
    if (p.lid != port_.lid || p.sm_lid != port_.sm_lid || p.state != port_.state ||
        p.lmc != port_.lmc || p.sm_sl != port_.sm_sl || p.port_guid != port_.port_guid ||
        p.subnet_prefix != port_.subnet_prefix) {
      port_ = p;
      return DeviceEvent::kPortChanged;
    }
    return DeviceEvent::kNone;
  }

  if (now < next_reopen_ns_) return DeviceEvent::kNone;
  next_reopen_ns_ = now + config_.reopen_interval_ms * kNanosPerMilli;
  LocalPort p;
  if (!read_port(p) || p.state == PortState::kDown) return DeviceEvent::kNone;
  if (!open_device()) return DeviceEvent::kNone;
  lost_ = false;
  last_error_[0] = '\0';
  ++counters_.reopens;
  next_state_check_ns_ = now + config_.state_check_interval_ms * kNanosPerMilli;
  return DeviceEvent::kDeviceBack;
}

}  // namespace madengine
