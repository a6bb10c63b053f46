// Replacing a state file so a crash leaves the old contents or the new ones,
// never a torn or empty file: write a temporary beside it, fsync it, rename
// it over the file, fsync the folder (the rename itself is then on disk).
// Used by the guid2lid file and the SA journal; call it off the MAD cores.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace madengine {

// False with `error` naming the file and the reason; the old file stays.
bool write_file_durably(const std::string& path, std::span<const std::uint8_t> bytes, std::string& error) noexcept;

}  // namespace madengine
