// [metrics] and [admin] of the daemon's TOML (see service_config.hpp).
#include "service/service_config.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "madengine/node/config.hpp"

namespace madengine::service {

bool parse_listen(const std::string& text, std::string& host, unsigned& port, std::string& error) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) {
    error = "not HOST:PORT";
    return false;
  }
  host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string p = text.substr(colon + 1);
  unsigned long v = 0;
  std::size_t used = 0;
  try {
    v = std::stoul(p, &used, 10);
  } catch (...) {
    used = 0;
  }
  if (p.empty() || used != p.size() || v > 65535) {
    error = fmt::format("port \"{}\" is not 0..65535", p);
    return false;
  }
  port = static_cast<unsigned>(v);
  return true;
}

namespace {

[[noreturn]] void fail(const std::string& name, const toml::node& n, const std::string& what) {
  throw node::ConfigError(fmt::format("{}:{}: {}", name, n.source().begin.line, what));
}

std::string string_key(const std::string& name, const toml::table& t, const char* section, const char* key,
                       const std::string& fallback) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return fallback;
  const auto v = n->value<std::string>();
  if (!v) fail(name, *n, fmt::format("{}.{} must be a string", section, key));
  return *v;
}

void only_keys(const std::string& name, const toml::table& t, const char* section,
               std::initializer_list<const char*> keys) {
  for (auto&& [k, v] : t) {
    bool known = false;
    for (const char* key : keys) known |= k.str() == key;
    if (!known) fail(name, v, fmt::format("unknown key {}.{}", section, k.str()));
  }
}

}  // namespace

ServiceConfig parse_service_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw node::ConfigError(fmt::format("{}:{}: {}", name, e.source().begin.line, e.description()));
  }
  ServiceConfig c;
  if (const toml::node* n = root.get("metrics")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) fail(name, *n, "[metrics] must be a table");
    only_keys(name, *t, "metrics", {"listen"});
    c.metrics_listen = string_key(name, *t, "metrics", "listen", c.metrics_listen);
    std::string host, error;
    unsigned port = 0;
    if (!c.metrics_listen.empty() && !parse_listen(c.metrics_listen, host, port, error))
      fail(name, *t->get("listen"), fmt::format("metrics.listen = \"{}\": {}", c.metrics_listen, error));
  }
  if (const toml::node* n = root.get("admin")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) fail(name, *n, "[admin] must be a table");
    only_keys(name, *t, "admin", {"socket"});
    c.admin_socket = string_key(name, *t, "admin", "socket", c.admin_socket);
    c.admin_socket_given = t->contains("socket");
  }
  return c;
}

void apply_service_defaults(ServiceConfig& c, bool simulated) {
  if (simulated && !c.admin_socket_given) c.admin_socket.clear();
}

ServiceConfig load_service_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw node::ConfigError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_service_config(ss.str(), path);
}

}  // namespace madengine::service
