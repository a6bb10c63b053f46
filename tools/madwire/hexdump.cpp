// Hex dump reader for madwire (see hexdump.hpp).
#include "hexdump.hpp"

#include <cctype>
#include <sstream>

namespace madengine::tools {

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

bool read_hex_mads(std::istream& in, std::vector<HexMad>& out, HexError& err) {
  std::string line;
  int line_no = 0;
  HexMad cur;
  auto flush = [&] {
    if (!cur.bytes.empty()) out.push_back(std::move(cur));
    cur = HexMad{};
  };
  while (std::getline(in, line)) {
    ++line_no;
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    if (blank) {
      flush();
      continue;
    }
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (w.rfind("0x", 0) == 0) w = w.substr(2);
      if (w.size() % 2 != 0) {
        err = {line_no, "odd number of hex digits in '" + w + "'"};
        return false;
      }
      for (std::size_t i = 0; i < w.size(); i += 2) {
        const int hi = hex_value(w[i]), lo = hex_value(w[i + 1]);
        if (hi < 0 || lo < 0) {
          err = {line_no, "not a hex byte: '" + w.substr(i, 2) + "'"};
          return false;
        }
        if (cur.bytes.empty()) cur.first_line = line_no;
        cur.bytes.push_back(static_cast<std::uint8_t>(hi << 4 | lo));
      }
    }
  }
  flush();
  return true;
}

}  // namespace madengine::tools
