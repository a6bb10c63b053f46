// The byte buffers the SA's state files (the journal, the persisted epoch)
// are written to and read from: values as they lie in memory, every read
// checked against the bytes left. Each file adds its own fields on top.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace madengine::sa {

class ByteWriter {
 public:
  void raw(const void* p, std::size_t n) {
    // resize and copy, not insert(end, first, last): g++ 12 at -O1 with TSan
    // takes the insert into an empty vector for an overflow (-Wstringop-overflow).
    const std::size_t at = out_.size();
    out_.resize(at + n);
    if (n != 0) std::memcpy(out_.data() + at, p, n);
  }
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    raw(&v, sizeof(T));
  }
  std::vector<std::uint8_t>& bytes() noexcept { return out_; }

 protected:
  std::vector<std::uint8_t> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> b) noexcept : b_(b) {}
  bool raw(void* p, std::size_t n) noexcept {
    if (left() < n) return false;
    if (n != 0) std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool pod(T& v) noexcept {
    return raw(&v, sizeof(T));
  }
  std::size_t left() const noexcept { return b_.size() - pos_; }

 protected:
  std::span<const std::uint8_t> b_;
  std::size_t pos_ = 0;
};

}  // namespace madengine::sa
