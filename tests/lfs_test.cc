// The `lfs` binary against a real mount: setstripe on a directory, the objects a file written
// there gets (checked from lfs getstripe's obdidx rows and the OST objects' own sizes),
// getstripe's output shape, the errors of bad invocations, and lfs df.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <atomic>
#include <thread>
#include <chrono>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "common/fid.h"
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
  // The MDT row shows the MDS's disk, as df of its data directory does (not zeros).
  std::istringstream rows(r.out);
  std::string row;
  uint64_t mdt_kb = 0;
  while (std::getline(rows, row)) {
    if (row.find("MDT0000_UUID") == std::string::npos) continue;
    std::istringstream f(row);
    std::string uuid;
    f >> uuid >> mdt_kb;
  }
  struct statvfs vfs {};
  ASSERT_EQ(statvfs((g_cluster->dir() + "/mds").c_str(), &vfs), 0);
  const uint64_t disk_kb = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize / 1024;
  EXPECT_GT(mdt_kb, 0u) << r.out;
  EXPECT_NEAR(static_cast<double>(mdt_kb), static_cast<double>(disk_kb), disk_kb * 0.01) << r.out;
  r = Lfs({"df", "-h", mnt_});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
}

// Composite (PFL) layouts through the mount: the issue's example layout, instantiation as
// writes reach each component, and byte-exact data across component boundaries.
TEST_F(LfsTest, CompositeLayoutInstantiatesComponentsAsWritesReachThem) {
  ASSERT_EQ(mkdir(P("pfl").c_str(), 0755), 0);
  CommandResult r = Lfs({"setstripe", "-E", "4M", "-c", "1", "-E", "64M", "-c", "2", "-E",
                         "-1", "-c", "-1", P("pfl")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  r = Lfs({"getstripe", "-d", P("pfl")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find("lcm_entry_count:   3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lcme_extent.e_end:   EOF\n"), std::string::npos) << r.out;

  auto data = Pattern(8u << 20, 8);
  ASSERT_EQ(WriteFile(P("pfl/ckpt"), data, 1 << 20), 0);
  r = Lfs({"getstripe", P("pfl/ckpt")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find("lcm_entry_count:   3\n"), std::string::npos) << r.out;
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = r.out.find(needle); at != std::string::npos; at = r.out.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("lcme_flags:          init\n"), 2u) << r.out;
  EXPECT_EQ(count("lcme_flags:          0\n"), 1u) << r.out;
  EXPECT_EQ(count("l_ost_idx:"), 3u) << "1 + 2 objects\n" << r.out;
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("pfl/ckpt"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);

  // The MDS holds the same, and the objects hold the bytes of their own component.
  auto e = Resolve(*g_client, "/pfl/ckpt");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->layout().components_size(), 3);
  EXPECT_EQ(e->layout().components(1).layout().objects_size(), 2);
  EXPECT_EQ(e->layout().components(2).layout().objects_size(), 0);
  auto a = ObjectAttr(*g_client, e->layout().components(0).layout().objects(0));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->size(), 4u << 20);

  r = Lfs({"getstripe", "-I", "2", P("pfl/ckpt")});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(count("lcme_id:"), 1u) << r.out;
  r = Lfs({"getstripe", "--component-start=+1M", P("pfl/ckpt")});
  EXPECT_EQ(count("lcme_id:"), 2u) << r.out;
  EXPECT_NE(r.out.find("lcme_id:             3\n"), std::string::npos) << r.out;
  r = Lfs({"getstripe", "--component-end", "EOF", P("pfl/ckpt")});
  EXPECT_EQ(count("lcme_id:"), 1u) << r.out;
  EXPECT_NE(r.out.find("lcme_extent.e_end:   EOF"), std::string::npos) << r.out;
  r = Lfs({"getstripe", "--component-start", "0", "--component-end", "4M", P("pfl/ckpt")});
  EXPECT_EQ(count("lcme_id:"), 1u) << r.out;
  EXPECT_EQ(Lfs({"getstripe", "--component-start", "abc", P("pfl/ckpt")}).exit_code, EINVAL);
  r = Lfs({"getstripe", "--component-count", P("pfl/ckpt")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*3\\s*$"))) << r.out;

  // lfs find sees the components.
  ASSERT_EQ(WriteFile(P("pfl/small"), Pattern(1000, 9)), 0);
  r = Lfs({"find", P("pfl"), "--stripe-count", "2", "--type", "f"});
  EXPECT_EQ(r.out, P("pfl/ckpt") + "\n") << Show(r);
  r = Lfs({"find", P("pfl"), "--component-count", "3", "--type", "f"});
  EXPECT_NE(r.out.find(P("pfl/small")), std::string::npos) << Show(r);

  // A template: getstripe --yaml, then setstripe --yaml on a new file gives the same layout.
  r = Lfs({"getstripe", "--yaml", P("pfl/ckpt")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out.rfind("lcm_layout_gen:", 0), 0u) << "no path in YAML\n" << r.out;
  const std::string tmpl = std::string(::testing::TempDir()) + "/pfl-template.yaml";
  {
    FILE* f = fopen(tmpl.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(r.out.c_str(), f);
    fclose(f);
  }
  r = Lfs({"setstripe", "--yaml", tmpl, P("pfl/copy")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  ASSERT_EQ(WriteFile(P("pfl/copy"), data, 1 << 20), 0);
  auto copy = Resolve(*g_client, "/pfl/copy");
  ASSERT_TRUE(copy.ok());
  ASSERT_EQ(copy->layout().components_size(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(copy->layout().components(i).end(), e->layout().components(i).end());
    EXPECT_EQ(copy->layout().components(i).layout().stripe_count(),
              e->layout().components(i).layout().stripe_count());
  }
  EXPECT_EQ(Lfs({"setstripe", "--yaml", tmpl, "-c", "2", P("pfl/bad")}).exit_code, EINVAL);
  EXPECT_NE(Lfs({"setstripe", "--yaml", "/nonexistent.yaml", P("pfl/bad")}).exit_code, 0);

  // The lustre.lov xattr is a lov_comp_md_v1.
  std::string v(8192, '\0');
  ssize_t n = getxattr(P("pfl/ckpt").c_str(), "lustre.lov", v.data(), v.size());
  ASSERT_GT(n, 32) << strerror(errno);
  EXPECT_EQ(static_cast<uint8_t>(v[0]) | static_cast<uint8_t>(v[1]) << 8 |
                static_cast<uint8_t>(v[2]) << 16 | static_cast<uint32_t>(static_cast<uint8_t>(v[3])) << 24,
            0x0BD60BD0u);
  // ... which restores the template on another directory (tar/rsync -X).
  n = getxattr(P("pfl").c_str(), "lustre.lov", v.data(), v.size());
  ASSERT_GT(n, 32) << strerror(errno);
  ASSERT_EQ(mkdir(P("pfl_copy").c_str(), 0755), 0);
  ASSERT_EQ(setxattr(P("pfl_copy").c_str(), "lustre.lov", v.data(), static_cast<size_t>(n), 0), 0)
      << strerror(errno);
  r = Lfs({"getstripe", "-d", P("pfl_copy")});
  EXPECT_NE(r.out.find("lcm_entry_count:   3\n"), std::string::npos) << r.out;
}

TEST_F(LfsTest, CompositeBoundariesTruncateAndDirectIoMatchALocalCopy) {
  // [0, 1M) 1 stripe, [1M, 4M) 2 stripes, [4M, EOF) all OSTs; 64 KiB stripes.
  CommandResult r = Lfs({"setstripe", "-E", "1M", "-c", "1", "-S", "64K", "-E", "4M", "-c",
                         "2", "-S", "64K", "-E", "EOF", "-c", "-1", "-S", "64K", P("pflb")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  int fd = open(P("pflb").c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::vector<uint8_t> model;
  uint64_t seed = 100;
  auto put = [&](uint64_t off, size_t len) {
    auto bytes = Pattern(len, ++seed);
    ASSERT_EQ(pwrite(fd, bytes.data(), len, static_cast<off_t>(off)), static_cast<ssize_t>(len))
        << strerror(errno);
    if (model.size() < off + len) model.resize(off + len);
    std::copy(bytes.begin(), bytes.end(), model.begin() + static_cast<ptrdiff_t>(off));
  };
  auto check = [&](const char* when) {
    struct stat st {};
    ASSERT_EQ(fstat(fd, &st), 0);
    ASSERT_EQ(static_cast<uint64_t>(st.st_size), model.size()) << when;
    std::vector<uint8_t> got(model.size() + 10);
    ssize_t n = pread(fd, got.data(), got.size(), 0);
    ASSERT_EQ(n, static_cast<ssize_t>(model.size())) << when << ": " << strerror(errno);
    got.resize(model.size());
    EXPECT_EQ(FirstDiff(got, model), -1) << when;
  };
  put(0, 1000);
  put((1 << 20) - 1, 2);        // e_end - 1 and e_end of the first component
  put(1 << 20, 1);
  check("boundary of 1M");
  put(6 << 20 | 5, 100);        // sparse, into the last component
  check("sparse into the third");
  put((4 << 20) - 3, 7);        // straddles 4M
  check("straddling 4M");
  ASSERT_EQ(ftruncate(fd, 512 << 10), 0) << strerror(errno);  // back into the first
  model.resize(512 << 10);
  check("truncated into the first");
  put(5 << 20, 4096);           // grows again: the middle is a hole
  check("grown past the truncate");
  close(fd);

  // O_DIRECT, 1 MiB aligned, across the 1M boundary, on a fresh file of the same layout.
  ASSERT_EQ(mkdir(P("pfld").c_str(), 0755), 0);
  r = Lfs({"setstripe", "-E", "1M", "-c", "1", "-S", "64K", "-E", "-1", "-c", "2", "-S", "64K",
           P("pfld")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  fd = open(P("pfld/direct").c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
  ASSERT_GE(fd, 0) << strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, 1 << 20), 0);
  auto bytes = Pattern(1 << 20, 77);
  std::memcpy(buf, bytes.data(), bytes.size());
  ASSERT_EQ(pwrite(fd, buf, 1 << 20, 512 << 10), 1 << 20) << strerror(errno);
  std::memset(buf, 0, 1 << 20);
  ASSERT_EQ(pread(fd, buf, 1 << 20, 512 << 10), 1 << 20) << strerror(errno);
  EXPECT_EQ(std::memcmp(buf, bytes.data(), bytes.size()), 0);
  free(buf);
  close(fd);
}

TEST_F(LfsTest, Path2fidAndFid2pathFindEveryName) {
  ASSERT_EQ(mkdir(P("fids").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("fids/sub").c_str(), 0755), 0);
  ASSERT_EQ(WriteFile(P("fids/sub/f"), Pattern(100, 5)), 0);
  ASSERT_EQ(link(P("fids/sub/f").c_str(), P("fids/h").c_str()), 0) << strerror(errno);
  struct stat st {}, dir_st {}, sub_st {};
  ASSERT_EQ(stat(P("fids/sub/f").c_str(), &st), 0);
  ASSERT_EQ(stat(P("fids").c_str(), &dir_st), 0);
  ASSERT_EQ(stat(P("fids/sub").c_str(), &sub_st), 0);
  const std::string fid = FormatFid(FidOfIno(st.st_ino));
  EXPECT_TRUE(std::regex_match(fid, std::regex("\\[0x2000004[0-9a-f]{2}:0x[0-9a-f]+:0x0\\]")))
      << fid;

  CommandResult r = Lfs({"path2fid", P("fids/sub/f")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, fid + "\n");
  // getstripe prints it where Lustre does: -F alone, and in -v's lmm block.
  r = Lfs({"getstripe", "-F", P("fids/sub/f")});
  EXPECT_EQ(r.out, fid + "\n") << Show(r);
  r = Lfs({"getstripe", "-v", P("fids/sub/f")});
  EXPECT_NE(r.out.find("lmm_fid:           " + fid + "\n"), std::string::npos) << Show(r);
  r = Lfs({"getstripe", "-F", P("fids")});
  EXPECT_EQ(r.out, FormatFid(FidOfIno(dir_st.st_ino)) + "\n") << Show(r);
  r = Lfs({"path2fid", P("fids/sub/f"), P("fids/h")});
  EXPECT_EQ(r.out, P("fids/sub/f") + ": " + fid + "\n" + P("fids/h") + ": " + fid + "\n");
  r = Lfs({"path2fid", "--parents", P("fids/h")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, FormatFid(FidOfIno(sub_st.st_ino)) + "/f\t" +
                       FormatFid(FidOfIno(dir_st.st_ino)) + "/h\n");

  // Every name, under the mount point or relative to the filesystem's root.
  r = Lfs({"fid2path", mnt_, fid});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, P("fids/sub/f") + "\n" + P("fids/h") + "\n");
  r = Lfs({"fid2path", "lfsfs", fid});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(r.out, "fids/sub/f\nfids/h\n");
  r = Lfs({"fid2path", "-f", "-c", "--link", "1", mnt_, fid});
  EXPECT_EQ(r.out, fid + " 1 " + P("fids/h") + "\n") << Show(r);
  r = Lfs({"fid2path", "lfsfs", "[0x200000007:0x1:0x0]"});
  EXPECT_EQ(r.out, "/\n") << Show(r);

  // Renames are followed; bad and unknown FIDs fail with Lustre's errors.
  ASSERT_EQ(rename(P("fids/sub").c_str(), P("fids/moved").c_str()), 0);
  r = Lfs({"fid2path", mnt_, fid});
  EXPECT_EQ(r.out, P("fids/moved/f") + "\n" + P("fids/h") + "\n") << Show(r);
  r = Lfs({"fid2path", mnt_, "not-a-fid"});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  r = Lfs({"fid2path", mnt_, "[0x2000fffff:0x1234:0x0]"});
  EXPECT_EQ(r.exit_code, ENOENT) << Show(r);
  r = Lfs({"fid2path", mnt_, "[0x100000000:0x1:0x0]"});
  EXPECT_EQ(r.exit_code, ENOENT) << Show(r);
  r = Lfs({"fid2path", "nosuchfs", fid});
  EXPECT_NE(r.exit_code, 0) << Show(r);
}

// Data-on-MDT: the first 64 KiB of each file kept by the MDS, the rest on two OSTs.
TEST_F(LfsTest, DataOnMdtKeepsSmallFilesOnTheMds) {
  ASSERT_EQ(mkdir(P("dom").c_str(), 0755), 0);
  CommandResult r = Lfs({"setstripe", "-E", "64K", "-L", "mdt", "-E", "-1", "-c", "2", P("dom")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  const uint64_t k64 = 64 << 10;
  for (uint64_t size : {uint64_t{0}, uint64_t{1}, uint64_t{4095}, uint64_t{4096}, k64 - 1, k64,
                        k64 + 1, 3 * k64 + 17}) {
    SCOPED_TRACE(size);
    const std::string rel = "dom/f" + std::to_string(size);
    auto data = Pattern(size, size + 1);
    ASSERT_EQ(WriteFile(P(rel), data), 0);
    auto e = Resolve(*g_client, "/" + rel);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    const proto::Layout& l = e->layout();
    ASSERT_EQ(l.components_size(), 2);
    EXPECT_EQ(l.components(0).layout().pattern(), proto::PATTERN_MDT);
    EXPECT_EQ(l.components(0).layout().objects_size(), 0);
    // The OST component exists only once a write went past 64 KiB.
    EXPECT_EQ(l.components(1).layout().objects_size(), size > k64 ? 2 : 0);
    EXPECT_EQ(e->attr().size(), size);
    // Read back through libstria (the MDS's DoM blocks, then the OSTs) and the mount.
    std::vector<uint8_t> direct(size);
    auto n = g_client->Read(l, size, 0, direct);
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(*n, size);
    EXPECT_EQ(FirstDiff(direct, data), -1);
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(P(rel), &got), 0);
    EXPECT_EQ(FirstDiff(got, data), -1);
  }
  // getstripe shows the DoM component as Lustre does.
  r = Lfs({"getstripe", P("dom/f4096")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find("lmm_pattern:       mdt\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lmm_stripe_size:   65536\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lmm_mdt_index:     0\n"), std::string::npos) << r.out;

  // Truncate down into the DoM component and up again: the cut bytes read as zeros.
  auto data = Pattern(3 * k64 + 17, 3 * k64 + 18);  // as written above
  ASSERT_EQ(truncate(P("dom/f" + std::to_string(3 * k64 + 17)).c_str(), 1000), 0);
  ASSERT_EQ(truncate(P("dom/f" + std::to_string(3 * k64 + 17)).c_str(), 2 * k64), 0);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("dom/f" + std::to_string(3 * k64 + 17)), &got), 0);
  ASSERT_EQ(got.size(), 2 * k64);
  data.resize(1000);
  data.resize(2 * k64, 0);
  EXPECT_EQ(FirstDiff(got, data), -1);

  // A file all on the MDS (-L mdt) stops at its limit, 1 MiB by default.
  r = Lfs({"setstripe", "-L", "mdt", P("dom/only")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  int fd = open(P("dom/only").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  auto mib = Pattern(1 << 20, 3);
  EXPECT_EQ(pwrite(fd, mib.data(), mib.size(), 0), static_cast<ssize_t>(mib.size()));
  EXPECT_EQ(pwrite(fd, mib.data(), 1, 1 << 20), -1);
  EXPECT_EQ(errno, EFBIG);
  close(fd);
  ASSERT_EQ(ReadFile(P("dom/only"), &got), 0);
  EXPECT_EQ(FirstDiff(got, mib), -1);

  // Bad DoM requests are refused before anything is created.
  r = Lfs({"setstripe", "-E", "64K", "-L", "mdt", "-c", "2", "-E", "-1", P("dom/bad")});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  r = Lfs({"setstripe", "-E", "64K", "-c", "1", "-E", "-1", "-L", "mdt", P("dom/bad")});
  EXPECT_NE(r.exit_code, 0) << Show(r);
  r = Lfs({"setstripe", "-L", "stripes", P("dom/bad")});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  struct stat st {};
  EXPECT_NE(stat(P("dom/bad").c_str(), &st), 0);
}

// OST pools: lctl pool_* with Lustre's output and errors, lfs setstripe -p placing objects
// only on the pool's OSTs, lfs df --pool.
TEST_F(LfsTest, PoolsRestrictAllocation) {
  auto lctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {BinPath("lctl"), "--mgs", g_cluster->mgs_nid()});
    return RunCommand(args);
  };
  CommandResult r = lctl({"pool_new", "lfsfs.hot"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  r = lctl({"pool_add", "lfsfs.hot", "lfsfs-OST[1-2]"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  r = lctl({"pool_list", "lfsfs"});
  EXPECT_EQ(r.out, "Pools from lfsfs:\nlfsfs.hot\n") << Show(r);
  r = lctl({"pool_list", "lfsfs.hot"});
  EXPECT_EQ(r.out, "Pool: lfsfs.hot\nlfsfs-OST0001_UUID\nlfsfs-OST0002_UUID\n") << Show(r);

  ASSERT_EQ(mkdir(P("hot").c_str(), 0755), 0);
  r = Lfs({"setstripe", "-c", "-1", "-p", "lfsfs.hot", P("hot")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  r = Lfs({"getstripe", "-d", P("hot")});
  EXPECT_NE(r.out.find("pool:          hot"), std::string::npos) << r.out;
  for (int i = 0; i < 4; ++i) {
    const std::string f = "hot/f" + std::to_string(i);
    ASSERT_EQ(WriteFile(P(f), Pattern(3 << 20, i)), 0);
    r = Lfs({"getstripe", P(f)});
    EXPECT_NE(r.out.find("lmm_pool:          hot"), std::string::npos) << r.out;
    std::set<uint32_t> osts;
    for (const ObjRow& row : ParseObjRows(r.out)) osts.insert(row.obdidx);
    EXPECT_EQ(osts, (std::set<uint32_t>{1, 2})) << r.out;
  }
  r = Lfs({"df", "--pool", "lfsfs.hot", mnt_});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find("OST0001"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("OST0002"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OST0000"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("OST0003"), std::string::npos) << r.out;

  // Lustre's errors: unknown pool, non-empty destroy, a member twice, a bad list.
  r = Lfs({"setstripe", "-p", "nosuch", P("hot/nosuch")});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  r = lctl({"pool_destroy", "lfsfs.hot"});
  EXPECT_EQ(r.exit_code, ENOTEMPTY) << Show(r);
  r = lctl({"pool_add", "lfsfs.hot", "lfsfs-OST0001"});
  EXPECT_EQ(r.exit_code, EEXIST) << Show(r);
  r = lctl({"pool_add", "lfsfs.hot", "otherfs-OST0003"});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  r = lctl({"pool_new", "lfsfs"});
  EXPECT_EQ(r.exit_code, EINVAL) << Show(r);
  r = lctl({"pool_remove", "lfsfs.hot", "1", "2"});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  r = lctl({"pool_destroy", "lfsfs.hot"});
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  r = lctl({"pool_list", "lfsfs"});
  EXPECT_EQ(r.out, "Pools from lfsfs:\n") << Show(r);
}

TEST_F(LfsTest, MdtsAndCheckServers) {
  CommandResult r = Lfs({"mdts", mnt_});
  EXPECT_EQ(r.out, "MDTS:\n0: lfsfs-MDT0000_UUID ACTIVE\n") << Show(r);
  r = Lfs({"check", "servers", mnt_});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_NE(r.out.find("lfsfs-MDT0000-mdc active.\n"), std::string::npos) << r.out;
  for (int i = 0; i < g_cluster->num_osts(); ++i) {
    char name[64];
    snprintf(name, sizeof(name), "lfsfs-OST%04x-osc active.\n", i);
    EXPECT_NE(r.out.find(name), std::string::npos) << r.out;
  }
  r = Lfs({"check", "mgts", mnt_});
  EXPECT_NE(r.out.find("MGC" + g_cluster->mgs_nid() + " active.\n"), std::string::npos) << Show(r);
  EXPECT_EQ(Lfs({"check", "everything"}).exit_code, EINVAL);
  EXPECT_EQ(Lfs({"check"}).exit_code, EINVAL);
}

// lfs find over a tree with known layouts, sizes and names.
TEST_F(LfsTest, FindSelectsByLayoutSizeNameAndTime) {
  ASSERT_EQ(mkdir(P("find").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("find/sub").c_str(), 0755), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "1", P("find/one")}).exit_code, 0);
  ASSERT_EQ(WriteFile(P("find/one"), Pattern(1000, 1)), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "2", "-S", "1M", P("find/two")}).exit_code, 0);
  ASSERT_EQ(WriteFile(P("find/two"), Pattern(3 << 20, 2)), 0);
  ASSERT_EQ(Lfs({"setstripe", "-E", "64K", "-L", "mdt", "-E", "-1", "-c", "1", P("find/sub/dom")})
                .exit_code,
            0);
  ASSERT_EQ(WriteFile(P("find/sub/dom"), Pattern(10, 3)), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "1", P("find/sub/Deep.TXT")}).exit_code, 0);
  ASSERT_EQ(WriteFile(P("find/sub/Deep.TXT"), Pattern(2 << 20, 4)), 0);
  auto find = [&](std::vector<std::string> tests) {
    tests.insert(tests.begin(), {"find", P("find")});
    CommandResult r = Lfs(tests);
    EXPECT_EQ(r.exit_code, 0) << Show(r);
    std::set<std::string> got;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) got.insert(line.substr(P("find").size()));
    return got;
  };
  using S = std::set<std::string>;
  EXPECT_EQ(find({"--stripe-count", "2", "--type", "f"}), (S{"/two"}));
  EXPECT_EQ(find({"!", "--stripe-count", "2", "-type", "f"}), (S{"/one", "/sub/dom", "/sub/Deep.TXT"}));
  EXPECT_EQ(find({"-iname", "deep.txt"}), (S{"/sub/Deep.TXT"}));
  EXPECT_EQ(find({"-name", "*.TXT"}), (S{"/sub/Deep.TXT"}));
  EXPECT_EQ(find({"-size", "+1M"}), (S{"/two", "/sub/Deep.TXT"}));
  EXPECT_EQ(find({"-size", "-2k", "-type", "f"}), (S{"/one", "/sub/dom"}));
  EXPECT_EQ(find({"--layout", "mdt"}), (S{"/sub/dom"}));
  EXPECT_EQ(find({"-mtime", "-1", "-type", "f"}), (S{"/one", "/two", "/sub/dom", "/sub/Deep.TXT"}));
  EXPECT_EQ(find({"-mtime", "+1"}), S{});
  EXPECT_EQ(find({"--uid", "0", "-type", "d"}), (S{"", "/sub"}));
  EXPECT_EQ(find({"!", "--user", "root"}), S{});
  EXPECT_EQ(find({"-maxdepth", "1", "-type", "f"}), (S{"/one", "/two"}));
  EXPECT_EQ(find({"--ost", "0,1,2,3", "-type", "f"}), (S{"/one", "/two", "/sub/Deep.TXT"}))
      << "the DoM file has no OST object";
  EXPECT_EQ(find({"--component-count", "2"}), (S{"/sub/dom"}));
  CommandResult r = Lfs({"find", P("find"), "-name", "one", "-print0"});
  EXPECT_EQ(r.out, P("find/one") + std::string(1, '\0')) << Show(r);
  EXPECT_EQ(Lfs({"find", P("find"), "-size", "abc"}).exit_code, EINVAL);
  EXPECT_EQ(Lfs({"find", P("find"), "-name", "x", "!"}).exit_code, EINVAL);
  EXPECT_EQ(Lfs({"find", P("find"), "--layout", "raid5"}).exit_code, EINVAL);
  EXPECT_EQ(Lfs({"find", P("find"), "--user", "no-such-user-here"}).exit_code, EINVAL);
}

// lfs migrate: restriped online under a reader that checks every byte; a writer makes
// --non-block fail with EBUSY and the blocking form wait for it.
TEST_F(LfsTest, MigrateRestripesUnderAConcurrentReader) {
  ASSERT_EQ(mkdir(P("mig").c_str(), 0755), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "1", "-S", "1M", P("mig")}).exit_code, 0);
  const auto data = Pattern((6 << 20) + 123, 66);
  ASSERT_EQ(WriteFile(P("mig/f"), data, 1 << 20), 0);
  struct stat before {};
  ASSERT_EQ(stat(P("mig/f").c_str(), &before), 0);
  auto old_layout = Resolve(*g_client, "/mig/f");
  ASSERT_TRUE(old_layout.ok());

  // A reader, holding the file open, reads it whole again and again.
  std::atomic<bool> stop{false};
  std::atomic<int> passes{0}, errors{0};
  std::thread reader([&] {
    const int fd = open(P("mig/f").c_str(), O_RDONLY | O_DIRECT);
    if (fd < 0) {
      errors++;
      return;
    }
    void* buf = nullptr;
    if (posix_memalign(&buf, 4096, 8 << 20) != 0) return;
    while (!stop.load()) {
      size_t n = 0;
      for (;;) {  // a direct read may come back in pieces
        const ssize_t got = pread(fd, static_cast<char*>(buf) + n, (8 << 20) - n, static_cast<off_t>(n));
        if (got <= 0) break;
        n += static_cast<size_t>(got);
      }
      if (n != data.size() || std::memcmp(buf, data.data(), data.size()) != 0) errors++;
      passes++;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    free(buf);
    close(fd);
  });
  CommandResult r = Lfs({"migrate", "-c", "4", P("mig/f")});
  // Keep reading a little after the swap: the old objects go away now.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop = true;
  reader.join();
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  EXPECT_EQ(errors.load(), 0) << "the reader saw an error or wrong bytes";
  EXPECT_GT(passes.load(), 2);

  auto now = Resolve(*g_client, "/mig/f");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->attr().ino(), old_layout->attr().ino()) << "same inode, same FID";
  EXPECT_EQ(now->layout().objects_size(), 4);
  EXPECT_EQ(now->layout().generation(), old_layout->layout().generation() + 1);
  r = Lfs({"getstripe", "-c", P("mig/f")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*4\\s*$"))) << r.out;
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("mig/f"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
  // The old object is gone from its OST (destroyed after the swap).
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {
    auto a = ObjectAttr(*g_client, old_layout->layout().objects(0));
    gone = a.ok() && !a->exists();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the old object is still there";

  // A writer: --non-block gives EBUSY and changes nothing; the blocking form waits.
  const int wfd = open(P("mig/f").c_str(), O_WRONLY);
  ASSERT_GE(wfd, 0);
  r = Lfs({"migrate", "--non-block", "-c", "2", P("mig/f")});
  EXPECT_EQ(r.exit_code, EBUSY) << Show(r);
  auto still = Resolve(*g_client, "/mig/f");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->layout().objects_size(), 4);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    close(wfd);
  });
  r = Lfs({"migrate", "-c", "2", P("mig/f")});
  closer.join();
  EXPECT_EQ(r.exit_code, 0) << Show(r);
  auto two = Resolve(*g_client, "/mig/f");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->layout().objects_size(), 2);
  ASSERT_EQ(ReadFile(P("mig/f"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);

  // Many files: -R below a directory, and a list on standard input (lfs find | lfs migrate).
  ASSERT_EQ(mkdir(P("mig/tree").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("mig/tree/sub").c_str(), 0755), 0);
  for (const char* f : {"tree/a", "tree/b", "tree/sub/c"}) {
    ASSERT_EQ(WriteFile(P(std::string("mig/") + f), Pattern(300'000, f[5])), 0);
  }
  r = Lfs({"migrate", "-c", "3", P("mig/tree")});
  EXPECT_EQ(r.exit_code, EISDIR) << Show(r);
  r = Lfs({"migrate", "-R", "-c", "3", P("mig/tree")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  for (const char* f : {"/mig/tree/a", "/mig/tree/b", "/mig/tree/sub/c"}) {
    auto e = Resolve(*g_client, f);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->layout().objects_size(), 3) << f;
  }
  r = RunCommand({"/bin/sh", "-c",
                  BinPath("lfs") + " find " + P("mig/tree") + " -type f | " + BinPath("lfs") +
                      " migrate -c 1"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  for (const char* f : {"tree/a", "tree/b", "tree/sub/c"}) {
    auto e = Resolve(*g_client, std::string("/mig/") + f);
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(e->layout().objects_size(), 1) << f;
    ASSERT_EQ(ReadFile(P(std::string("mig/") + f), &got), 0);
    EXPECT_EQ(FirstDiff(got, Pattern(300'000, f[5])), -1) << f;
  }
}

TEST_F(LfsTest, SwapLayoutsAndDataVersion) {
  ASSERT_EQ(mkdir(P("swap").c_str(), 0755), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "1", P("swap/a")}).exit_code, 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "2", "-S", "1M", P("swap/b")}).exit_code, 0);
  const auto da = Pattern(1 << 20, 11), db = Pattern((3 << 20) + 5, 12);
  ASSERT_EQ(WriteFile(P("swap/a"), da), 0);
  ASSERT_EQ(WriteFile(P("swap/b"), db), 0);
  CommandResult v1 = Lfs({"data_version", P("swap/a")});
  ASSERT_EQ(v1.exit_code, 0) << Show(v1);
  EXPECT_TRUE(std::regex_match(v1.out, std::regex("[0-9]+\n"))) << v1.out;
  EXPECT_EQ(Lfs({"data_version", P("swap/a")}).out, v1.out) << "stable while nothing changes";

  CommandResult r = Lfs({"swap_layouts", P("swap/a"), P("swap/b")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("swap/a"), &got), 0);
  EXPECT_EQ(FirstDiff(got, db), -1) << "a has b's bytes";
  ASSERT_EQ(ReadFile(P("swap/b"), &got), 0);
  EXPECT_EQ(FirstDiff(got, da), -1) << "b has a's bytes";
  r = Lfs({"getstripe", "-c", P("swap/a")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*2\\s*$"))) << r.out;
  EXPECT_NE(Lfs({"data_version", P("swap/a")}).out, v1.out) << "the bytes changed";

  const int fd = open(P("swap/a").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Lfs({"swap_layouts", P("swap/a"), P("swap/b")}).exit_code, EBUSY);
  close(fd);
  EXPECT_EQ(Lfs({"swap_layouts", P("swap/a")}).exit_code, EINVAL);
  EXPECT_EQ(Lfs({"swap_layouts", P("swap/a"), P("swap")}).exit_code, EINVAL);
}

// lctl --device N deactivate: the OST shows IN in lctl dl and gets no new objects until
// activate.
TEST_F(LfsTest, DeactivatedOstGetsNoNewObjects) {
  auto lctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {BinPath("lctl"), "--mgs", g_cluster->mgs_nid()});
    return RunCommand(args);
  };
  // dl: 0 MGS, 1 MDT, then OST0000 is device 2, OST0003 device 5.
  CommandResult r = lctl({"--device", "5", "deactivate"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  r = lctl({"dl"});
  EXPECT_NE(r.out.find("  5 IN obdfilter lfsfs-OST0003 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  4 UP obdfilter lfsfs-OST0002 "), std::string::npos) << r.out;
  r = lctl({"get_param", "osp.*.active"});
  EXPECT_NE(r.out.find("osp.lfsfs-OST0003-osc-MDT0000.active=0"), std::string::npos) << Show(r);
  r = Lfs({"osts", mnt_});
  EXPECT_EQ(r.out,
            "OBDS:\n0: lfsfs-OST0000_UUID ACTIVE\n1: lfsfs-OST0001_UUID ACTIVE\n"
            "2: lfsfs-OST0002_UUID ACTIVE\n3: lfsfs-OST0003_UUID INACTIVE\n")
      << Show(r);
  ASSERT_EQ(mkdir(P("deact").c_str(), 0755), 0);
  ASSERT_EQ(Lfs({"setstripe", "-c", "-1", P("deact")}).exit_code, 0);
  for (int i = 0; i < 3; ++i) {
    const std::string f = "deact/f" + std::to_string(i);
    ASSERT_EQ(WriteFile(P(f), Pattern(100, i)), 0);
    r = Lfs({"getstripe", P(f)});
    std::set<uint32_t> osts;
    for (const ObjRow& row : ParseObjRows(r.out)) osts.insert(row.obdidx);
    EXPECT_EQ(osts, (std::set<uint32_t>{0, 1, 2})) << r.out;
  }
  r = lctl({"--device", "lfsfs-OST0003", "activate"});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  ASSERT_EQ(WriteFile(P("deact/back"), Pattern(100, 9)), 0);
  r = Lfs({"getstripe", "-c", P("deact/back")});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^\\s*4\\s*$"))) << r.out;
  // Bad devices and values are refused.
  EXPECT_EQ(lctl({"--device", "1", "deactivate"}).exit_code, ENODEV);
  EXPECT_EQ(lctl({"--device", "lfsfs-OST0009", "deactivate"}).exit_code, ENODEV);
  EXPECT_EQ(lctl({"deactivate"}).exit_code, EINVAL);
  EXPECT_EQ(lctl({"set_param", "osp.lfsfs-OST0001-osc-MDT0000.active=yes"}).exit_code, EINVAL);
}

// lfs manifest: sha256sum's format, verified through the native path; a flipped byte, a
// missing file and an extra file are each reported, and the exit status says so.
TEST_F(LfsTest, ManifestCreateAndVerifyCatchFlipMissingAndExtra) {
  ASSERT_EQ(mkdir(P("ds").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("ds/sub").c_str(), 0755), 0);
  ASSERT_EQ(WriteFile(P("ds/a.bin"), Pattern(300'000, 1)), 0);
  ASSERT_EQ(WriteFile(P("ds/sub/b.bin"), Pattern(5'000, 2)), 0);
  ASSERT_EQ(WriteFile(P("ds/sub/c.bin"), Pattern(10, 3)), 0);
  CommandResult r = Lfs({"manifest", "create", "-j", "3", P("ds")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult ref = RunCommand({"/bin/sh", "-c", "cd " + P("ds") +
                                                      " && sha256sum a.bin sub/b.bin sub/c.bin"});
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  EXPECT_EQ(r.out, ref.out);  // the same lines, sorted by path
  const std::string manifest = P("ds/MANIFEST");
  ASSERT_EQ(WriteFile(manifest, std::vector<uint8_t>(r.out.begin(), r.out.end())), 0);
  r = Lfs({"manifest", "verify", "-q", manifest});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("3 files checked: 0 missing, 0 mismatched, 0 extra"), std::string::npos)
      << r.err;

  int fd = open(P("ds/a.bin").c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const char flip = static_cast<char>(Pattern(300'000, 1)[1234] ^ 0x40);
  ASSERT_EQ(pwrite(fd, &flip, 1, 1234), 1);
  close(fd);
  ASSERT_EQ(unlink(P("ds/sub/c.bin").c_str()), 0);
  ASSERT_EQ(WriteFile(P("ds/sub/new.bin"), Pattern(7, 4)), 0);
  r = Lfs({"manifest", "verify", "-q", "-j", "2", manifest});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "MISMATCH a.bin\nMISSING sub/c.bin\nEXTRA sub/new.bin\n");

  r = Lfs({"manifest", "verify", "-j", "0", manifest});
  EXPECT_EQ(r.exit_code, 22);
  r = Lfs({"manifest", "frob", P("ds")});
  EXPECT_EQ(r.exit_code, 22);
}

// A Data-on-MDT file that grew is migrated off the MDT: same bytes and inode, the new layout
// has only OST objects, and the MDS frees the DoM blocks. Migrating onto DoM is refused.
TEST_F(LfsTest, MigrateMovesADataOnMdtFileToOsts) {
  ASSERT_EQ(mkdir(P("migdom").c_str(), 0755), 0);
  ASSERT_EQ(Lfs({"setstripe", "-E", "64K", "-L", "mdt", "-E", "-1", "-c", "1", P("migdom")})
                .exit_code, 0);
  const auto data = Pattern(200'000, 77);  // 64 KiB on the MDT, the rest on an OST
  ASSERT_EQ(WriteFile(P("migdom/f"), data), 0);
  auto before = Resolve(*g_client, "/migdom/f");
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->layout().components(0).layout().pattern(), proto::PATTERN_MDT);

  CommandResult r = Lfs({"migrate", "-c", "2", "-S", "64K", P("migdom/f")});
  ASSERT_EQ(r.exit_code, 0) << Show(r);
  auto after = Resolve(*g_client, "/migdom/f");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->attr().ino(), before->attr().ino());
  EXPECT_EQ(after->layout().components_size(), 0) << "a plain RAID-0 layout now";
  EXPECT_EQ(after->layout().objects_size(), 2);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("migdom/f"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
  r = Lfs({"getstripe", "-L", P("migdom/f")});
  EXPECT_EQ(r.out.find("mdt"), std::string::npos) << r.out;

  // Onto DoM: refused, and the file keeps its layout and bytes.
  r = Lfs({"migrate", "-E", "64K", "-L", "mdt", "-E", "-1", "-c", "1", P("migdom/f")});
  EXPECT_EQ(r.exit_code, EOPNOTSUPP) << Show(r);
  auto still = Resolve(*g_client, "/migdom/f");
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->layout().generation(), after->layout().generation());
  ASSERT_EQ(ReadFile(P("migdom/f"), &got), 0);
  EXPECT_EQ(FirstDiff(got, data), -1);
}

}  // namespace
}  // namespace stria::testing
