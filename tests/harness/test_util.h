// Small helpers shared by the cluster and FUSE tests: deterministic data patterns, whole-file
// reads and writes through syscalls, and a libstria Client connected to a test Cluster.
// Header-only; a test that uses ConnectClient links stria::client.
// Thread-safety: free functions over values.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "oss/object_format.h"

namespace stria::testing {

// `n` bytes of a pattern that differs per seed and per offset (no two 4 KiB blocks alike),
// so misplaced stripes are caught.
inline std::vector<uint8_t> Pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
  for (size_t i = 0; i < n; ++i) {
    if ((i & 7) == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    v[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
  return v;
}

// Writes all of data at offset (pwrite loop). Returns 0 or an errno.
inline int PWriteAll(int fd, const uint8_t* data, size_t n, off_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = pwrite(fd, data + done, n - done, off + done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    done += w;
  }
  return 0;
}

// Creates/truncates `path` and writes `data` in chunks of `chunk` bytes; optionally fsyncs.
// Returns 0 or an errno.
inline int WriteFile(const std::string& path, const std::vector<uint8_t>& data,
                     size_t chunk = 1 << 20, bool fsync_it = false) {
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  if (fd < 0) return errno;
  int err = 0;
  for (size_t off = 0; off < data.size() && err == 0; off += chunk) {
    size_t n = std::min(chunk, data.size() - off);
    err = PWriteAll(fd, data.data() + off, n, off);
  }
  if (err == 0 && fsync_it && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  return err;
}

// Reads the whole file into *out. Returns 0 or an errno.
inline int ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  out->clear();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return errno;
  uint8_t buf[1 << 16];
  while (true) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close(fd);
      return e;
    }
    if (r == 0) break;
    out->insert(out->end(), buf, buf + r);
  }
  close(fd);
  return 0;
}

// The first differing offset of two byte vectors, or -1 when equal (sizes included).
inline long long FirstDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<long long>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<long long>(n);
}

// True where this machine can mount FUSE filesystems.
// Flips one bit (mask 0x10) of a file on disk, behind every Stria process's back, as a
// failing disk would: 0, or the errno of the open/pread/pwrite that failed.
inline int FlipBit(const std::string& path, uint64_t offset) {
  const int fd = open(path.c_str(), O_RDWR);
  if (fd < 0) return errno;
  uint8_t b = 0;
  int err = 0;
  if (pread(fd, &b, 1, static_cast<off_t>(offset)) != 1) err = errno != 0 ? errno : EIO;
  b ^= 0x10;
  if (err == 0 && pwrite(fd, &b, 1, static_cast<off_t>(offset)) != 1) err = errno;
  close(fd);
  return err;
}

// Where object byte x lies in its object file on an OST formatted by this version
// (oss/object_format.h: a 4 KiB block of checksums before each 4 MiB of the object).
inline uint64_t ObjectFileOffset(uint64_t x) { return oss::InlineDataPos(x); }

// The file of object `id` (group 0) in OST directory `ost_dir` (oss/object_store.h).
inline std::string ObjectFilePath(const std::string& ost_dir, uint64_t id) {
  return ost_dir + "/O/0/d" + std::to_string(id % 32) + "/" + std::to_string(id);
}

inline bool HaveFuse() { return access("/dev/fuse", R_OK | W_OK) == 0; }

}  // namespace stria::testing
