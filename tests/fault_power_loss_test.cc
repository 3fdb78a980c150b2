// Power loss of the MDS through a real mount (docs/durability.md). The MDS answers namespace
// changes once they are in its WAL and syncs within its commit interval; a machine crash of
// the MDS loses the unsynced tail of the WAL. Clients keep every change the MDS answered and
// has not reported committed, and replay it after the restart under its original inode
// number and layout, so an application that kept running sees nothing lost.
//
// The MDS runs with --simulate-power-loss: RocksDB over a file system that knows which bytes
// were synced, and SIGUSR2 drops every unsynced byte and kills the MDS at once, as a machine
// losing power would (kill -9 keeps the page cache, so it cannot test this).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "client/entry_batches.h"
#include "client/metadata.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The MDS commits every 30 s here, so nothing the test does is synced unless it asks.
ClusterOptions PowerLossOptions(const std::string& tag) {
  ClusterOptions o;
  o.tag = tag;
  o.num_oss = 1;
  o.num_mounts = 2;
  o.mds_args = {"--simulate-power-loss", "--commit-interval-ms", "10000"};
  return o;
}

uint64_t Ino(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

TEST(FaultPowerLossTest, ClientsReplayWhatTheMdsLost) {
  if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
  Cluster c(PowerLossOptions("powerloss"));
  ASSERT_TRUE(c.Start().ok());
  const std::string m0 = c.mount_point(0);
  ASSERT_EQ(mkdir((m0 + "/d").c_str(), 0755), 0) << strerror(errno);
  // Sync everything so far (the directory): the rest is the unsynced tail.
  {
    int fd = open((m0 + "/d").c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(fsync(fd), 0) << strerror(errno);
    close(fd);
  }

  constexpr int kFiles = 40;
  std::map<std::string, std::vector<uint8_t>> want;  // name in d -> content
  std::map<std::string, uint64_t> inos;
  for (int i = 0; i < kFiles; ++i) {
    const std::string name = "f" + std::to_string(i);
    std::vector<uint8_t> data = Pattern(4096 + 1000 * i, i);
    ASSERT_EQ(WriteFile(m0 + "/d/" + name, data), 0) << name;
    want[name] = std::move(data);
    inos[name] = Ino(m0 + "/d/" + name);
  }
  // Renames, unlinks, a directory, a symlink, a hard link and an xattr, all unsynced.
  for (int i = 0; i < 5; ++i) {
    const std::string from = "f" + std::to_string(i), to = "r" + std::to_string(i);
    ASSERT_EQ(rename((m0 + "/d/" + from).c_str(), (m0 + "/d/" + to).c_str()), 0);
    want[to] = std::move(want[from]);
    inos[to] = inos[from];
    want.erase(from);
  }
  for (int i = 5; i < 10; ++i) {
    ASSERT_EQ(unlink((m0 + "/d/f" + std::to_string(i)).c_str()), 0);
    want.erase("f" + std::to_string(i));
  }
  ASSERT_EQ(mkdir((m0 + "/d/sub").c_str(), 0750), 0);
  ASSERT_EQ(symlink("f20", (m0 + "/d/link").c_str()), 0);
  ASSERT_EQ(link((m0 + "/d/f21").c_str(), (m0 + "/d/hard").c_str()), 0);
  want["hard"] = want["f21"];
  ASSERT_EQ(setxattr((m0 + "/d/f22").c_str(), "user.tag", "v1", 2, 0), 0);
  const uint64_t sub_ino = Ino(m0 + "/d/sub");

  // The power goes. The MDS drops every unsynced WAL byte and dies.
  ASSERT_TRUE(c.KillMds(SIGUSR2).ok());
  const std::string log = Slurp(c.mds_log());
  ASSERT_NE(log.find("simulated power loss"), std::string::npos) << log.substr(log.size() - 2000);
  ASSERT_EQ(log.find("simulated power loss: 0 unsynced"), std::string::npos)
      << "nothing was unsynced: the test proves nothing";
  ASSERT_TRUE(c.StartMds().ok());
  ASSERT_TRUE(c.WaitForOsts().ok());

  // Mount 0's next MDS request reconnects and replays first. (A name in d/ would not ask:
  // mount 0 made d/ and knows every name in it under its lease, client/fuse/lease_cache.h.)
  struct stat st{};
  EXPECT_NE(stat((m0 + "/not-there").c_str(), &st), 0);
  const std::string fuse_log = Slurp(c.fuse_log(0));
  EXPECT_NE(fuse_log.find("replaying"), std::string::npos) << "mount 0 never replayed";

  // A fresh mount sees the MDS's state, not mount 0's kernel caches.
  ASSERT_TRUE(c.Mount(1).ok());
  const std::string m1 = c.mount_point(1);
  for (const auto& [name, data] : want) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(m1 + "/d/" + name, &got), 0) << name << " lost";
    EXPECT_EQ(FirstDiff(got, data), -1) << name;
    if (inos.count(name)) EXPECT_EQ(Ino(m1 + "/d/" + name), inos[name]) << name;
  }
  for (int i = 0; i < 10; ++i) {
    EXPECT_NE(stat((m1 + "/d/f" + std::to_string(i)).c_str(), &st), 0) << "f" << i;
  }
  ASSERT_EQ(stat((m1 + "/d/sub").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(st.st_ino, sub_ino);
  char target[64] = {};
  ASSERT_EQ(readlink((m1 + "/d/link").c_str(), target, sizeof(target) - 1), 3);
  EXPECT_STREQ(target, "f20");
  ASSERT_EQ(stat((m1 + "/d/f21").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 2u);
  char v[8] = {};
  EXPECT_EQ(getxattr((m1 + "/d/f22").c_str(), "user.tag", v, sizeof(v)), 2);
  EXPECT_STREQ(v, "v1");

  // New files come after the replayed ones and do not collide with them.
  ASSERT_EQ(WriteFile(m1 + "/d/after", Pattern(100, 99)), 0);
  EXPECT_NE(Ino(m1 + "/d/after"), 0u);
  for (const auto& [name, ino] : inos) {
    if (want.count(name)) EXPECT_NE(Ino(m1 + "/d/after"), ino) << name;
  }
}

// Creates that libstria's threads made at once went to the MDS in batches
// (client/entry_batches.h): a batch lost with the power is replayed with what it created,
// each file under its first inode, and what it refused stays refused.
TEST(FaultPowerLossTest, BatchedCreatesAreReplayed) {
  ClusterOptions o = PowerLossOptions("powerloss3");
  o.mount = false;
  Cluster c(o);
  ASSERT_TRUE(c.Start().ok());
  auto connected = ConnectClient(c);
  ASSERT_TRUE(connected.ok()) << connected.status().ToString();
  std::unique_ptr<client::Client> cl = std::move(*connected);
  client::Metadata md(cl.get());
  const proto::Credentials cred = client::ProcessCredentials();
  auto create = [&](uint64_t parent, const std::string& name, uint32_t mode) {
    client::Metadata::CreateArgs a;
    a.parent = parent;
    a.name = name;
    a.mode = mode;
    return md.Create(cred, a);
  };
  auto dir = create(1, "b", S_IFDIR | 0755);
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const uint64_t d = dir->attr().ino();
  std::map<std::string, uint64_t> taken;  // synced before the power cut
  for (int i = 0; i < 4; ++i) {
    auto x = create(d, "x" + std::to_string(i), S_IFREG | 0644);
    ASSERT_TRUE(x.ok()) << x.status().ToString();
    taken["x" + std::to_string(i)] = x->attr().ino();
  }
  ASSERT_TRUE(md.Sync(cred, d).ok());

  // 16 threads create at once, unsynced; each also tries a name that exists.
  constexpr int kThreads = 16, kEach = 30;
  std::vector<std::map<std::string, uint64_t>> made(kThreads);
  std::vector<int> refused(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string name = "f" + std::to_string(t) + "_" + std::to_string(i);
        auto r = create(d, name, (i % 10 == 9 ? S_IFDIR | 0700 : S_IFREG | 0600));
        if (r.ok()) made[t][name] = r->attr().ino();
        if (i % 10 == 0 && create(d, "x" + std::to_string(t % 4), S_IFREG | 0644).status().code() ==
                               Code::kExist) {
          ++refused[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(made[t].size(), static_cast<size_t>(kEach)) << "thread " << t;
    EXPECT_EQ(refused[t], kEach / 10) << "thread " << t;
  }
  const client::CreateBatches::Counters counters = cl->create_batches().counters();
  EXPECT_GT(counters.batched, 0u) << "no create went in a batch: the test proves nothing";
  EXPECT_LT(counters.requests, static_cast<uint64_t>(kThreads * (kEach + kEach / 10)));

  // The power goes; the MDS comes back without the unsynced creates.
  ASSERT_TRUE(c.KillMds(SIGUSR2).ok());
  const std::string log = Slurp(c.mds_log());
  ASSERT_EQ(log.find("simulated power loss: 0 unsynced"), std::string::npos)
      << "nothing was unsynced: the test proves nothing";
  ASSERT_TRUE(c.StartMds().ok());
  ASSERT_TRUE(c.WaitForOsts().ok());
  // The client's next request reconnects and replays first.
  ASSERT_TRUE(md.Getattr(cred, d).ok());

  // Another client sees every create under its first inode, and the refused ones unchanged.
  auto other = ConnectClient(c);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  client::Metadata md2(other->get());
  for (int t = 0; t < kThreads; ++t) {
    for (const auto& [name, ino] : made[t]) {
      auto r = md2.Lookup(cred, d, name);
      ASSERT_TRUE(r.ok()) << name << " lost: " << r.status().ToString();
      EXPECT_EQ(r->attr().ino(), ino) << name;
    }
  }
  for (const auto& [name, ino] : taken) {
    auto r = md2.Lookup(cred, d, name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(r->attr().ino(), ino) << name;
  }
  auto attr = md2.Getattr(cred, d);
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(attr->attr().nlink(), 2u + kThreads * (kEach / 10)) << "subdirectories";
}

// When the client dies with the MDS nobody replays: what was fsync'ed is there, and the
// filesystem is consistent (every name leads to an inode), as on a local file system.
TEST(FaultPowerLossTest, FsyncedSurvivesWhenTheClientDiesToo) {
  if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
  Cluster c(PowerLossOptions("powerloss2"));
  ASSERT_TRUE(c.Start().ok());
  const std::string m0 = c.mount_point(0);
  ASSERT_EQ(mkdir((m0 + "/d").c_str(), 0755), 0);
  const std::vector<uint8_t> durable = Pattern(300000, 7);
  ASSERT_EQ(WriteFile(m0 + "/d/durable", durable, 1 << 16, /*fsync_it=*/true), 0);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(WriteFile(m0 + "/d/lazy" + std::to_string(i), Pattern(1000, i)), 0);
  }
  // The client dies first (nothing can replay), then the MDS loses power.
  ASSERT_EQ(kill(c.fuse_pid(0), SIGKILL), 0);
  ASSERT_TRUE(c.KillMds(SIGUSR2).ok());
  ASSERT_TRUE(c.StartMds().ok());
  ASSERT_TRUE(c.WaitForOsts().ok());
  ASSERT_TRUE(c.Mount(1).ok());
  const std::string m1 = c.mount_point(1);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(m1 + "/d/durable", &got), 0);
  EXPECT_EQ(FirstDiff(got, durable), -1);
  int lost = 0;
  for (int i = 0; i < 20; ++i) {
    struct stat st{};
    if (stat((m1 + "/d/lazy" + std::to_string(i)).c_str(), &st) != 0) ++lost;
  }
  EXPECT_GT(lost, 0) << "no unsynced create was lost: the power cut did not cut";
}

}  // namespace
}  // namespace stria::testing
