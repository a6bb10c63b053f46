// Tables that one epoch hands to the next (LFTs, per-port tables): a vector
// with value semantics whose copies share one buffer until one of them is
// changed (copy on write), and an interner that gives equal tables one
// buffer. At 43,904 hosts each epoch and the SM's caches held a copy each
// of 187 MB of LFTs and of 271 k ports' P_Key, SL2VL, VLArb and GUIDInfo
// tables, nearly all of them alike from one sweep to the next.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace madengine::fabric {

template <typename T>
class CowVector {
 public:
  using value_type = T;
  using const_iterator = const T*;

  CowVector() = default;
  CowVector(std::vector<T> v)  // NOLINT: implicit, as the vector it replaces
      : p_(v.empty() ? nullptr : std::make_shared<std::vector<T>>(std::move(v))) {}
  CowVector(std::initializer_list<T> l) : CowVector(std::vector<T>(l)) {}

  std::size_t size() const noexcept { return p_ ? p_->size() : 0; }
  bool empty() const noexcept { return size() == 0; }
  const T* data() const noexcept { return p_ ? p_->data() : nullptr; }
  const T& operator[](std::size_t i) const noexcept { return (*p_)[i]; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size(); }
  operator std::span<const T>() const noexcept { return {data(), size()}; }  // NOLINT: readers take spans
  std::vector<T> vec() const { return p_ ? *p_ : std::vector<T>{}; }
  // Both hold the same buffer (no copy was made).
  bool shares(const CowVector& o) const noexcept { return p_ != nullptr && p_ == o.p_; }

  // Writers get a buffer of their own first. A table is written only by
  // the thread that builds it (a routing pass, the SM core's caches); a
  // published snapshot is never written, so a count read as shared at worst
  // copies once more than needed. Hot loops take mutable_data() once.
  T& operator[](std::size_t i) { return own()[i]; }
  T* mutable_data() { return own().data(); }
  void assign(std::size_t n, const T& v) { *this = CowVector(std::vector<T>(n, v)); }
  void resize(std::size_t n) { own().resize(n); }
  void resize(std::size_t n, const T& v) { own().resize(n, v); }
  void clear() noexcept { p_.reset(); }

  friend bool operator==(const CowVector& a, const CowVector& b) noexcept {
    if (a.p_ == b.p_) return true;
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  std::vector<T>& own() {
    if (!p_ || p_.use_count() != 1) [[unlikely]]
      p_ = p_ ? std::make_shared<std::vector<T>>(*p_) : std::make_shared<std::vector<T>>();
    return *p_;
  }
  std::shared_ptr<std::vector<T>> p_;
};

// Gives tables with the same contents one buffer (a sweep's worth: the
// interner lives as long as the pass that reads or writes the tables).
template <typename T>
class CowInterner {
  static_assert(std::is_trivially_copyable_v<T>, "tables are compared and hashed by bytes");

 public:
  void intern(CowVector<T>& v) {
    if (v.empty()) return;
    const std::string_view bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    auto& same_hash = seen_[std::hash<std::string_view>{}(bytes)];
    for (const CowVector<T>& s : same_hash)
      if (s.size() == v.size() && std::memcmp(s.data(), v.data(), bytes.size()) == 0) {
        v = s;
        return;
      }
    same_hash.push_back(v);
  }

 private:
  std::unordered_map<std::size_t, std::vector<CowVector<T>>> seen_;
};

}  // namespace madengine::fabric
