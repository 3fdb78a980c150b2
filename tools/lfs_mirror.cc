// lfs mirror: mirrored files (Lustre's FLR), docs/lfs.md#lfs-mirror.
//
//   lfs mirror create -N[COUNT] [SETSTRIPE_OPTIONS] [-N ...] FILE|DIRECTORY
//   lfs mirror extend -N[COUNT] [SETSTRIPE_OPTIONS] [-N ...] FILE...
//   lfs mirror split --mirror-id ID [--destroy|-d] [-f NEW_FILE] FILE
//   lfs mirror resync FILE...
//   lfs mirror verify [--verbose|-v] FILE...
//   lfs mirror read --mirror-id ID [--outfile|-o OUT] FILE
//   lfs mirror write --mirror-id ID [--inputfile|-i IN] FILE
//
// create is lfs setstripe with -N required. extend, split and resync are MDS requests
// (OP_MDS_MIRROR): the MDS copies the bytes of a new or stale mirror itself. verify, read and
// write move the bytes here, through one mirror's own layout (MirrorView), under an open of
// the file (its capabilities when the cluster has a key).
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "client/capa.h"
#include "client/metadata.h"
#include "proto/layout_mirrors.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/stripe_args.h"

namespace stria::tools {
namespace {

constexpr uint64_t kChunk = 1 << 20;  // bytes compared or copied per step

int Fail(const char* sub, const std::string& path, const Status& st) {
  std::fprintf(stderr, "lfs mirror %s: '%s': %s\n", sub, path.c_str(), st.ToString().c_str());
  return ExitCode(st);
}

// Runs fn(client, resolved) on each regular file of paths[0..n) (a MirrorRequest, mostly);
// every file is tried, and the first failure is the exit status.
template <typename Fn>
int ForEachRegularFile(ToolSession& session, char** paths, int n, const char* sub, Fn fn) {
  int rc = 0;
  for (int i = 0; i < n; ++i) {
    const std::string path = paths[i];
    Status st = [&]() -> Status {
      STRIA_ASSIGN_OR_RETURN(ToolSession::PathClient pc, session.Locate(path));
      STRIA_ASSIGN_OR_RETURN(Resolved r, session.Resolve(pc.client, pc.where.fs_path));
      if (!r.is_reg()) return Status(Code::kInval, "not a regular file");
      return fn(pc.client, r);
    }();
    if (!st.ok() && rc == 0) rc = Fail(sub, path, st);
  }
  return rc;
}

// A mirror id from --mirror-id's text: 1..65535.
Result<uint32_t> ParseMirrorId(const char* text) {
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (text[0] == '\0' || *end != '\0' || v < 1 || v > 0xffff) {
    return Status(Code::kInval, std::string("invalid mirror id '") + text + "': 1 to 65535");
  }
  return static_cast<uint32_t>(v);
}

// One regular file of the filesystem, with its layout, opened at the MDS for `flags`
// (closed by Close): what verify, read and write work on.
struct OpenFile {
  client::Client* c = nullptr;
  Resolved r;
  proto::Layout layout;
  uint64_t handle = 0;
  std::shared_ptr<client::OpenCapas> capas;

  Status Open(ToolSession& session, const std::string& path, uint32_t flags) {
    STRIA_ASSIGN_OR_RETURN(ToolSession::PathClient pc, session.Locate(path));
    c = pc.client;
    STRIA_ASSIGN_OR_RETURN(r, session.Resolve(c, pc.where.fs_path));
    if (!r.is_reg()) return Status(Code::kInval, "not a regular file");
    STRIA_ASSIGN_OR_RETURN(proto::OpenReply rep,
                           client::Metadata(c).Open(session.cred(), r.attr.ino(), flags));
    handle = rep.handle();
    layout = rep.layout();
    r.attr = rep.attr();
    capas = client::OpenCapas::FromReply({session.cred(), r.attr.ino(), handle, flags},
                                         rep.has_capa() ? &rep.capa() : nullptr);
    return Status::Ok();
  }
  Status Close(ToolSession& session, bool wrote = false, uint64_t size = 0) {
    client::Metadata::CloseArgs ca;
    ca.ino = r.attr.ino();
    ca.handle = handle;
    ca.wrote = wrote;
    ca.size = size;
    if (wrote) {
      timespec ts{};
      clock_gettime(CLOCK_REALTIME, &ts);
      ca.mtime_ns = ts.tv_sec * 1'000'000'000ll + ts.tv_nsec;
    }
    return client::Metadata(c).Close(session.cred(), ca).status();
  }
};

bool HasMirror(const proto::Layout& l, uint32_t m) {
  for (uint32_t id : MirrorIds(l)) {
    if (id == m) return true;
  }
  return false;
}

// ---- extend, split, resync: MDS requests ----

int Extend(int argc, char** argv) {
  static const option kLong[] = {
      {"mirror-count", optional_argument, nullptr, 'N'},
      {"stripe-count", required_argument, nullptr, 'c'},
      {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe-index", required_argument, nullptr, 'i'},
      {"ost", required_argument, nullptr, 'o'},
      {"pool", required_argument, nullptr, 'p'},
      {"component-end", required_argument, nullptr, 'E'},
      {"flags", required_argument, nullptr, 'F'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  LayoutOptions options;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":N::c:S:i:o:p:E:h", kLong, nullptr)) != -1) {
    if (c == 'h') {
      std::fputs(LfsUsage("mirror extend"), stdout);
      return 0;
    }
    if (c == ':' || c == '?') return UsageError("mirror extend", "bad option");
    if (Status st = options.Apply(c, optarg); !st.ok()) {
      return UsageError("mirror extend", st.message().c_str());
    }
  }
  if (!options.mirrored()) return UsageError("mirror extend", "missing -N (--mirror-count)");
  if (Status st = options.Finish(); !st.ok()) {
    return UsageError("mirror extend", st.message().c_str());
  }
  if (optind >= argc) return UsageError("mirror extend", "missing FILE");
  ToolSession session;
  return ForEachRegularFile(session, argv + optind, argc - optind, "extend",
                            [&](auto* client, const Resolved& r) {
                              proto::MirrorRequest req;
                              req.set_ino(r.attr.ino());
                              req.set_command(proto::MIRROR_EXTEND);
                              *req.mutable_layout() = options.layout();
                              return client::Metadata(client).Mirror(session.cred(), req).status();
                            });
}

int Split(int argc, char** argv) {
  static const option kLong[] = {
      {"mirror-id", required_argument, nullptr, 'm'},
      {"destroy", no_argument, nullptr, 'd'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  uint32_t mirror = 0;
  bool destroy = false;
  std::string new_file;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":df:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'm': {
        auto id = ParseMirrorId(optarg);
        if (!id.ok()) return UsageError("mirror split", id.status().message().c_str());
        mirror = *id;
        break;
      }
      case 'd':
        destroy = true;
        break;
      case 'f':
        new_file = optarg;
        break;
      case 'h':
        std::fputs(LfsUsage("mirror split"), stdout);
        return 0;
      default:
        return UsageError("mirror split", "bad option");
    }
  }
  if (mirror == 0) return UsageError("mirror split", "missing --mirror-id");
  if (destroy && !new_file.empty()) {
    return UsageError("mirror split", "-d and -f exclude each other");
  }
  if (optind + 1 != argc) return UsageError("mirror split", "give exactly one FILE");
  const std::string path = argv[optind];
  ToolSession session;
  Status st = [&]() -> Status {
    STRIA_ASSIGN_OR_RETURN(ToolSession::PathClient pc, session.Locate(path));
    STRIA_ASSIGN_OR_RETURN(Resolved r, session.Resolve(pc.client, pc.where.fs_path));
    if (!r.is_reg()) return Status(Code::kInval, "not a regular file");
    proto::MirrorRequest req;
    req.set_ino(r.attr.ino());
    req.set_command(proto::MIRROR_SPLIT);
    req.set_mirror_id(mirror);
    req.set_destroy(destroy);
    if (!destroy) {
      // As Lustre: FILE.mirror~ID beside the file unless -f names another (same filesystem).
      const std::string target = new_file.empty() ? path + ".mirror~" + std::to_string(mirror)
                                                   : new_file;
      STRIA_ASSIGN_OR_RETURN(ToolSession::PathClient tc, session.Locate(target));
      if (tc.client != pc.client) return Status(Code::kXDev, "-f names another filesystem");
      auto [parent_path, name] = SplitParent(tc.where.fs_path);
      STRIA_ASSIGN_OR_RETURN(Resolved parent, session.Resolve(pc.client, parent_path));
      req.set_new_parent(parent.attr.ino());
      req.set_new_name(name);
    }
    return client::Metadata(pc.client).Mirror(session.cred(), req).status();
  }();
  return st.ok() ? 0 : Fail("split", path, st);
}

int Resync(int argc, char** argv) {
  if (argc < 2) return UsageError("mirror resync", "missing FILE");
  if (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fputs(LfsUsage("mirror resync"), stdout);
    return 0;
  }
  ToolSession session;
  return ForEachRegularFile(session, argv + 1, argc - 1, "resync",
                            [&](auto* client, const Resolved& r) {
                              proto::MirrorRequest req;
                              req.set_ino(r.attr.ino());
                              req.set_command(proto::MIRROR_RESYNC);
                              return client::Metadata(client).Mirror(session.cred(), req).status();
                            });
}

// ---- verify, read, write: bytes through one mirror ----

// Compares every mirror that is not stale, chunk by chunk; reports each differing range
// and each stale mirror. 0 when all hold the same bytes and none is stale.
Status VerifyOne(ToolSession& session, const std::string& path, bool verbose, bool* clean) {
  OpenFile f;
  STRIA_RETURN_IF_ERROR(f.Open(session, path, O_RDONLY));
  struct Closer {
    OpenFile& f;
    ToolSession& s;
    ~Closer() { f.Close(s).IgnoreError(); }
  } closer{f, session};
  const std::vector<uint32_t> ids = MirrorIds(f.layout);
  if (ids.size() < 2) return Status(Code::kInval, "not a mirrored file");
  std::vector<uint32_t> good;
  for (uint32_t m : ids) {
    const proto::Layout view = MirrorView(f.layout, m);
    if (!HasStale(view)) {
      good.push_back(m);
      continue;
    }
    *clean = false;
    for (const proto::LayoutComponent& c : view.components()) {
      for (const ByteSpan& s : StaleSpans(c)) {
        std::printf("%s: mirror %u is stale over [%llu, %s)\n", path.c_str(), m,
                    static_cast<unsigned long long>(s.start),
                    s.end == kLayoutEof ? "EOF" : std::to_string(s.end).c_str());
      }
    }
  }
  const uint64_t size = f.r.attr.size();
  std::vector<std::vector<uint8_t>> bufs(good.size(), std::vector<uint8_t>(kChunk));
  // A differing range grows while consecutive chunks differ between the same two mirrors.
  struct Diff {
    uint64_t start = 0, end = 0;
    uint32_t a = 0, b = 0;
  };
  std::vector<Diff> diffs;
  for (uint64_t off = 0; off < size && good.size() > 1; off += kChunk) {
    const uint64_t n = std::min(kChunk, size - off);
    for (size_t i = 0; i < good.size(); ++i) {
      STRIA_RETURN_IF_ERROR(f.c->Read(MirrorView(f.layout, good[i]), size, off,
                                      std::span<uint8_t>(bufs[i].data(), n), nullptr,
                                      f.capas.get())
                                .status());
    }
    for (size_t i = 1; i < good.size(); ++i) {
      if (std::memcmp(bufs[0].data(), bufs[i].data(), n) == 0) continue;
      *clean = false;
      if (!diffs.empty() && diffs.back().end == off && diffs.back().b == good[i]) {
        diffs.back().end = off + n;
      } else {
        diffs.push_back({off, off + n, good[0], good[i]});
      }
    }
  }
  for (const Diff& d : diffs) {
    std::printf("%s: chunk [%llu, %llu) differs between mirror %u and mirror %u\n",
                path.c_str(), static_cast<unsigned long long>(d.start),
                static_cast<unsigned long long>(d.end), d.a, d.b);
  }
  if (verbose && diffs.empty() && good.size() > 1) {
    std::string list;
    for (uint32_t m : good) list += (list.empty() ? "" : " ") + std::to_string(m);
    std::printf("%s: %llu bytes identical on mirrors %s\n", path.c_str(),
                static_cast<unsigned long long>(size), list.c_str());
  }
  return Status::Ok();
}

int Verify(int argc, char** argv) {
  static const option kLong[] = {
      {"verbose", no_argument, nullptr, 'v'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  bool verbose = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":vh", kLong, nullptr)) != -1) {
    if (c == 'v') {
      verbose = true;
    } else if (c == 'h') {
      std::fputs(LfsUsage("mirror verify"), stdout);
      return 0;
    } else {
      return UsageError("mirror verify", "bad option");
    }
  }
  if (optind >= argc) return UsageError("mirror verify", "missing FILE");
  ToolSession session;
  int rc = 0;
  for (int i = optind; i < argc; ++i) {
    bool clean = true;
    Status st = VerifyOne(session, argv[i], verbose, &clean);
    if (!st.ok()) {
      if (rc == 0) rc = Fail("verify", argv[i], st);
    } else if (!clean && rc == 0) {
      rc = 1;  // differences or stale mirrors: the file is not healthy
    }
  }
  return rc;
}

// read and write: --mirror-id ID, and the other side of the copy (-o OUT / -i IN).
int ReadWrite(int argc, char** argv, bool write) {
  const char* sub = write ? "mirror write" : "mirror read";
  static const option kLong[] = {
      {"mirror-id", required_argument, nullptr, 'm'},
      {"outfile", required_argument, nullptr, 'o'},
      {"inputfile", required_argument, nullptr, 'i'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  uint32_t mirror = 0;
  std::string other;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, write ? ":i:h" : ":o:h", kLong, nullptr)) != -1) {
    if (c == 'm') {
      auto id = ParseMirrorId(optarg);
      if (!id.ok()) return UsageError(sub, id.status().message().c_str());
      mirror = *id;
    } else if ((c == 'o' && !write) || (c == 'i' && write)) {
      other = optarg;
    } else if (c == 'h') {
      std::fputs(LfsUsage(sub), stdout);
      return 0;
    } else {
      return UsageError(sub, "bad option");
    }
  }
  if (mirror == 0) return UsageError(sub, "missing --mirror-id");
  if (optind + 1 != argc) return UsageError(sub, "give exactly one FILE");
  const std::string path = argv[optind];
  int fd = write ? STDIN_FILENO : STDOUT_FILENO;
  if (!other.empty()) {
    fd = write ? ::open(other.c_str(), O_RDONLY | O_CLOEXEC)
               : ::open(other.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int err = errno;
      std::fprintf(stderr, "lfs %s: '%s': %s\n", sub, other.c_str(), std::strerror(err));
      return err;
    }
  }
  ToolSession session;
  OpenFile f;
  Status st = f.Open(session, path, write ? O_WRONLY : O_RDONLY);
  if (st.ok() && !HasMirror(f.layout, mirror)) {
    st = Status(Code::kInval, "no mirror " + std::to_string(mirror));
  }
  uint64_t done = 0;
  std::vector<uint8_t> buf(kChunk);
  if (st.ok() && !write) {
    const uint64_t size = f.r.attr.size();
    const proto::Layout view = MirrorView(f.layout, mirror);
    if (HasStale(view)) {
      std::fprintf(stderr, "lfs %s: '%s': mirror %u is stale: its bytes may be old\n", sub,
                   path.c_str(), mirror);
    }
    for (uint64_t off = 0; off < size && st.ok(); off += kChunk) {
      const uint64_t n = std::min(kChunk, size - off);
      st = f.c->Read(view, size, off, std::span<uint8_t>(buf.data(), n), nullptr, f.capas.get())
               .status();
      for (uint64_t w = 0; st.ok() && w < n;) {
        const ssize_t k = ::write(fd, buf.data() + w, n - w);
        if (k < 0) st = Status(Code::kIO, std::string("write: ") + std::strerror(errno));
        if (k > 0) w += static_cast<uint64_t>(k);
      }
    }
  } else if (st.ok()) {
    // The bytes go to this mirror only; the other mirrors then differ over them, so they are
    // marked stale there (the next resync copies this mirror's bytes into them).
    proto::Layout view = MirrorView(f.layout, mirror);
    if (HasStale(view)) {
      st = Status(Code::kInval, "mirror " + std::to_string(mirror) + " is stale: resync it first");
    }
    while (st.ok()) {
      const ssize_t k = ::read(fd, buf.data(), buf.size());
      if (k < 0) {
        st = Status(Code::kIO, std::string("read: ") + std::strerror(errno));
        break;
      }
      if (k == 0) break;
      // The components the bytes reach get their objects first.
      auto newer = client::Metadata(f.c).LayoutForWrite(session.cred(), f.r.attr.ino(), f.handle,
                                                         f.layout, done,
                                                         done + static_cast<uint64_t>(k));
      st = newer.status();
      if (!st.ok()) break;
      if (*newer) {
        f.layout = **newer;
        view = MirrorView(f.layout, mirror);
      }
      st = f.c->Write(view, done, std::span<const uint8_t>(buf.data(), static_cast<size_t>(k)),
                      /*sync=*/false, f.capas.get());
      done += static_cast<uint64_t>(k);
    }
    if (st.ok()) st = f.c->SyncObjects(view, f.capas.get());
    for (uint32_t m : MirrorIds(f.layout)) {
      if (!st.ok() || m == mirror || done == 0) continue;
      proto::MirrorRequest req;
      req.set_ino(f.r.attr.ino());
      req.set_command(proto::MIRROR_STALE);
      req.set_mirror_id(m);
      req.set_start(0);
      req.set_end(done);
      req.set_handle(f.handle);
      st = client::Metadata(f.c).Mirror(session.cred(), req).status();
    }
  }
  if (f.c != nullptr && f.handle != 0) {
    Status cst = f.Close(session, write && done > 0, std::max(done, f.r.attr.size()));
    if (st.ok()) st = cst;
  }
  if (!other.empty()) ::close(fd);
  return st.ok() ? 0 : Fail(write ? "write" : "read", path, st);
}

}  // namespace

int LfsMirrorCreate(int argc, char** argv);  // tools/lfs_setstripe.cc

int LfsMirror(int argc, char** argv) {
  if (argc < 2) return UsageError("mirror", "missing SUBCOMMAND");
  const std::string sub = argv[1];
  if (sub == "create") return LfsMirrorCreate(argc - 1, argv + 1);
  if (sub == "extend") return Extend(argc - 1, argv + 1);
  if (sub == "split") return Split(argc - 1, argv + 1);
  if (sub == "resync") return Resync(argc - 1, argv + 1);
  if (sub == "verify") return Verify(argc - 1, argv + 1);
  if (sub == "read") return ReadWrite(argc - 1, argv + 1, /*write=*/false);
  if (sub == "write") return ReadWrite(argc - 1, argv + 1, /*write=*/true);
  return UsageError("mirror", ("unknown subcommand '" + sub + "'").c_str());
}

}  // namespace stria::tools
