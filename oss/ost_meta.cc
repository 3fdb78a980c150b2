#include "oss/ost_meta.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

namespace stria::oss {
namespace {

constexpr size_t kMaxMetaBytes = 4096;

Status MkdirAll(const std::string& path) {
  std::string cur;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    cur = path.substr(0, next);
    if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoStatus("mkdir " + cur, errno);
    }
    pos = next + 1;
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoStatus("stat " + path, errno);
  if (!S_ISDIR(st.st_mode)) return Status(Code::kNotDir, path + " is not a directory");
  return Status::Ok();
}

Status FsyncPath(const std::string& path, int flags) {
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("open " + path, errno);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? Status::Ok() : ErrnoStatus("fsync " + path, err);
}

Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           const std::string& text) {
  const std::string path = dir + "/" + name;
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus("create " + tmp, errno);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      return ErrnoStatus("write " + tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus("fsync " + tmp, err);
  }
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus("rename " + tmp, errno);
  return FsyncPath(dir, O_RDONLY | O_DIRECTORY);
}

}  // namespace

Status ValidateFsname(std::string_view fsname) {
  if (fsname.empty() || fsname.size() > 64) {
    return Status(Code::kInval, "fsname must be 1-64 characters");
  }
  for (char c : fsname) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) {
      return Status(Code::kInval, "fsname '" + std::string(fsname) + "' has a bad character");
    }
  }
  return Status::Ok();
}

std::string NewUuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  const uint64_t a = gen(), b = gen();
  const uint32_t w0 = static_cast<uint32_t>(a >> 32);
  const uint16_t w1 = static_cast<uint16_t>(a >> 16);
  const uint16_t w2 = static_cast<uint16_t>((a & 0x0fff) | 0x4000);  // version 4
  const uint16_t w3 = static_cast<uint16_t>(((b >> 48) & 0x3fff) | 0x8000);
  const uint64_t w4 = b & 0xffffffffffffull;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", w0, w1, w2, w3, w4);
}

Result<OstMeta> ReadOstMeta(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kOstMetaFile);
  std::ifstream in(path);
  if (!in) {
    const int err = errno;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 && errno == ENOENT) {
      return Status(Code::kNoEnt, dir + " is not a formatted OST (no " + path + ")");
    }
    return ErrnoStatus("open " + path, err ? err : EIO);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.size() > kMaxMetaBytes) return Status(Code::kCorrupt, path + " is too large");
  OstMeta meta;
  meta.object_format = ObjectFormat::kSidecar;  // unless the file says otherwise
  bool have_fs = false, have_idx = false, have_uuid = false;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return Status(Code::kCorrupt, path + ": bad line '" + line + "'");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "fsname") {
      if (!ValidateFsname(value).ok()) return Status(Code::kCorrupt, path + ": bad fsname");
      meta.fsname = value;
      have_fs = true;
    } else if (key == "index") {
      uint32_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size() || v > kMaxOstIndex) {
        return Status(Code::kCorrupt, path + ": bad index '" + value + "'");
      }
      meta.index = v;
      have_idx = true;
    } else if (key == "uuid") {
      if (value.empty() || value.size() > 64) return Status(Code::kCorrupt, path + ": bad uuid");
      meta.uuid = value;
      have_uuid = true;
    } else if (key == "object_format") {
      uint32_t v = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || p != value.data() + value.size() ||
          (v != static_cast<uint32_t>(ObjectFormat::kSidecar) &&
           v != static_cast<uint32_t>(ObjectFormat::kInline))) {
        return Status(Code::kCorrupt,
                      path + ": object_format '" + value +
                          "' is not one this stria-oss knows (1 or 2): formatted by a newer "
                          "version?");
      }
      meta.object_format = static_cast<ObjectFormat>(v);
    }  // other keys: written by a newer version; ignored
  }
  if (!have_fs || !have_idx || !have_uuid) {
    return Status(Code::kCorrupt, path + " lacks fsname, index or uuid");
  }
  return meta;
}

Status CheckOstMeta(const std::string& dir, const OstMeta& stored, uint32_t index,
                    std::string_view fsname) {
  if (stored.index != index) {
    return Status(Code::kInval, fmt::format("OST directory {} is formatted as index {}, not {}",
                                            dir, stored.index, index));
  }
  if (!fsname.empty() && stored.fsname != fsname) {
    return Status(Code::kWrongFs,
                  fmt::format("OST directory {} belongs to filesystem '{}', not '{}'", dir,
                              stored.fsname, fsname));
  }
  return Status::Ok();
}

Status FormatOst(const std::string& dir, const OstMeta& meta) {
  STRIA_RETURN_IF_ERROR(ValidateFsname(meta.fsname));
  if (meta.index > kMaxOstIndex) return Status(Code::kInval, "OST index out of range");
  if (meta.uuid.empty() || meta.uuid.size() > 64) return Status(Code::kInval, "bad OST uuid");
  STRIA_RETURN_IF_ERROR(MkdirAll(dir));
  Result<OstMeta> existing = ReadOstMeta(dir);
  if (existing.ok()) return CheckOstMeta(dir, *existing, meta.index, meta.fsname);
  if (existing.status().code() != Code::kNoEnt) return existing.status();
  for (int d = 0; d < 32; ++d) {
    STRIA_RETURN_IF_ERROR(MkdirAll(fmt::format("{}/O/0/d{}", dir, d)));
  }
  const std::string text = fmt::format(
      "# Stria OST identity; do not edit.\nfsname={}\nindex={}\nuuid={}\nobject_format={}\n",
      meta.fsname, meta.index, meta.uuid, static_cast<uint32_t>(meta.object_format));
  return WriteFileAtomically(dir, std::string(kOstMetaFile), text);
}

}  // namespace stria::oss
