// Dispatcher: the (class, method, attribute) handler table with wildcards, the
// per-core response hooks, and the helpers that answer unsupported requests.
#include "engine/dispatch.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace madengine {

namespace {

constexpr std::uint32_t kAnyClass = 0x1ff;
constexpr std::uint32_t kAnyMethod = 0x1ff;
constexpr std::uint32_t kAnyAttr = 0x1ffff;

// Shape bits: 4 = class given, 2 = method given, 1 = attribute given. Lookups
// try shapes in falling order, so a given class outranks a given method,
// which outranks a given attribute: (c, m, *) is tried before (c, *, a).
constexpr std::array<std::uint8_t, 8> kShapeOrder{7, 6, 5, 4, 3, 2, 1, 0};

std::uint32_t read_be16_at(const MadBuf& buf, const void* arg) noexcept {
  const auto off = reinterpret_cast<std::uintptr_t>(arg);
  if (off + 2 > buf.len) return 0;
  return static_cast<std::uint32_t>(buf.mad.bytes[off] << 8 | buf.mad.bytes[off + 1]);
}

std::uint32_t read_be64_at(const MadBuf& buf, const void* arg) noexcept {
  const auto off = reinterpret_cast<std::uintptr_t>(arg);
  if (off + 8 > buf.len) return 0;
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v = (v << 8) | buf.mad.bytes[off + i];
  // GUIDs share their high (vendor) bits: mix before the modulo.
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  return static_cast<std::uint32_t>(v);
}

}  // namespace

OwnerSelector OwnerSelector::by_be16_at(std::size_t offset) noexcept {
  return by(&read_be16_at, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(offset)));
}
OwnerSelector OwnerSelector::by_be64_at(std::size_t offset) noexcept {
  return by(&read_be64_at, reinterpret_cast<const void*>(static_cast<std::uintptr_t>(offset)));
}

Dispatcher::Dispatcher(std::uint16_t cores) : cores_(cores), hooks_(cores, nullptr) {
  if (cores == 0 || cores > kCoresMax)
    throw std::invalid_argument("Dispatcher: cores must be 1.." + std::to_string(kCoresMax));
}

void Dispatcher::add(const DispatchKey& key, MadHandler& handler, OwnerSelector owner) {
  if (owner.fn == nullptr && owner.core >= cores_)
    throw std::invalid_argument("Dispatcher::add: owner core " + std::to_string(owner.core) + " >= cores");
  const std::uint8_t shape = static_cast<std::uint8_t>((key.mgmt_class ? 4 : 0) | (key.method ? 2 : 0) |
                                                       (key.attr_id ? 1 : 0));
  const auto k = pack(key.mgmt_class.value_or(0) | (key.mgmt_class ? 0 : kAnyClass),
                      key.method.value_or(0) | (key.method ? 0 : kAnyMethod),
                      key.attr_id.value_or(0) | (key.attr_id ? 0 : kAnyAttr));
  if (probe(k) != nullptr) throw std::invalid_argument("Dispatcher::add: a handler is already registered for this key");
  insert(k, Entry{&handler, owner});
  wildcard_shapes_ = static_cast<std::uint8_t>(wildcard_shapes_ | (1u << shape));
}

const Dispatcher::Slot* Dispatcher::probe(std::uint64_t key) const noexcept {
  if (table_.empty()) return nullptr;
  const std::size_t mask = table_.size() - 1;
  for (std::size_t i = (key * 0x9e3779b97f4a7c15ull) >> shift_;; i = (i + 1) & mask) {
    if (table_[i].key == key) return &table_[i];
    if (table_[i].key == kEmptyKey) return nullptr;  // never full: half empty at worst
  }
}

void Dispatcher::insert(std::uint64_t key, const Entry& e) {
  if ((entries_ + 1) * 2 > table_.size()) {
    std::vector<Slot> old = std::move(table_);
    const std::size_t size = std::max<std::size_t>(16, old.size() * 2);
    table_.assign(size, Slot{});
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(size));
    entries_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmptyKey) insert(s.key, s.entry);
  }
  const std::size_t mask = table_.size() - 1;
  std::size_t i = (key * 0x9e3779b97f4a7c15ull) >> shift_;
  while (table_[i].key != kEmptyKey) i = (i + 1) & mask;
  table_[i] = Slot{key, e};
  ++entries_;
}

void Dispatcher::set_response_hook(std::uint16_t core, MadHandler& hook) {
  if (core >= cores_) throw std::invalid_argument("Dispatcher::set_response_hook: core out of range");
  hooks_[core] = &hook;
}

const Dispatcher::Entry* Dispatcher::find(const wire::MadHeader& h) const noexcept {
  const std::uint32_t attr = h.attr_id.get();
  for (const std::uint8_t shape : kShapeOrder) {
    if ((wildcard_shapes_ & (1u << shape)) == 0) continue;
    const auto k = pack((shape & 4) ? h.mgmt_class : kAnyClass, (shape & 2) ? h.method : kAnyMethod,
                        (shape & 1) ? attr : kAnyAttr);
    if (const Slot* slot = probe(k)) return &slot->entry;
  }
  return nullptr;
}

Route Dispatcher::route(const MadBuf& buf) const noexcept {
  if (buf.len < wire::kMadHeaderSize || buf.len > wire::kMadSize) return {DispatchVerdict::kMalformed, 0, nullptr};
  const auto& h = buf.hdr();
  if (h.base_version != 1) return {DispatchVerdict::kMalformed, 0, nullptr};
  if (h.is_response()) {
    const std::uint16_t core = tid_core(h.tid.get());
    if (core >= cores_ || hooks_[core] == nullptr) return {DispatchVerdict::kNoHandler, 0, nullptr};
    return {DispatchVerdict::kResponse, core, hooks_[core]};
  }
  const Entry* e = find(h);
  if (e == nullptr) return {DispatchVerdict::kNoHandler, 0, nullptr};
  return {DispatchVerdict::kHandler, e->owner.select(buf, cores_), e->handler, e->owner.spread};
}

MadHandler* Dispatcher::handler_for(const MadBuf& buf) const noexcept {
  const Entry* e = find(buf.hdr());
  return e == nullptr ? nullptr : e->handler;
}

bool make_error_response(MadBuf& buf, std::uint16_t status) noexcept {
  if (buf.len < wire::kMadHeaderSize) return false;
  auto& h = buf.hdr();
  std::uint8_t resp = 0;
  switch (h.method) {
    case wire::method::kGet:
    case wire::method::kSet: resp = wire::method::kGetResp; break;
    case wire::method::kReport:
    case wire::method::kGetTable:
    case wire::method::kGetTraceTable:
    case wire::method::kGetMulti:
    case wire::method::kDelete: resp = static_cast<std::uint8_t>(h.method | wire::method::kResponse); break;
    default: return false;  // Send, Trap, TrapRepress and responses are never answered
  }
  h.method = resp;
  if (h.klass() == wire::MgmtClass::kSubnDirected) {
    // Keep the D bit (bit 15) set on the way back (IBA 14.2.2); the rest is status.
    h.status = wire::be16::from(static_cast<std::uint16_t>(0x8000 | (status & 0x7fff)));
  } else {
    h.status = wire::be16::from(status);
  }
  return true;
}

bool answer_unsupported(MadBuf& buf, TxSink& tx) noexcept {
  if (!make_error_response(buf, wire::status::kMethodAttrUnsupported)) return false;
  return tx.send(buf);
}

}  // namespace madengine
