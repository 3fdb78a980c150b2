// bigdir: one very large directory (Lustre's "million files in one directory" check).
//
//   bigdir --mgs NID --mount MNT [--files N] [--threads T] [--name DIR] [--create-only
//          [--lookups]]
//
// Creates DIR under the filesystem root (or uses it when it exists, e.g. made by `mkdir` and
// given a default layout by `lfs setstripe`) and N empty files in it with T threads through
// libstria (MDS creates, as many clients would), then, through the mount MNT: lists DIR with
// readdir(3) while T more threads keep creating in it, checking that every file that existed
// before the listing appears exactly once and nothing else appears twice; and stats 20,000
// random names. The create line also says how many MDS requests carried the creates (the
// threads' creates go in batches, client/entry_batches.h). Prints one line per phase and
// "RESULT create=<ops/s> readdir=<entries/s> stat=<ops/s>". Exit status 1 on any failure or
// inconsistency. The directory is left in place (remove it with `rm -r`, or wipe the test cluster).
#include <dirent.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "client/client.h"
#include "client/entry_batches.h"
#include "client/metadata.h"
#include "lnet/nid.h"

namespace {

using Clock = std::chrono::steady_clock;
using stria::client::Client;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

stria::Status Create(Client& c, uint64_t parent, const std::string& name, uint32_t mode,
                     uint64_t* ino = nullptr) {
  stria::client::Metadata::CreateArgs args;
  args.parent = parent;
  args.name = name;
  args.mode = mode;
  STRIA_ASSIGN_OR_RETURN(stria::proto::EntryReply rep,
                         stria::client::Metadata(&c).Create(stria::client::ProcessCredentials(), args));
  if (ino != nullptr) *ino = rep.attr().ino();
  return stria::Status::Ok();
}

// Runs op(i) for i in [begin, end) with `threads` threads; false on the first failure,
// which op reports.
template <typename Op>
bool RunRange(int begin, int end, int threads, Op op) {
  std::atomic<bool> ok{true};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = begin + t; i < end && ok.load(); i += threads) {
        if (!op(i)) ok = false;
      }
    });
  }
  for (auto& th : pool) th.join();
  return ok.load();
}

// Creates names [begin, end) with `threads` threads; false on the first failure.
bool CreateRange(Client& c, uint64_t dir, const std::string& prefix, int begin, int end,
                 int threads) {
  return RunRange(begin, end, threads, [&](int i) {
    stria::Status st = Create(c, dir, prefix + std::to_string(i), S_IFREG | 0644);
    if (!st.ok()) {
      fprintf(stderr, "bigdir: create %s%d: %s\n", prefix.c_str(), i, st.ToString().c_str());
    }
    return st.ok();
  });
}

// Looks names f0 .. f<files-1> up with `threads` threads; false on the first failure.
bool LookupRange(Client& c, uint64_t dir, int files, int threads) {
  const stria::proto::Credentials cred = stria::client::ProcessCredentials();
  return RunRange(0, files, threads, [&](int i) {
    auto rep = stria::client::Metadata(&c).Lookup(cred, dir, "f" + std::to_string(i));
    if (!rep.ok()) {
      fprintf(stderr, "bigdir: lookup f%d: %s\n", i, rep.status().ToString().c_str());
    }
    return rep.ok();
  });
}

// Times run() over `files` names by `threads` threads and prints its line with the MDS
// requests that carried them (`batches`: the client's queue of that kind); the seconds
// taken, or a negative number when run() failed.
template <typename Batches, typename Run>
double Phase(const char* verb, const char* noun, const Batches& batches, int files, int threads,
             Run run) {
  const typename Batches::Counters before = batches.counters();
  const auto t0 = Clock::now();
  if (!run()) return -1;
  const double s = Seconds(t0);
  const typename Batches::Counters after = batches.counters();
  printf("%-7s %d files, %d threads: %.1f s, %.0f ops/s (%llu MDS requests, %llu %s in batches)\n",
         verb, files, threads, s, files / s,
         static_cast<unsigned long long>(after.requests - before.requests),
         static_cast<unsigned long long>(after.batched - before.batched), noun);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bigdir: create, list and stat one very large directory"};
  std::string mgs, mount, name = "bigdir";
  int files = 1'000'000, threads = 16;
  app.add_option("--mgs", mgs, "MGS NID (e.g. 127.0.0.1@tcp:9880)")->required();
  app.add_option("--mount", mount, "where the filesystem is mounted")->required();
  app.add_option("--files,-n", files, "files in the directory")->check(CLI::Range(1, 100'000'000));
  app.add_option("--threads,-t", threads, "creating threads")->check(CLI::Range(1, 256));
  app.add_option("--name", name, "the directory, under the filesystem root");
  bool create_only = false, lookups = false;
  app.add_flag("--create-only", create_only,
               "only the creates: print RESULT create=<ops/s> and stop (bench/run-bench)");
  app.add_flag("--lookups", lookups,
               "with --create-only: then look every name up with the same threads through "
               "libstria, and print RESULT create=<ops/s> lookup=<ops/s>");
  CLI11_PARSE(app, argc, argv);

  stria::client::ClientConfig cfg;
  auto nids = stria::lnet::ParseNidList(mgs);
  if (!nids.ok()) return fprintf(stderr, "bigdir: --mgs: %s\n", nids.status().ToString().c_str()), 1;
  cfg.mgs_nids = *nids;
  cfg.io_threads = 2;
  auto client = Client::Connect(cfg);
  if (!client.ok()) return fprintf(stderr, "bigdir: %s\n", client.status().ToString().c_str()), 1;
  Client& c = **client;
  uint64_t dir = 0;
  if (stria::Status st = Create(c, 1, name, S_IFDIR | 0755, &dir); !st.ok()) {
    auto found = st.code() == stria::Code::kExist
                     ? stria::client::Metadata(&c).Lookup(stria::client::ProcessCredentials(), 1,
                                                          name)
                     : stria::Result<stria::proto::EntryReply>(st);
    if (!found.ok() || !S_ISDIR(found->attr().mode())) {
      return fprintf(stderr, "bigdir: mkdir %s: %s\n", name.c_str(), st.ToString().c_str()), 1;
    }
    dir = found->attr().ino();
  }

  const double create_s = Phase("create", "creates", c.create_batches(), files, threads,
                                [&] { return CreateRange(c, dir, "f", 0, files, threads); });
  if (create_s < 0) return 1;
  if (create_only && lookups) {
    const double lookup_s = Phase("lookup", "lookups", c.lookup_batches(), files, threads,
                                  [&] { return LookupRange(c, dir, files, threads); });
    if (lookup_s < 0) return 1;
    printf("RESULT create=%.0f lookup=%.0f\n", files / create_s, files / lookup_s);
    return 0;
  }
  if (create_only) {
    printf("RESULT create=%.0f\n", files / create_s);
    return 0;
  }

  // List through the mount while other threads keep creating "g" names.
  std::atomic<bool> listing_done{false};
  std::atomic<int> created_during{0};
  std::thread creator([&] {
    for (int i = 0; !listing_done.load(); ++i) {
      if (!Create(c, dir, "g" + std::to_string(i), S_IFREG | 0644).ok()) break;
      created_during.fetch_add(1);
    }
  });
  auto t0 = Clock::now();
  const std::string path = mount + "/" + name;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return perror(path.c_str()), 1;
  std::unordered_set<std::string> seen;
  seen.reserve(static_cast<size_t>(files) * 2);
  size_t entries = 0, old_seen = 0;
  bool duplicate = false;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    ++entries;
    if (!seen.insert(n).second) {
      fprintf(stderr, "bigdir: %s listed twice\n", n.c_str());
      duplicate = true;
    }
    if (n[0] == 'f') ++old_seen;
  }
  closedir(d);
  const double list_s = Seconds(t0);
  listing_done = true;
  creator.join();
  printf("readdir %zu entries (%zu of the %d before, %d created meanwhile): %.1f s, %.0f/s\n",
         entries, old_seen, files, created_during.load(), list_s, entries / list_s);
  const bool complete = old_seen == static_cast<size_t>(files);
  if (!complete) fprintf(stderr, "bigdir: the listing missed %zu files\n", files - old_seen);

  std::mt19937_64 rng(42);
  const int kStats = 20'000;
  t0 = Clock::now();
  for (int i = 0; i < kStats; ++i) {
    const std::string p = path + "/f" + std::to_string(rng() % static_cast<uint64_t>(files));
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return perror(p.c_str()), 1;
  }
  const double stat_s = Seconds(t0);
  printf("stat    %d random names: %.2f s, %.0f ops/s\n", kStats, stat_s, kStats / stat_s);
  printf("RESULT create=%.0f readdir=%.0f stat=%.0f\n", files / create_s, entries / list_s,
         kStats / stat_s);
  return complete && !duplicate ? 0 : 1;
}
