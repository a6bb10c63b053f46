// The node name map parser (see node_name_map.hpp).
#include "perfmgr/node_name_map.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace madengine::perfmgr {

namespace {

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

bool parse_node_name_map(std::string_view text, const std::string& name, NodeNameMap& out, std::string& error) {
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    line = trim(line);
    if (line.empty() || line.front() == '#') continue;
    const std::string guid_text(line.substr(0, line.find_first_of(" \t#")));
    char* end = nullptr;
    errno = 0;
    const unsigned long long guid = std::strtoull(guid_text.c_str(), &end, 0);
    if (guid_text.empty() || guid_text.front() == '-' || errno != 0 || end != guid_text.c_str() + guid_text.size()) {
      error = fmt::format("{}:{}: \"{}\" is not a GUID", name, line_no, guid_text);
      return false;
    }
    std::string_view rest = trim(line.substr(guid_text.size()));
    std::string_view node;
    if (!rest.empty() && rest.front() == '"') {
      const std::size_t close = rest.find('"', 1);
      if (close == std::string_view::npos) {
        error = fmt::format("{}:{}: the name of {} has no closing quote", name, line_no, guid_text);
        return false;
      }
      node = rest.substr(1, close - 1);
    } else {
      node = trim(rest.substr(0, rest.find('#')));
    }
    if (node.empty()) {
      error = fmt::format("{}:{}: {} has no name", name, line_no, guid_text);
      return false;
    }
    out.add(guid, std::string(node));
  }
  return true;
}

bool load_node_name_map(const std::string& path, NodeNameMap& out, std::string& error) {
  std::ifstream in(path);
  if (!in) {
    error = fmt::format("{}: cannot open", path);
    return false;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_node_name_map(ss.str(), path, out, error);
}

}  // namespace madengine::perfmgr
