// Metadata leases (mds/leases.h, client/fuse/lease_cache.h) through two real mounts of one
// cluster: what one mount changes is seen by the other at once, although the other keeps
// names, absences and attributes in its kernel for the whole lease; those answer even while
// the MDS does not, as do absent names in a directory the mount made itself; lookups of names
// it does not know go to the MDS together, not one at a time per directory; and a mount that
// stops answering revocations holds a change up once, loses its leases, and drops its cache
// when it comes back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "client/metadata.h"
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
  o.tag = "lease";
  o.fsname = "leasefs";
  o.num_mounts = 2;
  o.num_oss = 1;
  return o;
}

const auto* const kEnv =
    ::testing::AddGlobalTestEnvironment(new SharedClusterEnv(EnvOptions(), &g_cluster, &g_client));

class LeaseTest : public TwoMountTest {
 protected:
  LeaseTest() : TwoMountTest(&g_cluster, &g_client) {}

  // The MDS's count of revocations that went unanswered (mdt.*.md_leases).
  static uint64_t RevokeFailures() { return MdtCounter("md_leases", "revoke_failures"); }

  // The sum over both mounts of a `llite.*.unlink_writeback` counter.
  static uint64_t WritebackCounter(const std::string& key) {
    return LliteSum("unlink_writeback", key);
  }
  // The sum over both mounts of a counter of `llite.*.PARAM`.
  static uint64_t LliteSum(const std::string& param, const std::string& key) {
    CommandResult r = RunCommand({BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "get_param", "-n",
                                  "llite.leasefs-*." + param});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    uint64_t sum = 0;
    for (size_t at = r.out.find(key + ": "); at != std::string::npos;
         at = r.out.find(key + ": ", at + 1)) {
      sum += std::stoull(r.out.substr(at + key.size() + 2));
    }
    return sum;
  }
  // A counter of the MDS's mdt.*.md_leases.
  static uint64_t MdsLeaseCounter(const std::string& key) { return MdtCounter("md_leases", key); }
  // A counter of the MDS's `mdt.*.PARAM` (0 when it is not shown).
  static uint64_t MdtCounter(const std::string& param, const std::string& key) {
    CommandResult r = RunCommand(
        {BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "get_param", "-n", "mdt.*." + param});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find(key + ": ");
    return at == std::string::npos ? 0 : std::stoull(r.out.substr(at + key.size() + 2));
  }

  // Makes TOP/d with n files and unlinks them through mount 0, which answers them itself
  // under its write-back grant on TOP/d; returns how many it queued to send behind.
  uint64_t UnlinkedUnderTheGrant(const std::string& top, int n) const {
    EXPECT_EQ(mkdir(P(top).c_str(), 0755), 0) << strerror(errno);
    EXPECT_EQ(mkdir(P(top + "/d").c_str(), 0755), 0) << strerror(errno);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(WriteFile(P(top + "/d/f" + std::to_string(i)), Pattern(10, i)), 0);
    }
    const uint64_t queued0 = WritebackCounter("queued");
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(unlink(P(top + "/d/f" + std::to_string(i)).c_str()), 0) << strerror(errno);
    }
    return WritebackCounter("queued") - queued0;
  }

  // The MDS's inode cache hits (mdt.*.inode_cache).
  static uint64_t InodeCacheHits() { return MdtCounter("inode_cache", "hits"); }
  // How many requests of one kind the MDS has served (mdt.*.md_stats, e.g. "read": Data-on-MDT
  // reads).
  static uint64_t MdStat(const std::string& op) {
    CommandResult r = RunCommand(
        {BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "get_param", "-n", "mdt.*.md_stats"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.find("\n" + op + " ");
    return at == std::string::npos
               ? 0
               : std::stoull(r.out.substr(r.out.find_first_not_of(' ', at + op.size() + 1)));
  }

  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// Longer than the kernel timeouts a mount gives without a lease (FsOptions: 1 s).
constexpr auto kPastShortTimeouts = std::chrono::milliseconds(1500);

TEST_F(LeaseTest, ChangesOnOneMountAreSeenOnTheOtherAtOnce) {
  ASSERT_EQ(mkdir(P("co").c_str(), 0755), 0) << strerror(errno);
  auto data = Pattern(3000, 5);
  ASSERT_EQ(WriteFile(P("co/gone"), data), 0);
  ASSERT_EQ(WriteFile(P("co/mode"), data), 0);
  ASSERT_EQ(WriteFile(P("co/size"), data), 0);
  // Mount 1 caches two names with their attributes, and an absence.
  const ino_t gone_ino = Stat(Q("co/gone")).st_ino;
  EXPECT_EQ(Stat(Q("co/mode")).st_mode & 07777, 0644u);
  EXPECT_EQ(Stat(Q("co/size")).st_size, 3000);
  EXPECT_FALSE(Exists(Q("co/new")));
  std::this_thread::sleep_for(kPastShortTimeouts);
  EXPECT_EQ(Stat(Q("co/gone")).st_ino, gone_ino) << "still cached, under the lease";

  // Mount 0 changes each; mount 1 sees every change with no wait at all: each was revoked
  // from mount 1 before mount 0's call returned.
  ASSERT_EQ(unlink(P("co/gone").c_str()), 0) << strerror(errno);
  ASSERT_EQ(chmod(P("co/mode").c_str(), 0600), 0) << strerror(errno);
  ASSERT_EQ(truncate(P("co/size").c_str(), 123), 0) << strerror(errno);
  ASSERT_EQ(WriteFile(P("co/new"), data), 0);
  EXPECT_FALSE(Exists(Q("co/gone")));
  EXPECT_EQ(Stat(Q("co/mode")).st_mode & 07777, 0600u);
  EXPECT_EQ(Stat(Q("co/size")).st_size, 123);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(Q("co/new"), &got), 0) << "the absence mount 1 cached was revoked";
  EXPECT_EQ(FirstDiff(got, data), -1);

  // And the other way round, for a rename across directories. (In co/ itself mount 0 gets
  // no lease for a while: a directory whose lease was just revoked is contended, and names
  // in it are cached for the short timeouts only.)
  ASSERT_EQ(mkdir(P("rn").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(P("rn/sub").c_str(), 0755), 0);
  ASSERT_EQ(WriteFile(P("rn/x"), data), 0);
  EXPECT_FALSE(Exists(P("rn/sub/moved")));
  std::this_thread::sleep_for(kPastShortTimeouts);
  ASSERT_EQ(rename(Q("rn/x").c_str(), Q("rn/sub/moved").c_str()), 0) << strerror(errno);
  EXPECT_TRUE(Exists(P("rn/sub/moved")));
  EXPECT_FALSE(Exists(P("rn/x")));
}

// Write-back unlinks (client/fuse/unlink_writeback.h, mds/leases.h): mount 0 answers its
// unlinks in a directory the MDS granted it alone, and sends them behind; nobody sees them
// late, and nothing of the mount's own overtakes them.
TEST_F(LeaseTest, UnlinksAMountAnsweredItselfAreSeenByEveryOtherClientAtOnce) {
  ASSERT_EQ(mkdir(P("wb").c_str(), 0755), 0) << strerror(errno);
  constexpr int kFiles = 100;
  auto name = [](int i) { return "wb/f" + std::to_string(i); };
  for (int i = 0; i < kFiles; ++i) ASSERT_EQ(WriteFile(P(name(i)), Pattern(100, i)), 0);
  const uint64_t queued0 = WritebackCounter("queued");
  const uint64_t recalled0 = MdsLeaseCounter("writeback_recalled");
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(unlink(P(name(i)).c_str()), 0) << name(i) << ": " << strerror(errno);
  }
  // At once, on the other mount (its lookup recalls the grant first) and through libstria.
  for (int i = 0; i < kFiles; ++i) EXPECT_FALSE(Exists(Q(name(i)))) << name(i);
  // The first waited for the MDS and brought the grant; the rest were answered by the mount.
  EXPECT_GE(WritebackCounter("queued") - queued0, kFiles - 1u);
  EXPECT_EQ(MdsLeaseCounter("writeback_recalled"), recalled0 + 1);
  auto root = Resolve(*g_client, "/wb");
  ASSERT_TRUE(root.ok()) << root.status().ToString();
  client::Metadata md(g_client);
  auto listed = md.Readdir(RootCred(), {.ino = root->attr().ino()});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  for (const proto::DirEntry& e : listed->entries()) {
    EXPECT_TRUE(e.name() == "." || e.name() == "..") << e.name() << " still listed";
  }
  EXPECT_EQ(WritebackCounter("failed"), 0u);
}

TEST_F(LeaseTest, NothingTheMountAsksTheMdsOvertakesItsWrittenBackUnlinks) {
  ASSERT_EQ(mkdir(P("wbo").c_str(), 0755), 0) << strerror(errno);
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(WriteFile(P("wbo/f" + std::to_string(i)), Pattern(10, i)), 0);
  }
  ASSERT_EQ(WriteFile(P("wbo/again"), Pattern(300, 1)), 0);
  const uint64_t queued0 = WritebackCounter("queued");
  for (int i = 0; i < 50; ++i) ASSERT_EQ(unlink(P("wbo/f" + std::to_string(i)).c_str()), 0);
  // A name unlinked and made again: the create waits for the unlink, the new file stays.
  ASSERT_EQ(unlink(P("wbo/again").c_str()), 0) << strerror(errno);
  const auto fresh = Pattern(500, 2);
  ASSERT_EQ(WriteFile(P("wbo/again"), fresh), 0) << strerror(errno);
  std::vector<uint8_t> got;
  ASSERT_EQ(ReadFile(Q("wbo/again"), &got), 0);
  EXPECT_EQ(got, fresh);
  ASSERT_EQ(unlink(P("wbo/again").c_str()), 0) << strerror(errno);
  EXPECT_GE(WritebackCounter("queued") - queued0, 50u);
  // The directory is empty when its rmdir reaches the MDS, right after.
  EXPECT_EQ(rmdir(P("wbo").c_str()), 0) << strerror(errno);
  EXPECT_FALSE(Exists(Q("wbo")));
}

TEST_F(LeaseTest, AnotherClientRemovesADirectoryRightAfterItsFilesWereUnlinkedInIt) {
  // The rmdir names the directory's parent only: the MDS recalls the grant on the directory
  // the name is too, and finds it empty.
  const uint64_t queued = UnlinkedUnderTheGrant("wbr", 40);
  // Through libstria: a lookup of wbr, then the rmdir of d in it (no request names d).
  auto parent = Resolve(*g_client, "/wbr");
  ASSERT_TRUE(parent.ok()) << parent.status().ToString();
  client::Metadata md(g_client);
  auto removed = md.Unlink(RootCred(), parent->attr().ino(), "d", /*is_dir=*/true);
  EXPECT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_FALSE(Exists(P("wbr/d")));
  EXPECT_GE(queued, 39u);
}

// A batch of lookups (client/entry_batches.h) that names a directory after its first name
// recalls the write-back grant on it too, as a single lookup of it would: the unlinks the
// mount answered there reach the MDS before the batch is answered.
TEST_F(LeaseTest, ALookupBatchRecallsTheGrantOnEachDirectoryItNames) {
  ASSERT_GE(UnlinkedUnderTheGrant("wbl", 20), 19u) << "answered by the mount";
  auto parent = Resolve(*g_client, "/wbl");
  ASSERT_TRUE(parent.ok()) << parent.status().ToString();
  const uint64_t recalled0 = MdsLeaseCounter("writeback_recalled");
  proto::LookupRequest req;
  *req.mutable_cred() = RootCred();
  req.set_parent(parent->attr().ino());
  req.set_name("missing");
  req.add_more_names("d");
  req.set_negative_ok(true);
  proto::EntryReply rep;
  Status st = g_client->MdsCall(proto::OP_MDS_LOOKUP, req, &rep);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(rep.more_size(), 1);
  EXPECT_EQ(MdsLeaseCounter("writeback_recalled"), recalled0 + 1);
  client::Metadata md(g_client);
  auto listed = md.Readdir(RootCred(), {.ino = rep.more(0).attr().ino()});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  for (const proto::DirEntry& e : listed->entries()) {
    EXPECT_TRUE(e.name() == "." || e.name() == "..") << e.name() << " still listed";
  }
}

TEST_F(LeaseTest, LeasedNamesAndAbsencesAnswerWhileTheMdsDoesNot) {
  // Made on mount 1 itself: the root directory is contended after the other tests' changes
  // (mds/leases.h), and only the client changing it keeps getting leases there.
  ASSERT_EQ(mkdir(Q("fz").c_str(), 0755), 0) << strerror(errno);
  ASSERT_EQ(WriteFile(Q("fz/f"), Pattern(777, 1)), 0);
  // The file's release (which the kernel sends after close returns) must be done: while the
  // mount has it open for writing its attributes are not cached under the lease.
  std::this_thread::sleep_for(kPastShortTimeouts);
  EXPECT_EQ(Stat(Q("fz/f")).st_size, 777);
  EXPECT_FALSE(Exists(Q("fz/none")));
  std::this_thread::sleep_for(kPastShortTimeouts);

  // The MDS stops answering. A stat that needed it would wait; these must not.
  ASSERT_EQ(kill(g_cluster->mds_pid(), SIGSTOP), 0);
  const std::string f = Q("fz/f"), none = Q("fz/none"), never = Q("fz/never");
  const pid_t child = fork();
  if (child == 0) {
    struct stat st {};
    if (lstat(f.c_str(), &st) != 0 || st.st_size != 777) _exit(1);
    if (lstat(none.c_str(), &st) == 0 || errno != ENOENT) _exit(2);
    // Never looked up: mount 1 made fz/ and knows every name in it.
    if (lstat(never.c_str(), &st) == 0 || errno != ENOENT) _exit(3);
    _exit(0);
  }
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 100 && w == 0; ++i) {
    w = waitpid(child, &status, WNOHANG);
    if (w == 0) usleep(50'000);
  }
  kill(g_cluster->mds_pid(), SIGCONT);  // a stat that did wait finishes now
  const bool waited = w == 0;
  if (waited) w = waitpid(child, &status, 0);
  ASSERT_EQ(w, child);
  EXPECT_FALSE(waited) << "a stat waited for the frozen MDS";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "1: wrong attributes, 2: the absence was not kept, 3: the directory's names unknown";
}

// The file that counts a mount's FUSE requests not answered yet (fusectl's `waiting`), or
// "" where fusectl is not there. Found before the MDS stops: stat(2) may need it.
std::string FuseWaitingFile(const std::string& mount_point) {
  struct stat st {};
  if (stat(mount_point.c_str(), &st) != 0) return "";
  const std::string conns = "/sys/fs/fuse/connections";
  const std::string waiting = conns + "/" + std::to_string(minor(st.st_dev)) + "/waiting";
  if (access(waiting.c_str(), R_OK) != 0) {
    RunCommand({"mount", "-t", "fusectl", "fusectl", conns});  // root: it may not be mounted
  }
  return access(waiting.c_str(), R_OK) == 0 ? waiting : "";
}

int64_t ReadCount(const std::string& file) {
  std::ifstream in(file);
  int64_t n = -1;
  return in >> n ? n : -1;
}

// Whether every thread of `pid` is stopped (state T).
bool AllThreadsStopped(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    std::getline(in, line);
    const size_t paren = line.rfind(')');
    if (paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'T') {
      return false;
    }
  }
  return !ec;
}

TEST_F(LeaseTest, LookupsInOneDirectoryGoToTheMdsTogether) {
  // libfuse 3.14 never passes FUSE_PARALLEL_DIROPS on, and the kernel then holds the
  // directory's mutex across each LOOKUP: 8 readers of one directory's files waited for
  // the MDS one at a time (fuse_ring.h). Names mount 1 never saw, so each needs the MDS, in
  // a directory it knows (under its lease: no GETATTR of it for the search permission).
  ASSERT_EQ(mkdir(P("pl").c_str(), 0755), 0) << strerror(errno);
  for (const char* n : {"a", "b", "c"})
    ASSERT_EQ(WriteFile(P(std::string("pl/") + n), Pattern(10, 1)), 0);
  std::this_thread::sleep_for(kPastShortTimeouts);
  EXPECT_TRUE(S_ISDIR(Stat(Q("pl")).st_mode));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // mount 1's requests are done
  const std::string waiting = FuseWaitingFile(mnt1_);
  if (waiting.empty()) GTEST_SKIP() << "fusectl's counters cannot be read here";
  const int64_t before = ReadCount(waiting);

  ASSERT_EQ(kill(g_cluster->mds_pid(), SIGSTOP), 0);
  // Stopped in every thread: one still running could answer the first lookup.
  EXPECT_GE(SecondsUntil([] { return AllThreadsStopped(g_cluster->mds_pid()); }), 0);
  std::vector<pid_t> children;
  for (const char* n : {"a", "b", "c"}) {
    const std::string path = Q(std::string("pl/") + n);
    const pid_t child = fork();
    if (child == 0) {
      struct stat st {};
      _exit(lstat(path.c_str(), &st) == 0 && st.st_size == 10 ? 0 : 1);
    }
    children.push_back(child);
  }
  int64_t most = 0;
  SecondsUntil(
      [&] {
        most = std::max(most, ReadCount(waiting) - before);
        return most >= 3;
      },
      2.0);
  kill(g_cluster->mds_pid(), SIGCONT);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a lookup failed";
  }
  EXPECT_GE(most, 3) << "lookups of one directory waited for each other";
}

TEST_F(LeaseTest, AMountThatStopsAnsweringLosesItsLeasesAndItsCache) {
  // Mount 1's process stops: the MDS's revocation goes unanswered. The unlink still
  // completes (after the MDS's revoke timeout), and the MDS keeps serving. That needs mount 1
  // to hold the entry lease on the directory, which its lookup may be refused on a loaded
  // host (a grant loses to a change it raced, by design): then nothing is revoked, the
  // unlink is not held up, and the setup is made again in another directory.
  std::string dir;
  for (int attempt = 0; attempt < 5; ++attempt) {
    dir = "st" + std::to_string(attempt);
    ASSERT_EQ(mkdir(P(dir).c_str(), 0755), 0) << strerror(errno);
    ASSERT_EQ(WriteFile(P(dir + "/f"), Pattern(10, 2)), 0);
    Stat(Q(dir + "/f"));  // mount 1 takes the entry lease on the directory
    const uint64_t failures = RevokeFailures();
    ASSERT_EQ(kill(g_cluster->fuse_pid(1), SIGSTOP), 0);
    const int rc = unlink(P(dir + "/f").c_str());
    const int err = errno;
    ASSERT_EQ(WriteFile(P(dir + "/g"), Pattern(10, 3)), 0);
    kill(g_cluster->fuse_pid(1), SIGCONT);
    ASSERT_EQ(rc, 0) << strerror(err);
    if (RevokeFailures() > failures) break;  // mount 1 held it, and did not answer
    dir.clear();
  }
  ASSERT_FALSE(dir.empty()) << "mount 1 was never granted the lease in 5 attempts";

  // Back, mount 1 answers the revocation it had queued (too late: the MDS dropped all its
  // leases), and at its next keepalive learns that it lost them, drops everything it cached
  // under them and registers again.
  EXPECT_GE(SecondsUntil([&] { return !Exists(Q(dir + "/f")); }, 40), 0)
      << "mount 1 kept the unlinked name";
  EXPECT_TRUE(Exists(Q(dir + "/g")));
  EXPECT_NE(Slurp(g_cluster->mds_log()).find("lease revocation not answered"), std::string::npos);
  CommandResult leases = RunCommand(
      {BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "get_param", "-n", "mdt.*.md_leases"});
  ASSERT_EQ(leases.exit_code, 0) << leases.err;
  EXPECT_EQ(leases.out.find("revoke_failures: 0\n"), std::string::npos) << leases.out;
  EXPECT_GE(SecondsUntil(
                [&] {
                  return Slurp(g_cluster->fuse_log(1)).find("metadata leases lost") !=
                         std::string::npos;
                },
                40),
            0);
  // Registered again: its callback address is in the MDS's log twice.
  const std::string fuse1 = Slurp(g_cluster->fuse_log(1));
  const size_t at = fuse1.find("callbacks at ");
  ASSERT_NE(at, std::string::npos);
  const std::string nid = fuse1.substr(at + 13, fuse1.find(')', at) - at - 13);
  EXPECT_GE(SecondsUntil(
                [&] {
                  const std::string mds = Slurp(g_cluster->mds_log());
                  size_t n = 0;
                  for (size_t p = mds.find("revoked at " + nid); p != std::string::npos;
                       p = mds.find("revoked at " + nid, p + 1)) {
                    ++n;
                  }
                  return n >= 2;
                },
                10),
            0)
      << nid;
}

// Open intents (client/fuse/pre_opens.h): mount 1 reads files that mount 0 wrote. After
// the first two, each lookup brings the file's open with it and the kernel's OPEN takes it,
// one MDS round trip per cold open instead of two. A stat-only scan that follows wastes a
// few such opens, stops asking, and leaves none open: an unlinked file it looked at goes.
// A name without digits for file i: no numbered run starts, so nothing is looked up ahead
// (statahead.h) and what the open intents alone do is measured.
std::string Unnumbered(int i) {
  return {'f', static_cast<char>('a' + i / 26), static_cast<char>('a' + i % 26)};
}

TEST_F(LeaseTest, ReadsTakeTheOpenThatTheirLookupBrought) {
  ASSERT_EQ(mkdir(P("oi").c_str(), 0755), 0) << strerror(errno);
  auto name = [](int i) { return "oi/" + Unnumbered(i); };
  for (int i = 0; i < 30; ++i) ASSERT_EQ(WriteFile(P(name(i)), Pattern(5000, i)), 0);
  const uint64_t used0 = LliteSum("open_intents", "used");
  const uint64_t wasted0 = LliteSum("open_intents", "wasted");
  const uint64_t hits0 = InodeCacheHits();
  for (int i = 0; i < 12; ++i) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(Q(name(i)), &got), 0);
    EXPECT_EQ(got, Pattern(5000, i)) << name(i);
  }
  EXPECT_GE(LliteSum("open_intents", "used") - used0, 10u);
  // Each lookup-and-open reads the file's inode more than once: the MDS decodes it once.
  EXPECT_GE(InodeCacheHits() - hits0, 12u) << "mdt.*.inode_cache";
  EXPECT_EQ(LliteSum("open_intents", "wasted"), wasted0);

  const ino_t looked_at = Stat(Q(name(12))).st_ino;
  for (int i = 13; i < 30; ++i) EXPECT_EQ(Stat(Q(name(i))).st_size, 5000) << name(i);
  for (int i = 0; i < 500 && LliteSum("open_intents", "pending") > 0; ++i) usleep(10'000);
  EXPECT_EQ(LliteSum("open_intents", "pending"), 0u) << "closed once their time was up";
  const uint64_t wasted = LliteSum("open_intents", "wasted") - wasted0;
  EXPECT_GE(wasted, 1u);
  EXPECT_LE(wasted, 7u) << "the scan stops asking for opens";

  ASSERT_EQ(unlink(P(name(12)).c_str()), 0) << strerror(errno);
  client::Metadata md(g_client);
  Status gone;
  for (int i = 0; i < 500 && gone.ok(); ++i) {
    gone = md.Getattr(RootCred(), looked_at).status();
    if (gone.ok()) usleep(10'000);
  }
  EXPECT_EQ(gone.code(), Code::kNoEnt) << "no open of the scan's lookup kept it";
}

// Data-on-MDT files (their first 64 KiB on the MDS) read by mount 1: the open each lookup
// brings carries the file's bytes (read-on-open), as an OPEN's reply would, so that the read
// asks the MDS for nothing more.
TEST_F(LeaseTest, TheOpenALookupBroughtCarriesADataOnMdtFilesBytes) {
  ASSERT_EQ(mkdir(P("od").c_str(), 0755), 0) << strerror(errno);
  CommandResult set = RunCommand(
      {BinPath("lfs"), "setstripe", "-E", "64K", "-L", "mdt", "-E", "-1", "-c", "1", P("od")});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  auto name = [](int i) { return "od/f" + std::to_string(i); };
  for (int i = 0; i < 12; ++i) ASSERT_EQ(WriteFile(P(name(i)), Pattern(3000 + i, i)), 0);
  const uint64_t used0 = LliteSum("open_intents", "used");
  const uint64_t dom_reads0 = MdStat("read");
  for (int i = 0; i < 12; ++i) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(Q(name(i)), &got), 0);
    EXPECT_EQ(got, Pattern(3000 + i, i)) << name(i);
  }
  EXPECT_GE(LliteSum("open_intents", "used") - used0, 10u);
  EXPECT_EQ(MdStat("read"), dom_reads0) << "every read was served from its open's bytes";
}

// A mount that keeps writing one file while it reads others (a checkpoint saved during
// training) keeps the opens its lookups bring for the files it only reads: its own changes
// drop only the opens of the files they change.
TEST_F(LeaseTest, WritingOneFileKeepsTheOpensOfTheFilesOnlyRead) {
  ASSERT_EQ(mkdir(P("ow").c_str(), 0755), 0) << strerror(errno);
  auto name = [](int i) { return "ow/f" + std::to_string(i); };
  for (int i = 0; i < 14; ++i) ASSERT_EQ(WriteFile(P(name(i)), Pattern(2000, i)), 0);
  const uint64_t used0 = LliteSum("open_intents", "used");
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (WriteFile(Q("ow-log"), Pattern(100, i)) == 0) written.fetch_add(1);
    }
  });
  for (int i = 0; i < 14; ++i) {
    std::vector<uint8_t> got;
    EXPECT_EQ(ReadFile(Q(name(i)), &got), 0);
    EXPECT_EQ(got, Pattern(2000, i)) << name(i);
  }
  stop.store(true);
  writer.join();
  EXPECT_GT(written.load(), 0);
  EXPECT_GE(LliteSum("open_intents", "used") - used0, 12u);
}

// An open that a lookup brought is dropped when another mount changes the file before the
// kernel's OPEN has taken it: that OPEN then asks the MDS and sees the change
// (close-to-open), here an append made in between.
TEST_F(LeaseTest, AnOpenALookupBroughtGoesWhenAnotherMountChangesTheFile) {
  ASSERT_EQ(mkdir(P("oc").c_str(), 0755), 0) << strerror(errno);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(WriteFile(P("oc/" + Unnumbered(i)), Pattern(1000, i)), 0);
  }
  ASSERT_EQ(WriteFile(P("oc/target"), Pattern(1000, 7)), 0);
  ASSERT_EQ(WriteFile(P("oc/own"), Pattern(1000, 9)), 0);
  for (int i = 0; i < 4; ++i) {  // the directory's lookups now bring opens
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(Q("oc/" + Unnumbered(i)), &got), 0);
  }
  const uint64_t used0 = LliteSum("open_intents", "used");
  const uint64_t wasted0 = LliteSum("open_intents", "wasted");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(Stat(Q("oc/target")).st_size, 1000);
  EXPECT_EQ(LliteSum("open_intents", "pending"), 1u) << "the stat's lookup brought an open";

  const auto more = Pattern(500, 8);
  const int fd = open(P("oc/target").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0) << strerror(errno);
  ASSERT_EQ(write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
  ASSERT_EQ(close(fd), 0);
  // The write-open revoked mount 1's lease, and the revocation closed the pre-open: at once,
  // long before it would have expired (open_intent_ms, 1 s).
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(800)) {
    EXPECT_EQ(LliteSum("open_intents", "pending"), 0u);
    EXPECT_EQ(LliteSum("open_intents", "wasted"), wasted0 + 1);
  }

  std::vector<uint8_t> want = Pattern(1000, 7), got;
  want.insert(want.end(), more.begin(), more.end());
  ASSERT_EQ(ReadFile(Q("oc/target"), &got), 0);
  EXPECT_EQ(got, want) << "the open must see the append";
  EXPECT_EQ(LliteSum("open_intents", "used"), used0) << "the open asked the MDS";
  EXPECT_EQ(LliteSum("open_intents", "wasted"), wasted0 + 1);

  // The same for a change by the mount itself, which the MDS revokes nothing of: a truncate
  // (after two reads that bring the directory's score back up).
  for (int i = 4; i < 6; ++i) ASSERT_EQ(ReadFile(Q("oc/" + Unnumbered(i)), &got), 0);
  const uint64_t wasted1 = LliteSum("open_intents", "wasted");
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(Stat(Q("oc/own")).st_size, 1000);
  ASSERT_EQ(LliteSum("open_intents", "pending"), 1u);
  ASSERT_EQ(truncate(Q("oc/own").c_str(), 10), 0) << strerror(errno);
  if (std::chrono::steady_clock::now() - t1 < std::chrono::milliseconds(800)) {
    EXPECT_EQ(LliteSum("open_intents", "wasted"), wasted1 + 1) << "closed by the truncate";
  }
  ASSERT_EQ(ReadFile(Q("oc/own"), &got), 0);
  want = Pattern(1000, 9);
  want.resize(10);
  EXPECT_EQ(got, want);
}

// A directory of numbered samples read in order by 4 workers of mount 1: after the first
// lookups, the names ahead of them are looked up (and opened) in batches (statahead.h), so
// that most lookups cost no MDS request. What mount 0 changes among the names already asked
// ahead (an unlink, a rename, a rewrite) is seen by mount 1 at once: the revocations drop
// what it kept.
TEST_F(LeaseTest, NumberedSamplesAreLookedUpAheadAndChangesSinceAreSeen) {
  ASSERT_EQ(mkdir(P("sa").c_str(), 0755), 0) << strerror(errno);
  auto name = [](int i) { return "sa/img" + std::to_string(i) + ".jpg"; };
  constexpr int kFiles = 80;
  for (int i = 0; i < kFiles; ++i) ASSERT_EQ(WriteFile(P(name(i)), Pattern(3000, i)), 0);
  const uint64_t hits0 = LliteSum("statahead_stats", "hit_total");
  const uint64_t ahead0 = LliteSum("statahead_stats", "requests");
  const uint64_t used0 = LliteSum("open_intents", "used");
  std::atomic<int> bad{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      for (int i = w; i < 40; i += 4) {
        std::vector<uint8_t> got;
        if (ReadFile(Q(name(i)), &got) != 0 || got != Pattern(3000, i)) bad.fetch_add(1);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(bad.load(), 0);
  const uint64_t hits = LliteSum("statahead_stats", "hit_total") - hits0;
  EXPECT_GE(hits, 28u) << "lookups answered from the names asked ahead";
  EXPECT_LE(LliteSum("statahead_stats", "requests") - ahead0, 12u) << "in a few requests";
  // The names asked ahead were opened with their lookups once the directory's reads had
  // shown that opens follow (pre_opens.h): most reads took such an open.
  EXPECT_GE(LliteSum("open_intents", "used") - used0, 24u);

  // img45-47 were asked ahead of the readers, and are kept. Mount 0 changes them: its
  // unlink revokes mount 1's leases on the directory, and what mount 1 kept goes.
  ASSERT_GE(LliteSum("statahead_stats", "cached"), 8u);
  ASSERT_EQ(unlink(P(name(45)).c_str()), 0) << strerror(errno);
  EXPECT_EQ(LliteSum("statahead_stats", "cached"), 0u);
  ASSERT_EQ(rename(P(name(46)).c_str(), P("sa/moved").c_str()), 0) << strerror(errno);
  ASSERT_EQ(WriteFile(P(name(47)), Pattern(700, 99)), 0);
  for (int i = 40; i < 56; ++i) {
    std::vector<uint8_t> got;
    if (i == 45 || i == 46) {
      EXPECT_EQ(ReadFile(Q(name(i)), &got), ENOENT) << name(i);
    } else {
      ASSERT_EQ(ReadFile(Q(name(i)), &got), 0) << name(i);
      EXPECT_EQ(got, i == 47 ? Pattern(700, 99) : Pattern(3000, i)) << name(i);
    }
  }
  for (int i = 0; i < 500 && LliteSum("open_intents", "pending") > 0; ++i) usleep(10'000);
  EXPECT_EQ(LliteSum("open_intents", "pending"), 0u) << "opens asked ahead and never used go";

  // llite.*.statahead_max=0 stops it on a running mount (the same name and range as
  // Lustre's), and 32 brings it back.
  auto set = [](const std::string& v) {
    return RunCommand({BinPath("lctl"), "--mgs", g_cluster->mgs_nid(), "set_param",
                       "llite.leasefs-*.statahead_max=" + v});
  };
  ASSERT_EQ(set("0").exit_code, 0);
  EXPECT_NE(set("129").exit_code, 0);
  const uint64_t asked0 = LliteSum("statahead_stats", "asked");
  for (int i = 56; i < kFiles; ++i) {
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(Q(name(i)), &got), 0) << name(i);
  }
  EXPECT_EQ(LliteSum("statahead_stats", "asked"), asked0);
  ASSERT_EQ(set("32").exit_code, 0);
}

}  // namespace
}  // namespace stria::testing
