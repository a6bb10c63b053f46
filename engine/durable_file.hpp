// Replacing a state file so a crash leaves the old contents or the new ones,
// never a torn or empty file: write a temporary beside it, fsync it, rename
// it over the file, fsync the folder (the rename itself is then on disk).
// Used by the guid2lid file and the SA journal; call it off the MAD cores.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace madengine {

// False with `error` naming the file and the reason; the old file stays.
bool write_file_durably(const std::string& path, std::span<const std::uint8_t> bytes, std::string& error) noexcept;

// The system calls of a durable write, in order: a seam for tests (that each
// is made) and for the scenario runner (a crash between any two).
enum class DurableStep : std::uint8_t { kOpenTemp, kWrite, kSyncFile, kCloseFile, kRename, kOpenDir, kSyncDir };
inline constexpr unsigned kDurableStepCount = 7;
const char* to_string(DurableStep s) noexcept;

// Called before each step with the file's path; false stops the write there
// as a crash would (the temporary is left as it is, nothing is cleaned up)
// and write_file_durably returns false. Process-wide; `observer` (nullptr:
// none) must outlive its use. Set it before any writer thread runs.
using DurableWriteObserver = std::function<bool(const std::string& path, DurableStep step)>;
void set_durable_write_observer(const DurableWriteObserver* observer) noexcept;

}  // namespace madengine
