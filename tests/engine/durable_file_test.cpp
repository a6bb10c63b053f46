// write_file_durably makes its system calls in the order that makes a
// replacement crash-safe (temporary written, fsynced and closed, renamed
// over the file, the folder fsynced), and a crash between any two leaves
// the old file whole (checked through the observer seam).
#include "engine/durable_file.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace madengine {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/durable-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string read(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(DurableFile, EveryStepInOrderWithTheFolderSynced) {
  TempDir d;
  const std::string file = d.path + "/guid2lid";
  std::vector<DurableStep> steps;
  const DurableWriteObserver obs = [&](const std::string& path, DurableStep s) {
    EXPECT_EQ(path, file);
    steps.push_back(s);
    return true;
  };
  set_durable_write_observer(&obs);
  std::string err;
  EXPECT_TRUE(write_file_durably(file, bytes("new contents\n"), err)) << err;
  set_durable_write_observer(nullptr);
  const std::vector<DurableStep> want = {DurableStep::kOpenTemp, DurableStep::kWrite,  DurableStep::kSyncFile,
                                         DurableStep::kCloseFile, DurableStep::kRename, DurableStep::kOpenDir,
                                         DurableStep::kSyncDir};
  EXPECT_EQ(steps, want);
  EXPECT_EQ(read(file), "new contents\n");
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
}

TEST(DurableFile, ACrashBeforeAnyStepLeavesTheOldFileOrTheNew) {
  for (unsigned stop = 0; stop < kDurableStepCount; ++stop) {
    TempDir d;
    const std::string file = d.path + "/journal";
    std::string err;
    ASSERT_TRUE(write_file_durably(file, bytes("old"), err)) << err;
    const DurableWriteObserver obs = [&](const std::string&, DurableStep s) { return static_cast<unsigned>(s) != stop; };
    set_durable_write_observer(&obs);
    EXPECT_FALSE(write_file_durably(file, bytes("new"), err));
    set_durable_write_observer(nullptr);
    EXPECT_NE(err.find("crash injected"), std::string::npos) << err;
    const std::string now = read(file);
    // Up to the rename the old file stands; after it, the new one.
    EXPECT_EQ(now, stop <= static_cast<unsigned>(DurableStep::kRename) ? "old" : "new") << "stopped before " << stop;
  }
}

}  // namespace
}  // namespace madengine
