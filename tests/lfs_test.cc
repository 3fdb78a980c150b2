// The `lfs` binary against a real mount: setstripe on a directory, the objects a file written
// there gets (checked from lfs getstripe's obdidx rows and the OST objects' own sizes),
// getstripe's output shape, the errors of bad invocations, and lfs df.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions LfsEnvOptions() {
  ClusterOptions o;
  o.tag = "lfs";
  o.fsname = "lfsfs";
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(LfsEnvOptions(), &g_cluster, &g_client));

struct ObjRow {
  uint32_t obdidx;
  uint64_t objid;
  uint64_t group;
};

// The rows under getstripe's "obdidx objid objid group" header.
std::vector<ObjRow> ParseObjRows(const std::string& out) {
  std::vector<ObjRow> rows;
  std::istringstream in(out);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.find("obdidx") != std::string::npos) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.size() < 2 || tok[0].find_first_not_of("0123456789") != std::string::npos ||
        tok[1].find_first_not_of("0123456789") != std::string::npos) {
      in_table = false;
      continue;
    }
    ObjRow r{static_cast<uint32_t>(std::stoul(tok[0])), std::stoull(tok[1]), 0};
    if (tok.size() >= 4 && tok[3].find_first_not_of("0123456789") == std::string::npos) {
      r.group = std::stoull(tok[3]);
    }
    rows.push_back(r);
  }
  return rows;
}

class LfsTest : public MountedClusterTest {
 protected:
  LfsTest() : MountedClusterTest(&g_cluster, &g_client) {}

  static CommandResult Lfs(std::vector<std::string> args) {
    args.insert(args.begin(), BinPath("lfs"));
    CommandResult r = RunCommand(args);
    std::string cmd;
    for (auto& a : args) cmd += a + " ";
    ::testing::Test::RecordProperty("last_lfs", cmd);
    return r;
  }
};

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

TEST_F(LfsTest, SetstripeDirectoryThenFileHasFourObjectsOfFourMiB) {
  ASSERT_EQ(mkdir(P("wide").c_str(), 0755), 0);
  CommandResult r = Lfs({"setstripe", "-c", "4", "-S", "1M", P("wide")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);

  r = Lfs({"getstripe", P("wide")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("stripe_count:\\s+4"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("stripe_size:\\s+1048576"))) << r.out;

  const size_t kSize = 16u << 20;
  auto data = Pattern(kSize, 16);
  ASSERT_EQ(WriteFile(P("wide/file"), data, 1 << 20), 0);

  r = Lfs({"getstripe", P("wide/file")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find(P("wide/file")), std::string::npos) << "getstripe names the file\n"
                                                           << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_stripe_count:\\s+4\\b"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_stripe_size:\\s+1048576\\b"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_pattern:\\s+(raid0|1)\\b"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_layout_gen:\\s+\\d+"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_stripe_offset:\\s+\\d+"))) << r.out;

  std::vector<ObjRow> rows = ParseObjRows(r.out);
  ASSERT_EQ(rows.size(), 4u) << "obdidx rows:\n" << r.out;
  std::set<uint32_t> osts;
  for (const ObjRow& row : rows) {
    EXPECT_LT(row.obdidx, 4u);
    osts.insert(row.obdidx);
    proto::StripeObject o;
    o.set_ost_idx(row.obdidx);
    o.set_object_id(row.objid);
    o.set_group(row.group);
    auto a = ObjectAttr(*g_client, o);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_TRUE(a->exists());
    EXPECT_EQ(a->size(), 4u << 20) << "object " << row.objid << " on OST " << row.obdidx;
  }
  EXPECT_EQ(osts.size(), 4u) << "four stripes on four different OSTs";
  // The rows agree with the layout the MDS holds, in stripe order.
  auto e = Resolve(*g_client, "/wide/file");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->layout().objects_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(e->layout().objects(i).ost_idx(), rows[i].obdidx);
    EXPECT_EQ(e->layout().objects(i).object_id(), rows[i].objid);
  }
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("wide/file"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);

  // Single-field queries, as scripts use them.
  r = Lfs({"getstripe", "-c", P("wide/file")});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*4\\s*$"))) << r.out;
  r = Lfs({"getstripe", "-S", P("wide/file")});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*1048576\\s*$"))) << r.out;
}

TEST_F(LfsTest, SetstripeOnNewFileCreatesItWithThatLayout) {
  ASSERT_EQ(mkdir(P("nf").c_str(), 0755), 0);
  CommandResult r = Lfs({"setstripe", "-c", "2", "-S", "64K", P("nf/f")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  struct stat st {};
  ASSERT_EQ(stat(P("nf/f").c_str(), &st), 0) << "setstripe FILE creates an empty file";
  EXPECT_EQ(st.st_size, 0);
  auto data = Pattern(300'000, 3);
  ASSERT_EQ(WriteFile(P("nf/f"), data), 0);
  r = Lfs({"getstripe", P("nf/f")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_stripe_count:\\s+2\\b"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("lmm_stripe_size:\\s+65536\\b"))) << r.out;
  EXPECT_EQ(ParseObjRows(r.out).size(), 2u) << r.out;
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("nf/f"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);

  // An existing file's layout cannot be changed by setstripe.
  r = Lfs({"setstripe", "-c", "4", P("nf/f")});
  EXPECT_NE(r.exit_code, 0) << Show(r);
  EXPECT_FALSE(r.err.empty()) << "an error says why";
  r = Lfs({"getstripe", "-c", P("nf/f")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*2\\s*$"))) << "layout unchanged\n"
                                                                   << r.out;
}

// The layout as the lustre.lov xattr (lov_user_md_v1), as Lustre exposes it: a file's
// objects, a directory's default; setting it on a directory sets the default layout.
TEST_F(LfsTest, LayoutIsReadableAndSettableAsLustreLovXattr) {
  ASSERT_EQ(mkdir(P("lov").c_str(), 0755), 0);
  CommandResult r = Lfs({"setstripe", "-c", "2", "-S", "128K", P("lov")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  ASSERT_EQ(WriteFile(P("lov/f"), Pattern(1000, 1)), 0);
  auto u32 = [](const std::string& v, size_t off) {
    uint32_t x = 0;
    for (int i = 3; i >= 0; --i) x = (x << 8) | static_cast<uint8_t>(v[off + i]);
    return x;
  };
  std::string v(4096, '\0');
  ssize_t n = getxattr(P("lov/f").c_str(), "lustre.lov", v.data(), v.size());
  ASSERT_EQ(n, 32 + 2 * 24) << strerror(errno);
  EXPECT_EQ(u32(v, 0), 0x0BD10BD0u);
  EXPECT_EQ(u32(v, 24), 128u << 10);
  EXPECT_EQ(u32(v, 28) & 0xffff, 2u);
  EXPECT_EQ(getxattr(P("lov/f").c_str(), "lustre.lov", v.data(), 10), -1);
  EXPECT_EQ(errno, ERANGE);

  // The directory's default, copied onto another directory through the xattr.
  n = getxattr(P("lov").c_str(), "lustre.lov", v.data(), v.size());
  ASSERT_EQ(n, 32) << strerror(errno);
  ASSERT_EQ(mkdir(P("lov2").c_str(), 0755), 0);
  EXPECT_EQ(getxattr(P("lov2").c_str(), "lustre.lov", v.data(), v.size() - 1), -1);
  EXPECT_EQ(errno, ENODATA) << "no default layout yet";
  ASSERT_EQ(setxattr(P("lov2").c_str(), "lustre.lov", v.data(), 32, 0), 0) << strerror(errno);
  r = Lfs({"getstripe", "-d", P("lov2")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("stripe_count:\\s+2\\b"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("stripe_size:\\s+131072\\b"))) << r.out;
  // Garbage is refused; restoring a file's own layout (tar --xattrs) is accepted.
  EXPECT_EQ(setxattr(P("lov2").c_str(), "lustre.lov", "garbage", 7, 0), -1);
  EXPECT_EQ(errno, EINVAL);
  n = getxattr(P("lov/f").c_str(), "lustre.lov", v.data(), v.size());
  EXPECT_EQ(setxattr(P("lov/f").c_str(), "lustre.lov", v.data(), static_cast<size_t>(n), 0), 0);
}

TEST_F(LfsTest, BadInvocationsFail) {
  ASSERT_EQ(mkdir(P("bad").c_str(), 0755), 0);
  const std::vector<std::vector<std::string>> bad = {
      {"setstripe", "--no-such-flag", P("bad")},
      {"setstripe", "-c", "abc", P("bad")},
      {"setstripe", "-S", "1000", P("bad")},         // not a multiple of 64 KiB
      {"setstripe", "-c", "4", "-S", "1M"},          // no path
      {"setstripe", "-c", "2", P("no/such/dir/f")},
      {"getstripe", P("bad/missing")},
      {"frobnicate"},
  };
  for (const auto& args : bad) {
    CommandResult r = Lfs(args);
    std::string cmd;
    for (auto& a : args) cmd += a + " ";
    EXPECT_NE(r.exit_code, 0) << "lfs " << cmd << "\n" << Show(r);
    EXPECT_LT(r.exit_code, 128) << "lfs " << cmd << " crashed\n" << Show(r);
  }
  // The directory's layout was left alone by the failed calls.
  CommandResult r = Lfs({"getstripe", P("bad")});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
}

TEST_F(LfsTest, DfListsEveryOst) {
  CommandResult r = Lfs({"df", mnt_});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  for (int i = 0; i < g_cluster->num_osts(); ++i) {
    char name[32];
    snprintf(name, sizeof(name), "OST%04x", i);
    EXPECT_NE(r.out.find(name), std::string::npos) << name << " missing:\n" << r.out;
  }
  EXPECT_NE(r.out.find("MDT0000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("filesystem_summary"), std::string::npos) << r.out;
  r = Lfs({"df", "-h", mnt_});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
}

}  // namespace
}  // namespace stria::testing
