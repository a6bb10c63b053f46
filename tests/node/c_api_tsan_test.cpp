// libmadengine's C ABI from several threads at once (labels sim and tsan:
// the TSan build runs it): every function of madengine.h is called
// concurrently against started sim nodes (setters and starts racing before
// the first start, queries and fabric readers racing stops and restarts, a
// wait racing the destroy), and each call's answer is one its contract
// allows. Under TSan any unguarded read of the node is a report.
#include "madengine/madengine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

const std::string kStar = std::string("[transport]\nkind = \"sim\"\ntopology = \"") + MADENGINE_TEST_TOPOLOGY_DIR +
                          "/star3.topo\"\nsim_node = \"H1\"\nsim_speed = 0.0\n[engine]\ncores = 1\npin = false\n";

constexpr int kThreads = 4;

// Star routing through every LFT and fabric reader the callback may use.
int route(void*, const me_fabric* f, me_lfts* lfts) {
  for (std::uint32_t n = 0; n < me_fabric_node_count(f); ++n) {
    me_node_info ni;
    if (me_fabric_node(f, n, &ni) != ME_OK || ni.type != ME_NODE_SWITCH) continue;
    if (me_lft_set(lfts, n, ni.lid, 0) != ME_OK) return -1;
    for (std::uint8_t p = 1; p <= ni.num_ports; ++p) {
      me_port_info sp, cp;
      if (me_fabric_port(f, n, p, &sp) != ME_OK || sp.peer_node == ME_NO_NODE) continue;
      if (me_fabric_port(f, sp.peer_node, sp.peer_port, &cp) != ME_OK || cp.lid == 0) continue;
      if (me_lft_set(lfts, n, cp.lid, p) != ME_OK) return -1;
    }
    if (me_lft_get(lfts, n, ni.lid) != 0) return -1;
  }
  return 0;
}

// Never routes: the subnet of a node with this callback never comes up.
int refuse(void*, const me_fabric*, me_lfts* lfts) {
  me_lfts_error(lfts, "refused on purpose");
  return 1;
}

struct Counts {
  std::atomic<int> subnet_up{0}, sm_state{0}, notices{0}, port_changes{0}, mads{0};
};
void on_up(void* u, std::uint64_t) { ++static_cast<Counts*>(u)->subnet_up; }
void on_state(void* u, std::int32_t, std::int32_t) { ++static_cast<Counts*>(u)->sm_state; }
void on_notice(void* u, const me_notice*) { ++static_cast<Counts*>(u)->notices; }
void on_port(void* u, const me_port_change*) { ++static_cast<Counts*>(u)->port_changes; }
int on_mad(void* u, const me_mad*, me_mad*) {
  ++static_cast<Counts*>(u)->mads;
  return 0;
}

// Every reader of a node and of the epoch it hands out; each answer is one
// the contract allows whatever the node is doing (starting, stopping, up).
void read_everything(me_node* node, std::atomic<int>& bad) {
  me_node_status st;
  const int rs = me_node_get_status(node, &st);
  if (rs != ME_OK) ++bad;
  me_path p;
  const int rp = me_path_query(node, 1, 2, &p);
  if (rp != ME_OK && rp != ME_ERR_NO_SUBNET && rp != ME_ERR_NO_PATH) ++bad;
  if (rp != ME_OK && std::strlen(me_last_error()) == 0) ++bad;
  if (me_fabric* f = me_node_fabric(node)) {
    if (me_fabric_epoch(f) == 0) ++bad;
    const std::uint32_t nodes = me_fabric_node_count(f);
    (void)me_fabric_port_count(f);
    (void)me_fabric_link_count(f);
    const std::uint16_t top = me_fabric_top_lid(f);
    for (std::uint32_t n = 0; n < nodes; ++n) {
      me_node_info ni;
      if (me_fabric_node(f, n, &ni) != ME_OK) ++bad;
      for (std::uint8_t port = 1; port <= ni.num_ports; ++port) {
        me_port_info pi;
        me_port_link pl;
        if (me_fabric_port(f, n, port, &pi) != ME_OK) ++bad;
        (void)me_fabric_port_link(f, n, port, &pl);
      }
      for (std::uint16_t lid = 1; lid <= top; ++lid) (void)me_fabric_lft_port(f, n, lid);
    }
    for (std::uint16_t lid = 1; lid <= top; ++lid) {
      std::uint32_t owner = 0;
      std::uint8_t port = 0;
      (void)me_fabric_lid_owner(f, lid, &owner, &port);
    }
    me_fabric_release(f);
  }
  (void)me_strerror(rp);
  (void)me_version();
}

TEST(CApiThreads, EveryFunctionFromSeveralThreadsAtOnce) {
  char err[256];
  me_node* node = me_node_create(kStar.c_str(), err, sizeof err);
  ASSERT_NE(node, nullptr) << err;
  Counts counts;
  std::atomic<int> bad{0};

  // Before the first start: the setters, queries of a node not started, and
  // two starts race; exactly one start wins.
  {
    std::atomic<int> started{0}, refused{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        if (t == 0) {
          if (me_set_routing_callback(node, route, nullptr) != ME_OK) ++bad;
          if (me_set_subnet_up_callback(node, on_up, &counts) != ME_OK) ++bad;
        } else if (t == 1) {
          if (me_set_sm_state_callback(node, on_state, &counts) != ME_OK) ++bad;
          if (me_set_notice_callback(node, on_notice, &counts) != ME_OK) ++bad;
          if (me_set_port_change_callback(node, on_port, &counts) != ME_OK) ++bad;
          if (me_register_mad_handler(node, 0x09, on_mad, &counts) != ME_OK) ++bad;
        }
        for (int i = 0; i < 20; ++i) read_everything(node, bad);
      });
    for (auto& t : ts) t.join();
    ts.clear();
    for (int t = 0; t < 2; ++t)
      ts.emplace_back([&] {
        const int rc = me_node_start(node);
        if (rc == ME_OK) ++started;
        else if (rc == ME_ERR_STATE) ++refused;
      });
    for (auto& t : ts) t.join();
    EXPECT_EQ(started.load(), 1);
    EXPECT_EQ(refused.load(), 1);
    EXPECT_EQ(me_set_routing_callback(node, route, nullptr), ME_ERR_STATE);  // after the start
  }

  // Running: readers and waiters on every thread while one thread stops and
  // restarts the node.
  {
    std::atomic<bool> done{false};
    std::atomic<int> waits_ok{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&] {
        while (!done.load()) {
          const int w = me_node_wait_subnet_up(node, 50);
          if (w == ME_OK) ++waits_ok;
          else if (w != ME_ERR_TIMEOUT && w != ME_ERR_STATE) ++bad;
          read_everything(node, bad);
        }
      });
    std::thread life([&] {
      for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        if (me_node_stop(node) != ME_OK) ++bad;
        if (me_node_stop(node) != ME_OK) ++bad;  // idempotent
        if (me_node_start(node) != ME_OK) ++bad;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      done = true;
    });
    life.join();
    for (auto& t : ts) t.join();
    EXPECT_GT(waits_ok.load(), 0);
  }
  EXPECT_EQ(me_node_wait_subnet_up(node, 60000), ME_OK) << me_last_error();
  EXPECT_EQ(me_node_stop(node), ME_OK);
  EXPECT_GE(counts.subnet_up.load(), 1);
  EXPECT_GE(counts.sm_state.load(), 1);
  me_node_destroy(node);
  EXPECT_EQ(bad.load(), 0);
}

// A thread waiting for a subnet that never comes up (routing refuses every
// pass) while another destroys the node: the wait ends at once with
// ME_ERR_STATE, the destroy waits for it, nothing is used after it is freed.
TEST(CApiThreads, DestroyEndsAWaitInProgress) {
  me_node* node = me_node_create(kStar.c_str(), nullptr, 0);
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(me_set_routing_callback(node, refuse, nullptr), ME_OK);
  ASSERT_EQ(me_node_start(node), ME_OK) << me_last_error();
  std::atomic<int> waited{1};
  std::atomic<bool> waiting{false};
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  std::thread waiter([&] {
    waiting = true;
    waited = me_node_wait_subnet_up(node, 60000);
  });
  while (!waiting.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = Clock::now();
  me_node_destroy(node);
  const auto took = Clock::now() - t0;
  waiter.join();
  EXPECT_EQ(waited.load(), ME_ERR_STATE);
  EXPECT_LT(took, std::chrono::seconds(30));  // a hang guard: the wait ends within one 50 ms slice
}

// me_node_stop is bounded: an event callback that does not return for 3 s
// makes it return ME_ERR_TIMEOUT after ME_NODE_STOP_WAIT_MS; the node is
// still stopping (a start is refused), a second stop waits for the rest,
// and the destroy is clean.
void slow_subnet_up(void* u, std::uint64_t) {
  ++*static_cast<std::atomic<int>*>(u);
  std::this_thread::sleep_for(std::chrono::seconds(3));
}

TEST(CApiThreads, StopIsBoundedWhenACallbackDoesNotReturn) {
  me_node* node = me_node_create(kStar.c_str(), nullptr, 0);
  ASSERT_NE(node, nullptr);
  std::atomic<int> in_callback{0};
  ASSERT_EQ(me_set_subnet_up_callback(node, slow_subnet_up, &in_callback), ME_OK);
  ASSERT_EQ(me_node_start(node), ME_OK) << me_last_error();
  ASSERT_EQ(me_node_wait_subnet_up(node, 60000), ME_OK);
  while (in_callback.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto t0 = Clock::now();
  EXPECT_EQ(me_node_stop(node), ME_ERR_TIMEOUT);
  const auto took = Clock::now() - t0;
  EXPECT_NE(std::string(me_last_error()).find("still stopping"), std::string::npos) << me_last_error();
  EXPECT_GE(took, std::chrono::milliseconds(ME_NODE_STOP_WAIT_MS));
  EXPECT_LT(took, std::chrono::milliseconds(2900));  // returned before the callback did
  EXPECT_EQ(me_node_start(node), ME_ERR_STATE);
  me_node_status st;
  EXPECT_EQ(me_node_get_status(node, &st), ME_OK);  // queries still answer meanwhile
  int rc = ME_ERR_TIMEOUT;
  for (int i = 0; i < 10 && rc == ME_ERR_TIMEOUT; ++i) rc = me_node_stop(node);
  EXPECT_EQ(rc, ME_OK);
  me_node_destroy(node);
}

}  // namespace
