// One table of a TOML configuration file read key by key, with errors that
// name the file's line: the node's configuration (config.cpp) and the
// daemon's [metrics] and [admin] sections read their keys through it, so a
// typo is refused the same way everywhere. Private: not part of libmadengine.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "madengine/node/config.hpp"

namespace madengine::node {

// ConfigError "NAME:LINE: WHAT" for the key or table `n`.
[[noreturn]] inline void toml_fail(const std::string& name, const toml::node& n, const std::string& what) {
  throw ConfigError(fmt::format("{}:{}: {}", name, n.source().begin.line, what));
}

// Reads one table, rejecting keys it does not know: a typo must not be ignored.
class TomlSection {
 public:
  TomlSection(const std::string& file, const toml::table& t, std::string prefix, std::set<std::string>* given = nullptr)
      : file_(file), table_(t), prefix_(std::move(prefix)), given_(given) {}

  template <typename T>
  void get(const char* key, T& out, std::int64_t lo = 0, std::int64_t hi = INT64_MAX) {
    seen_.push_back(key);
    const toml::node* n = table_.get(key);
    if (!n) return;
    if (given_ != nullptr) given_->insert(prefix_ + key);
    if constexpr (std::is_same_v<T, bool>) {
      auto v = n->value<bool>();
      if (!v) toml_fail(file_, *n, fmt::format("{}{} must be true or false", prefix_, key));
      out = *v;
    } else if constexpr (std::is_floating_point_v<T>) {
      auto v = n->value<double>();  // an integer is a number too
      if (!v) toml_fail(file_, *n, fmt::format("{}{} must be a number", prefix_, key));
      if (*v < static_cast<double>(lo) || *v > static_cast<double>(hi))
        toml_fail(file_, *n, fmt::format("{}{} = {} is outside {}..{}", prefix_, key, *v, lo, hi));
      out = *v;
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto v = n->value<std::string>();
      if (!v) toml_fail(file_, *n, fmt::format("{}{} must be a string", prefix_, key));
      out = *v;
    } else {
      auto v = n->value<std::int64_t>();
      if (!v) toml_fail(file_, *n, fmt::format("{}{} must be an integer", prefix_, key));
      if (*v < lo || *v > hi) toml_fail(file_, *n, fmt::format("{}{} = {} is outside {}..{}", prefix_, key, *v, lo, hi));
      out = static_cast<T>(*v);
    }
  }
  // A 64-bit key: an integer, or a string "0x..." (OpenSM writes keys in hex;
  // TOML integers stop at 2^63 - 1).
  void u64(const char* key, std::uint64_t& out) {
    seen_.push_back(key);
    const toml::node* n = table_.get(key);
    if (!n) return;
    if (given_ != nullptr) given_->insert(prefix_ + key);
    if (const auto v = n->value<std::int64_t>()) {
      if (*v < 0) toml_fail(file_, *n, fmt::format("{}{} must not be negative", prefix_, key));
      out = static_cast<std::uint64_t>(*v);
      return;
    }
    const auto s = n->value<std::string>();
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      if (s) v = std::stoull(*s, &used, 0);
    } catch (...) {
      used = 0;
    }
    if (!s || used == 0 || used != s->size() || (*s)[0] == '-')
      toml_fail(file_, *n, fmt::format("{}{} must be an integer or a string like \"0x00000000deadbeef\"", prefix_, key));
    out = v;
  }
  void guids(const char* key, std::vector<std::uint64_t>& out) {
    seen_.push_back(key);
    const toml::node* n = table_.get(key);
    if (!n) return;
    if (given_ != nullptr) given_->insert(prefix_ + key);
    const toml::array* a = n->as_array();
    if (!a) toml_fail(file_, *n, fmt::format("{}{} must be an array of GUID strings", prefix_, key));
    out.clear();
    for (const toml::node& e : *a) {
      auto s = e.value<std::string>();
      std::size_t used = 0;
      std::uint64_t g = 0;
      try {
        if (s) g = std::stoull(*s, &used, 0);
      } catch (...) {
        used = 0;
      }
      if (!s || used == 0 || used != s->size()) toml_fail(file_, e, fmt::format("{}{}: not a GUID", prefix_, key));
      out.push_back(g);
    }
  }
  // A key read by other means (a sub-table).
  void known(const char* key) { seen_.push_back(key); }
  void reject_unknown() const {
    for (auto&& [k, v] : table_) {
      bool known = false;
      for (const char* s : seen_) known |= k.str() == s;
      if (!known) toml_fail(file_, v, fmt::format("unknown key {}{}", prefix_, k.str()));
    }
  }

 private:
  const std::string& file_;
  const toml::table& table_;
  std::string prefix_;
  std::set<std::string>* given_;
  std::vector<const char*> seen_;
};

}  // namespace madengine::node
