// madwire: decode MAD hex dumps (captures, test vectors) into named fields.
//   madwire FILE...            one text block per MAD
//   madwire --json FILE...     JSON, one object per MAD
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "describe.hpp"
#include "hexdump.hpp"

int main(int argc, char** argv) {
  CLI::App app{"madwire: decode InfiniBand MAD hex dumps"};
  std::vector<std::string> files;
  bool json = false;
  app.add_option("files", files, "hex dump files ('-' for stdin); blank lines separate MADs")->required();
  app.add_flag("--json", json, "print JSON");
  CLI11_PARSE(app, argc, argv);

  auto all = nlohmann::ordered_json::array();
  for (const auto& f : files) {
    std::ifstream file;
    std::istream* in = &std::cin;
    if (f != "-") {
      file.open(f);
      if (!file) {
        fmt::print(stderr, "madwire: cannot open {}\n", f);
        return 1;
      }
      in = &file;
    }
    std::vector<madengine::tools::HexMad> mads;
    madengine::tools::HexError err;
    if (!madengine::tools::read_hex_mads(*in, mads, err)) {
      fmt::print(stderr, "madwire: {}:{}: {}\n", f, err.line, err.what);
      return 1;
    }
    for (const auto& m : mads) {
      auto d = madengine::tools::describe_mad(m.bytes);
      d["source"] = fmt::format("{}:{}", f, m.first_line);
      all.push_back(std::move(d));
    }
  }
  if (json) {
    std::cout << all.dump(2) << "\n";
  } else {
    for (const auto& d : all) std::cout << d.dump(2) << "\n\n";
  }
  return 0;
}
