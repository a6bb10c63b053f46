// A restart publishes the persisted epoch only when it still describes the
// fabric (node/state_files.cpp, restore_epoch): fresh, for this SM port and
// subnet prefix, whole, and with every LID as guid2lid gives it. Every
// refusal is logged with its reason.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "node/state_files.hpp"
#include "sa/state/epoch_file.hpp"
#include "sa_fixture.hpp"
#include "sm/lids/guid2lid_file.hpp"
#include "sm/lids/lid_assign.hpp"

namespace madengine::node {
namespace {

constexpr sa::FabricIdentity kFabric{.sm_port_guid = 0x0002c90300000101ull, .subnet_prefix = 0xfe80000000000000ull};

class EpochRestore : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/epoch-restore-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cfg_.sa.journal = dir_ + "/sa.journal";
    cfg_.sm.guid2lid = dir_ + "/guid2lid";
    snap_ = sa::testing::build_snapshot(::madengine::testing::fat_tree3(2, 2, 2, 1, 3), 5).snap;
    for (const fabric::EndPort e : snap_->fabric.end_ports())
      map_[sm::end_port_guid(snap_->fabric, e)] = {snap_->fabric.lid_of(e), snap_->fabric.lid_of(e)};
    save_map();
    std::string err;
    ASSERT_TRUE(sa::write_epoch_file(epoch_file_path(cfg_), *snap_, kFabric, err)) << err;
    sink_ = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    previous_ = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("epoch-restore", sink_));
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_);
    std::filesystem::remove_all(dir_);
  }
  void save_map() {
    sm::Guid2LidError gerr;
    ASSERT_TRUE(sm::save_guid2lid(cfg_.sm.guid2lid, map_, gerr, kFabric)) << gerr.what;
  }
  std::shared_ptr<sa::Snapshot> restore(const sa::FabricIdentity& fabric = kFabric) { return restore_epoch(cfg_, fabric); }
  std::string log() const { return log_.str(); }

  std::string dir_;
  NodeConfig cfg_;
  std::shared_ptr<sa::Snapshot> snap_;
  sm::Guid2Lid map_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(EpochRestore, AFreshEpochOfThisFabricIsPublished) {
  const auto s = restore();
  ASSERT_NE(s, nullptr) << log();
  EXPECT_EQ(s->epoch, 5u);
  EXPECT_EQ(s->by_lid.size(), snap_->by_lid.size());
  EXPECT_NE(log().find("epoch 5 of the last run published"), std::string::npos) << log();
}

TEST_F(EpochRestore, AStaleEpochIsRefused) {
  std::filesystem::last_write_time(epoch_file_path(cfg_),
                                   std::filesystem::file_time_type::clock::now() - std::chrono::minutes(2));
  EXPECT_EQ(restore(), nullptr);
  EXPECT_NE(log().find("not published: stale (the master last vouched for it"), std::string::npos) << log();
}

TEST_F(EpochRestore, AnEpochOfAnotherSmPortOrSubnetPrefixIsRefused) {
  EXPECT_EQ(restore({.sm_port_guid = 0x0002c90300000999ull, .subnet_prefix = kFabric.subnet_prefix}), nullptr);
  EXPECT_EQ(restore({.sm_port_guid = kFabric.sm_port_guid, .subnet_prefix = 0xfec0000000000000ull}), nullptr);
  const std::string l = log();
  EXPECT_NE(l.find("not published: written for SM port 0x0002c90300000101, subnet prefix 0xfe80000000000000, this is "
                   "SM port 0x0002c90300000999"), std::string::npos) << l;
  EXPECT_NE(l.find("this is SM port 0x0002c90300000101, subnet prefix 0xfec0000000000000"), std::string::npos) << l;
}

TEST_F(EpochRestore, AnEpochWhoseLidsGuid2lidNoLongerGivesIsRefused) {
  auto it = map_.begin();
  it->second = {0x0bad, 0x0bad};
  save_map();
  EXPECT_EQ(restore(), nullptr);
  EXPECT_NE(log().find("in guid2lid (the subnet was numbered since)"), std::string::npos) << log();
  std::filesystem::remove(cfg_.sm.guid2lid);
  EXPECT_EQ(restore(), nullptr);
  EXPECT_NE(log().find("no guid2lid to vouch for its LIDs"), std::string::npos) << log();
}

TEST_F(EpochRestore, ADamagedEpochIsRefused) {
  const std::string path = epoch_file_path(cfg_);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(path) / 2));
  f.put('\x5a');
  f.close();
  EXPECT_EQ(restore(), nullptr);
  EXPECT_NE(log().find("not published: " + path + ": checksum mismatch"), std::string::npos) << log();
}

TEST_F(EpochRestore, NoneWithoutAJournalFolderOrWhenOff) {
  cfg_.sa.epoch_restore = false;
  EXPECT_EQ(epoch_file_path(cfg_), "");
  EXPECT_EQ(restore(), nullptr);
  cfg_.sa.epoch_restore = true;
  cfg_.sa.journal.clear();
  EXPECT_EQ(epoch_file_path(cfg_), "");
}

}  // namespace
}  // namespace madengine::node
