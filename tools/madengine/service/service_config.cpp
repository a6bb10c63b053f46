// [metrics] and [admin] of the daemon's TOML (see service_config.hpp).
#include "service/service_config.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "madengine/node/config.hpp"
#include "node/toml_section.hpp"

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

ServiceConfig parse_service_config(const std::string& text, const std::string& name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    throw node::ConfigError(fmt::format("{}:{}: {}", name, e.source().begin.line, e.description()));
  }
  ServiceConfig c;
  // The node's reader (node/toml_section.hpp): unknown keys first, then each key's type.
  if (const toml::node* n = root.get("metrics")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) node::toml_fail(name, *n, "[metrics] must be a table");
    node::TomlSection s(name, *t, "metrics.");
    s.known("listen");
    s.reject_unknown();
    s.get("listen", c.metrics_listen);
    std::string host, error;
    unsigned port = 0;
    if (!c.metrics_listen.empty() && !parse_listen(c.metrics_listen, host, port, error))
      node::toml_fail(name, *t->get("listen"), fmt::format("metrics.listen = \"{}\": {}", c.metrics_listen, error));
  }
  if (const toml::node* n = root.get("admin")) {
    const toml::table* t = n->as_table();
    if (t == nullptr) node::toml_fail(name, *n, "[admin] must be a table");
    node::TomlSection s(name, *t, "admin.");
    s.known("socket");
    s.reject_unknown();
    s.get("socket", c.admin_socket);
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
