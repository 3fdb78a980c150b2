// The Python package (python/stria) against a real cluster and mount: starts the daemons
// and mounts the filesystem, then runs pytest on python/tests with Debian's python3 (which
// has python3-torch, python3-numpy, python3-fsspec and python3-pytest), pointing the
// package at this build's libstria.so.
#include <signal.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

TEST(PythonPackage, PytestSuitePassesAgainstARealCluster) {
  if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse";
  ClusterOptions o;
  o.tag = "python";
  Cluster cluster(o);
  Status st = cluster.Start();
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::string pids = std::to_string(cluster.mds_pid());
  for (int i = 0; i < o.num_oss; ++i) pids += "," + std::to_string(cluster.oss_pid(i));
  setenv("STRIA_DEVICE", cluster.device().c_str(), 1);
  setenv("STRIA_TEST_MOUNT", cluster.mount_point(0).c_str(), 1);
  setenv("STRIA_TEST_PIDS", pids.c_str(), 1);
  setenv("STRIA_LIBRARY", STRIA_LIBRARY_PATH, 1);
  setenv("PYTHONPATH", STRIA_PYTHON_DIR ":" STRIA_PYTHON_DIR "/tests", 1);
  setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
  CommandResult r = RunCommand({STRIA_PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                                "--durations=5",
                                "-rs", STRIA_PYTHON_DIR "/tests"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Every test ran: none skipped for a missing module or cluster.
  EXPECT_EQ(r.out.find("skipped"), std::string::npos) << r.out;
  std::printf("%s", r.out.c_str());
}

}  // namespace
}  // namespace stria::testing
