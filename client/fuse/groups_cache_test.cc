#include "client/fuse/groups_cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace stria::client::fuse {
namespace {

// A loader that counts its calls and returns `groups`.
struct CountingLoader {
  std::vector<gid_t> groups;
  int calls = 0;
  bool fail = false;
  GroupsCache::Loader fn() {
    return [this](std::vector<gid_t>* out) {
      ++calls;
      if (fail) return false;
      *out = groups;
      return true;
    };
  }
};

TEST(GroupsCache, ReusesGroupsOfTheSameProcessWithinTheTtl) {
  GroupsCache cache(std::chrono::milliseconds(10'000));
  CountingLoader l{{10, 20}};
  std::vector<gid_t> g;
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  EXPECT_EQ(l.calls, 1);
  EXPECT_EQ(g, (std::vector<gid_t>{10, 20}));
}

TEST(GroupsCache, AnotherPidUidOrGidIsLoadedAgain) {
  GroupsCache cache(std::chrono::milliseconds(10'000));
  CountingLoader l{{10}};
  std::vector<gid_t> g;
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  ASSERT_TRUE(cache.Get(101, 1000, 1000, l.fn(), &g));  // another process
  ASSERT_TRUE(cache.Get(100, 0, 1000, l.fn(), &g));     // same pid after setuid
  ASSERT_TRUE(cache.Get(100, 1000, 0, l.fn(), &g));     // same pid after setgid
  EXPECT_EQ(l.calls, 4);
}

TEST(GroupsCache, ExpiredEntriesAreLoadedAgain) {
  GroupsCache cache(std::chrono::milliseconds(20));
  CountingLoader l{{10}};
  std::vector<gid_t> g;
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  l.groups = {30};  // the process changed its groups
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  EXPECT_EQ(l.calls, 2);
  EXPECT_EQ(g, (std::vector<gid_t>{30}));
}

TEST(GroupsCache, ZeroTtlAlwaysLoads) {
  GroupsCache cache(std::chrono::milliseconds(0));
  CountingLoader l{{10}};
  std::vector<gid_t> g;
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  ASSERT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  EXPECT_EQ(l.calls, 2);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(GroupsCache, AFailedLoadIsNotCached) {
  GroupsCache cache(std::chrono::milliseconds(10'000));
  CountingLoader l{{10}};
  l.fail = true;
  std::vector<gid_t> g;
  EXPECT_FALSE(cache.Get(100, 1000, 1000, l.fn(), &g));
  l.fail = false;
  EXPECT_TRUE(cache.Get(100, 1000, 1000, l.fn(), &g));
  EXPECT_EQ(l.calls, 2);
}

TEST(GroupsCache, StaysWithinItsBound) {
  GroupsCache cache(std::chrono::milliseconds(10'000), /*max_entries=*/8);
  CountingLoader l{{10}};
  std::vector<gid_t> g;
  for (pid_t p = 1; p <= 100; ++p) ASSERT_TRUE(cache.Get(p, 0, 0, l.fn(), &g));
  EXPECT_LE(cache.size(), 8u);
}

}  // namespace
}  // namespace stria::client::fuse
