// lfs manifest create [-j N] DIR > MANIFEST
// lfs manifest verify [-j N] [-q] MANIFEST [DIR]
//
// Dataset integrity manifests: the SHA-256 of every regular file under DIR, one line per
// file, "<hex>  <path relative to DIR>", sorted by path: sha256sum's format, so
// `sha256sum -c MANIFEST` in DIR checks it too. verify reads DIR (by default the manifest's
// own directory) through the native path (libstria's NativeFs, no FUSE copy) with N files
// in parallel, shows progress on a terminal, and exits 0 when every listed file matches and
// no file is extra; otherwise it lists each MISSING, MISMATCH and EXTRA path on stdout and
// exits 1 (as sha256sum -c). The manifest itself is never extra. python/stria/manifest.py
// reads and writes the same format.
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/native.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

constexpr size_t kChunk = 4 << 20;
constexpr int kMaxJobs = 256;

struct Target {
  std::unique_ptr<client::NativeFs> fs;
  std::string root;                // DIR inside the filesystem
  std::vector<std::string> files;  // every regular file under it, relative, sorted
};

std::string Join(const std::string& a, const std::string& b) {
  return a == "/" ? "/" + b : a + "/" + b;
}

Status ListFiles(client::NativeFs& fs, const std::string& root, const std::string& rel,
                 std::vector<std::string>* out);

// Connects to the filesystem holding DIR (a path through the mount) and lists its files.
Result<Target> Connect(const std::string& dir) {
  STRIA_ASSIGN_OR_RETURN(StriaPath where, LocatePath(dir));
  client::NativeOptions o;
  o.start_session = false;  // short-lived, read-only: no lease needed
  STRIA_ASSIGN_OR_RETURN(auto fs, client::NativeFs::Connect(where.mount.source, o));
  Target t{std::move(fs), where.fs_path, {}};
  STRIA_RETURN_IF_ERROR(ListFiles(*t.fs, t.root, "", &t.files));
  return t;
}

// Every regular file under root, relative to it, sorted.
Status ListFiles(client::NativeFs& fs, const std::string& root, const std::string& rel,
                 std::vector<std::string>* out) {
  const std::string dir = rel.empty() ? root : Join(root, rel);
  STRIA_ASSIGN_OR_RETURN(std::vector<proto::DirEntry> entries, fs.Readdir(dir));
  for (const proto::DirEntry& e : entries) {
    const std::string child = rel.empty() ? e.name() : rel + "/" + e.name();
    if (e.type() == proto::FT_DIR) {
      STRIA_RETURN_IF_ERROR(ListFiles(fs, root, child, out));
    } else if (e.type() == proto::FT_REG) {
      out->push_back(child);
    }
  }
  if (rel.empty()) std::sort(out->begin(), out->end());
  return Status::Ok();
}

Result<std::string> Sha256(client::NativeFs& fs, const std::string& path,
                           std::vector<uint8_t>* buf, std::atomic<uint64_t>* bytes) {
  STRIA_ASSIGN_OR_RETURN(std::unique_ptr<client::NativeFile> f, fs.Open(path, O_RDONLY));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(),
                                                              &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Status(Code::kInternal, "SHA-256 is not available");
  }
  for (uint64_t off = 0;;) {
    STRIA_ASSIGN_OR_RETURN(size_t n, f->Pread(off, *buf));
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf->data(), n);
    off += n;
    bytes->fetch_add(n);
  }
  STRIA_RETURN_IF_ERROR(f->Close());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 15]);
  }
  return hex;
}

struct HashResult {
  std::string hex;  // empty: the file could not be read
  Status status;
};

// Hashes files (relative to root) with `jobs` threads; progress on stderr if a terminal.
std::vector<HashResult> HashAll(client::NativeFs& fs, const std::string& root,
                                const std::vector<std::string>& files, int jobs) {
  std::vector<HashResult> out(files.size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<bool> finished{false};
  const bool tty = isatty(STDERR_FILENO);
  std::thread progress;
  if (tty) {
    progress = std::thread([&] {
      while (!finished.load()) {
        std::fprintf(stderr, "\r%zu/%zu files, %.1f MiB", done.load(), files.size(),
                     static_cast<double>(bytes.load()) / (1 << 20));
        std::fflush(stderr);
        for (int i = 0; i < 5 && !finished.load(); ++i) usleep(50'000);
      }
    });
  }
  auto work = [&] {
    std::vector<uint8_t> buf(kChunk);
    for (size_t i; (i = next.fetch_add(1)) < files.size(); done.fetch_add(1)) {
      Result<std::string> h = Sha256(fs, Join(root, files[i]), &buf, &bytes);
      if (h.ok()) {
        out[i].hex = *h;
      } else {
        out[i].status = h.status();
      }
    }
  };
  std::vector<std::thread> pool;
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(files.size())));
  for (int t = 0; t < n; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  finished.store(true);
  if (progress.joinable()) {
    progress.join();
    std::fprintf(stderr, "\r%zu/%zu files, %.1f MiB\n", done.load(), files.size(),
                 static_cast<double>(bytes.load()) / (1 << 20));
  }
  return out;
}

int Create(int jobs, const std::string& dir) {
  auto t = Connect(dir);
  if (!t.ok()) {
    std::fprintf(stderr, "lfs manifest: %s: %s\n", dir.c_str(), t.status().ToString().c_str());
    return t.status().ToErrno();
  }
  const std::vector<std::string>& files = t->files;
  std::vector<HashResult> sums = HashAll(*t->fs, t->root, files, jobs);
  int rc = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!sums[i].status.ok()) {
      std::fprintf(stderr, "lfs manifest: %s: %s\n", files[i].c_str(),
                   sums[i].status.ToString().c_str());
      if (rc == 0) rc = sums[i].status.ToErrno();
      continue;
    }
    std::printf("%s  %s\n", sums[i].hex.c_str(), files[i].c_str());
  }
  return rc;
}

int Verify(int jobs, bool quiet, const std::string& manifest, std::string dir) {
  std::ifstream in(manifest);
  if (!in) {
    std::fprintf(stderr, "lfs manifest: cannot read '%s': %s\n", manifest.c_str(),
                 std::strerror(errno));
    return errno != 0 ? errno : EIO;
  }
  std::map<std::string, std::string> expected;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const size_t sep = line.find("  ");
    const bool hex = sep == 64 && line.find_first_not_of("0123456789abcdef") >= 64;
    if (!hex || line.size() <= 66) {
      std::fprintf(stderr, "lfs manifest: %s line %d is not '<sha256>  <path>'\n",
                   manifest.c_str(), n);
      return kUsageError;
    }
    std::string rel = line.substr(66);
    if (!rel.empty() && rel[0] == '*') rel.erase(0, 1);  // sha256sum's binary marker
    expected[rel] = line.substr(0, 64);
  }
  if (dir.empty()) {
    const size_t slash = manifest.rfind('/');
    dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : manifest.substr(0, slash));
  }
  auto t = Connect(dir);
  if (!t.ok()) {
    std::fprintf(stderr, "lfs manifest: %s: %s\n", dir.c_str(), t.status().ToString().c_str());
    return t.status().ToErrno();
  }
  const std::vector<std::string>& present = t->files;
  const std::set<std::string> present_set(present.begin(), present.end());
  // The manifest's own name, relative to DIR, when it lies there.
  std::string self;
  if (auto m = LocatePath(manifest); m.ok() && m->mount.source == LocatePath(dir)->mount.source) {
    const std::string root = t->root == "/" ? "" : t->root;
    if (m->fs_path.rfind(root + "/", 0) == 0) self = m->fs_path.substr(root.size() + 1);
  }
  std::vector<std::string> to_check;
  for (const auto& [rel, sum] : expected) {
    if (present_set.count(rel)) to_check.push_back(rel);
  }
  std::vector<HashResult> sums = HashAll(*t->fs, t->root, to_check, jobs);
  size_t missing = 0, mismatch = 0, extra = 0, i = 0;
  for (const auto& [rel, sum] : expected) {
    if (i < to_check.size() && to_check[i] == rel) {
      const HashResult& h = sums[i++];
      if (!h.status.ok()) {
        ++missing;
        std::printf("MISSING %s (%s)\n", rel.c_str(), h.status.ToString().c_str());
      } else if (h.hex != sum) {
        ++mismatch;
        std::printf("MISMATCH %s\n", rel.c_str());
      } else if (!quiet) {
        std::printf("OK %s\n", rel.c_str());
      }
    } else {
      ++missing;
      std::printf("MISSING %s\n", rel.c_str());
    }
  }
  for (const std::string& rel : present) {
    if (!expected.count(rel) && rel != self) {
      ++extra;
      std::printf("EXTRA %s\n", rel.c_str());
    }
  }
  std::fprintf(stderr, "%zu files checked: %zu missing, %zu mismatched, %zu extra\n",
               expected.size(), missing, mismatch, extra);
  return missing + mismatch + extra == 0 ? 0 : 1;
}

}  // namespace

int LfsManifest(int argc, char** argv) {
  if (argc < 2) return UsageError("manifest", "missing create or verify");
  const std::string sub = argv[1];
  if (sub != "create" && sub != "verify") {
    return UsageError("manifest", ("unknown subcommand '" + sub + "'").c_str());
  }
  static const option kLong[] = {{"jobs", required_argument, nullptr, 'j'},
                                 {"quiet", no_argument, nullptr, 'q'},
                                 {nullptr, 0, nullptr, 0}};
  int jobs = 8;
  bool quiet = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc - 1, argv + 1, ":j:q", kLong, nullptr)) != -1) {
    switch (c) {
      case 'j': {
        char* end = nullptr;
        const long v = std::strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || v < 1 || v > kMaxJobs) {
          return UsageError("manifest", "-j takes a number from 1 to 256");
        }
        jobs = static_cast<int>(v);
        break;
      }
      case 'q':
        quiet = true;
        break;
      case ':':
        return UsageError("manifest", "option requires an argument");
      default:
        return UsageError("manifest", "unrecognized option");
    }
  }
  std::vector<std::string> args(argv + 1 + optind, argv + argc);
  if (sub == "create") {
    if (args.size() != 1) return UsageError("manifest", "create takes one DIR");
    return Create(jobs, args[0]);
  }
  if (args.empty() || args.size() > 2) return UsageError("manifest", "verify takes MANIFEST [DIR]");
  return Verify(jobs, quiet, args[0], args.size() == 2 ? args[1] : "");
}

}  // namespace stria::tools
