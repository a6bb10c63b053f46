// State files name their fabric (label ibsim): the madengine executable's
// SA journal and guid2lid, written on one fabric, are offered to a daemon on
// another. On its own fabric a restart restores the journal; on the other
// nothing is restored or vouched for (clients are asked to reregister), the
// foreign LIDs are not used, and the log says so once per file, naming the
// file and both fabrics.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "daemon_process.hpp"
#include "ibsim_harness.hpp"

namespace madengine {
namespace {

using namespace std::chrono_literals;
using ibsim::DaemonProcess;
using ibsim::IbsimFabric;
using ibsim::wait_until;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(StateIdentityIbsim, AJournalFromAnotherFabricIsNotRestored) {
  SKIP_WITHOUT_SHIM();
  IbsimFabric a(ibsim::topology_path("chain3.topo"));
  ASSERT_TRUE(a.ok()) << a.error();
  double took_ms = 0;
  {
    DaemonProcess first;
    ASSERT_TRUE(first.start(a, "H1", "", "a"));
    ASSERT_TRUE(wait_until([&] { return first.logged("sm: subnet up"); }, 60s)) << first.log();
    ASSERT_EQ(first.terminate(took_ms), 0) << first.log();
    ASSERT_TRUE(first.logged("written at shutdown")) << first.log();
  }
  // Its own fabric: the restart restores what the journal holds.
  {
    DaemonProcess again;
    ASSERT_TRUE(again.start(a, "H1", "", "a"));
    ASSERT_TRUE(wait_until([&] { return again.logged("sm: subnet up"); }, 60s)) << again.log();
    EXPECT_TRUE(again.logged("restored; written")) << again.log();
    ASSERT_EQ(again.terminate(took_ms), 0) << again.log();
  }
  const std::string a_dir = a.work_dir() + "/a";

  // Another fabric, the same files (as a default state folder would offer them).
  IbsimFabric b(ibsim::topology_path("star3.topo"));
  ASSERT_TRUE(b.ok()) << b.error();
  const std::string b_dir = b.work_dir() + "/b";
  std::filesystem::create_directories(b_dir);
  std::filesystem::copy_file(a_dir + "/sa.journal", b_dir + "/sa.journal");
  std::filesystem::copy_file(a_dir + "/guid2lid", b_dir + "/guid2lid");
  DaemonProcess other;
  ASSERT_TRUE(other.start(b, "H3", "", "b"));
  ASSERT_TRUE(wait_until([&] { return other.logged("sm: subnet up"); }, 60s)) << other.log();
  const std::string log = other.log();
  EXPECT_EQ(count(log, "sa journal " + b_dir + "/sa.journal: not restored: written for SM port 0x"), 1u) << log;
  EXPECT_EQ(count(log, "guid2lid " + b_dir + "/guid2lid: not used: written for SM port 0x"), 1u) << log;
  EXPECT_EQ(count(log, ", this is SM port 0x"), 2u) << log;
  EXPECT_EQ(count(log, "restored; written"), 0u) << log;
  EXPECT_TRUE(other.logged("clients are asked to reregister")) << log;
  EXPECT_TRUE(other.logged("LIDs: 0 kept from map")) << log;
  ASSERT_EQ(other.terminate(took_ms), 0) << log;
  // Both files now name fabric B: the next start there restores them.
  DaemonProcess b_again;
  ASSERT_TRUE(b_again.start(b, "H3", "", "b"));
  ASSERT_TRUE(wait_until([&] { return b_again.logged("sm: subnet up"); }, 60s)) << b_again.log();
  EXPECT_EQ(count(b_again.log(), "not restored"), 0u) << b_again.log();
  EXPECT_EQ(count(b_again.log(), "not used"), 0u) << b_again.log();
  EXPECT_EQ(count(b_again.log(), "restored; written"), 1u) << b_again.log();
}

}  // namespace
}  // namespace madengine
