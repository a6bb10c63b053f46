// The daemon on the sim transport stops cleanly after its device is gone
// (label sim): the SM's node is killed in the simulator (its endpoint's
// device with it), the life cycle reports the loss, and stop plus
// destruction return, the SA journal written at shutdown.
#include <gtest/gtest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>

#include "madengine/node/node.hpp"
#include "node/internal_node.hpp"
#include "sim/fabric.hpp"

namespace madengine::node {
namespace {

TEST(DaemonStop, DeviceLostThenStopWritesTheJournalAndReturns) {
  const auto dir = std::filesystem::temp_directory_path() / ("madengine-daemon-stop-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  spdlog::default_logger()->sinks().push_back(log);
  const auto logged = [&](const std::string& what) {
    for (const auto& line : log->last_formatted())
      if (line.find(what) != std::string::npos) return true;
    return false;
  };
  NodeConfig cfg;
  cfg.transport.kind = TransportKind::kSim;
  cfg.transport.generate = "ft2:8";
  cfg.engine.cores = 1;
  cfg.engine.pin = false;
  cfg.sm.guid2lid = (dir / "guid2lid").string();
  cfg.sa.journal = (dir / "sa-state.journal").string();
  {
    std::optional<InternalNode> d;
    d.emplace(cfg);
    ASSERT_TRUE(d->wait_subnet_up(std::chrono::milliseconds(60'000)));
    sim::Fabric& f = *d->fabric();
    const std::uint32_t sm_node = f.find_node(cfg.transport.sim_node.empty() ? "host-0-0" : cfg.transport.sim_node);
    f.kill_node(sm_node);
    for (int i = 0; i < 100'000 && !logged("is lost"); ++i) d->pump(kNanosPerMilli);
    EXPECT_TRUE(logged("is lost"));
    d->write_journal_now();
    d->stop();
    d.reset();  // destruction: SM, SA, pools, transport
  }
  EXPECT_TRUE(logged("written at shutdown"));
  EXPECT_TRUE(std::filesystem::exists(dir / "sa-state.journal"));
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), log), sinks.end());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace madengine::node
