// lfs swap_layouts FILE1 FILE2: the two files exchange their layouts, and with them their
// bytes and sizes (OP_MDS_MIGRATE MIGRATE_SWAP); both must be writable by the caller and not
// open for writing (EBUSY). lfs data_version FILE: a number that changes whenever the file's
// bytes can have changed (size, mtime, layout and its objects, as the MDS has them: writes
// still in a client's cache count once that client closes or syncs).
#include <cstdio>
#include <string>

#include "proto/layout_components.h"
#include "tools/fs_connect.h"
#include "tools/lfs_commands.h"
#include "tools/mount_info.h"

namespace stria::tools {
namespace {

// FNV-1a over the fields that change with the data.
uint64_t DataVersion(const proto::Attr& attr, const proto::Layout& layout) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(attr.size());
  mix(static_cast<uint64_t>(attr.mtime_ns()));
  mix(layout.generation());
  for (const proto::StripeObject* o : AllObjects(layout)) {
    mix(o->ost_idx());
    mix(o->object_id());
  }
  return h;
}

}  // namespace

int LfsSwapLayouts(int argc, char** argv) {
  if (argc != 3) return UsageError("swap_layouts", "give two files");
  ToolSession session;
  auto a = session.Locate(argv[1]);
  auto b = session.Locate(argv[2]);
  if (!a.ok() || !b.ok()) {
    const Status st = a.ok() ? b.status() : a.status();
    std::fprintf(stderr, "lfs swap_layouts: %s\n", st.ToString().c_str());
    return ExitCode(st);
  }
  if (a->where.mount.source != b->where.mount.source) {
    std::fprintf(stderr, "lfs swap_layouts: the files are on different filesystems\n");
    return EXDEV;
  }
  auto ra = session.Resolve(a->client, a->where.fs_path);
  auto rb = session.Resolve(b->client, b->where.fs_path);
  if (!ra.ok() || !rb.ok()) {
    const Status st = ra.ok() ? rb.status() : ra.status();
    std::fprintf(stderr, "lfs swap_layouts: %s\n", st.ToString().c_str());
    return ExitCode(st);
  }
  proto::MigrateRequest req;
  req.set_step(proto::MIGRATE_SWAP);
  req.set_ino(ra->attr.ino());
  req.set_ino2(rb->attr.ino());
  Status st = client::Metadata(a->client).Migrate(session.cred(), req).status();
  if (!st.ok()) {
    std::fprintf(stderr, "lfs swap_layouts: cannot swap '%s' and '%s': %s\n", argv[1], argv[2],
                 st.ToString().c_str());
    return ExitCode(st);
  }
  return 0;
}

int LfsDataVersion(int argc, char** argv) {
  if (argc != 2) return UsageError("data_version", "give one file");
  ToolSession session;
  auto pc = session.Locate(argv[1]);
  if (!pc.ok()) {
    std::fprintf(stderr, "lfs data_version: %s\n", pc.status().ToString().c_str());
    return ExitCode(pc.status());
  }
  auto r = session.Resolve(pc->client, pc->where.fs_path);
  if (!r.ok()) {
    std::fprintf(stderr, "lfs data_version: %s\n", r.status().ToString().c_str());
    return ExitCode(r.status());
  }
  if (!r->is_reg()) return UsageError("data_version", "not a regular file");
  auto layout = session.FileLayout(pc->client, r->attr);
  if (!layout.ok()) {
    std::fprintf(stderr, "lfs data_version: %s\n", layout.status().ToString().c_str());
    return ExitCode(layout.status());
  }
  std::printf("%llu\n", static_cast<unsigned long long>(DataVersion(r->attr, *layout)));
  return 0;
}

}  // namespace stria::tools
