// kill -9 under load, checked byte for byte: writer processes create, write, fsync, close,
// rename and unlink striped files through a real mount while the MDS and then each OSS is
// killed with SIGKILL at random-ish moments and restarted after a short delay. The mount
// must wait and carry on: no syscall may fail. Afterwards, with every daemon killed once more
// and a fresh second mount, every acknowledged byte must be exactly right:
//   - a file whose close returned 0 has its exact size and bytes, under its final name;
//   - a file still open has every byte written before its last successful fsync, and a size
//     no smaller than that;
//   - a create (O_EXCL), rename, unlink or mkdir that returned 0 happened exactly once: the
//     directory lists exactly the names the writers expect, no more, no fewer (a resent
//     create done twice gives EEXIST, a rename or unlink done twice gives ENOENT, both fail
//     the writer).
// The writers are child processes, not threads: the test process itself must hold no file
// open in the mount while it forks daemons (see tests/harness/cluster.h). The seed is
// printed; STRIA_FAULT_SEED=N replays a schedule. Faults injected by default:
// 3 rounds x (MDS + 2 OSS) kill -9 under load, then 3 more (every daemon) before the check.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <new>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/harness/client_util.h"
#include "tests/harness/cluster.h"
#include "tests/harness/test_util.h"

namespace stria::testing {
namespace {

constexpr uint64_t kStripe = 64 << 10;
constexpr int kWriters = 4;
constexpr int kRounds = 3;  // each round kills the MDS and then each OSS once

// What one writer knows about one file it created.
struct FileRecord {
  std::string name;      // current name (relative to the mount)
  uint64_t seed = 0;     // content = Pattern(size, seed)
  uint64_t size = 0;     // bytes the writer meant to write
  uint64_t written = 0;  // bytes whose write(2) returned
  uint64_t synced = 0;   // bytes written before the last successful fsync
  bool closed = false;   // close returned 0: all `size` bytes acknowledged
  bool unlinked = false;
  int fd = -1;           // still open (the writer was stopped in the middle)
};

struct WriterState {
  std::vector<FileRecord> files;
  std::set<std::string> dirs;  // mkdir'ed names
  std::string error;           // the first failed syscall
  int ops = 0;
  int stalls = 0;              // syscalls that waited > 150 ms (a daemon was down)
};

// Flags shared with the writer processes (MAP_SHARED memory).
struct Shared {
  std::atomic<int> stop{0};       // writers: finish the current file or leave it open
  std::atomic<int> close_now{0};  // writers: close the files left open, report, exit
};

// A writer's state as text, one record a line ("F name seed size written synced closed
// unlinked open", "D dir", "O ops", "E error"), written by the child, read by the test.
std::string Encode(const WriterState& ws) {
  std::ostringstream out;
  for (const auto& f : ws.files) {
    out << "F " << f.name << " " << f.seed << " " << f.size << " " << f.written << " "
        << f.synced << " " << f.closed << " " << f.unlinked << " " << (f.fd >= 0) << "\n";
  }
  for (const auto& d : ws.dirs) out << "D " << d << "\n";
  out << "O " << ws.ops << "\n";
  out << "S " << ws.stalls << "\n";
  if (!ws.error.empty()) out << "E " << ws.error << "\n";
  return out.str();
}

WriterState Decode(const std::string& text) {
  WriterState ws;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string tag;
    ls >> tag;
    if (tag == "F") {
      FileRecord f;
      int open = 0;
      ls >> f.name >> f.seed >> f.size >> f.written >> f.synced >> f.closed >> f.unlinked >> open;
      f.fd = open ? 0 : -1;  // "still open" (the descriptor lives in the writer)
      ws.files.push_back(f);
    } else if (tag == "D") {
      std::string d;
      ls >> d;
      ws.dirs.insert(d);
    } else if (tag == "O") {
      ls >> ws.ops;
    } else if (tag == "S") {
      ls >> ws.stalls;
    } else if (tag == "E") {
      ws.error = line.substr(2);
    }
  }
  return ws;
}

// Writes `text` to `path` atomically (the reader polls for the final name).
void WriteAtomically(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << text;
  }
  rename((path + ".tmp").c_str(), path.c_str());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Errno(const std::string& what, int e) { return what + ": " + strerror(e); }

class Kill9LoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveFuse()) GTEST_SKIP() << "no /dev/fuse on this machine";
    ClusterOptions o;
    o.tag = "kill9load";
    o.fsname = "k9fs";
    o.num_mounts = 2;
    cluster_ = std::make_unique<Cluster>(o);
    Status st = cluster_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    auto cl = ConnectClient(*cluster_);
    ASSERT_TRUE(cl.ok()) << cl.status().ToString();
    for (int count : {2, 4}) {
      const std::string d = "/d" + std::to_string(count);
      ASSERT_EQ(mkdir((cluster_->mount_point() + d).c_str(), 0755), 0) << strerror(errno);
      st = SetDirLayout(**cl, d, Raid0(count, kStripe));
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
    const char* env = getenv("STRIA_FAULT_SEED");
    seed_ = env && *env ? strtoull(env, nullptr, 10) : std::random_device{}();
    fprintf(stderr, "kill9 load: seed %llu (STRIA_FAULT_SEED to replay)\n",
            static_cast<unsigned long long>(seed_));
    void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
    ASSERT_NE(mem, MAP_FAILED);
    shared_ = new (mem) Shared();
  }

  std::string M(int m, const std::string& rel) const {
    return cluster_->mount_point(m) + "/" + rel;
  }

  // One writer: files in d2 or d4 of random sizes, written sequentially in random chunks
  // with fsync every few chunks, closed, then maybe renamed (a chain) or unlinked.
  void Writer(int t, WriterState* ws) {
    std::mt19937_64 rng(seed_ * 131 + t);
    // Counts a stall when the syscall just made took over 150 ms.
    auto t_last = std::chrono::steady_clock::now();
    auto lap = [&] {
      auto now = std::chrono::steady_clock::now();
      if (now - t_last > std::chrono::milliseconds(150)) ++ws->stalls;
      t_last = now;
    };
    const std::string dir = (t % 2 == 0) ? "d4" : "d2";
    for (int k = 0; !shared_->stop.load(); ++k) {
      FileRecord f;
      f.name = dir + "/w" + std::to_string(t) + "-" + std::to_string(k);
      f.seed = rng();
      f.size = 1 + rng() % (3 * kStripe * 4 + 12345);
      const auto data = Pattern(f.size, f.seed);
      f.fd = open(M(0, f.name).c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (f.fd < 0) {
        ws->error = Errno("create " + f.name, errno);
        return;
      }
      ws->files.push_back(f);
      FileRecord& r = ws->files.back();
      int chunks_since_sync = 0;
      while (r.written < r.size) {
        if (shared_->stop.load() && k % 2 == 1) return;  // leave this one open, partly synced
        const uint64_t n = std::min<uint64_t>(r.size - r.written, 1 + rng() % (200 << 10));
        lap();
        int e = PWriteAll(r.fd, data.data() + r.written, n, r.written);
        lap();
        if (e != 0) {
          ws->error = Errno("write " + r.name + " at " + std::to_string(r.written), e);
          return;
        }
        r.written += n;
        ++ws->ops;
        if (++chunks_since_sync >= 3 || rng() % 4 == 0) {
          const int rc = fsync(r.fd);
          lap();
          if (rc != 0) {
            ws->error = Errno("fsync " + r.name, errno);
            return;
          }
          r.synced = r.written;
          chunks_since_sync = 0;
        }
      }
      const int fd = r.fd;
      r.fd = -1;
      lap();
      const int crc = close(fd);
      lap();
      if (crc != 0) {
        ws->error = Errno("close " + r.name, errno);
        return;
      }
      r.closed = true;
      r.synced = r.size;
      // Namespace operations on earlier files: a rename chain step, an unlink, a mkdir.
      const uint64_t dice = rng() % 6;
      if (dice <= 1) {
        const std::string to = dir + "/r" + std::to_string(t) + "-" + std::to_string(k) + "-" +
                               std::to_string(dice);
        if (rename(M(0, r.name).c_str(), M(0, to).c_str()) != 0) {
          ws->error = Errno("rename " + r.name + " -> " + to, errno);
          return;
        }
        r.name = to;
        ++ws->ops;
      }
      if (dice == 2 && ws->files.size() > 1) {
        FileRecord& old = ws->files[rng() % (ws->files.size() - 1)];
        if (!old.unlinked && old.closed) {
          const std::string to = old.name + "x";
          if (rename(M(0, old.name).c_str(), M(0, to).c_str()) != 0) {
            ws->error = Errno("rename " + old.name + " -> " + to, errno);
            return;
          }
          old.name = to;
          ++ws->ops;
        }
      }
      if (dice == 3 && ws->files.size() > 1) {
        FileRecord& old = ws->files[rng() % (ws->files.size() - 1)];
        if (!old.unlinked && old.closed) {
          if (unlink(M(0, old.name).c_str()) != 0) {
            ws->error = Errno("unlink " + old.name, errno);
            return;
          }
          old.unlinked = true;
          ++ws->ops;
        }
      }
      if (dice == 4) {
        const std::string d = dir + "/m" + std::to_string(t) + "-" + std::to_string(k);
        if (mkdir(M(0, d).c_str(), 0755) != 0) {
          ws->error = Errno("mkdir " + d, errno);
          return;
        }
        ws->dirs.insert(d);
        ++ws->ops;
      }
    }
  }

  // The bytes of `rel` on mount m at [0, n) equal Pattern's, and its size is in [lo, hi].
  // The size comes from fstat of a fresh open: close-to-open (docs/consistency.md) promises
  // another mount's bytes to an open that follows their close, while a bare stat may answer
  // from the kernel's 1 s attribute cache (this mount stat'ed the file moments ago, before
  // the writer closed it).
  void CheckFile(int m, const FileRecord& f, uint64_t lo, uint64_t hi, uint64_t n) {
    struct stat st {};
    const int fd = open(M(m, f.name).c_str(), O_RDONLY);
    ASSERT_GE(fd, 0) << f.name << ": " << strerror(errno);
    const int rc = fstat(fd, &st);
    close(fd);
    ASSERT_EQ(rc, 0) << f.name << ": " << strerror(errno);
    EXPECT_GE(static_cast<uint64_t>(st.st_size), lo) << f.name << " lost acknowledged bytes";
    EXPECT_LE(static_cast<uint64_t>(st.st_size), hi) << f.name << " is longer than written";
    std::vector<uint8_t> got;
    ASSERT_EQ(ReadFile(M(m, f.name), &got), 0) << f.name;
    const auto want = Pattern(f.size, f.seed);
    ASSERT_GE(got.size(), n) << f.name;
    for (uint64_t i = 0; i < n; ++i) {
      if (got[i] != want[i]) {
        ADD_FAILURE() << f.name << ": acknowledged byte " << i << " of " << n << " differs";
        break;
      }
    }
  }

  // Forks writer t: it writes until told to stop, reports its state in writerT.state, waits
  // for close_now, closes what it left open and reports each close(2) result in
  // writerT.closed ("name errno" lines), and exits.
  pid_t StartWriter(int t) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    WriterState ws;
    Writer(t, &ws);
    WriteAtomically(StateFile(t, "state"), Encode(ws));
    while (!shared_->close_now.load()) usleep(10'000);
    std::string closed;
    for (auto& f : ws.files) {
      if (f.fd < 0) continue;
      closed += f.name + " " + std::to_string(close(f.fd) == 0 ? 0 : errno) + "\n";
    }
    WriteAtomically(StateFile(t, "closed"), closed);
    _exit(0);
  }

  std::string StateFile(int t, const std::string& what) const {
    return cluster_->dir() + "/writer" + std::to_string(t) + "." + what;
  }

  // Waits up to `ms` for writer t's `what` file and decodes it.
  bool WaitForFile(int t, const std::string& what, int ms, std::string* text) {
    for (int waited = 0; waited < ms; waited += 20) {
      if (access(StateFile(t, what).c_str(), F_OK) == 0) {
        *text = ReadAll(StateFile(t, what));
        return true;
      }
      usleep(20'000);
    }
    return false;
  }

  void TearDown() override {
    // Writers a failed test left behind hold files open in the mount.
    for (pid_t p : writer_pids_) {
      kill(p, SIGKILL);
      int st;
      waitpid(p, &st, 0);
    }
    writer_pids_.clear();
    if (shared_ != nullptr) munmap(shared_, sizeof(Shared));
    shared_ = nullptr;
  }

  std::unique_ptr<Cluster> cluster_;
  std::vector<pid_t> writer_pids_;
  Shared* shared_ = nullptr;
  uint64_t seed_ = 0;
};

TEST_F(Kill9LoadTest, AcknowledgedDataAndNamespaceOpsSurviveKill9OfEveryDaemon) {
  for (int t = 0; t < kWriters; ++t) {
    pid_t pid = StartWriter(t);
    ASSERT_GT(pid, 0) << strerror(errno);
    writer_pids_.push_back(pid);
  }

  std::mt19937_64 rng(seed_);
  auto sleep_ms = [](uint64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  int faults = 0;
  Status fault_error;
  for (int round = 0; round < kRounds && fault_error.ok(); ++round) {
    for (int target = -1; target < cluster_->options().num_oss && fault_error.ok(); ++target) {
      sleep_ms(400 + rng() % 1200);  // let the writers get going / be mid-RPC
      Status st = target < 0 ? cluster_->KillMds(SIGKILL) : cluster_->KillOss(target, SIGKILL);
      if (st.ok()) ++faults;
      sleep_ms(200 + rng() % 1300);  // down while the writers wait
      if (st.ok()) st = target < 0 ? cluster_->StartMds() : cluster_->StartOss(target);
      if (!st.ok()) fault_error = st;
    }
  }
  sleep_ms(500);
  shared_->stop = 1;
  std::vector<WriterState> states(kWriters);
  for (int t = 0; t < kWriters; ++t) {
    std::string text;
    ASSERT_TRUE(WaitForFile(t, "state", 120'000, &text)) << "writer " << t << " never stopped";
    states[t] = Decode(text);
  }
  ASSERT_TRUE(fault_error.ok()) << fault_error.ToString();
  int ops = 0, stalls = 0;
  for (int t = 0; t < kWriters; ++t) {
    EXPECT_EQ(states[t].error, "") << "writer " << t << " saw a failure during the faults";
    ops += states[t].ops;
    stalls += states[t].stalls;
  }
  // The faults must have hit I/O in flight, or the test proved nothing.
  EXPECT_GT(stalls, 0) << "no writer syscall ever waited for a killed daemon";

  // Kill every daemon once more (nothing acknowledged may be only in memory), then look
  // through a fresh mount.
  Status st = cluster_->RestartAll(SIGKILL);
  ASSERT_TRUE(st.ok()) << st.ToString();
  faults += 1 + cluster_->options().num_oss;
  st = cluster_->Mount(1);
  ASSERT_TRUE(st.ok()) << st.ToString();
  fprintf(stderr,
          "kill9 load: %d kill -9 faults, %d acknowledged writes/fsyncs/namespace ops, %d "
          "syscalls stalled > 150 ms by a fault\n",
          faults, ops, stalls);
  RecordProperty("faults", faults);

  std::map<std::string, std::set<std::string>> expect;  // dir -> names
  int closed = 0, open_files = 0, unlinked = 0;
  for (const auto& ws : states) {
    for (const auto& f : ws.files) {
      const std::string dir = f.name.substr(0, f.name.find('/'));
      const std::string base = f.name.substr(f.name.find('/') + 1);
      expect[dir];
      if (f.unlinked) {
        ++unlinked;
        continue;
      }
      expect[dir].insert(base);
      if (f.closed) {
        ++closed;
        CheckFile(1, f, f.size, f.size, f.size);
      } else {
        ++open_files;
        CheckFile(1, f, f.synced, f.written, f.synced);
      }
    }
    for (const auto& d : ws.dirs) {
      expect[d.substr(0, d.find('/'))].insert(d.substr(d.find('/') + 1));
    }
  }
  EXPECT_GT(closed, 0);
  for (const auto& [dir, names] : expect) {
    std::set<std::string> got;
    DIR* dp = opendir(M(1, dir).c_str());
    ASSERT_NE(dp, nullptr) << dir;
    while (dirent* e = readdir(dp)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") got.insert(n);
    }
    closedir(dp);
    EXPECT_EQ(got, names) << "the entries of " << dir
                          << " are not exactly those created, renamed and not unlinked";
  }

  // The files left open: their close must succeed after the restarts, and then all their
  // bytes are acknowledged and visible on the other mount (close-to-open).
  shared_->close_now = 1;
  for (int t = 0; t < kWriters; ++t) {
    std::string text;
    ASSERT_TRUE(WaitForFile(t, "closed", 120'000, &text)) << "writer " << t << " never closed";
    std::map<std::string, int> result;
    std::istringstream in(text);
    std::string name;
    int err = 0;
    while (in >> name >> err) result[name] = err;
    for (auto& f : states[t].files) {
      if (f.fd < 0) continue;
      ASSERT_EQ(result.count(f.name), 1u) << f.name;
      EXPECT_EQ(result[f.name], 0) << "close " << f.name << ": " << strerror(result[f.name]);
      CheckFile(1, f, f.written, f.written, f.written);
    }
  }
  for (pid_t p : writer_pids_) {
    int st = 0;
    waitpid(p, &st, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "writer exit status " << st;
  }
  writer_pids_.clear();
  fprintf(stderr, "kill9 load: checked %d closed files, %d open files, %d unlinked\n", closed,
          open_files, unlinked);
}

}  // namespace
}  // namespace stria::testing
