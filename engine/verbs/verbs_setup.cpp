// verbs-ud transport, setup side: device and port choice, the PD/MR/CQs/UD QP
// and their RESET->INIT->RTR->RTS transitions, the receive ring, LocalPort from
// ibv_query_port, and the device life cycle (async events, lost, reopen).
#include <endian.h>
#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <spdlog/spdlog.h>

#include "engine/verbs/verbs_transport.hpp"

namespace madengine {
namespace {

PortState to_port_state(ibv_port_state s) noexcept {
  switch (s) {
    case IBV_PORT_DOWN: return PortState::kDown;
    case IBV_PORT_INIT: return PortState::kInit;
    case IBV_PORT_ARMED: return PortState::kArmed;
    case IBV_PORT_ACTIVE:
    case IBV_PORT_ACTIVE_DEFER: return PortState::kActive;
    default: return PortState::kNop;
  }
}

std::uint64_t be_bytes_to_u64(const std::uint8_t* p) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

const char* validate_verbs_config(const VerbsConfig& c) noexcept {
  if (c.port_num == 0) return "port_num must be 1 or more (a UD QP is on an HCA port)";
  if (c.sq_depth == 0 || c.sq_depth > kVerbsSqDepthMax) return "sq_depth out of range (1..16384)";
  if (c.rq_depth == 0 || c.rq_depth > kVerbsRqDepthMax) return "rq_depth out of range (1..16384)";
  if (c.ah_cache_max == 0 || c.ah_cache_max > kVerbsAhCacheMax)
    return "ah_cache_max out of range (1..65536)";
  if (c.ah_cache_max <= c.sq_depth)
    return "ah_cache_max must exceed sq_depth (an evicted AH must not be on the send queue)";
  if (c.qkey == 0) return "qkey must not be 0";
  if (c.reopen_interval_ms > kVerbsReopenIntervalMsMax) return "reopen_interval_ms too large";
  if (c.device_name.size() >= IBV_SYSFS_NAME_MAX) return "device_name too long";
  return nullptr;
}

VerbsUdTransport::VerbsUdTransport(VerbsConfig config, const Clock& clock)
    : config_(std::move(config)), clock_(clock) {}

VerbsUdTransport::~VerbsUdTransport() { close(); }

void VerbsUdTransport::set_error(const char* what, int err) noexcept {
  if (err != 0)
    std::snprintf(last_error_.data(), last_error_.size(), "%s: %s", what, std::strerror(err));
  else
    std::snprintf(last_error_.data(), last_error_.size(), "%s", what);
}

bool VerbsUdTransport::open(const AgentSpec& agents) {
  close();
  last_error_[0] = '\0';
  if (const char* why = validate_verbs_config(config_)) {
    set_error(why, 0);
    spdlog::error("verbs-ud: bad config: {}", why);
    return false;
  }
  if (agents.smi || agents.is_sm) {
    set_error("verbs-ud carries GSI MADs only: QP0 (smi) and IsSM need the umad transport", 0);
    spdlog::error("verbs-ud: {}", last_error_.data());
    return false;
  }
  // Everything the fast path touches is allocated here, once.
  if (!area_) {
    area_bytes_ = config_.rq_depth * verbs::kRecvSlotStride +
                  config_.sq_depth * verbs::kSendSlotStride;
    constexpr std::size_t kPage = 4096;
    area_bytes_ = (area_bytes_ + kPage - 1) / kPage * kPage;
    area_.reset(static_cast<std::uint8_t*>(std::aligned_alloc(kPage, area_bytes_)));
    if (!area_) {
      set_error("cannot allocate the registered buffer area", ENOMEM);
      return false;
    }
    std::memset(area_.get(), 0, area_bytes_);
    ah_cache_ = std::make_unique<verbs::AhCache>(config_.ah_cache_max);
    recv_wrs_.assign(config_.rq_depth, ibv_recv_wr{});
    recv_sges_.assign(config_.rq_depth, ibv_sge{});
    send_wrs_.assign(config_.sq_depth, ibv_send_wr{});
    send_sges_.assign(config_.sq_depth, ibv_sge{});
    send_wr_buf_.assign(config_.sq_depth, 0);
  }
  if (!open_device()) {
    spdlog::error("verbs-ud: open failed: {}", last_error_.data());
    return false;
  }
  want_open_ = true;
  lost_ = false;
  spdlog::info("verbs-ud: {} port {} QPN {:#x} Q_Key {:#x} LID {} ({})", device_resolved_.data(),
               config_.port_num, qp_->qp_num, config_.qkey, port_.lid,
               is_roce_ ? "RoCE" : "InfiniBand");
  return true;
}

void VerbsUdTransport::close() noexcept {
  want_open_ = false;
  lost_ = false;
  fatal_pending_ = false;
  close_device();
}

bool VerbsUdTransport::open_device() noexcept {
  int num = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&num);
  if (list == nullptr) {
    // ENOSYS: the kernel has no verbs support (no /sys/class/infiniband_verbs).
    set_error("ibv_get_device_list failed (no RDMA device or no kernel verbs support)", errno);
    return false;
  }
  ibv_device* dev = nullptr;
  for (int i = 0; i < num; ++i) {
    const char* name = ibv_get_device_name(list[i]);
    if (config_.device_name.empty() || config_.device_name == name) {
      dev = list[i];
      std::snprintf(device_resolved_.data(), device_resolved_.size(), "%s", name);
      break;
    }
  }
  if (dev == nullptr) {
    if (num == 0)
      set_error("no RDMA device (ibv_get_device_list returned none)", 0);
    else
      std::snprintf(last_error_.data(), last_error_.size(), "RDMA device '%s' not found (%d present)",
                    config_.device_name.c_str(), num);
    ibv_free_device_list(list);
    return false;
  }
  ctx_ = ibv_open_device(dev);
  const int open_err = errno;
  ibv_free_device_list(list);  // the context keeps what it needs
  if (ctx_ == nullptr) {
    set_error("ibv_open_device", open_err);
    return false;
  }
  auto fail = [this](const char* what, int err) noexcept {
    set_error(what, err);
    close_device();
    return false;
  };

  ibv_device_attr dattr{};
  if (int rc = ibv_query_device(ctx_, &dattr); rc != 0) return fail("ibv_query_device", rc);
  if (config_.port_num > dattr.phys_port_cnt) return fail("port_num is not a port of this device", 0);
  if (static_cast<int>(config_.sq_depth) > dattr.max_qp_wr ||
      static_cast<int>(config_.rq_depth) > dattr.max_qp_wr)
    return fail("sq_depth or rq_depth exceeds the device's max_qp_wr", 0);
  if (static_cast<int>(std::max(config_.sq_depth, config_.rq_depth)) > dattr.max_cqe)
    return fail("sq_depth or rq_depth exceeds the device's max_cqe", 0);
  port_.node_guid = be64toh(dattr.node_guid);
  if (!read_port(port_)) {
    close_device();
    return false;
  }

  pd_ = ibv_alloc_pd(ctx_);
  if (pd_ == nullptr) return fail("ibv_alloc_pd", errno);
  // An int, not the enum: verbs.h's ibv_reg_mr macro masks it with another
  // enum type, which clang flags as deprecated in C++20.
  const int access = IBV_ACCESS_LOCAL_WRITE;
  mr_ = ibv_reg_mr(pd_, area_.get(), area_bytes_, access);
  if (mr_ == nullptr) return fail("ibv_reg_mr", errno);
  send_cq_ = ibv_create_cq(ctx_, static_cast<int>(config_.sq_depth), nullptr, nullptr, 0);
  if (send_cq_ == nullptr) return fail("ibv_create_cq (send)", errno);
  recv_cq_ = ibv_create_cq(ctx_, static_cast<int>(config_.rq_depth), nullptr, nullptr, 0);
  if (recv_cq_ == nullptr) return fail("ibv_create_cq (recv)", errno);

  ibv_qp_init_attr qattr{};
  qattr.send_cq = send_cq_;
  qattr.recv_cq = recv_cq_;
  qattr.qp_type = IBV_QPT_UD;
  qattr.sq_sig_all = 0;  // only the last WR of a burst is signalled
  qattr.cap.max_send_wr = config_.sq_depth;
  qattr.cap.max_recv_wr = config_.rq_depth;
  qattr.cap.max_send_sge = 1;
  qattr.cap.max_recv_sge = 1;
  qp_ = ibv_create_qp(pd_, &qattr);
  if (qp_ == nullptr) return fail("ibv_create_qp (UD)", errno);
  if (!to_rts() || !post_all_receives()) {
    close_device();
    return false;
  }
  seq_posted_ = seq_completed_ = 0;

  // Async events are read from poll_events(), which must never block.
  const int fl = fcntl(ctx_->async_fd, F_GETFL);
  if (fl < 0 || fcntl(ctx_->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
    return fail("fcntl(async_fd, O_NONBLOCK)", errno);
  return true;
}

bool VerbsUdTransport::to_rts() noexcept {
  // UD: INIT needs P_Key index, port and Q_Key; RTR nothing more; RTS the SQ PSN.
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = config_.pkey_index;
  a.port_num = config_.port_num;
  a.qkey = config_.qkey;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
      rc != 0) {
    set_error(config_.qkey & 0x80000000u
                  ? "ibv_modify_qp INIT (a controlled Q_Key needs CAP_NET_RAW)"
                  : "ibv_modify_qp INIT",
              rc);
    return false;
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE); rc != 0) {
    set_error("ibv_modify_qp RTR", rc);
    return false;
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0) {
    set_error("ibv_modify_qp RTS", rc);
    return false;
  }
  return true;
}

bool VerbsUdTransport::post_all_receives() noexcept {
  // Each WR's SGE is fixed for the life of the MR; the fast path only relinks them.
  for (std::size_t i = 0; i < config_.rq_depth; ++i) {
    ibv_sge& s = recv_sges_[i];
    s.addr = reinterpret_cast<std::uintptr_t>(area_.get() + i * verbs::kRecvSlotStride);
    s.length = static_cast<std::uint32_t>(verbs::kRecvSlotBytes);
    s.lkey = mr_->lkey;
    ibv_recv_wr& w = recv_wrs_[i];
    w.wr_id = i;
    w.sg_list = &s;
    w.num_sge = 1;
    w.next = i + 1 < config_.rq_depth ? &recv_wrs_[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(qp_, recv_wrs_.data(), &bad); rc != 0) {
    set_error("ibv_post_recv (initial ring)", rc);
    return false;
  }
  return true;
}

bool VerbsUdTransport::read_port(LocalPort& out) noexcept {
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx_, config_.port_num, &pa); rc != 0) {
    set_error("ibv_query_port", rc);
    return false;
  }
  is_roce_ = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  out.port_num = config_.port_num;
  out.lid = pa.lid;
  out.lmc = pa.lmc;
  out.sm_lid = pa.sm_lid;
  out.sm_sl = pa.sm_sl;
  out.state = to_port_state(pa.state);
  out.is_switch = false;
  ibv_gid gid{};
  if (pa.gid_tbl_len > 0 && ibv_query_gid(ctx_, config_.port_num, 0, &gid) == 0) {
    out.subnet_prefix = be_bytes_to_u64(gid.raw);
    out.port_guid = be_bytes_to_u64(gid.raw + 8);
  }
  return true;
}

void VerbsUdTransport::close_device() noexcept {
  // Reverse order of creation: nothing may outlive what it was created from.
  if (qp_) ibv_destroy_qp(qp_);
  qp_ = nullptr;
  if (ah_cache_) ah_cache_->drain([](ibv_ah* ah) noexcept { ibv_destroy_ah(ah); });
  if (recv_cq_) ibv_destroy_cq(recv_cq_);
  recv_cq_ = nullptr;
  if (send_cq_) ibv_destroy_cq(send_cq_);
  send_cq_ = nullptr;
  if (mr_) ibv_dereg_mr(mr_);
  mr_ = nullptr;
  if (pd_) ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (ctx_) ibv_close_device(ctx_);
  ctx_ = nullptr;
  seq_posted_ = seq_completed_ = 0;
}

void VerbsUdTransport::lose(const char* why) noexcept {
  set_error(why, 0);
  spdlog::warn("verbs-ud: device lost: {}", why);
  close_device();
  lost_ = true;
  fatal_pending_ = false;
  next_reopen_ns_ = clock_.now_ns() + config_.reopen_interval_ms * kNanosPerMilli;
}

DeviceEvent VerbsUdTransport::poll_events() noexcept {
  if (!want_open_) return DeviceEvent::kNone;
  if (lost_) {
    const Nanos now = clock_.now_ns();
    if (now < next_reopen_ns_) return DeviceEvent::kNone;
    next_reopen_ns_ = now + config_.reopen_interval_ms * kNanosPerMilli;
    if (!open_device()) return DeviceEvent::kNone;
    lost_ = false;
    last_error_[0] = '\0';
    ++counters_.reopens;
    spdlog::info("verbs-ud: device back, QPN {:#x}", qp_->qp_num);
    return DeviceEvent::kDeviceBack;
  }
  if (fatal_pending_) {
    lose("the QP or a CQ failed on the fast path");
    return DeviceEvent::kDeviceLost;
  }
  bool fatal = false;
  bool port_changed = false;
  for (int i = 0; i < kAsyncEventsPerPollMax; ++i) {
    ibv_async_event ev{};
    if (ibv_get_async_event(ctx_, &ev) != 0) break;  // EAGAIN: none pending
    switch (ev.event_type) {
      case IBV_EVENT_DEVICE_FATAL:
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_CQ_ERR:
        fatal = true;  // our only QP or one of our CQs: rebuild everything
        break;
      case IBV_EVENT_PORT_ACTIVE:
      case IBV_EVENT_PORT_ERR:
      case IBV_EVENT_LID_CHANGE:
      case IBV_EVENT_SM_CHANGE:
      case IBV_EVENT_PKEY_CHANGE:
      case IBV_EVENT_GID_CHANGE:
      case IBV_EVENT_CLIENT_REREGISTER:
        if (ev.element.port_num == config_.port_num) port_changed = true;
        break;
      default:
        break;
    }
    ibv_ack_async_event(&ev);  // before any destroy: destroy waits for acks
  }
  if (fatal) {
    lose("fatal async event (device, QP or CQ)");
    return DeviceEvent::kDeviceLost;
  }
  if (port_changed) {
    // AHs name remote ports and stay valid; only LocalPort is re-read.
    if (!read_port(port_)) {
      lose("ibv_query_port failed after a port event");
      return DeviceEvent::kDeviceLost;
    }
    return DeviceEvent::kPortChanged;
  }
  return DeviceEvent::kNone;
}

}  // namespace madengine
