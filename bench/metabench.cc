// metabench: metadata rates of a filesystem, in one directory.
//
//   metabench [--files N] [--threads T] DIR
//
// Makes DIR/metabench.<pid>/, then times N creates (open(O_CREAT|O_EXCL|O_WRONLY) + close),
// N stats (stat of each name) and N unlinks, and prints one line per phase:
//   create 20000 files 3.21 s 6230 ops/s
// and a final machine-readable line "RESULT create=<ops/s> stat=<ops/s> unlink=<ops/s>".
// Exit status 1 if any operation fails (with the errno and the file). With --threads T,
// T threads share each phase (file i goes to thread i % T), as the ranks of a job would.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace {

using stria::bench::Clock;
using stria::bench::RunPhase;
using stria::bench::Seconds;

int Fail(const char* what, const std::string& path) {
  return stria::bench::Fail("metabench", what, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"metabench: create, stat and unlink rates in one directory"};
  int files = 20000;
  std::string dir;
  app.add_option("--files,-n", files, "files to create, stat and unlink")
      ->check(CLI::Range(1, 10'000'000));
  int threads = 1;
  app.add_option("--threads,-t", threads, "threads sharing each phase")
      ->check(CLI::Range(1, 256));
  app.add_option("dir", dir, "directory on the filesystem to measure")->required();
  CLI11_PARSE(app, argc, argv);

  std::string work = dir + "/metabench." + std::to_string(getpid());
  if (mkdir(work.c_str(), 0755) != 0) return Fail("mkdir", work);
  std::vector<std::string> names;
  names.reserve(files);
  for (int i = 0; i < files; ++i) names.push_back(work + "/f" + std::to_string(i));

  auto t0 = Clock::now();
  if (!RunPhase(names, threads, [](const std::string& n) {
        int fd = open(n.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0) return Fail("create", n);
        return close(fd) != 0 ? Fail("close", n) : 0;
      })) {
    return 1;
  }
  double create_s = Seconds(t0);

  t0 = Clock::now();
  if (!RunPhase(names, threads, [](const std::string& n) {
        struct stat st;
        return stat(n.c_str(), &st) != 0 ? Fail("stat", n) : 0;
      })) {
    return 1;
  }
  double stat_s = Seconds(t0);

  t0 = Clock::now();
  if (!RunPhase(names, threads,
                [](const std::string& n) { return unlink(n.c_str()) != 0 ? Fail("unlink", n) : 0; })) {
    return 1;
  }
  double unlink_s = Seconds(t0);
  if (rmdir(work.c_str()) != 0) return Fail("rmdir", work);

  printf("create %d files %.2f s %.0f ops/s\n", files, create_s, files / create_s);
  printf("stat   %d files %.2f s %.0f ops/s\n", files, stat_s, files / stat_s);
  printf("unlink %d files %.2f s %.0f ops/s\n", files, unlink_s, files / unlink_s);
  printf("RESULT create=%.0f stat=%.0f unlink=%.0f\n", files / create_s, files / stat_s,
         files / unlink_s);
  return 0;
}
