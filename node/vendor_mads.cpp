// Vendor-specific classes answered by the embedder (see vendor_mads.hpp).
#include "node/vendor_mads.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

#include "engine/dispatch.hpp"
#include "engine/tx_sink.hpp"

namespace madengine::node {

class VendorMads::ClassHandler final : public MadHandler {
 public:
  ClassHandler(std::uint8_t mgmt_class, VendorMadHandler fn) : class_(mgmt_class), fn_(std::move(fn)) {}

  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    MadBuf resp = buf;
    // Methods without a response (Send, Trap) still reach the handler; what
    // it fills in is not sent.
    const bool answerable = make_error_response(resp, 0);
    bool send = false;
    try {
      send = fn_(buf, resp);
    } catch (const std::exception& e) {
      if (!warned_.exchange(true)) spdlog::warn("node: the handler of vendor class 0x{:02x} threw: {}", class_, e.what());
    } catch (...) {
      if (!warned_.exchange(true)) spdlog::warn("node: the handler of vendor class 0x{:02x} threw", class_);
    }
    if (send && answerable) ctx.tx().send(resp);
  }

 private:
  std::uint8_t class_;
  VendorMadHandler fn_;
  std::atomic<bool> warned_{false};  // once per class: a throwing handler must not flood the log
};

VendorMads::VendorMads(Engine& engine, std::vector<VendorClassHandler> handlers) {
  // Any core may run it: the one that received the request, while it keeps up.
  const OwnerSelector owner = OwnerSelector::spread_by(
      [](const MadBuf& b, const void*) noexcept { return static_cast<std::uint32_t>(b.hdr().tid.get()); });
  for (VendorClassHandler& h : handlers) {
    handlers_.push_back(std::make_unique<ClassHandler>(h.mgmt_class, std::move(h.handler)));
    engine.add_handler(DispatchKey{.mgmt_class = h.mgmt_class}, *handlers_.back(), owner);
  }
}

VendorMads::~VendorMads() = default;

}  // namespace madengine::node
