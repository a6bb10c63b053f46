// Files an operator writes (partitions.conf, qos-policy.conf, guid2mkey):
// reading them line by line, and a problem found in one (the file, the line
// and what is wrong, printed as "file:line: what" so an editor jumps to it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace madengine::sm {

struct FileIssue {
  std::string file;
  unsigned line = 0;  // 0: the file as a whole (cannot open)
  std::string what;
  std::string text() const { return line == 0 ? file + ": " + what : file + ":" + std::to_string(line) + ": " + what; }
};

// `s` without leading and trailing blanks (spaces, tabs, CR, LF).
inline std::string_view trim_blanks(std::string_view s) noexcept {
  constexpr std::string_view kBlanks = " \t\r\n";
  const auto b = s.find_first_not_of(kBlanks);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

// The whole file in `out`; false with `error` set ("cannot open ...").
bool read_text_file(const std::string& path, std::string& out, std::string& error);

// Hands `line(text, number)` each line of `text` (numbered from 1, without
// its '\n'); false as soon as `line` returns false.
template <typename LineFn>
bool for_each_line(std::string_view text, LineFn&& line) {
  unsigned number = 0;
  for (std::string_view rest = text; !rest.empty();) {
    const auto nl = rest.find('\n');
    if (!line(rest.substr(0, nl), ++number)) return false;
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return true;
}

// `parse(text, path, error)` of the file at `path`; a file that cannot be
// read is an error naming it (line 0).
template <typename T, typename Parse>
std::optional<T> load_text_file(const std::string& path, FileIssue& error, Parse&& parse) {
  std::string text, why;
  if (!read_text_file(path, text, why)) {
    error = {path, 0, why};
    return std::nullopt;
  }
  return parse(text, path, error);
}

}  // namespace madengine::sm
