// Reading an operator's file whole (see file_issue.hpp).
#include "sm/file_issue.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace madengine::sm {

bool read_text_file(const std::string& path, std::string& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::string("cannot open: ") + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace madengine::sm
