// Reads MAD hex dumps: whitespace-separated byte pairs, '#' comments, blank
// lines separating MADs. Errors name the file line.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace madengine::tools {

struct HexMad {
  std::vector<std::uint8_t> bytes;
  int first_line = 0;
};

struct HexError {
  int line = 0;
  std::string what;
};

// Parses every MAD in `in`; on error returns false and fills `err`.
bool read_hex_mads(std::istream& in, std::vector<HexMad>& out, HexError& err);

}  // namespace madengine::tools
