// lfs migrate: restripe files online, keeping their inode, FID and bytes.
//
//   lfs migrate [-c N] [-S SIZE] [-i IDX] [-p POOL] [-E END ...] [--non-block|-n] [-R]
//               [FILE|DIR...]
//
// -R migrates every regular file below a directory argument; without FILE, the paths come
// from standard input, one per line (lfs find ... | lfs migrate -c 4). On a terminal, a
// progress line counts the files done.
//
// For each file: OP_MDS_MIGRATE BEGIN allocates the new layout (the options, over the
// directory's default as for a new file), the bytes are copied from the old objects to the
// new ones through libstria and synced, and COMMIT swaps the layouts if nothing wrote the
// file meanwhile; the old objects are destroyed by the MDS. A reader with the file open keeps
// reading the same bytes (the FUSE client refetches the layout when an old object is gone).
// A writer, at the start or during the copy: --non-block fails with EBUSY (the new objects
// are given back); the default waits and tries again, for up to a minute.
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "client/capa.h"
#include "proto/layout_components.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"
#include "tools/stripe_args.h"

namespace stria::tools {
namespace {

int Usage(const char* why) {
  if (why != nullptr && *why != '\0') std::fprintf(stderr, "lfs migrate: %s\n", why);
  std::fputs(LfsUsage("migrate"), stderr);
  return kUsageError;
}

constexpr uint64_t kCopyChunk = 4ull << 20;
constexpr int kBusyRetries = 600;  // x 100 ms
constexpr auto kBusyWait = std::chrono::milliseconds(100);

// Copies [0, size) from `from` to `to` and makes it durable. capas: BEGIN's capabilities for
// both layouts' objects (null without a cluster key); they are not renewed (no open handle).
Status CopyData(client::Client* c, const proto::Layout& from, const proto::Layout& to,
                uint64_t size, client::OpenCapas* capas) {
  std::vector<uint8_t> buf(kCopyChunk);
  for (uint64_t off = 0; off < size; off += kCopyChunk) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kCopyChunk, size - off));
    STRIA_ASSIGN_OR_RETURN(size_t got, c->Read(from, size, off,
                                               std::span<uint8_t>(buf.data(), n), nullptr, capas));
    if (got != n) return Status(Code::kIO, "short read while copying");
    STRIA_RETURN_IF_ERROR(c->Write(to, off, std::span<const uint8_t>(buf.data(), n), false, capas));
  }
  return c->SyncObjects(to);
}

// One attempt: BEGIN, copy, COMMIT (ABORT on failure). kBusy when a writer got in the way.
Status MigrateOnce(client::Client* c, const proto::Credentials& cred, uint64_t ino,
                   const proto::Layout& old_layout, const LayoutOptions& options) {
  client::Metadata md(c);
  proto::MigrateRequest begin;
  begin.set_ino(ino);
  begin.set_step(proto::MIGRATE_BEGIN);
  if (options.given()) *begin.mutable_layout() = options.layout();
  STRIA_ASSIGN_OR_RETURN(proto::MigrateReply started, md.Migrate(cred, begin));
  proto::MigrateRequest end;
  end.set_ino(ino);
  *end.mutable_layout() = started.layout();
  std::shared_ptr<client::OpenCapas> capas = client::OpenCapas::FromReply(
      {cred, ino, /*handle=*/0, O_RDWR}, started.has_capa() ? &started.capa() : nullptr);
  Status st = CopyData(c, old_layout, started.layout(), started.size(), capas.get());
  if (st.ok()) {
    end.set_step(proto::MIGRATE_COMMIT);
    end.set_size(started.size());
    end.set_mtime_ns(started.mtime_ns());
    end.set_generation(started.generation());
    st = md.Migrate(cred, end).status();
    if (st.ok()) return st;
  }
  // Give the new objects back; the file keeps its old layout.
  end.set_step(proto::MIGRATE_ABORT);
  if (Status a = md.Migrate(cred, end).status(); !a.ok()) {
    std::fprintf(stderr, "lfs migrate: cannot give back the new objects: %s\n",
                 a.ToString().c_str());
  }
  return st;
}

// Every regular file below directory `path` (inode `ino`), depth first, by READDIR.
Status CollectFiles(ToolSession& session, client::Client* c, const std::string& path, uint64_t ino,
                    std::vector<std::string>* files) {
  STRIA_ASSIGN_OR_RETURN(std::vector<proto::DirEntry> entries, session.ListDir(c, ino));
  const std::string prefix = path.ends_with('/') ? path : path + "/";
  for (const proto::DirEntry& e : entries) {
    if (e.type() == proto::FT_REG) {
      files->push_back(prefix + e.name());
    } else if (e.type() == proto::FT_DIR) {
      STRIA_RETURN_IF_ERROR(CollectFiles(session, c, prefix + e.name(), e.ino(), files));
    }
  }
  return Status::Ok();
}

// Migrates one regular file, retrying while a writer is in the way unless non_block.
Status MigratePath(ToolSession& session, const std::string& path, const LayoutOptions& options,
                   bool non_block) {
  STRIA_ASSIGN_OR_RETURN(ToolSession::PathClient pc, session.Locate(path));
  for (int attempt = 0;; ++attempt) {
    // The layout to copy from, as the MDS has it now.
    STRIA_ASSIGN_OR_RETURN(Resolved r, session.Resolve(pc.client, pc.where.fs_path));
    if (!r.is_reg()) return Status(Code::kInval, "not a regular file");
    STRIA_ASSIGN_OR_RETURN(proto::Layout layout, session.FileLayout(pc.client, r.attr));
    Status st = MigrateOnce(pc.client, session.cred(), r.attr.ino(), layout, options);
    if (st.code() != Code::kBusy || non_block || attempt >= kBusyRetries) return st;
    std::this_thread::sleep_for(kBusyWait);
  }
}

}  // namespace

int LfsMigrate(int argc, char** argv) {
  static const option kLong[] = {
      {"stripe-count", required_argument, nullptr, 'c'},
      {"stripe_count", required_argument, nullptr, 'c'},
      {"stripe-size", required_argument, nullptr, 'S'},
      {"stripe_size", required_argument, nullptr, 'S'},
      {"stripe-index", required_argument, nullptr, 'i'},
      {"stripe_index", required_argument, nullptr, 'i'},
      {"ost", required_argument, nullptr, 'o'},
      {"pool", required_argument, nullptr, 'p'},
      {"component-end", required_argument, nullptr, 'E'},
      {"comp-end", required_argument, nullptr, 'E'},
      {"layout", required_argument, nullptr, 'L'},
      {"non-block", no_argument, nullptr, 'n'},
      {"recursive", no_argument, nullptr, 'R'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  LayoutOptions options;
  bool non_block = false, recursive = false;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":c:E:i:L:no:p:RS:h", kLong, nullptr)) != -1) {
    switch (c) {
      case 'R':
        recursive = true;
        break;
      case 'n':
        non_block = true;
        break;
      case 'h':
        std::fputs(LfsUsage("migrate"), stdout);
        return 0;
      case ':':
        return Usage(
            (std::string("option '") + argv[optind - 1] + "' requires an argument").c_str());
      case '?':
        return Usage((std::string("unrecognized option '") + argv[optind - 1] + "'").c_str());
      default:
        if (Status st = options.Apply(c, optarg); !st.ok()) return Usage(st.message().c_str());
    }
  }
  std::vector<std::string> inputs(argv + optind, argv + argc);
  if (inputs.empty()) {
    // lfs find ... | lfs migrate: the paths come one per line.
    if (isatty(STDIN_FILENO)) return Usage("missing FILE");
    for (std::string line; std::getline(std::cin, line);) {
      if (!line.empty()) inputs.push_back(line);
    }
  }
  if (Status st = options.Finish(); !st.ok()) return Usage(st.message().c_str());
  ToolSession session;
  int rc = 0;
  auto fail = [&](const std::string& path, const Status& st) {
    std::fprintf(stderr, "lfs migrate: cannot migrate '%s': %s\n", path.c_str(),
                 st.ToString().c_str());
    if (rc == 0) rc = ExitCode(st);
  };
  // The regular files to migrate: the arguments, and with -R what lies below directories.
  std::vector<std::string> files;
  for (const std::string& path : inputs) {
    auto pc = session.Locate(path);
    if (!pc.ok()) {
      fail(path, pc.status());
      continue;
    }
    auto r = session.Resolve(pc->client, pc->where.fs_path);
    if (!r.ok()) {
      fail(path, r.status());
    } else if (r->is_reg()) {
      files.push_back(path);
    } else if (!r->is_dir()) {
      fail(path, Status(Code::kInval, "not a regular file"));
    } else if (!recursive) {
      fail(path, Status(Code::kIsDir, "a directory (give -R to migrate the files below it)"));
    } else if (Status st = CollectFiles(session, pc->client, path, r->attr.ino(), &files);
               !st.ok()) {
      fail(path, st);
    }
  }
  const bool progress = isatty(STDERR_FILENO) && files.size() > 1;
  for (size_t i = 0; i < files.size(); ++i) {
    if (Status st = MigratePath(session, files[i], options, non_block); !st.ok()) {
      if (progress) std::fputc('\n', stderr);
      fail(files[i], st);
    }
    if (progress) std::fprintf(stderr, "\rlfs migrate: %zu/%zu files", i + 1, files.size());
  }
  if (progress) std::fputc('\n', stderr);
  return rc;
}

}  // namespace stria::tools
