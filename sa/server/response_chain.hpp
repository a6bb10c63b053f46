// Responses on a core when the SA shares it with another transaction user
// (the SM): the SA sees each response first (RMPP ACK/STOP/ABORT of its
// transfers, ReportResps), and what it does not claim goes to the next hook
// (the SM's transaction manager and replica client). The daemon, tests and
// benchmarks that run an SM and an SA on one engine install one per core.
#pragma once

#include "engine/dispatch.hpp"
#include "sa/server/sa_server.hpp"

namespace madengine::sa {

class ResponseChain final : public MadHandler {
 public:
  // `next` may be null (a core the SM does not use).
  ResponseChain(SaServer& sa, MadHandler* next) noexcept : sa_(sa), next_(next) {}
  void on_mad(MadBuf& buf, CoreContext& ctx) noexcept override {
    if (sa_.on_response(buf, ctx)) return;
    if (next_ != nullptr) next_->on_mad(buf, ctx);
  }

 private:
  SaServer& sa_;
  MadHandler* next_;
};

}  // namespace madengine::sa
