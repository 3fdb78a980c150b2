// StriaFs: directory listing — opendir, readdir, readdirplus (see fuse_ops.h, file_handle.h).
#include <cstring>
#include <memory>

#include "client/fuse/fuse_ops.h"
#include "client/fuse/fuse_util.h"

namespace stria::client::fuse {

namespace {
constexpr uint32_t kReaddirPage = 512;  // entries per OP_MDS_READDIR
}

Status StriaFs::FetchDirPage(fuse_req_t req, DirHandle* dh, bool plus) {
  Metadata::ReaddirArgs args;
  args.ino = dh->ino;
  args.cookie = dh->cookie;
  args.max_entries = kReaddirPage;
  args.want_attrs = plus;
  STRIA_ASSIGN_OR_RETURN(proto::ReaddirReply rep, md_.Readdir(Cred(req), args));
  for (auto& e : *rep.mutable_entries()) {
    if (e.name().empty() || e.name() == "." || e.name() == ".." || e.ino() == 0) continue;
    dh->entries.push_back(std::move(e));
  }
  dh->cookie = rep.next_cookie();
  // A page that ends without a cookie to resume from cannot be followed.
  dh->eof = rep.eof() || rep.next_cookie().empty();
  return Status::Ok();
}

Status StriaFs::DoOpendir(fuse_req_t req, uint64_t ino, fuse_file_info* fi) {
  auto dh = std::make_unique<DirHandle>();
  dh->ino = ino;
  // The first page now, so a directory we may not read fails at opendir, as on Linux.
  proto::DirEntry dot;
  dot.set_name(".");
  dot.set_ino(ino);
  dot.set_type(proto::FT_DIR);
  proto::DirEntry dotdot = dot;
  dotdot.set_name("..");
  dh->entries.push_back(dot);
  dh->entries.push_back(dotdot);
  STRIA_RETURN_IF_ERROR(FetchDirPage(req, dh.get(), /*plus=*/true));
  dh->loaded = true;
  fi->fh = reinterpret_cast<uint64_t>(dh.release());
  fi->cache_readdir = 0;
  return Status::Ok();
}

Status StriaFs::DoReaddir(fuse_req_t req, DirHandle* dh, size_t size, off_t offset, bool plus,
                          std::string* out) {
  std::lock_guard lock(dh->mu);
  if (offset < 0) return Status(Code::kInval, "negative directory offset");
  if (offset == 0 && dh->served) {
    // rewinddir: list afresh.
    dh->entries.resize(2);
    dh->cookie.clear();
    dh->eof = false;
  }
  dh->served = true;
  out->resize(size);
  size_t pos = 0;
  auto idx = static_cast<size_t>(offset);
  for (;;) {
    while (idx >= dh->entries.size() && !dh->eof) {
      STRIA_RETURN_IF_ERROR(FetchDirPage(req, dh, plus));
    }
    if (idx >= dh->entries.size()) break;
    const proto::DirEntry& de = dh->entries[idx];
    const off_t next = static_cast<off_t>(idx + 1);
    size_t need;
    if (plus) {
      fuse_entry_param e;
      std::memset(&e, 0, sizeof(e));
      const bool dot = de.name() == "." || de.name() == "..";
      const bool has_attr = !dot && de.has_attr() && de.attr().ino() == de.ino();
      if (has_attr) {
        // Only counted as a lookup if it fits: Ref after the size check.
        e.ino = de.ino();
        e.generation = de.attr().generation();
        e.attr = AttrToStat(de.attr(), de.attr().size());
        e.attr_timeout = options_.attr_timeout_s;
        e.entry_timeout = options_.entry_timeout_s;
      } else {
        // No attributes: the kernel lists the name and looks it up later (e.ino = 0).
        e.attr.st_ino = de.ino();
        e.attr.st_mode = ModeOfType(de.type());
      }
      need = fuse_add_direntry_plus(req, nullptr, 0, de.name().c_str(), &e, next);
      if (pos + need > size) break;
      if (has_attr) FillEntry(de.attr(), nullptr, &e);
      fuse_add_direntry_plus(req, out->data() + pos, size - pos, de.name().c_str(), &e, next);
    } else {
      struct stat st;
      std::memset(&st, 0, sizeof(st));
      st.st_ino = de.ino();
      st.st_mode = ModeOfType(de.type());
      need = fuse_add_direntry(req, nullptr, 0, de.name().c_str(), &st, next);
      if (pos + need > size) break;
      fuse_add_direntry(req, out->data() + pos, size - pos, de.name().c_str(), &st, next);
    }
    pos += need;
    ++idx;
  }
  out->resize(pos);
  return Status::Ok();
}

Status StriaFs::DoFsyncdir(fuse_req_t req, uint64_t ino) {
  return md_.Sync(Cred(req), ino);
}

}  // namespace stria::client::fuse
