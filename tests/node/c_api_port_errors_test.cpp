// The C ABI's port errors event (me_set_port_errors_callback) on a started
// sim node with [perfmgr] on (label sim): a port whose SymbolErrorCounter
// rises past its threshold is reported once through the callback, with the
// node name map's name, the change and the counter's bit; a rise below the
// threshold is not. Linked with madengine_node, not the .so, to raise the
// simulated counter on the thread that drives the fabric (InternalNode::post).
#include "madengine/madengine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "node/c_api.hpp"
#include "node/internal_node.hpp"
#include "sim/fabric.hpp"

using namespace madengine;

namespace {

struct Reports {
  std::mutex mu;
  std::vector<me_port_errors> seen;
  std::size_t size() {
    std::lock_guard l(mu);
    return seen.size();
  }
};

void on_port_errors(void* user, const me_port_errors* e) {
  auto* r = static_cast<Reports*>(user);
  std::lock_guard l(r->mu);
  r->seen.push_back(*e);
}

bool wait_for(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

TEST(CApiPortErrors, ThresholdCrossingIsReportedOnceThroughTheCallback) {
  // The leaf's GUID, for the name map, from a node that is only built.
  std::uint64_t leaf_guid = 0;
  const std::string fabric = "[transport]\nkind = \"sim\"\ngenerate = \"ft2:4\"\nsim_speed = 0.0\n"
                             "[engine]\ncores = 1\npin = false\n[log]\nlevel = \"warn\"\n";
  {
    me_node* probe = me_node_create(fabric.c_str(), nullptr, 0);
    ASSERT_NE(probe, nullptr) << me_last_error();
    ASSERT_EQ(me_node_start(probe), ME_OK) << me_last_error();
    sim::Fabric& f = *probe->node->fabric();
    leaf_guid = f.node_guid(f.find_node("leaf-0"));
    me_node_destroy(probe);
  }
  const auto map = std::filesystem::temp_directory_path() / fmt::format("madengine-c-port-errors-{}.map", ::getpid());
  std::ofstream(map) << fmt::format("0x{:016x} \"rack1-leaf\"\n", leaf_guid);
  const std::string toml = fabric + "[perfmgr]\nenabled = true\ninterval_ms = 200\nnode_name_map = \"" + map.string() +
                           "\"\n[perfmgr.thresholds]\nsymbol_errors = 10\n";
  me_node* node = me_node_create(toml.c_str(), nullptr, 0);
  ASSERT_NE(node, nullptr) << me_last_error();
  Reports reports;
  ASSERT_EQ(me_set_port_errors_callback(node, on_port_errors, &reports), ME_OK);
  ASSERT_EQ(me_node_start(node), ME_OK) << me_last_error();
  ASSERT_EQ(me_node_wait_subnet_up(node, 30'000), ME_OK);
  node::InternalNode& in = *node->node;
  const auto rounds = [&] { return in.perfmgr()->counters().rounds; };
  ASSERT_TRUE(wait_for([&] { return rounds() >= 1; }, std::chrono::seconds(30)));
  // The fabric is the driver thread's: the counters are raised there.
  sim::Fabric* f = in.fabric();
  const auto raise = [&](std::uint32_t n) {
    ASSERT_TRUE(in.post(0, [f, n] { f->add_port_counter(f->port(f->find_node("leaf-0"), 1), sim::PortCounter::kSymbolErrors, n); }));
  };
  raise(5);  // below the threshold: two rounds later, nothing reported
  std::uint64_t r0 = rounds();
  ASSERT_TRUE(wait_for([&] { return rounds() >= r0 + 2; }, std::chrono::seconds(30)));
  EXPECT_EQ(reports.size(), 0u);
  raise(25);
  r0 = rounds();
  ASSERT_TRUE(wait_for([&] { return reports.size() >= 1; }, std::chrono::seconds(30)));
  ASSERT_TRUE(wait_for([&] { return rounds() >= r0 + 3; }, std::chrono::seconds(30)));
  me_node_stop(node);
  ASSERT_EQ(reports.size(), 1u);  // once for the episode
  const me_port_errors e = reports.seen[0];
  EXPECT_EQ(e.node_guid, leaf_guid);
  EXPECT_EQ(e.port_num, 1);
  EXPECT_EQ(e.is_switch, 1);
  EXPECT_STREQ(e.name, "rack1-leaf");
  EXPECT_EQ(e.over, ME_PERF_SYMBOL_ERRORS);
  EXPECT_EQ(e.symbol_errors, 25u);
  EXPECT_EQ(e.link_downed, 0u);
  EXPECT_GT(e.interval_s, 0.0);
  me_node_destroy(node);
  std::filesystem::remove(map);
}

}  // namespace
