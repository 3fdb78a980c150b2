// Closes that report nothing, gathered by the mount and sent together (OP_MDS_CLOSE_BATCH,
// client/fuse/close_batcher.h), through a real mount whose gather window is a minute long so
// that nothing goes by the clock: the closes wait; an unlinked file whose close waits is gone
// from the namespace at once; `lfs migrate` of a file just written and closed succeeds, the
// MDS having asked the mount (lease callback, flush_closes) for its gathered closes rather
// than answering EBUSY; a read's atime waits with its close, and a setattr sends it first;
// the size a close(2) reports waits with the closes, the MDS asks for it before it answers
// another client about the file, and glimpses it from the OSTs when the mount died first;
// close(2) does not wait for the file's writes to reach the OSTs, and the size goes with the
// handle's close once they have; an unmount sends what is left.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/shared_cluster_env.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

Cluster* g_cluster = nullptr;
client::Client* g_client = nullptr;

ClusterOptions EnvOptions() {
  ClusterOptions o;
  o.tag = "closebatch";
  o.fsname = "cbfs";
  o.num_oss = 1;
  o.osts_per_oss = 2;
  // Opens made under the attribute lease wait 10 s to be registered (local_opens.h).
  o.fuse_options = {"close_gather_ms=60000", "open_register_ms=10000"};
  return o;
}

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(
    new SharedClusterEnv(EnvOptions(), &g_cluster, &g_client));

class CloseBatchTest : public MountedClusterTest {
 protected:
  CloseBatchTest() : MountedClusterTest(&g_cluster, &g_client) {}

  static CommandResult Tool(const char* tool, std::vector<std::string> args) {
    args.insert(args.begin(), BinPath(tool));
    if (std::string(tool) == "lctl") args.insert(args.begin() + 1, {"--mgs", g_cluster->mgs_nid()});
    return RunCommand(args);
  }
  // A counter of `lctl get_param -n PARAM` ("name: N" lines, or "name N samples ...").
  static uint64_t Counter(const std::string& param, const std::string& name) {
    CommandResult r = Tool("lctl", {"get_param", "-n", param});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line);
      std::string key;
      uint64_t n = 0;
      if (words >> key && (key == name + ":" || key == name) && words >> n) return n;
    }
    return 0;
  }
  static uint64_t Gathered() { return Counter("llite.cbfs-*.close_batches", "gathered"); }
  // Waits until the mount has gathered more than `n` closes (a close(2)'s size report joins
  // them once the file's writes reached the OSTs).
  static void AwaitGathered(uint64_t n) {
    for (int i = 0; i < 1000 && Gathered() <= n; ++i) usleep(10'000);
  }
  static uint64_t Batches() { return Counter("llite.cbfs-*.close_batches", "batches"); }
  static uint64_t MdsCloses() { return Counter("mdt.*.md_stats", "close"); }
  static uint64_t MdsOpens() { return Counter("mdt.*.md_stats", "open"); }
  static uint64_t LocalOpens(const std::string& name) {
    return Counter("llite.cbfs-*.local_opens", name);
  }
  // The MDS's attributes of inode `ino` (an orphan's too), through libstria.
  static Result<proto::AttrReply> MdsGetattr(uint64_t ino) {
    proto::GetattrRequest req;
    *req.mutable_cred() = RootCred();
    req.set_ino(ino);
    proto::AttrReply rep;
    STRIA_RETURN_IF_ERROR(g_client->MdsCall(proto::OP_MDS_GETATTR, req, &rep));
    return rep;
  }

  static int CreateEmpty(const std::string& path) {
    const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return errno;
    return close(fd) == 0 ? 0 : errno;
  }
};

TEST_F(CloseBatchTest, ClosesThatReportNothingWaitAndGoTogether) {
  ASSERT_EQ(mkdir(P("many").c_str(), 0755), 0) << strerror(errno);
  const uint64_t gathered0 = Gathered(), batches0 = Batches(), mds0 = MdsCloses();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(CreateEmpty(P("many/f" + std::to_string(i))), 0);
  // Read back (a read-only open; its atime needs no report: atime is not older than mtime).
  const uint64_t local0 = LocalOpens("opened");
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("many/f0"), &got), 0);
  // The read-only open stayed in the mount (the attribute lease of the create's reply), and
  // its close has nothing to tell the MDS.
  EXPECT_EQ(LocalOpens("opened") - local0, 1u);
  EXPECT_EQ(Gathered() - gathered0, 20u);
  EXPECT_EQ(Batches(), batches0) << "nothing went before the gather window or a flush";
  EXPECT_EQ(MdsCloses(), mds0) << "the MDS has seen none of the closes";
  // Unlinked while its close waits: gone from the namespace at once.
  ASSERT_EQ(unlink(P("many/f1").c_str()), 0) << strerror(errno);
  struct stat st {};
  EXPECT_EQ(lstat(P("many/f1").c_str(), &st), -1);
  EXPECT_EQ(errno, ENOENT);
}

// The MDS's atime of `rel` (what every other client sees), through libstria.
int64_t MdsAtimeNs(const std::string& rel) {
  Result<proto::EntryReply> e = Resolve(*g_client, "/" + rel);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? e->attr().atime_ns() : -1;
}

TEST_F(CloseBatchTest, AReadsAtimeWaitsWithItsCloseAndASetattrSendsItFirst) {
  const std::vector<uint8_t> data = Pattern(50'000, 3);
  ASSERT_EQ(WriteFile(P("at"), data), 0);
  // An atime long past: the next read is due an update (relatime).
  const timespec old_times[2] = {{1'000'000'000, 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(utimensat(AT_FDCWD, P("at").c_str(), old_times, 0), 0) << strerror(errno);
  ASSERT_EQ(MdsAtimeNs("at"), 1'000'000'000'000'000'000);
  const uint64_t gathered0 = Gathered(), mds0 = MdsCloses();
  const time_t before = time(nullptr);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("at"), &got), 0);
  EXPECT_EQ(got, data);
  EXPECT_EQ(Gathered() - gathered0, 1u) << "the close with the read's atime was gathered";
  EXPECT_EQ(MdsCloses(), mds0) << "and has not reached the MDS";
  EXPECT_EQ(MdsAtimeNs("at"), 1'000'000'000'000'000'000);
  struct stat st {};
  ASSERT_EQ(stat(P("at").c_str(), &st), 0);
  EXPECT_GE(st.st_atime, before) << "this mount shows the read's atime meanwhile";

  // An atime set after the read wins: the setattr sends the gathered close first.
  const timespec set_times[2] = {{1'200'000'000, 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(utimensat(AT_FDCWD, P("at").c_str(), set_times, 0), 0) << strerror(errno);
  EXPECT_GT(MdsCloses(), mds0) << "the setattr sent the gathered close";
  EXPECT_EQ(MdsAtimeNs("at"), 1'200'000'000'000'000'000);
  ASSERT_EQ(stat(P("at").c_str(), &st), 0);
  EXPECT_EQ(st.st_atime, 1'200'000'000) << "not the read's atime any more";
  // Nothing gathered before the setattr lands after it (an unmount sends what is left).
  Status unmounted = g_cluster->Unmount(0);
  ASSERT_TRUE(unmounted.ok()) << unmounted.ToString();
  EXPECT_EQ(MdsAtimeNs("at"), 1'200'000'000'000'000'000);
  Status mounted = g_cluster->Mount(0);
  ASSERT_TRUE(mounted.ok()) << mounted.ToString();
}

TEST_F(CloseBatchTest, MigrateRightAfterCloseDoesNotFindAWriter) {
  const std::vector<uint8_t> data = Pattern(300'000, 9);
  ASSERT_EQ(WriteFile(P("mig"), data), 0);  // its release's close waits in the mount
  const uint64_t mds0 = MdsCloses();
  CommandResult r = Tool("lfs", {"migrate", "-c", "2", P("mig")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_GT(MdsCloses(), mds0) << "the MDS asked the mount for its closes";
  EXPECT_GE(Counter("llite.cbfs-*.close_batches", "flushes"), 1u);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("mig"), &got), 0);
  EXPECT_EQ(got, data);
  r = Tool("lfs", {"getstripe", "-c", P("mig")});
  EXPECT_EQ(r.out, "2\n") << r.err;
}

// The MDS's size of `rel` through libstria (another client: the MDS settles the mount's
// unreported size before it answers).
uint64_t MdsSize(const std::string& rel) {
  Result<proto::EntryReply> e = Resolve(*g_client, "/" + rel);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? e->attr().size() : ~0ull;
}

TEST_F(CloseBatchTest, TheSizeAtCloseWaitsWithTheCloseAndAnotherClientGetsItFirst) {
  const uint64_t batches0 = Batches(), mds0 = MdsCloses(), flushes0 =
      Counter("llite.cbfs-*.close_batches", "flushes");
  ASSERT_EQ(WriteFile(P("sz"), Pattern(70'000, 4)), 0);
  EXPECT_EQ(Batches(), batches0) << "close(2) did not wait for an MDS round trip";
  EXPECT_EQ(MdsCloses(), mds0) << "the size went with the gathered closes";
  struct stat st {};
  ASSERT_EQ(stat(P("sz").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 70'000) << "this mount shows the size it wrote";
  // Another client's lookup: the MDS asks the mount for its closes before it answers.
  EXPECT_EQ(MdsSize("sz"), 70'000u);
  EXPECT_EQ(Counter("llite.cbfs-*.close_batches", "flushes"), flushes0 + 1);
  EXPECT_EQ(Batches(), batches0 + 1);
  EXPECT_GT(MdsCloses(), mds0);
  // Appended and closed again: a getattr by inode number settles it too.
  const int fd = open(P("sz").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0) << strerror(errno);
  const std::vector<uint8_t> more = Pattern(1'000, 5);
  ASSERT_EQ(write(fd, more.data(), more.size()), 1'000);
  ASSERT_EQ(close(fd), 0);
  proto::GetattrRequest g;
  *g.mutable_cred() = RootCred();
  g.set_ino(st.st_ino);
  proto::AttrReply a;
  Status got_attr = g_client->MdsCall(proto::OP_MDS_GETATTR, g, &a);
  ASSERT_TRUE(got_attr.ok()) << got_attr.ToString();
  EXPECT_EQ(a.attr().size(), 71'000u);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("sz"), &got), 0);
  EXPECT_EQ(got.size(), 71'000u);
}

// A batch of lookups (client/entry_batches.h) settles each name's size as a single lookup
// does: the mount's unreported sizes of two files reach the MDS before it answers.
TEST_F(CloseBatchTest, EachNameOfALookupBatchHasItsSizeSettledFirst) {
  ASSERT_EQ(WriteFile(P("lb1"), Pattern(30'000, 6)), 0);
  ASSERT_EQ(WriteFile(P("lb2"), Pattern(50'000, 7)), 0);
  const uint64_t flushes0 = Counter("llite.cbfs-*.close_batches", "flushes");
  proto::LookupRequest req;
  *req.mutable_cred() = RootCred();
  req.set_parent(1);
  req.set_name("lb1");
  req.add_more_names("lb2");
  proto::EntryReply rep;
  Status st = g_client->MdsCall(proto::OP_MDS_LOOKUP, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rep.codes_size(), 2);
  ASSERT_EQ(rep.more_size(), 1);
  EXPECT_EQ(rep.attr().size(), 30'000u);
  EXPECT_EQ(rep.more(0).attr().size(), 50'000u);
  EXPECT_GT(Counter("llite.cbfs-*.close_batches", "flushes"), flushes0);
}

// So does a readdirplus: the first entry's settling sends the mount's other sizes too,
// and every entry is read after it (each entry once read stale, before the fix).
TEST_F(CloseBatchTest, EachEntryOfAReaddirPlusHasItsSizeSettledFirst) {
  ASSERT_EQ(mkdir(P("rdp").c_str(), 0755), 0) << strerror(errno);
  ASSERT_EQ(WriteFile(P("rdp/a"), Pattern(20'000, 8)), 0);
  ASSERT_EQ(WriteFile(P("rdp/b"), Pattern(40'000, 9)), 0);
  Result<proto::EntryReply> dir = Resolve(*g_client, "/rdp");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  proto::ReaddirRequest req;
  *req.mutable_cred() = RootCred();
  req.set_ino(dir->attr().ino());
  req.set_max_entries(100);
  req.set_want_attrs(true);
  proto::ReaddirReply rep;
  Status st = g_client->MdsCall(proto::OP_MDS_READDIR, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::map<std::string, uint64_t> sizes;
  for (const proto::DirEntry& e : rep.entries()) sizes[e.name()] = e.attr().size();
  EXPECT_EQ(sizes["a"], 20'000u);
  EXPECT_EQ(sizes["b"], 40'000u);
}

TEST_F(CloseBatchTest, ATruncateAfterCloseIsNotUndoneByTheGatheredSize) {
  ASSERT_EQ(WriteFile(P("tr"), Pattern(40'000, 6)), 0);  // its size waits in the mount
  ASSERT_EQ(truncate(P("tr").c_str(), 100), 0) << strerror(errno);
  EXPECT_EQ(MdsSize("tr"), 100u);
  // Nothing gathered lands after the truncate (an unmount sends what is left).
  Status st = g_cluster->Unmount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(MdsSize("tr"), 100u);
  st = g_cluster->Mount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  struct stat sb {};
  ASSERT_EQ(stat(P("tr").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_size, 100);
}

TEST_F(CloseBatchTest, CloseDoesNotWaitForTheWritesAndOthersStillSeeThemAfter) {
  const std::vector<uint8_t> data = Pattern(70'000, 10);
  const uint64_t mds0 = MdsCloses(), gathered0 = Gathered();
  // The OSS stops: writes wait for it. A watchdog lets it go on after 20 s, so that a
  // close(2) that waits for them fails this test rather than hanging it.
  const pid_t oss = g_cluster->oss_pid(0);
  ASSERT_EQ(kill(oss, SIGSTOP), 0) << strerror(errno);
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false, by_watchdog = false;
  std::thread watchdog([&] {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return closed; })) {
      by_watchdog = true;
      kill(oss, SIGCONT);
    }
  });
  const int written = WriteFile(P("behind"), data);  // open, write, close
  {
    std::lock_guard lock(mu);
    closed = true;
  }
  cv.notify_all();
  watchdog.join();
  // The writes are still held by the stopped OSS (lctl would wait for it too), and this
  // mount shows what it wrote.
  struct stat st {};
  const int stat_err = stat(P("behind").c_str(), &st) == 0 ? 0 : errno;
  ASSERT_EQ(kill(oss, SIGCONT), 0) << strerror(errno);
  ASSERT_EQ(written, 0) << strerror(written);
  EXPECT_FALSE(by_watchdog) << "close(2) waited for the OSS";
  ASSERT_EQ(stat_err, 0) << strerror(stat_err);
  EXPECT_EQ(st.st_size, 70'000) << "this mount shows the size it wrote";
  // Another client asks: the MDS asks the mount, which sends the size once the data is on
  // the OST, with the handle's close in one request.
  EXPECT_EQ(MdsSize("behind"), 70'000u);
  EXPECT_EQ(Gathered(), gathered0 + 1) << "size and close in one gathered close";
  EXPECT_GT(MdsCloses(), mds0);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("behind"), &got), 0);
  EXPECT_EQ(got, data);
}

TEST_F(CloseBatchTest, AWriterThatDiesBeforeSendingItsSizeIsGlimpsed) {
  const std::vector<uint8_t> data = Pattern(90'000, 8);
  const uint64_t gathered0 = Gathered();
  ASSERT_EQ(WriteFile(P("dead"), data), 0);
  AwaitGathered(gathered0);  // on the OSTs; its size waits in the mount
  // The mount dies: nothing it gathered reaches the MDS.
  ASSERT_EQ(kill(g_cluster->fuse_pid(0), SIGKILL), 0);
  g_cluster->Unmount(0).IgnoreError();
  // Another client asks: the dead mount does not answer, so the MDS asks the OSTs.
  EXPECT_EQ(MdsSize("dead"), 90'000u);
  Status st = g_cluster->Mount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(P("dead"), &got), 0);
  EXPECT_EQ(got, data);
}

TEST_F(CloseBatchTest, AnMtimeSetRightAfterCloseIsNotUndoneByTheClose) {
  // write, close, utimes (tar, rsync): the close's size report and release, left to the
  // write still in flight when the utimes comes, must not bring the write's mtime back (the
  // setattr waits for them: it fails on every file when it does not).
  const timespec past[2] = {{0, UTIME_OMIT}, {1'000'000'000, 0}};
  constexpr int kFiles = 20;
  for (int i = 0; i < kFiles; ++i) {
    const std::string rel = "ut" + std::to_string(i);
    ASSERT_EQ(WriteFile(P(rel), Pattern(5'000, i)), 0);
    ASSERT_EQ(utimensat(AT_FDCWD, P(rel).c_str(), past, 0), 0) << strerror(errno);
  }
  Status st = g_cluster->Unmount(0);  // whatever the mount still had goes to the MDS
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int i = 0; i < kFiles; ++i) {
    const std::string rel = "ut" + std::to_string(i);
    Result<proto::EntryReply> e = Resolve(*g_client, "/" + rel);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    EXPECT_EQ(e->attr().mtime_ns(), 1'000'000'000'000'000'000) << rel;
    EXPECT_EQ(e->attr().size(), 5'000u) << rel;
  }
  st = g_cluster->Mount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

TEST_F(CloseBatchTest, AnUnmountSendsWhatIsLeft) {
  ASSERT_EQ(CreateEmpty(P("last")), 0);
  const uint64_t mds0 = MdsCloses();
  ASSERT_GE(Gathered(), 1u);
  Status st = g_cluster->Unmount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_GT(MdsCloses(), mds0);
  st = g_cluster->Mount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

}  // namespace
}  // namespace stria::testing

namespace stria::testing {
namespace {

// A read-only open of a file the mount holds an attribute lease on is made in the mount
// (client/fuse/local_opens.h; registered 10 s later here). Another client unlinks the file
// while it is open: the MDS revokes the mount's lease before the unlink, the mount
// registers its open first, and the file stays an orphan that the open still reads whole,
// until its close reaches the MDS.
TEST_F(CloseBatchTest, AnOpenMadeInTheMountIsRegisteredBeforeAnotherClientsUnlink) {
  const std::vector<uint8_t> data = Pattern(300'000, 7);
  ASSERT_EQ(WriteFile(P("lo"), data), 0);
  // Another client's lookup: the MDS asks the mount for the size its close gathered.
  Result<proto::EntryReply> e = Resolve(*g_client, "/lo");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  ASSERT_EQ(e->attr().size(), data.size());
  const uint64_t ino = e->attr().ino();
  const uint64_t opened0 = LocalOpens("opened"), registered0 = LocalOpens("registered");
  const uint64_t mds_opens0 = MdsOpens();
  const int fd = open(P("lo").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  std::vector<uint8_t> got(data.size());
  ASSERT_EQ(pread(fd, got.data(), 1000, 0), 1000) << strerror(errno);
  EXPECT_EQ(LocalOpens("opened") - opened0, 1u);
  EXPECT_EQ(LocalOpens("pending"), 1u);
  EXPECT_EQ(MdsOpens(), mds_opens0) << "the MDS has not heard of the open";

  Result<proto::EntryReply> root = Resolve(*g_client, "/");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  proto::UnlinkRequest ul;
  *ul.mutable_cred() = RootCred();
  ul.set_parent(root->attr().ino());
  ul.set_name("lo");
  proto::UnlinkReply ulr;
  Status st = g_client->MdsCall(proto::OP_MDS_UNLINK, ul, &ulr);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(LocalOpens("registered") - registered0, 1u) << "registered before the unlink";
  EXPECT_EQ(MdsOpens(), mds_opens0 + 1);
  Result<proto::AttrReply> orphan = MdsGetattr(ino);
  ASSERT_TRUE(orphan.ok()) << "the file must stay while open: " << orphan.status().ToString();
  EXPECT_EQ(orphan->attr().nlink(), 0u);
  ASSERT_EQ(pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()))
      << strerror(errno);
  EXPECT_EQ(got, data);
  const uint64_t gathered0 = Gathered();
  ASSERT_EQ(close(fd), 0);
  // The close waits with the gathered ones (the kernel's release comes after close(2)
  // returned); the unmount sends them, and the orphan goes.
  AwaitGathered(gathered0);
  st = g_cluster->Unmount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(MdsGetattr(ino).status().code(), Code::kNoEnt);
  st = g_cluster->Mount(0);
  ASSERT_TRUE(st.ok()) << st.ToString();
}

// The same mount unlinks a file it opened without the MDS: it registers the open first.
TEST_F(CloseBatchTest, AnOpenMadeInTheMountIsRegisteredBeforeItsOwnUnlink) {
  const std::vector<uint8_t> data = Pattern(200'000, 8);
  ASSERT_EQ(WriteFile(P("lo2"), data), 0);
  Result<proto::EntryReply> e = Resolve(*g_client, "/lo2");  // the size reaches the MDS
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const uint64_t opened0 = LocalOpens("opened"), registered0 = LocalOpens("registered");
  const int fd = open(P("lo2").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  EXPECT_EQ(LocalOpens("opened") - opened0, 1u);
  ASSERT_EQ(unlink(P("lo2").c_str()), 0) << strerror(errno);
  EXPECT_EQ(LocalOpens("registered") - registered0, 1u);
  Result<proto::AttrReply> orphan = MdsGetattr(e->attr().ino());
  ASSERT_TRUE(orphan.ok()) << "the file must stay while open: " << orphan.status().ToString();
  std::vector<uint8_t> got(data.size());
  ASSERT_EQ(pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(got.size()))
      << strerror(errno);
  EXPECT_EQ(got, data);
  ASSERT_EQ(close(fd), 0);
}

}  // namespace
}  // namespace stria::testing
