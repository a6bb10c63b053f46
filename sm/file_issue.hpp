// A problem found in a file an operator wrote (partitions.conf,
// qos-policy.conf, guid2mkey): the file, the line and what is wrong, printed
// as "file:line: what" so an editor jumps to it.
#pragma once

#include <string>

namespace madengine::sm {

struct FileIssue {
  std::string file;
  unsigned line = 0;  // 0: the file as a whole (cannot open)
  std::string what;
  std::string text() const { return line == 0 ? file + ": " + what : file + ":" + std::to_string(line) + ": " + what; }
};

// The whole file in `out`; false with `error` set ("cannot open ...").
bool read_text_file(const std::string& path, std::string& out, std::string& error);

}  // namespace madengine::sm
