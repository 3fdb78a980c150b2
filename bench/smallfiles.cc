// smallfiles: the small-file workload of a training set (images of ~100 KB).
//
//   smallfiles [--files N] [--size BYTES] [--threads T] [--drop-caches]
//              [--phase all|write|read] DIR
//
// Makes DIR/smallfiles.<pid>/, writes N files of BYTES each from one thread (open
// O_CREAT|O_WRONLY, one write, close), optionally drops the page cache (sync, then
// /proc/sys/vm/drop_caches, root only), then reads every file back with T threads (open, read
// to EOF, close) and checks each file's length and first and last bytes. Prints one line
// per phase and a final machine-readable "RESULT write=<files/s> read=<files/s>". The files
// are removed afterwards (not timed). Exit status 1 if any operation fails or reads wrong.
// --phase write writes DIR/smallfiles.set/; --phase read (same --files and --size) reads it
// back; both keep the files (the caller removes them), so a caller can measure between and
// after the phases (the RPCs a read costs). Each prints only its own figure in RESULT.
// --shuffled (with --drop-caches) then drops the page cache again and reads every file once
// more in a random order (a DataLoader with shuffle=True: no two consecutive reads of a
// thread are neighbours), adding "shuffled=<files/s>" to RESULT. The first read goes in
// the files' order, thread t taking files t, t+T, t+2T...: the workers of a DataLoader
// that reads its samples in order.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.h"

namespace {

using stria::bench::Clock;
using stria::bench::RunPhase;
using stria::bench::Seconds;

int Fail(const char* what, const std::string& path) {
  return stria::bench::Fail("smallfiles", what, path);
}

// The byte at offset `off` of file `path` (distinct files and offsets differ).
uint8_t Pattern(const std::string& path, size_t off) {
  return static_cast<uint8_t>(std::hash<std::string>{}(path) + off * 131);
}

bool DropCaches() {
  sync();
  const int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
  if (fd < 0) return false;
  const bool ok = write(fd, "3", 1) == 1;
  close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"smallfiles: write many small files from one thread, read them with several"};
  int files = 10000;
  size_t size = 100'000;
  int threads = 8;
  bool drop = false;
  std::string phase = "all";
  std::string dir;
  app.add_option("--files,-n", files, "files to write and read")->check(CLI::Range(1, 10'000'000));
  app.add_option("--size,-s", size, "bytes per file")->check(CLI::Range(size_t{1}, size_t{1} << 30));
  app.add_option("--threads,-t", threads, "reader threads")->check(CLI::Range(1, 256));
  app.add_flag("--drop-caches", drop, "drop the page cache between writing and reading (root)");
  app.add_option("--phase", phase, "all, or only write (keeps the files) or read (removes them)")
      ->check(CLI::IsMember({"all", "write", "read"}));
  bool shuffled = false;
  app.add_flag("--shuffled", shuffled,
               "then drop the page cache again and read every file in a random order")
      ->needs("--drop-caches");
  app.add_option("dir", dir, "directory on the filesystem to measure")->required();
  CLI11_PARSE(app, argc, argv);

  const bool do_write = phase != "read", do_read = phase != "write";
  const std::string work =
      dir + (phase == "all" ? "/smallfiles." + std::to_string(getpid()) : "/smallfiles.set");
  if (do_write && mkdir(work.c_str(), 0755) != 0) return Fail("mkdir", work);
  std::vector<std::string> names;
  names.reserve(files);
  for (int i = 0; i < files; ++i) names.push_back(work + "/img" + std::to_string(i) + ".jpg");

  std::vector<uint8_t> data(size);
  auto t0 = Clock::now();
  if (do_write && !RunPhase(names, 1, [&](const std::string& n) {
        data.front() = Pattern(n, 0);
        data.back() = Pattern(n, size - 1);
        const int fd = open(n.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0) return Fail("create", n);
        if (write(fd, data.data(), size) != static_cast<ssize_t>(size)) {
          close(fd);
          return Fail("write", n);
        }
        return close(fd) != 0 ? Fail("close", n) : 0;
      })) {
    return 1;
  }
  const double write_s = Seconds(t0);
  if (!do_read) {
    printf("write %d files of %zu bytes, 1 thread: %.2f s %.0f files/s\n", files, size, write_s,
           files / write_s);
    printf("RESULT write=%.0f\n", files / write_s);
    return 0;
  }

  if (drop && !DropCaches()) {
    fprintf(stderr, "smallfiles: cannot drop the page cache (not root?)\n");
    return 1;
  }

  auto read_one = [size](const std::string& n) {
    thread_local std::vector<uint8_t> buf;
    buf.resize(size + 4096);
    const int fd = open(n.c_str(), O_RDONLY);
    if (fd < 0) return Fail("open", n);
    size_t got = 0;
    for (;;) {
      const ssize_t r = read(fd, buf.data() + got, buf.size() - got);
      if (r < 0) {
        close(fd);
        return Fail("read", n);
      }
      got += static_cast<size_t>(r);
      if (r == 0 || got == buf.size()) break;
    }
    close(fd);
    if (got != size || buf[0] != Pattern(n, 0) || buf[size - 1] != Pattern(n, size - 1)) {
      fprintf(stderr, "smallfiles: %s read back %zu bytes, or the wrong bytes\n", n.c_str(), got);
      return 1;
    }
    return 0;
  };
  t0 = Clock::now();
  if (!RunPhase(names, threads, read_one)) return 1;
  const double read_s = Seconds(t0);
  double shuffled_s = 0;
  if (shuffled) {
    std::vector<std::string> order = names;
    std::shuffle(order.begin(), order.end(), std::mt19937_64(12345));
    if (!DropCaches()) {
      fprintf(stderr, "smallfiles: cannot drop the page cache (not root?)\n");
      return 1;
    }
    t0 = Clock::now();
    if (!RunPhase(order, threads, read_one)) return 1;
    shuffled_s = Seconds(t0);
  }

  if (do_write) {
    RunPhase(names, 1, [](const std::string& n) { return unlink(n.c_str()) != 0 ? Fail("unlink", n) : 0; });
    rmdir(work.c_str());
  }

  if (do_write) {
    printf("write %d files of %zu bytes, 1 thread: %.2f s %.0f files/s\n", files, size,
           write_s, files / write_s);
  }
  printf("read  %d files, %d threads%s: %.2f s %.0f files/s\n", files, threads,
         drop ? ", page cache dropped" : "", read_s, files / read_s);
  if (shuffled) {
    printf("read  %d files, %d threads, page cache dropped, shuffled: %.2f s %.0f files/s\n", files,
           threads, shuffled_s, files / shuffled_s);
  }
  std::string result = "RESULT";
  if (do_write) result += " write=" + std::to_string(static_cast<long>(files / write_s + 0.5));
  result += " read=" + std::to_string(static_cast<long>(files / read_s + 0.5));
  if (shuffled)
    result += " shuffled=" + std::to_string(static_cast<long>(files / shuffled_s + 0.5));
  printf("%s\n", result.c_str());
  return 0;
}
