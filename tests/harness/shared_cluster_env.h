// SharedClusterEnv: one Cluster (and a libstria Client connected to it) shared by every test
// of one test executable, started before the first test and stopped after the last.
//
//   Cluster* g_cluster = nullptr;
//   client::Client* g_client = nullptr;
//   const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
//       new SharedClusterEnv(options, &g_cluster, &g_client));
//
// Where the options ask for a mount and /dev/fuse is missing, nothing is started and the
// globals stay null (tests then skip). Thread-safety: gtest calls SetUp/TearDown on its
// main thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>

#include <memory>
#include <string>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {

class SharedClusterEnv : public ::testing::Environment {
 public:
  SharedClusterEnv(ClusterOptions options, Cluster** cluster, client::Client** client)
      : options_(std::move(options)), cluster_out_(cluster), client_out_(client) {}

  void SetUp() override {
    if (options_.mount && !HaveFuse()) return;
    Status st = StartWithClient(options_, &cluster_, &client_);
    ASSERT_TRUE(st.ok()) << st.ToString();
    *cluster_out_ = cluster_.get();
    *client_out_ = client_.get();
  }

  void TearDown() override {
    *cluster_out_ = nullptr;
    *client_out_ = nullptr;
    client_.reset();
    cluster_.reset();
  }

 private:
  const ClusterOptions options_;
  Cluster** const cluster_out_;
  client::Client** const client_out_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<client::Client> client_;
};

// A test on mount point 0 of a shared cluster: skips when there is no FUSE or the cluster
// did not start. P("a/b") is that path under the mount.
class MountedClusterTest : public ::testing::Test {
 protected:
  explicit MountedClusterTest(Cluster* const* cluster, client::Client* const* client)
      : cluster_(cluster), client_(client) {}

  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    if (*client_ == nullptr) GTEST_SKIP() << "cluster did not start";
    mnt_ = (*cluster_)->mount_point(0);
  }
  std::string P(const std::string& rel) const { return mnt_ + "/" + rel; }

  std::string mnt_;

 protected:
  Cluster* const* cluster_;
  client::Client* const* client_;
};

// A test on mount points 0 and 1 of a shared cluster started with num_mounts = 2: two
// clients of one filesystem (two processes, two kernel caches). Q("a/b") is the path on
// mount 1, which is mounted on first use.
class TwoMountTest : public MountedClusterTest {
 protected:
  using MountedClusterTest::MountedClusterTest;

  void SetUp() override {
    MountedClusterTest::SetUp();
    if (IsSkipped()) return;
    if (!(*cluster_)->Mounted(1)) {
      Status st = (*cluster_)->Mount(1);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    mnt1_ = (*cluster_)->mount_point(1);
  }
  // The same path on mount 1.
  std::string Q(const std::string& rel) const { return mnt1_ + "/" + rel; }

  static bool Exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
  }
  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(lstat(path.c_str(), &st), 0) << path << ": " << strerror(errno);
    return st;
  }
  // Seconds until cond() holds (polling every 20 ms), or -1 after `limit_s`.
  static double SecondsUntil(const std::function<bool()>& cond, double limit_s = 3.0) {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (cond()) return s;
      if (s > limit_s) return -1;
      usleep(20'000);
    }
  }

  std::string mnt1_;
};

}  // namespace stria::testing
