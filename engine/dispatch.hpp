// Who handles a received MAD, and on which core. Requests are matched by
// (management class, method, attribute id) with wildcards and carry an owner
// selector (a fixed core, or a shard function of the MAD); responses go to the
// response hook (transaction manager) of the core whose id is in their TID.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "madengine/engine/clock.hpp"
#include "madengine/engine/mad_buf.hpp"
#include "engine/tx_sink.hpp"
#include "madengine/wire/mad.hpp"

namespace madengine {

class MadPool;

// TID layout. The high 32 bits of a TID belong to the kernel (ib_umad writes
// the agent's id there), the low 32 to us. We reserve the top kTidCoreBits of
// the low half for the id of the core that sent the request, so a response
// can be steered to that core's transaction manager without any shared table;
// the remaining kTidSeqBits are the transaction manager's own sequence.
inline constexpr unsigned kTidCoreBits = 8;
inline constexpr unsigned kTidSeqBits = 32 - kTidCoreBits;
inline constexpr std::uint32_t kTidSeqMask = (std::uint32_t{1} << kTidSeqBits) - 1;
inline constexpr std::uint16_t kCoresMax = std::uint16_t{1} << kTidCoreBits;

constexpr std::uint16_t tid_core(std::uint64_t tid) noexcept {
  return static_cast<std::uint16_t>((tid >> kTidSeqBits) & ((1u << kTidCoreBits) - 1));
}
constexpr std::uint32_t make_tid_low(std::uint16_t core, std::uint32_t seq) noexcept {
  return (std::uint32_t{core} << kTidSeqBits) | (seq & kTidSeqMask);
}
static_assert(tid_core(0x12345678'0300'0001ull) == 3);
static_assert(tid_core(make_tid_low(200, 0xffffffffu)) == 200);

// What code running on a core sees of it.
class CoreContext {
 public:
  virtual ~CoreContext() = default;
  virtual std::uint16_t core_id() const noexcept = 0;
  virtual TxSink& tx() noexcept = 0;  // responses and requests to transmit
  virtual const Clock& clock() const noexcept = 0;
  virtual MadPool& pool() noexcept = 0;

  // Zero-copy hand-over, for a handler that answers after on_mad returns
  // (the SA's admission queue). Inside on_mad, keep(buf) takes the lent
  // buffer: the core no longer frees it, and the handler owns it until it
  // passes it to send_kept() or free_kept(), on this core's thread. False,
  // and the buffer stays lent, when the core already holds
  // PoolBounds::handler_kept_max kept buffers (the pool is sized for that
  // many) or `buf` is not the buffer being lent: copy it instead.
  virtual bool keep(MadBuf& buf) noexcept = 0;
  // Queues a kept buffer for transmission as it is, without a copy (the core
  // frees it once sent); false if the tx queue is full, and the handler
  // still owns it.
  virtual bool send_kept(MadBuf& buf) noexcept = 0;
  // Returns a kept buffer to the pool.
  virtual void free_kept(MadBuf& buf) noexcept = 0;
};

class MadHandler {
 public:
  virtual ~MadHandler() = default;
  // Runs on the owner core. `buf` is lent for the call: the core frees it
  // afterwards; to answer, fill a response (in `buf` itself is fine) and
  // ctx.tx().send() it, which copies. To hold it past the call without a
  // copy, ctx.keep(buf) (see CoreContext).
  virtual void on_mad(MadBuf& buf, CoreContext& ctx) noexcept = 0;
};

// A handler's key; nullopt fields are wildcards.
struct DispatchKey {
  std::optional<std::uint8_t> mgmt_class;
  std::optional<std::uint8_t> method;
  std::optional<std::uint16_t> attr_id;
};

// Chooses the owner core of a request. A function selector returns any
// value; the core is that value modulo the number of cores. A spread
// selector names a handler any core can run (it reads only shared,
// read-only state): the core that received the MAD runs it itself while it
// keeps up, and steers it by the function only when it receives a backlog.
// A hand-off costs a cross-core wake-up, tens of times a lookup's cost, so
// steering pays only when the receiving core is the bottleneck.
struct OwnerSelector {
  using Fn = std::uint32_t (*)(const MadBuf& buf, const void* arg) noexcept;
  Fn fn = nullptr;            // nullptr: the fixed core
  const void* arg = nullptr;  // passed to fn
  std::uint16_t core = 0;
  bool spread = false;

  static constexpr OwnerSelector fixed(std::uint16_t c) noexcept { return {nullptr, nullptr, c, false}; }
  static constexpr OwnerSelector by(Fn f, const void* a = nullptr) noexcept { return {f, a, 0, false}; }
  static constexpr OwnerSelector spread_by(Fn f, const void* a = nullptr) noexcept { return {f, a, 0, true}; }
  // Shards by the big-endian 16-bit field at byte `offset` of the MAD (e.g.
  // a PathRecord's DLID) or by a 64-bit one (e.g. the GUID half of its DGID).
  static OwnerSelector by_be16_at(std::size_t offset) noexcept;
  static OwnerSelector by_be64_at(std::size_t offset) noexcept;

  std::uint16_t select(const MadBuf& buf, std::uint16_t cores) const noexcept {
    if (fn == nullptr) return core;
    return static_cast<std::uint16_t>(fn(buf, arg) % cores);
  }
};

// Byte offsets (in the MAD) of the PathRecord fields SA handlers shard on:
// SA data starts at 56; DGID at record offset 8 (its GUID half at 16), DLID at 40 (IBA 15.2.5.16).
inline constexpr std::size_t kPathRecordDgidGuidOffset = 56 + 16;
inline constexpr std::size_t kPathRecordDlidOffset = 56 + 40;

// Why the dispatcher did not deliver a MAD.
enum class DispatchVerdict : std::uint8_t { kHandler, kResponse, kNoHandler, kMalformed };

struct Route {
  DispatchVerdict verdict = DispatchVerdict::kNoHandler;
  std::uint16_t core = 0;          // owner core (kHandler, kResponse)
  MadHandler* handler = nullptr;   // kHandler
  bool any_core = false;           // kHandler: a spread selector's (any core may run it)
};

// The handler table. Registration happens before the engine starts; lookups
// (route) are lock-free reads of a table nobody writes any more.
class Dispatcher {
 public:
  explicit Dispatcher(std::uint16_t cores);

  // Throws std::invalid_argument for a bad core or a key registered twice.
  void add(const DispatchKey& key, MadHandler& handler, OwnerSelector owner);
  void set_response_hook(std::uint16_t core, MadHandler& hook);

  // Classifies a received MAD: malformed (too short, base version not 1),
  // response (owner = the core in its TID), request with a handler, or none.
  Route route(const MadBuf& buf) const noexcept;
  // The handler of a request on its owner core (the route is not carried
  // between cores; a second lookup is cheaper than widening MadBuf).
  MadHandler* handler_for(const MadBuf& buf) const noexcept;
  MadHandler* response_hook(std::uint16_t core) const noexcept {
    return core < hooks_.size() ? hooks_[core] : nullptr;
  }
  std::uint16_t cores() const noexcept { return cores_; }

 private:
  struct Entry {
    MadHandler* handler = nullptr;
    OwnerSelector owner{};
  };
  // Open addressing, power-of-two size, at most half full: a lookup is a
  // multiply, a shift and usually one probe (no modulo, no node chasing).
  struct Slot {
    std::uint64_t key = kEmptyKey;
    Entry entry{};
  };
  static constexpr std::uint64_t kEmptyKey = ~std::uint64_t{0};
  // Wildcards are 0x1ff / 0x1ff / 0x1ffff: outside every real value.
  static std::uint64_t pack(std::uint32_t klass, std::uint32_t meth, std::uint32_t attr) noexcept {
    return (std::uint64_t{klass} << 32) | (std::uint64_t{meth} << 20) | attr;
  }
  const Entry* find(const wire::MadHeader& h) const noexcept;
  const Slot* probe(std::uint64_t key) const noexcept;
  void insert(std::uint64_t key, const Entry& e);

  std::uint16_t cores_;
  std::vector<Slot> table_;
  std::size_t entries_ = 0;
  unsigned shift_ = 64;
  std::uint8_t wildcard_shapes_ = 0;  // which of the 8 wildcard patterns have entries
  std::vector<MadHandler*> hooks_;
};

// Turns the request in `buf` into its response with status `status`
// (IBA 13.4.5: response method = request method | 0x80, except Set whose
// response is GetResp; a directed-route SMP also gets the D bit). False, and
// `buf` unchanged, for methods that have no response (Send, Trap, responses).
bool make_error_response(MadBuf& buf, std::uint16_t status) noexcept;
// The same with kMethodAttrUnsupported, then queued on `tx`; false if the
// method has no response or the tx queue is full.
bool answer_unsupported(MadBuf& buf, TxSink& tx) noexcept;

}  // namespace madengine
