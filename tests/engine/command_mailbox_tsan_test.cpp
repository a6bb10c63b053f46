// CommandMailbox: commands posted from other threads run on the polling
// thread, in order, each once; a full mailbox refuses, a closed one drops
// what waits and refuses more; a throwing command does not stop the rest.
// Labels fast and tsan (the posters race the poller).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/command_mailbox.hpp"

namespace madengine {
namespace {

TEST(CommandMailbox, RunsPostedCommandsOnThePoller) {
  CommandMailbox box(nullptr);
  EXPECT_EQ(box.poll(0), 0u);
  EXPECT_EQ(box.next_deadline_ns(), -1);
  std::vector<int> order;  // touched by the poller only
  ASSERT_TRUE(box.post([&] { order.push_back(1); }));
  ASSERT_TRUE(box.post([] { throw std::runtime_error("a failing command"); }));
  ASSERT_TRUE(box.post([&] { order.push_back(2); }));
  EXPECT_EQ(box.next_deadline_ns(), 0);
  EXPECT_EQ(box.poll(0), 3u);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_EQ(box.ran(), 3u);
  EXPECT_EQ(box.poll(0), 0u);
}

TEST(CommandMailbox, BoundedAndClosable) {
  CommandMailbox box(nullptr);
  int ran = 0;
  for (std::size_t i = 0; i < CommandMailbox::kCommandsMax; ++i) ASSERT_TRUE(box.post([&] { ++ran; }));
  EXPECT_FALSE(box.post([&] { ++ran; }));
  box.close();
  EXPECT_FALSE(box.post([&] { ++ran; }));
  box.poll(0);
  EXPECT_EQ(ran, 0);
}

TEST(CommandMailbox, ManyPostersOnePoller) {
  CommandMailbox box(nullptr);
  constexpr int kPosters = 4, kEach = 2000;
  std::atomic<int> posted{0};
  int ran = 0;  // the poller's
  std::vector<std::thread> posters;
  for (int t = 0; t < kPosters; ++t)
    posters.emplace_back([&] {
      for (int i = 0; i < kEach;)
        if (box.post([&ran] { ++ran; })) {
          ++i;
          posted.fetch_add(1, std::memory_order_relaxed);
        } else {
          std::this_thread::yield();  // full: the poller catches up
        }
    });
  while (box.ran() < static_cast<std::uint64_t>(kPosters * kEach)) box.poll(0);
  for (auto& t : posters) t.join();
  EXPECT_EQ(ran, kPosters * kEach);
  EXPECT_EQ(posted.load(), kPosters * kEach);
}

}  // namespace
}  // namespace madengine
